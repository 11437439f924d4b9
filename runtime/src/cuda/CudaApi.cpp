//===- CudaApi.cpp - Opening libcuda and naming its errors ----------------===//

#include "CudaApi.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace kiln::runtime::cuda {

StatusOr<std::shared_ptr<const CudaApi>> CudaApi::load() {
  // One attempt per library path: a process asks again only if the first
  // failed (so a test may point KILN_CUDA_DRIVER elsewhere and retry).
  static std::mutex mutex;
  static std::shared_ptr<const CudaApi> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  const char *chosen = std::getenv("KILN_CUDA_DRIVER");
  std::string path = chosen && *chosen ? chosen : "libcuda.so.1";
  if (loaded && loaded->path == path)
    return loaded;
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    return Status::error(StatusCode::Unavailable,
                         "no CUDA driver: cannot load " + path + " (" + (why ? why : "not found") +
                             "); install the NVIDIA driver, or set KILN_CUDA_DRIVER to its "
                             "libcuda.so.1");
  }
  auto api = std::make_shared<CudaApi>();
  api->path = path;
#define KILN_CUDA_RESOLVE(field, symbol, result, ...)                                          \
  api->field = reinterpret_cast<decltype(api->field)>(dlsym(library, symbol));                 \
  if (!api->field)                                                                             \
    return Status::error(StatusCode::Unavailable,                                              \
                         "the CUDA driver " + path + " lacks " + symbol + ": it is too old");
  KILN_CUDA_FUNCTIONS(KILN_CUDA_RESOLVE)
#undef KILN_CUDA_RESOLVE
  loaded = api;
  return std::shared_ptr<const CudaApi>(api);
}

Status CudaApi::check(CUresult result, const char *call, const std::string &what) const {
  if (result == CUDA_SUCCESS)
    return Status::OK();
  const char *name = nullptr, *description = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUDA error";
  if (cuGetErrorString(result, &description) != CUDA_SUCCESS || !description)
    description = "no description";
  return Status::error(std::string(call) + (what.empty() ? "" : "(" + what + ")") + ": " + name +
                       " (" + std::to_string(result) + "): " + description);
}

StatusOr<FirstGpu> findFirstGpu(const CudaApi &api) {
  CUresult initialized = api.cuInit(0);
  if (initialized == CUDA_ERROR_NO_DEVICE)
    return Status::error(StatusCode::Unavailable, "the CUDA driver found no GPU");
  KILN_RETURN_IF_ERROR(api.check(initialized, "cuInit"));
  int count = 0;
  KILN_RETURN_IF_ERROR(api.check(api.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0)
    return Status::error(StatusCode::Unavailable, "the CUDA driver found no GPU");
  FirstGpu gpu;
  KILN_RETURN_IF_ERROR(api.check(api.cuDeviceGet(&gpu.device, 0), "cuDeviceGet"));
  char name[256] = {};
  KILN_RETURN_IF_ERROR(
      api.check(api.cuDeviceGetName(name, sizeof(name) - 1, gpu.device), "cuDeviceGetName"));
  gpu.name = name;
  KILN_RETURN_IF_ERROR(api.check(
      api.cuDeviceGetAttribute(&gpu.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, gpu.device),
      "cuDeviceGetAttribute"));
  KILN_RETURN_IF_ERROR(api.check(
      api.cuDeviceGetAttribute(&gpu.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, gpu.device),
      "cuDeviceGetAttribute"));
  return gpu;
}

} // namespace kiln::runtime::cuda
