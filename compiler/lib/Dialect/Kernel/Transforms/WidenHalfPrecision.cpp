// Half-precision arithmetic runs in float32, as PyTorch's CPU kernels do.
//
// ATen computes an op on float16 or bfloat16 tensors in float32 (its
// vectorized kernels convert on load, accumulate matmuls, reductions,
// softmax and norms in float32) and rounds the result once, to the
// output's dtype. Here each such op takes its half operands converted to
// float32 and its half results converted back, so every ATen op rounds where
// eager's does; the converts fuse into the kernels around them (an extf on
// load, a truncf on store). One ATen op the importer spelled as several ops
// (addmm as a matmul and an add, log_softmax as its steps) rounds only its
// final result: ops located at the same FX node pass each other float32.
// Ops that only move elements (reshapes, permutes, slices, concatenations,
// gathers, selects) keep their half element type between ATen ops: they
// round nothing, and move half the bytes.
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_WIDENHALFPRECISIONPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::graph;

namespace {

bool isHalf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && (tensor.getElementType().isF16() || tensor.getElementType().isBF16());
}

RankedTensorType withElement(Type type, Type element) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(), element, tensor.getEncoding());
}

/// Ops that move or select elements without computing on them.
bool movesElementsOnly(Operation *op) {
  if (auto scatter = dyn_cast<ScatterOp>(op))
    return scatter.getReduce() == kiln::graph::ScatterReduction::None;
  return isa<ReshapeOp, PermuteOp, ExpandOp, SliceOp, ConcatOp, PadOp, IndexOp, GatherOp,
             EmbeddingOp, CloneOp, WhereOp, ConstantOp, SizeOp, AssertOp, CollectiveOp>(op);
}

/// The FX node an op was imported from (the importer names each op's
/// location after its node), or empty.
StringRef nodeOf(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().getValue();
  return {};
}

struct WidenHalfPrecisionPass
    : kiln::kernel::impl::WidenHalfPrecisionPassBase<WidenHalfPrecisionPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Type f32 = Float32Type::get(&getContext());
    // A rounded half result -> its float32 value, for ops of the same node.
    DenseMap<Value, Value> wideOf;
    auto sameNodeWide = [&](Value v, Operation *user) -> Value {
      auto it = wideOf.find(v);
      StringRef node = nodeOf(user);
      if (it == wideOf.end() || node.empty() || nodeOf(it->second.getDefiningOp()) != node)
        return {};
      return it->second;
    };
    func.walk([&](Operation *op) {
      if (op->getDialect() != op->getContext()->getLoadedDialect<GraphDialect>())
        return;
      OpBuilder b(op);
      if (auto convert = dyn_cast<ConvertOp>(op)) {
        Value input = convert.getInput();
        if (Value wide = sameNodeWide(input, op))
          convert.getInputMutable().assign(input = wide);
        // float16 <-> bfloat16 goes through float32, as ATen's does.
        Type from = input.getType(), to = convert.getResult().getType();
        if (isHalf(from) && isHalf(to) &&
            cast<RankedTensorType>(from).getElementType() != cast<RankedTensorType>(to).getElementType())
          convert.getInputMutable().assign(
              ConvertOp::create(b, op->getLoc(), withElement(from, f32), input));
        return;
      }
      bool inNodeOperand = llvm::any_of(op->getOperands(), [&](Value v) {
        return static_cast<bool>(sameNodeWide(v, op));
      });
      bool computes = llvm::any_of(op->getOperandTypes(), isHalf) ||
                      llvm::any_of(op->getResultTypes(), isHalf);
      if (!computes || (movesElementsOnly(op) && !inNodeOperand))
        return;
      bool keepOperands = halfMatmulOperands && isa<MatmulOp>(op);
      for (OpOperand &operand : op->getOpOperands()) {
        if (!isHalf(operand.get().getType()) || keepOperands)
          continue;
        Value wide = sameNodeWide(operand.get(), op);
        operand.assign(wide ? wide
                            : ConvertOp::create(b, op->getLoc(),
                                                withElement(operand.get().getType(), f32),
                                                operand.get()).getResult());
      }
      b.setInsertionPointAfter(op);
      for (OpResult result : op->getResults()) {
        Type narrow = result.getType();
        if (!isHalf(narrow))
          continue;
        result.setType(withElement(narrow, f32));
        auto rounded = ConvertOp::create(b, op->getLoc(), narrow, result);
        result.replaceAllUsesExcept(rounded, rounded);
        wideOf[rounded] = result;
      }
    });
    // Roundings that only ops of their own node read are dead now.
    for (auto [rounded, wide] : wideOf)
      if (rounded.use_empty())
        rounded.getDefiningOp()->erase();
  }
};

} // namespace
