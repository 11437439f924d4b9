//===- CpuExecutable.h - A kernel library loaded into the process ---------===//

#ifndef KILN_RUNTIME_CPU_CPUEXECUTABLE_H
#define KILN_RUNTIME_CPU_CPUEXECUTABLE_H

#include "kiln/runtime/Executable.h"
#include "kiln/runtime/Status.h"

#include <memory>
#include <vector>

namespace kiln::runtime {

/// A kernel library loaded with dlopen; unloaded when destroyed.
class CpuExecutable final : public Executable {
public:
  /// Loads `library` (ELF shared object bytes) straight from memory and
  /// resolves every kernel's symbol.
  static StatusOr<std::unique_ptr<CpuExecutable>>
  load(Device &device, const std::vector<uint8_t> &library,
       const std::vector<KernelInfo> &kernels);

  ~CpuExecutable() override;

  /// `i` indexes the `kernels` given to load().
  KernelFn function(size_t i) const { return functions_[i]; }

private:
  CpuExecutable(Device &device, std::vector<KernelInfo> kernels)
      : Executable(device, std::move(kernels), {}) {}

  void *handle_ = nullptr; // from dlopen; null when there are no kernels
  int libraryFd_ = -1;     // the memfd backing the library, if any
  std::vector<KernelFn> functions_;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CPU_CPUEXECUTABLE_H
