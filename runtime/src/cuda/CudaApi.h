//===- CudaApi.h - The CUDA driver API, opened at run time ----------------===//
//
// libcuda.so.1 is never linked: the runtime opens it with dlopen (or the
// library $KILN_CUDA_DRIVER names: the tests' fake driver) and resolves each
// function by the versioned name cuda.h maps it to, as IREE's CUDA HAL
// driver does. The few types are declared here, so building needs no CUDA
// headers and every machine builds the driver.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDAAPI_H
#define KILN_RUNTIME_CUDA_CUDAAPI_H

#include "kiln/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace kiln::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

// X(field, exported symbol, return type, parameters...)
#define KILN_CUDA_FUNCTIONS(X)                                                                   \
  X(cuInit, "cuInit", CUresult, unsigned)                                                        \
  X(cuGetErrorName, "cuGetErrorName", CUresult, CUresult, const char **)                         \
  X(cuGetErrorString, "cuGetErrorString", CUresult, CUresult, const char **)                     \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult, int *)                                       \
  X(cuDeviceGet, "cuDeviceGet", CUresult, CUdevice *, int)                                       \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult, char *, int, CUdevice)                         \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult, int *, int, CUdevice)                \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, CUcontext *, CUdevice)       \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, CUdevice)              \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult, CUcontext)                                     \
  X(cuCtxSynchronize, "cuCtxSynchronize", CUresult, void)                                        \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult, CUstream)                              \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult, CUdeviceptr *, size_t)                                \
  X(cuMemFree, "cuMemFree_v2", CUresult, CUdeviceptr)                                            \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", CUresult, CUdeviceptr, const void *, size_t)                \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult, void *, CUdeviceptr, size_t)                      \
  X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", CUresult, CUdeviceptr, CUdeviceptr, size_t)                 \
  X(cuModuleLoadData, "cuModuleLoadData", CUresult, CUmodule *, const void *)                    \
  X(cuModuleUnload, "cuModuleUnload", CUresult, CUmodule)                                        \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUresult, CUfunction *, CUmodule, const char *)  \
  X(cuLaunchKernel, "cuLaunchKernel", CUresult, CUfunction, unsigned, unsigned, unsigned,        \
    unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **)

/// The driver's functions. Loaded once per process and never unloaded.
struct CudaApi {
#define KILN_CUDA_FIELD(field, symbol, result, ...) result (*field)(__VA_ARGS__) = nullptr;
  KILN_CUDA_FUNCTIONS(KILN_CUDA_FIELD)
#undef KILN_CUDA_FIELD
  std::string path; // the library opened

  /// Opens $KILN_CUDA_DRIVER, else libcuda.so.1, and resolves every
  /// function: StatusCode::Unavailable when there is no library, an error
  /// naming the function when one is missing.
  static StatusOr<std::shared_ptr<const CudaApi>> load();

  /// OK for CUDA_SUCCESS, else "call(what): CUDA_ERROR_NAME (code):
  /// description" (what: the kernel or buffer concerned, if any).
  Status check(CUresult result, const char *call, const std::string &what = "") const;
};

/// GPU 0 as the driver reports it: Unavailable when the driver finds none.
struct FirstGpu {
  CUdevice device = 0;
  int major = 0, minor = 0;
  std::string name;
};
StatusOr<FirstGpu> findFirstGpu(const CudaApi &api);

} // namespace kiln::runtime::cuda

#endif // KILN_RUNTIME_CUDA_CUDAAPI_H
