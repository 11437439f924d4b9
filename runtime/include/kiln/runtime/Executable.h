//===- Executable.h - Kernels loaded onto a device ------------------------===//

#ifndef KILN_RUNTIME_EXECUTABLE_H
#define KILN_RUNTIME_EXECUTABLE_H

#include "kiln/runtime/Artifact.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::runtime {

class Device;

/// The CPU kernel ABI. A launch calls the kernel once per workgroup id in
/// [0, workgroupCount), possibly concurrently; bindings[i] is the data pointer
/// of the launch's i-th buffer (inputs first, then outputs), followed, for a
/// kernel that takes size symbols, by their int64 values, one per slot.
using KernelFn = void (*)(int64_t workgroupId, int64_t workgroupCount,
                          void **bindings);

/// The executable format the CPU device of this host loads, e.g.
/// "cpu-x86_64".
const char *hostCpuTarget();

/// An artifact's kernels loaded by one device (Device::loadExecutable), which
/// launches them; it unloads them when destroyed, so it must outlive every
/// launch of its kernels.
class Executable {
public:
  virtual ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  Device &device() const { return device_; }
  size_t numKernels() const { return kernels_.size(); }
  /// `i` indexes the kernels given to Device::loadExecutable.
  const KernelInfo &kernel(size_t i) const { return kernels_[i]; }
  /// Threads per workgroup of kernel `i`.
  BlockSize blockSize(size_t i) const {
    return i < blockSizes_.size() ? blockSizes_[i] : BlockSize();
  }

protected:
  Executable(Device &device, std::vector<KernelInfo> kernels,
             std::vector<BlockSize> blockSizes)
      : device_(device), kernels_(std::move(kernels)), blockSizes_(std::move(blockSizes)) {}

private:
  Device &device_;
  std::vector<KernelInfo> kernels_;
  std::vector<BlockSize> blockSizes_;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_EXECUTABLE_H
