// Vulkan forbids descriptor decorations on the push-constant block, which
// spirv-lower-abi-attrs adds to every interface variable (see Passes.td).
#include "kiln/Target/Vulkan/Passes.h"

namespace kiln::vulkan {
#define GEN_PASS_DEF_SPIRVPUSHCONSTANTSPASS
#include "kiln/Target/Vulkan/Passes.h.inc"
} // namespace kiln::vulkan

using namespace mlir;

namespace {

struct SpirvPushConstantsPass
    : kiln::vulkan::impl::SpirvPushConstantsPassBase<SpirvPushConstantsPass> {
  void runOnOperation() override {
    getOperation().walk([](spirv::GlobalVariableOp variable) {
      auto pointer = dyn_cast<spirv::PointerType>(variable.getType());
      if (!pointer || pointer.getStorageClass() != spirv::StorageClass::PushConstant)
        return;
      variable.removeBindingAttr();
      variable.removeDescriptorSetAttr();
    });
  }
};

} // namespace
