//===- HostCpu.cpp --------------------------------------------------------===//

#include "kiln/runtime/HostCpu.h"

namespace kiln::runtime {

std::optional<bool> hostHasCpuFeature(std::string_view name) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports takes only literals: one entry per feature that
  // compiled kernels may contain and that some x86-64 CPU lacks.
#define KILN_FEATURE(llvmName, gccName)                                        \
  if (name == llvmName)                                                        \
    return __builtin_cpu_supports(gccName) != 0;
  KILN_FEATURE("sse3", "sse3")
  KILN_FEATURE("ssse3", "ssse3")
  KILN_FEATURE("sse4.1", "sse4.1")
  KILN_FEATURE("sse4.2", "sse4.2")
  KILN_FEATURE("popcnt", "popcnt")
  KILN_FEATURE("avx", "avx")
  KILN_FEATURE("avx2", "avx2")
  KILN_FEATURE("fma", "fma")
  KILN_FEATURE("f16c", "f16c")
  KILN_FEATURE("bmi", "bmi")
  KILN_FEATURE("bmi2", "bmi2")
  KILN_FEATURE("lzcnt", "lzcnt")
  KILN_FEATURE("movbe", "movbe")
  KILN_FEATURE("avx512f", "avx512f")
  KILN_FEATURE("avx512vl", "avx512vl")
  KILN_FEATURE("avx512bw", "avx512bw")
  KILN_FEATURE("avx512dq", "avx512dq")
  KILN_FEATURE("avx512cd", "avx512cd")
  KILN_FEATURE("avx512vnni", "avx512vnni")
  KILN_FEATURE("avx512bf16", "avx512bf16")
  KILN_FEATURE("avx512fp16", "avx512fp16")
  KILN_FEATURE("avx512er", "avx512er")
  KILN_FEATURE("avx512ifma", "avx512ifma")
  KILN_FEATURE("avx512vbmi", "avx512vbmi")
  KILN_FEATURE("avx512vbmi2", "avx512vbmi2")
  KILN_FEATURE("avx512bitalg", "avx512bitalg")
  KILN_FEATURE("avx512vpopcntdq", "avx512vpopcntdq")
  KILN_FEATURE("avxvnni", "avxvnni")
  KILN_FEATURE("gfni", "gfni")
  KILN_FEATURE("vaes", "vaes")
  KILN_FEATURE("vpclmulqdq", "vpclmulqdq")
  KILN_FEATURE("aes", "aes")
  KILN_FEATURE("pclmul", "pclmul")
  KILN_FEATURE("sha", "sha")
#undef KILN_FEATURE
#else
  (void)name;
#endif
  return std::nullopt;
}

std::vector<std::string>
missingCpuFeatures(const std::vector<std::string> &required,
                   const std::function<std::optional<bool>(std::string_view)> &has) {
  std::vector<std::string> missing;
  for (const std::string &feature : required)
    if (has(feature) == false)
      missing.push_back(feature);
  return missing;
}

} // namespace kiln::runtime
