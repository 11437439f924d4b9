//===- CudaDevice.cpp - An NVIDIA GPU through the CUDA driver API ---------===//

#include "CudaDevice.h"

#include "kiln/runtime/CudaCapability.h"
#include "kiln/runtime/GpuImageContainer.h"

#include <cstdlib>
#include <cstring>

namespace kiln::runtime::cuda {

namespace {

/// The calling thread's external stream (Device::useExternalStream), or
/// null for the context's default stream.
thread_local CUstream externalStream = nullptr;

CUdeviceptr pointer(const void *address) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(address));
}

/// The kernels of one executable: a module each, and its entry function.
class CudaExecutable final : public Executable {
public:
  CudaExecutable(Device &device, std::shared_ptr<const CudaApi> api, CUcontext context,
                 std::vector<KernelInfo> kernels, std::vector<BlockSize> blockSizes)
      : Executable(device, std::move(kernels), std::move(blockSizes)), api_(std::move(api)),
        context_(context) {}
  ~CudaExecutable() override {
    // The modules belong to the device's context, whichever is current here.
    (void)api_->cuCtxSetCurrent(context_);
    for (CUmodule module : modules_)
      (void)api_->cuModuleUnload(module);
  }

  Status load(const std::vector<GpuKernelImage> &images) {
    for (size_t i = 0; i < numKernels(); ++i) {
      const KernelInfo &info = kernel(i);
      const GpuKernelImage *image = nullptr;
      for (const GpuKernelImage &candidate : images)
        if (candidate.entry == info.symbol)
          image = &candidate;
      if (!image)
        return Status::error("the executable has no image for kernel '" + info.name + "'");
      CUmodule module = nullptr;
      KILN_RETURN_IF_ERROR(api_->check(api_->cuModuleLoadData(&module, image->image.data()),
                                       "cuModuleLoadData", info.name));
      modules_.push_back(module);
      CUfunction function = nullptr;
      KILN_RETURN_IF_ERROR(api_->check(
          api_->cuModuleGetFunction(&function, module, info.symbol.c_str()),
          "cuModuleGetFunction", info.name));
      functions_.push_back(function);
    }
    return Status::OK();
  }

  CUfunction function(uint32_t kernel) const { return functions_[kernel]; }

private:
  std::shared_ptr<const CudaApi> api_;
  CUcontext context_;
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_;
};

} // namespace

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::create() {
  StatusOr<std::shared_ptr<const CudaApi>> loaded = CudaApi::load();
  if (!loaded.ok())
    return loaded.status();
  std::shared_ptr<const CudaApi> api = *loaded;
  StatusOr<FirstGpu> gpu = findFirstGpu(*api);
  if (!gpu.ok())
    return gpu.status();
  CUcontext context = nullptr;
  KILN_RETURN_IF_ERROR(api->check(api->cuDevicePrimaryCtxRetain(&context, gpu->device),
                                  "cuDevicePrimaryCtxRetain"));
  std::unique_ptr<CudaDevice> created(new CudaDevice(api, gpu->device, context));
  KILN_RETURN_IF_ERROR(created->enter());
  KILN_RETURN_IF_ERROR(api->check(api->cuDeviceGetAttribute(&created->multiprocessors_,
                                                            CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                            gpu->device),
                                  "cuDeviceGetAttribute"));
  created->name_ = gpu->name;
  created->capability_ = {gpu->major, gpu->minor};
  created->format_ = std::string(kCudaFormatPrefix) + "sm_" + std::to_string(gpu->major) +
                     std::to_string(gpu->minor);
  const char *sync = std::getenv("KILN_CUDA_SYNC");
  created->syncEachLaunch_ = sync && std::strcmp(sync, "1") == 0;
  return created;
}

CudaDevice::CudaDevice(std::shared_ptr<const CudaApi> api, CUdevice device, CUcontext context)
    : api_(std::move(api)), device_(device), context_(context) {}

CudaDevice::~CudaDevice() { (void)api_->cuDevicePrimaryCtxRelease(device_); }

Status CudaDevice::enter() const {
  return api_->check(api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

std::optional<int> CudaDevice::formatDistance(std::string_view format) const {
  return cudaFormatDistance(format, capability_);
}

std::string CudaDevice::describe() const {
  return format_ + ", " + name_ + ", " + std::to_string(multiprocessors_) + " SMs";
}

StatusOr<DeviceBuffer> CudaDevice::allocate(size_t bytes) {
  KILN_RETURN_IF_ERROR(enter());
  CUdeviceptr address = 0;
  // A distinct address even for 0 bytes; cuMemAlloc aligns to 256 bytes.
  CUresult result = api_->cuMemAlloc(&address, bytes == 0 ? 1 : bytes);
  if (result != CUDA_SUCCESS) {
    Status status = api_->check(result, "cuMemAlloc", std::to_string(bytes) + " bytes");
    return Status::error(StatusCode::OutOfMemory, status.message());
  }
  return adoptBuffer(reinterpret_cast<void *>(static_cast<uintptr_t>(address)), bytes);
}

void CudaDevice::deallocate(void *address, size_t, uint64_t) noexcept {
  (void)enter();
  (void)api_->cuMemFree(pointer(address));
}

Status CudaDevice::copyHostToDevice(void *device, const void *host, size_t bytes) {
  KILN_RETURN_IF_ERROR(enter());
  KILN_RETURN_IF_ERROR(waitForExternalStream());
  return api_->check(api_->cuMemcpyHtoD(pointer(device), host, bytes), "cuMemcpyHtoD");
}

Status CudaDevice::copyDeviceToHost(void *host, const void *device, size_t bytes) {
  KILN_RETURN_IF_ERROR(enter());
  KILN_RETURN_IF_ERROR(waitForExternalStream());
  return api_->check(api_->cuMemcpyDtoH(host, pointer(device), bytes), "cuMemcpyDtoH");
}

Status CudaDevice::copyDeviceToDevice(void *target, const void *source, size_t bytes) {
  KILN_RETURN_IF_ERROR(enter());
  KILN_RETURN_IF_ERROR(waitForExternalStream());
  return api_->check(api_->cuMemcpyDtoD(pointer(target), pointer(source), bytes), "cuMemcpyDtoD");
}

StatusOr<std::unique_ptr<Executable>>
CudaDevice::loadExecutable(const ExecutableDesc &executable, const std::vector<KernelInfo> &kernels) {
  if (!formatDistance(executable.format))
    return Status::error("the executable is for '" + executable.format + "', this GPU (" + name_ +
                         ", compute capability " + capability_.str() + ") runs '" + format_ +
                         "' and earlier chips' PTX");
  StatusOr<std::vector<GpuKernelImage>> images =
      decodeGpuImageContainer(executable.bytes, GpuImageKind::Fatbin);
  if (!images.ok())
    return images.status();
  KILN_RETURN_IF_ERROR(enter());
  auto loaded =
      std::make_unique<CudaExecutable>(*this, api_, context_, kernels, executable.blockSizes);
  KILN_RETURN_IF_ERROR(loaded->load(*images));
  return std::unique_ptr<Executable>(std::move(loaded));
}

Status CudaDevice::launch(const Executable &executable, uint32_t kernel, const LaunchParams &params) {
  const WorkgroupGrid &grid = params.workgroups;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return Status::OK();
  const KernelInfo &info = executable.kernel(kernel);
  if (params.numBindings != info.numBindings)
    return Status::error("launching kernel '" + info.name + "' with " +
                         std::to_string(params.numBindings) + " bindings, it takes " +
                         std::to_string(info.numBindings));
  KILN_RETURN_IF_ERROR(enter());
  // The parameters: each binding's device pointer, then the size symbols.
  std::vector<CUdeviceptr> pointers(params.numBindings);
  std::vector<void *> arguments;
  arguments.reserve(params.numBindings + params.numValues);
  for (uint32_t i = 0; i < params.numBindings; ++i) {
    pointers[i] = pointer(params.bindings[i]);
    arguments.push_back(&pointers[i]);
  }
  std::vector<int64_t> values(params.values, params.values + params.numValues);
  for (int64_t &value : values)
    arguments.push_back(&value);
  BlockSize block = executable.blockSize(kernel);
  const auto &cuda = static_cast<const CudaExecutable &>(executable);
  KILN_RETURN_IF_ERROR(api_->check(
      api_->cuLaunchKernel(cuda.function(kernel), static_cast<unsigned>(grid.x),
                           static_cast<unsigned>(grid.y), static_cast<unsigned>(grid.z), block.x,
                           block.y, block.z, /*sharedMemBytes=*/0, externalStream,
                           arguments.data(), nullptr),
      "cuLaunchKernel", info.name));
  if (syncEachLaunch_) {
    std::string what = "after kernel " + info.name + ", KILN_CUDA_SYNC=1";
    return externalStream ? api_->check(api_->cuStreamSynchronize(externalStream),
                                        "cuStreamSynchronize", what)
                          : api_->check(api_->cuCtxSynchronize(), "cuCtxSynchronize", what);
  }
  return Status::OK();
}

Status CudaDevice::synchronize() {
  KILN_RETURN_IF_ERROR(enter());
  if (externalStream)
    return waitForExternalStream();
  return api_->check(api_->cuCtxSynchronize(), "cuCtxSynchronize");
}

Status CudaDevice::useExternalStream(void *stream) {
  externalStream = static_cast<CUstream>(stream);
  return Status::OK();
}

Status CudaDevice::waitForExternalStream() const {
  if (!externalStream)
    return Status::OK();
  return api_->check(api_->cuStreamSynchronize(externalStream), "cuStreamSynchronize");
}

} // namespace kiln::runtime::cuda
