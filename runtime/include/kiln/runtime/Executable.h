//===- Executable.h - Compiled kernels loaded into the process -----------===//

#ifndef KILN_RUNTIME_EXECUTABLE_H
#define KILN_RUNTIME_EXECUTABLE_H

#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace kiln::runtime {

/// The CPU kernel ABI. A launch calls the kernel once per workgroup id in
/// [0, workgroupCount), possibly concurrently; bindings[i] is the data pointer
/// of the launch's i-th buffer (inputs first, then outputs).
using KernelFn = void (*)(int64_t workgroupId, int64_t workgroupCount,
                          void **bindings);

/// The artifact target string CpuExecutable can run on this host, e.g.
/// "cpu-x86_64".
const char *hostCpuTarget();

/// A kernel library loaded with dlopen; unloaded when destroyed, so it must
/// outlive every call to its kernels.
class CpuExecutable {
public:
  /// Loads `library` (ELF shared object bytes) straight from memory and
  /// resolves every kernel's symbol.
  static StatusOr<std::unique_ptr<CpuExecutable>>
  load(const std::vector<uint8_t> &library,
       const std::vector<KernelInfo> &kernels);

  ~CpuExecutable();
  CpuExecutable(const CpuExecutable &) = delete;
  CpuExecutable &operator=(const CpuExecutable &) = delete;

  size_t numKernels() const { return kernels_.size(); }
  /// `i` indexes the `kernels` given to load().
  KernelFn kernel(size_t i) const { return kernels_[i]; }

private:
  CpuExecutable(void *handle, std::vector<KernelFn> kernels)
      : handle_(handle), kernels_(std::move(kernels)) {}

  void *handle_; // from dlopen; null when there are no kernels
  int libraryFd_ = -1; // the memfd backing the library, if any
  std::vector<KernelFn> kernels_;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_EXECUTABLE_H
