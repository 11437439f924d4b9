// A graph's new values of its inputs computed in the inputs' own buffers
// (see Passes.td): an optimizer step updates parameters where they are,
// instead of into new buffers that the caller copies back.
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Graph/IR/SymbolicShapes.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_WRITEINPUTSINPLACEPASS
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

bool isOutputBinding(plan::LaunchOp launch, unsigned binding) {
  return binding >= launch.getNumInputs();
}

/// Does the kernel of `launch` read its input binding `input` only where,
/// and before, it writes its output binding `output`?
bool kernelAllowsInPlace(ModuleOp module, plan::LaunchOp launch, int64_t input,
                         int64_t output) {
  auto kernel = module.lookupSymbol<func::FuncOp>(launch.getKernel());
  auto pairs = kernel ? kernel->getAttrOfType<DenseI64ArrayAttr>(kernel::kInPlaceOperandsAttr)
                      : DenseI64ArrayAttr();
  if (!pairs)
    return false;
  ArrayRef<int64_t> flat = pairs.asArrayRef();
  for (size_t i = 0; i + 1 < flat.size(); i += 2)
    if (flat[i] == input && flat[i + 1] == output)
      return true;
  return false;
}

/// May the input `arg` hold `writer`'s output binding `output` from that
/// launch on? Every reader of its old value must have run by then, or be
/// that launch reading it at the elements it writes.
bool oldValueDeadAfter(ModuleOp module, Value arg, plan::LaunchOp writer, int64_t output) {
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    if (auto launch = dyn_cast<plan::LaunchOp>(user)) {
      unsigned binding = use.getOperandNumber();
      if (isOutputBinding(launch, binding) || launch.getCached())
        return false; // written already, or read by a launch that may skip calls
      if (launch == writer ? !kernelAllowsInPlace(module, launch, binding, output)
                           : !launch->isBeforeInBlock(writer))
        return false;
    } else if (auto view = dyn_cast<plan::ViewOp>(user)) {
      // A view of the input: read only by launches that run before it.
      for (OpOperand &viewUse : view.getResult().getUses()) {
        auto launch = dyn_cast<plan::LaunchOp>(viewUse.getOwner());
        if (!launch || launch.getCached() || isOutputBinding(launch, viewUse.getOperandNumber()) ||
            !launch->isBeforeInBlock(writer))
          return false;
      }
    } else {
      return false; // returned, or read by anything else
    }
  }
  return true;
}

/// Binds input `inputIndex`'s buffer in place of the plan's result
/// `resultIndex` when that is safe; returns whether it did.
bool writeInPlace(ModuleOp module, func::FuncOp entry, func::ReturnOp ret, int64_t resultIndex,
                  int64_t inputIndex) {
  if (resultIndex < 0 || resultIndex >= (int64_t)ret.getNumOperands() || inputIndex < 0 ||
      inputIndex >= (int64_t)entry.getNumArguments())
    return false;
  Value arg = entry.getArgument(inputIndex);
  Value result = ret.getOperand(resultIndex);
  auto alloc = result.getDefiningOp<plan::AllocOp>();
  if (!alloc || alloc.getPersistent() || result.getType() != arg.getType() ||
      alloc.getDimsAttr() != entry.getArgAttrOfType<AffineMapAttr>(inputIndex, plan::kDimsAttr))
    return false;
  // The result: returned once, written by one launch, read by later ones.
  plan::LaunchOp writer;
  int64_t output = -1;
  for (OpOperand &use : result.getUses()) {
    Operation *user = use.getOwner();
    if (user == ret.getOperation()) {
      if ((int64_t)use.getOperandNumber() != resultIndex)
        return false;
      continue;
    }
    auto launch = dyn_cast<plan::LaunchOp>(user);
    if (!launch)
      return false;
    if (isOutputBinding(launch, use.getOperandNumber())) {
      if (writer)
        return false;
      writer = launch;
      output = use.getOperandNumber();
    }
  }
  if (!writer || !oldValueDeadAfter(module, arg, writer, output))
    return false;
  result.replaceAllUsesWith(arg);
  alloc.erase();
  return true;
}

struct WriteInputsInPlacePass : kiln::impl::WriteInputsInPlacePassBase<WriteInputsInPlacePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto entry : module.getOps<func::FuncOp>()) {
      auto writes = entry->getAttrOfType<ArrayAttr>(graph::kInputWritesAttr);
      if (!entry->hasAttr(plan::kEntryAttr) || !writes || entry.isExternal())
        continue;
      auto ret = cast<func::ReturnOp>(entry.getBody().front().getTerminator());
      for (Attribute write : writes) {
        auto pair = dyn_cast<DenseI64ArrayAttr>(write);
        if (pair && pair.size() == 2)
          writeInPlace(module, entry, ret, pair[0], pair[1]);
      }
    }
  }
};

} // namespace
