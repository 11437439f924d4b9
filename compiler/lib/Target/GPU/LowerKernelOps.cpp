// Kiln's kernel ops (attention, convolution) on buffers become parallel loop
// nests the GPU mapping spreads over threads: one output element (a
// convolution) or one query row (attention) per iteration, each computed
// whole by its thread (see Passes.td).
#include "kiln/Target/GPU/Passes.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

namespace kiln::gpu {
#define GEN_PASS_DEF_GPULOWERKERNELOPSPASS
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace {

/// Helpers for emitting scalar loops.
struct Emitter {
  OpBuilder &b;
  Location loc;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value constant(Type type, double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  }
  Value dim(Value memref, int64_t d) {
    return getValueOrCreateConstantIndexOp(b, loc, memref::getMixedSize(b, loc, memref, d));
  }
  Value load(Value memref, ValueRange at) { return memref::LoadOp::create(b, loc, memref, at); }
  /// The value of `memref` at `at`, as `type` (loads of half precision are
  /// widened: sums run in float32).
  Value loadAs(Type type, Value memref, ValueRange at) {
    Value value = load(memref, at);
    if (value.getType() != type)
      value = arith::ExtFOp::create(b, loc, type, value);
    return value;
  }
  void storeAs(Value value, Value memref, ValueRange at) {
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    if (value.getType() != element)
      value = arith::TruncFOp::create(b, loc, element, value);
    memref::StoreOp::create(b, loc, value, memref, at);
  }
  /// for (i = lb; i < ub; ++i) carrying `init`; body returns the new values.
  ValueRange forLoop(Value lb, Value ub, ValueRange init,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(
        b, loc, lb, ub, index(1), init,
        [&](OpBuilder &nested, Location, Value iv, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(nested.getInsertionBlock());
          scf::YieldOp::create(b, loc, body(iv, carried));
        });
    return loop.getResults();
  }
  /// A parallel loop over [0, ubs) whose iterations write distinct
  /// elements (so the GPU mapping spreads it over threads).
  void parallelLoop(ValueRange ubs, function_ref<void(ValueRange)> body) {
    SmallVector<Value> zeros(ubs.size(), index(0)), ones(ubs.size(), index(1));
    auto loop = scf::ParallelOp::create(b, loc, zeros, ubs, ones,
                                        [&](OpBuilder &nested, Location, ValueRange ivs) {
                                          OpBuilder::InsertionGuard guard(b);
                                          b.setInsertionPointToStart(nested.getInsertionBlock());
                                          body(ivs);
                                        });
    loop->setAttr(kiln::kernel::kWritesApartAttr, b.getUnitAttr());
  }
};

Type accumulatorType(Type element) {
  return element.isF16() || element.isBF16() ? Float32Type::get(element.getContext()) : element;
}

/// A convolution's static sizes: output channels, height and width; input
/// channels per group; kernel height and width.
struct ConvSizes {
  int64_t outChannels, outH, outW, channels, kernelH, kernelW;
  explicit ConvSizes(kiln::kernel::Conv2dOp op) {
    auto out = cast<MemRefType>(op.getInit().getType());
    auto weight = cast<MemRefType>(op.getWeight().getType());
    outChannels = out.getDimSize(1), outH = out.getDimSize(2), outW = out.getDimSize(3);
    channels = weight.getDimSize(1), kernelH = weight.getDimSize(2),
    kernelW = weight.getDimSize(3);
  }
};

/// input[n, channel, y * sh + ky * dh, x * sw + kx * dw] * weight[o, c, ky,
/// kx], in the accumulator type: one tap of output (n, o, y, x).
Value tapProduct(Emitter &e, kiln::kernel::Conv2dOp op, Type acc, Value n, Value channel,
                 Value y, Value x, Value o, Value c, Value ky, Value kx) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  auto position = [&](Value outIndex, Value tap, int64_t stride, int64_t dilation) -> Value {
    return arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, outIndex, e.index(stride)),
                                 arith::MulIOp::create(b, loc, tap, e.index(dilation)));
  };
  Value row = position(y, ky, op.getStrides()[0], op.getDilations()[0]);
  Value column = position(x, kx, op.getStrides()[1], op.getDilations()[1]);
  return arith::MulFOp::create(b, loc, e.loadAs(acc, op.getInput(), {n, channel, row, column}),
                               e.loadAs(acc, op.getWeight(), {o, c, ky, kx}));
}

/// The convolution's epilogue (if any) on its value `sum` at output
/// element (n, o, y, x): the epilogue block's first argument is the value,
/// then one element of each epilogue input at its map of (n, o, y, x).
Value applyEpilogue(OpBuilder &b, kiln::kernel::Conv2dOp op, Value sum, ValueRange at4) {
  if (op.getEpilogue().empty())
    return sum;
  Location loc = op.getLoc();
  Emitter e{b, loc};
  Block &block = op.getEpilogue().front();
  IRMapping mapping;
  Value value = sum;
  if (value.getType() != block.getArgument(0).getType())
    value = arith::TruncFOp::create(b, loc, block.getArgument(0).getType(), value);
  mapping.map(block.getArgument(0), value);
  ArrayAttr maps = op.getEpilogueMapsAttr();
  SmallVector<OpFoldResult> dims(at4.begin(), at4.end());
  for (auto [i, operand] : llvm::enumerate(op.getEpilogueInputs())) {
    AffineMap map = cast<AffineMapAttr>(maps[i]).getValue();
    SmallVector<Value> at;
    for (AffineExpr expr : map.getResults())
      at.push_back(
          affine::makeComposedAffineApply(b, loc, AffineMap::get(4, 0, expr), dims).getResult());
    mapping.map(block.getArgument(i + 1), e.load(operand, at));
  }
  for (Operation &inner : block.without_terminator())
    b.clone(inner, mapping);
  return mapping.lookup(block.getTerminator()->getOperand(0));
}

/// An ungrouped convolution with static sizes as an implicit GEMM whose
/// loops the GPU mapping tiles as a matmul (kiln::gpu::matchTiledMatmul):
/// rows (n * OH + y, x) of output positions, columns o, depth c * KH * KW.
/// The sums go to a float32-or-wider temporary laid out [N * OH, OW, O]
/// (the loops' own variables index it): set to the bias, combined over the
/// depth, then through the epilogue into the output.
LogicalResult lowerConvolutionAsGemm(kiln::kernel::Conv2dOp op) {
  auto out = cast<MemRefType>(op.getInit().getType());
  OpBuilder b(op);
  Emitter e{b, op.getLoc()};
  Location loc = op.getLoc();
  Type acc = accumulatorType(out.getElementType());
  auto [outChannels, outH, outW, channels, kernelH, kernelW] = ConvSizes(op);
  int64_t batch = out.getDimSize(0);
  Value sums = memref::AllocOp::create(
      b, loc, MemRefType::get({batch * outH, outW, outChannels}, acc));
  Value rows = e.index(batch * outH);
  e.parallelLoop({rows, e.index(outW), e.index(outChannels)}, [&](ValueRange ivs) {
    Value bias = op.getBias() ? e.loadAs(acc, op.getBias(), {ivs[2]}) : e.constant(acc, 0.0);
    memref::StoreOp::create(b, loc, bias, sums, ivs);
  });
  e.parallelLoop({rows, e.index(outW), e.index(outChannels)}, [&](ValueRange ivs) {
    Value row = ivs[0], x = ivs[1], o = ivs[2];
    scf::ForOp::create(
        b, loc, e.index(0), e.index(channels * kernelH * kernelW), e.index(1), ValueRange{},
        [&](OpBuilder &nested, Location, Value k, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(nested.getInsertionBlock());
          Value c = arith::DivUIOp::create(b, loc, k, e.index(kernelH * kernelW));
          Value ky = arith::RemUIOp::create(
              b, loc, arith::DivUIOp::create(b, loc, k, e.index(kernelW)), e.index(kernelH));
          Value kx = arith::RemUIOp::create(b, loc, k, e.index(kernelW));
          Value n = arith::DivUIOp::create(b, loc, row, e.index(outH));
          Value y = arith::RemUIOp::create(b, loc, row, e.index(outH));
          Value product = tapProduct(e, op, acc, n, c, y, x, o, c, ky, kx);
          Value old = e.load(sums, {row, x, o});
          memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, product), sums,
                                  ValueRange{row, x, o});
          scf::YieldOp::create(b, loc);
        });
  });
  e.parallelLoop({rows, e.index(outChannels), e.index(outW)}, [&](ValueRange ivs) {
    Value row = ivs[0], o = ivs[1], x = ivs[2];
    Value n = arith::DivUIOp::create(b, loc, row, e.index(outH));
    Value y = arith::RemUIOp::create(b, loc, row, e.index(outH));
    Value sum = e.load(sums, {row, x, o});
    e.storeAs(applyEpilogue(b, op, sum, {n, o, y, x}), op.getInit(), {n, o, y, x});
  });
  op.erase();
  return success();
}

/// out[n, o, y, x] = epilogue(bias[o] + sum over c, ky, kx of
/// input[n, g * C + c, y * sh + ky * dh, x * sw + kx * dw] * weight[o, c, ky, kx])
/// with g the group of o; the input is already padded. One iteration per
/// (n * OH + y, o, x): the first dimension is the kernel's rows.
LogicalResult lowerConvolution(kiln::kernel::Conv2dOp op) {
  auto input = cast<MemRefType>(op.getInput().getType());
  auto weight = cast<MemRefType>(op.getWeight().getType());
  auto out = cast<MemRefType>(op.getInit().getType());
  if (!input.getElementType().isIntOrFloat() || !isa<FloatType>(input.getElementType()))
    return op.emitOpError("has no GPU lowering for ") << input.getElementType() << " elements";
  for (auto [type, dims] : {std::pair{weight, 4}, std::pair{out, 4}})
    for (int64_t d = 1; d < dims; ++d)
      if (type.isDynamicDim(d))
        return op.emitOpError("on the GPU needs static channels, image and kernel sizes");
  OpBuilder b(op);
  Emitter e{b, op.getLoc()};
  Location loc = op.getLoc();
  Type acc = accumulatorType(out.getElementType());
  auto [outChannels, outH, outW, channels, kernelH, kernelW] = ConvSizes(op);
  int64_t perGroup = outChannels / op.getGroups();
  Value rows = arith::MulIOp::create(b, loc, e.dim(op.getInit(), 0), e.index(outH));
  e.parallelLoop({rows, e.index(outChannels), e.index(outW)}, [&](ValueRange ivs) {
    Value n = arith::DivUIOp::create(b, loc, ivs[0], e.index(outH));
    Value y = arith::RemUIOp::create(b, loc, ivs[0], e.index(outH));
    Value o = ivs[1], x = ivs[2];
    Value firstChannel = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, o, e.index(perGroup)), e.index(channels));
    Value sum = op.getBias() ? e.loadAs(acc, op.getBias(), {o}) : e.constant(acc, 0.0);
    sum = e.forLoop(e.index(0), e.index(channels), sum, [&](Value c, ValueRange carried) {
      Value channel = arith::AddIOp::create(b, loc, firstChannel, c);
      return SmallVector<Value>{e.forLoop(
          e.index(0), e.index(kernelH), carried, [&](Value ky, ValueRange carried) {
            return SmallVector<Value>{e.forLoop(
                e.index(0), e.index(kernelW), carried, [&](Value kx, ValueRange carried) {
                  Value product = tapProduct(e, op, acc, n, channel, y, x, o, c, ky, kx);
                  return SmallVector<Value>{arith::AddFOp::create(b, loc, carried[0], product)};
                })[0]};
          })[0]};
    })[0];
    Value result = applyEpilogue(b, op, sum, {n, o, y, x});
    e.storeAs(result, op.getInit(), {n, o, y, x});
  });
  op.erase();
  return success();
}

/// Each query row (b, h, i) by one thread, with the online softmax over the
/// keys: running max m and sum l, the output row (in place) rescaled as the
/// max grows; the [L, S] scores are never stored. Masks, causality, grouped
/// key heads and fully masked rows as the CPU lowering has them
/// (Target/CPU/LowerAttention.cpp). One iteration per (b * H + h, i): the
/// first dimension is the kernel's rows (its (batch, head) pairs).
LogicalResult lowerAttention(kiln::kernel::AttentionOp op) {
  auto q = cast<MemRefType>(op.getQ().getType());
  auto k = cast<MemRefType>(op.getK().getType());
  auto v = cast<MemRefType>(op.getV().getType());
  if (!isa<FloatType>(q.getElementType()))
    return op.emitOpError("has no GPU lowering for ") << q.getElementType() << " elements";
  for (auto [type, d] : {std::pair{q, 1}, std::pair{q, 3}, std::pair{k, 1}, std::pair{v, 3}})
    if (type.isDynamicDim(d))
      return op.emitOpError("on the GPU needs static head counts and head sizes");
  OpBuilder b(op);
  Emitter e{b, op.getLoc()};
  Location loc = op.getLoc();
  Type acc = accumulatorType(q.getElementType());
  int64_t heads = q.getDimSize(1), headSize = q.getDimSize(3), kvHeads = k.getDimSize(1),
          valueSize = v.getDimSize(3);
  double negInf = -std::numeric_limits<double>::infinity();
  // The outputs viewed as [B * H, L, ...], so that every store indexes with
  // the loop's own variables.
  Value out = memref::CollapseShapeOp::create(b, loc, op.getInit(),
                                              ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
  Value logsumexp = memref::CollapseShapeOp::create(
      b, loc, op.getLogsumexpInit(), ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  Value pairs = arith::MulIOp::create(b, loc, e.dim(op.getQ(), 0), e.index(heads));
  Value queries = e.dim(op.getQ(), 2), keys = e.dim(op.getK(), 2);
  e.parallelLoop({pairs, queries}, [&](ValueRange ivs) {
    Value pair = ivs[0], i = ivs[1];
    Value batch = arith::DivUIOp::create(b, loc, pair, e.index(heads));
    Value head = arith::RemUIOp::create(b, loc, pair, e.index(heads));
    Value kvHead = arith::DivUIOp::create(b, loc, head, e.index(heads / kvHeads));
    e.forLoop(e.index(0), e.index(valueSize), {}, [&](Value d, ValueRange) {
      e.storeAs(e.constant(acc, 0.0), out, {pair, i, d});
      return SmallVector<Value>{};
    });
    Value zero = e.constant(acc, 0.0);
    ValueRange stats = e.forLoop(
        e.index(0), keys, {e.constant(acc, negInf), zero}, [&](Value j, ValueRange carried) {
          Value max = carried[0], sum = carried[1];
          Value score = e.forLoop(e.index(0), e.index(headSize), zero, [&](Value d, ValueRange s) {
            Value product = arith::MulFOp::create(b, loc, e.loadAs(acc, op.getQ(), {batch, head, i, d}),
                                                  e.loadAs(acc, op.getK(), {batch, kvHead, j, d}));
            return SmallVector<Value>{arith::AddFOp::create(b, loc, s[0], product)};
          })[0];
          score = arith::MulFOp::create(b, loc, score,
                                        e.constant(acc, op.getScale().convertToDouble()));
          if (Value mask = op.getMask()) {
            auto type = cast<MemRefType>(mask.getType());
            SmallVector<Value> at{batch, head, i, j};
            for (int64_t dim = 0; dim < 4; ++dim)
              if (type.getDimSize(dim) == 1)
                at[dim] = e.index(0); // broadcast
            score = arith::AddFOp::create(b, loc, score, e.loadAs(acc, mask, at));
          }
          if (op.getIsCausal()) {
            Value future = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, j, i);
            score = arith::SelectOp::create(b, loc, future, e.constant(acc, negInf), score);
          }
          Value newMax = arith::MaximumFOp::create(b, loc, max, score);
          // While every key so far is masked (max -inf), subtract 0: exp
          // then gives 0 instead of exp(-inf - -inf) = NaN.
          Value allMasked = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, newMax,
                                                  e.constant(acc, negInf));
          Value base = arith::SelectOp::create(b, loc, allMasked, zero, newMax);
          Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, score, base));
          Value alpha = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, max, base));
          Value newSum = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, sum, alpha), p);
          e.forLoop(e.index(0), e.index(valueSize), {}, [&](Value d, ValueRange) {
            Value old = e.loadAs(acc, out, {pair, i, d});
            Value add = arith::MulFOp::create(b, loc, p, e.loadAs(acc, op.getV(), {batch, kvHead, j, d}));
            e.storeAs(arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, old, alpha), add),
                      out, {pair, i, d});
            return SmallVector<Value>{};
          });
          return SmallVector<Value>{newMax, newSum};
        });
    // out /= l and logsumexp = m + log(l); a row whose keys are all masked
    // gives 0 and logsumexp 0 (as ATen's CPU flash attention), or NaN where
    // the softmax written out would.
    Value max = stats[0], sum = stats[1];
    Value masked = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum, zero);
    Value one = e.constant(acc, 1.0);
    max = arith::SelectOp::create(
        b, loc,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max, e.constant(acc, negInf)),
        zero, max);
    Value safeSum = arith::SelectOp::create(b, loc, masked, one, sum);
    e.storeAs(arith::AddFOp::create(b, loc, max, math::LogOp::create(b, loc, safeSum)), logsumexp,
              {pair, i});
    Value reciprocal =
        arith::DivFOp::create(b, loc, one, op.getMaskedRowsNan() ? sum : safeSum);
    e.forLoop(e.index(0), e.index(valueSize), {}, [&](Value d, ValueRange) {
      e.storeAs(arith::MulFOp::create(b, loc, e.loadAs(acc, out, {pair, i, d}), reciprocal), out,
                {pair, i, d});
      return SmallVector<Value>{};
    });
  });
  op.erase();
  return success();
}

/// Whether a convolution goes as an implicit GEMM: ungrouped, float, all
/// sizes static (the temporary's), at least 64 output channels (a tile's
/// width: narrower ones reuse too little of what a tile loads) and 32
/// output positions (its height).
bool asGemm(kiln::kernel::Conv2dOp op) {
  auto out = cast<MemRefType>(op.getInit().getType());
  auto weight = cast<MemRefType>(op.getWeight().getType());
  return op.getGroups() == 1 && isa<FloatType>(out.getElementType()) && out.hasStaticShape() &&
         weight.hasStaticShape() && out.getDimSize(1) >= 64 &&
         out.getDimSize(0) * out.getDimSize(2) * out.getDimSize(3) >= 32;
}

struct GpuLowerKernelOpsPass
    : kiln::gpu::impl::GpuLowerKernelOpsPassBase<GpuLowerKernelOpsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<kiln::kernel::Conv2dOp, kiln::kernel::AttentionOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (!isa<MemRefType>(op->getOperand(0).getType())) {
        op->emitOpError("must be bufferized before its GPU lowering");
        return signalPassFailure();
      }
      LogicalResult lowered = success();
      if (auto conv = dyn_cast<kiln::kernel::Conv2dOp>(op))
        lowered = asGemm(conv) ? lowerConvolutionAsGemm(conv) : lowerConvolution(conv);
      else
        lowered = lowerAttention(cast<kiln::kernel::AttentionOp>(op));
      if (failed(lowered))
        return signalPassFailure();
    }
  }
};

} // namespace
