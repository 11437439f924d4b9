// Convolutions (kiln_kernel.conv2d) on buffers become parallel loop nests
// the GPU mapping spreads over threads: an implicit GEMM it tiles as a
// matmul, or one output element per iteration (see Passes.td). Attention
// is kiln-gpu-map-workgroups' own (Attention.h).
#include "kiln/Target/GPU/Passes.h"

#include "Emitter.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPULOWERKERNELOPSPASS
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;
using kiln::gpu::accumulatorType;
using kiln::gpu::Emitter;

namespace {

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
    SmallVector<kiln::kernel::Conv2dOp> convolutions;
    getOperation().walk([&](kiln::kernel::Conv2dOp op) { convolutions.push_back(op); });
    for (kiln::kernel::Conv2dOp op : convolutions) {
      if (!isa<MemRefType>(op.getInput().getType())) {
        op->emitOpError("must be bufferized before its GPU lowering");
        return signalPassFailure();
      }
      if (failed(asGemm(op) ? lowerConvolutionAsGemm(op) : lowerConvolution(op)))
        return signalPassFailure();
    }
  }
};

} // namespace
