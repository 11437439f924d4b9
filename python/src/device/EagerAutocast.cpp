// torch.autocast("kiln"): the CUDA autocast op lists, for the kiln device.
// ATen declares the lists once (AT_FORALL_*) for every backend to reuse; the
// KERNEL_* macros register into a library named `m`.
#include "EagerDevice.h"

#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace kiln::python::eager {

void registerEagerAutocast() {
  // The lists name ATen's types unqualified, as in ATen's own registrations.
  using namespace at;
  using namespace at::autocast;
  // Ops autocast does not list run as they are.
  static torch::Library others(torch::Library::IMPL, "_", c10::DispatchKey::AutocastPrivateUse1,
                               __FILE__, __LINE__);
  others.fallback(torch::CppFunction::makeFallthrough());

  static torch::Library m(torch::Library::IMPL, "aten", c10::DispatchKey::AutocastPrivateUse1,
                          __FILE__, __LINE__);
#define KILN_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define KILN_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define KILN_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define KILN_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(KILN_LOWER_PRECISION_FP)
  AT_FORALL_FP32(KILN_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(KILN_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(KILN_PROMOTE)
#undef KILN_LOWER_PRECISION_FP
#undef KILN_FP32
#undef KILN_FP32_SET_OPT_DTYPE
#undef KILN_PROMOTE
}

} // namespace kiln::python::eager
