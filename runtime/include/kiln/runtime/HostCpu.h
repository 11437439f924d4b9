//===- HostCpu.h - Whether this CPU can run an artifact's kernels ---------===//
//
// An artifact's kernels are compiled for one CPU and its features (AVX-512,
// F16C, ...). Run on a CPU without one of them, the first such instruction
// kills the process with SIGILL; Program::load refuses them first.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_HOSTCPU_H
#define KILN_RUNTIME_HOSTCPU_H

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

/// Whether this CPU has the instruction-set feature `name` (LLVM's spelling:
/// "avx2", "avx512bf16", "sse4.1"); nullopt for a name this runtime cannot
/// ask the CPU about (tuning flags such as "fast-gather", and every feature
/// on architectures other than x86-64).
std::optional<bool> hostHasCpuFeature(std::string_view name);

/// Of the features `required`, those that `has` says are absent, in order.
/// (Names `has` cannot answer for are taken as present.)
std::vector<std::string>
missingCpuFeatures(const std::vector<std::string> &required,
                   const std::function<std::optional<bool>(std::string_view)> &has =
                       hostHasCpuFeature);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_HOSTCPU_H
