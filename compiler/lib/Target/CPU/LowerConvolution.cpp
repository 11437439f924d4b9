// Direct convolution for the CPU: kiln_kernel.conv2d on buffers becomes a
// register-blocked loop nest that reads the (already padded) input in place,
// with no im2col buffer.
//
// For each output row (n, y), the unit workgroups split, tiles of MR = 6
// output channels by NR = two vectors of output columns stay in 12 vector
// registers while the reduction runs over input channels c and kernel taps
// (ky, kx): each tap broadcasts weight[o, c, ky, kx] for the tile's channels
// and FMAs it with the input row segment input[n, c, y*sh + ky*dh, x*sw +
// kx*dw] (a vector load for stride 1, a gather otherwise). The ragged last
// columns use masked loads and stores, the ragged last channels a smaller MR.
// A grouped convolution runs the tiles group by group, each reducing over
// its group's input channels only (depthwise: one channel per tile row).
// The bias initializes the accumulators; the epilogue (batch norm,
// activation, residual) is applied to them in registers before the store.
// The batch may be symbolic (the row loop then ends at N * OH computed from
// the buffer); channels, image and kernel sizes are static.
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Target/CPU/Passes.h"
#include "MatmulEmitter.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_LOWERCONVOLUTIONPASS
#include "kiln/Target/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace {

constexpr int64_t kChannelTile = 6;      // MR: output channels per register tile
constexpr int64_t kMaxUnrolledTaps = 8;  // kernel columns unrolled in the reduction

class ConvolutionEmitter {
public:
  ConvolutionEmitter(OpBuilder &b, kiln::kernel::Conv2dOp op, int64_t vl)
      : b(b), loc(op.getLoc()), op(op), vl(vl) {
    auto input = cast<MemRefType>(op.getInput().getType());
    auto weight = cast<MemRefType>(op.getWeight().getType());
    auto out = cast<MemRefType>(op.getInit().getType());
    element = input.getElementType();
    channels = weight.getDimSize(1); // per group
    outChannels = weight.getDimSize(0);
    groups = op.getGroups();
    kernelH = weight.getDimSize(2);
    kernelW = weight.getDimSize(3);
    outH = out.getDimSize(2);
    outW = out.getDimSize(3);
    batch = memref::getMixedSize(b, loc, op.getInit(), 0); // may be symbolic
    strideH = op.getStrides()[0];
    strideW = op.getStrides()[1];
    dilationH = op.getDilations()[0];
    dilationW = op.getDilations()[1];
    vector = VectorType::get({vl}, element);
  }

  void emit() {
    // One iteration per output row (n, y): the loop workgroups split.
    std::optional<int64_t> knownBatch = getConstantIntValue(batch);
    Value rows = knownBatch ? index(*knownBatch * outH)
                            : arith::MulIOp::create(b, loc, cast<Value>(batch), index(outH));
    forLoop(index(0), rows, 1, [&](Value row) {
      n = arith::DivUIOp::create(b, loc, row, index(outH));
      y = arith::RemUIOp::create(b, loc, row, index(outH));
      if (groups == 1) {
        firstInputChannel = index(0);
        return groupTiles(index(0));
      }
      forLoop(index(0), index(groups), 1, [&](Value g) {
        firstInputChannel = mul(g, channels);
        groupTiles(mul(g, outChannels / groups));
      });
    });
    op.erase();
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, int64_t v) {
    if (std::optional<int64_t> known = getConstantIntValue(x))
      return index(*known + v);
    return v ? arith::AddIOp::create(b, loc, x, index(v)).getResult() : x;
  }
  Value mul(Value x, int64_t v) {
    return v == 1 ? x : arith::MulIOp::create(b, loc, x, index(v)).getResult();
  }
  void forLoop(Value lb, Value ub, int64_t step, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, lb, ub, index(step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }

  /// The output channels of one group, from `first`: tiles of MR, then the
  /// ragged rest.
  void groupTiles(Value first) {
    int64_t perGroup = outChannels / groups;
    int64_t full = perGroup - perGroup % kChannelTile;
    if (full)
      forLoop(first, add(first, full), kChannelTile,
              [&](Value o0) { channelTile(o0, kChannelTile); });
    if (full < perGroup)
      channelTile(add(first, full), perGroup - full);
  }

  /// Output channels [o0, o0 + mr) of the row: full tiles of two vectors of
  /// columns, then the ragged rest one vector at a time, the last masked.
  void channelTile(Value o0, int64_t mr) {
    int64_t tile = 2 * vl;
    int64_t fullColumns = outW - outW % tile;
    forLoop(index(0), index(fullColumns), tile, [&](Value x0) { block(o0, mr, x0, 2, vl); });
    for (int64_t x = fullColumns; x < outW; x += vl)
      block(o0, mr, index(x), 1, std::min(vl, outW - x));
  }

  /// The mr x vectors register tile at (o0, x0); the last vector has `lanes`
  /// active lanes (masked when fewer than vl).
  void block(Value o0, int64_t mr, Value x0, int64_t vectors, int64_t lanes) {
    Value mask;
    if (lanes < vl)
      mask = vector::ConstantMaskOp::create(b, loc, VectorType::get({vl}, b.getI1Type()),
                                            ArrayRef<int64_t>{lanes});
    SmallVector<Value> init;
    for (int64_t r = 0; r < mr; ++r) {
      Value start = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
      if (Value bias = op.getBias())
        start = memref::LoadOp::create(b, loc, bias, add(o0, r));
      Value splat = vector::BroadcastOp::create(b, loc, vector, start);
      init.append(vectors, splat);
    }
    auto loop = scf::ForOp::create(b, loc, index(0), index(channels * kernelH), index(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value iv = loop.getInductionVar();
      // c: the weight's input channel (within the group); the input's is
      // the group's first plus c.
      Value c = arith::DivUIOp::create(b, loc, iv, index(kernelH));
      Value inputChannel = arith::AddIOp::create(b, loc, firstInputChannel, c);
      Value ky = arith::RemUIOp::create(b, loc, iv, index(kernelH));
      Value iy = arith::AddIOp::create(b, loc, mul(y, strideH), mul(ky, dilationH));
      SmallVector<Value> acc(loop.getRegionIterArgs());
      // One kernel column: mr broadcasts times `vectors` input segments.
      auto tap = [&](Value kx, SmallVector<Value> &acc) {
        SmallVector<Value> rows;
        for (int64_t v = 0; v < vectors; ++v) {
          Value ix = arith::AddIOp::create(b, loc, add(mul(x0, strideW), v * vl * strideW),
                                           mul(kx, dilationW));
          bool masked = mask && v == vectors - 1;
          rows.push_back(inputRow(inputChannel, iy, ix, masked ? mask : Value()));
        }
        for (int64_t r = 0; r < mr; ++r) {
          Value w = memref::LoadOp::create(b, loc, op.getWeight(), ValueRange{add(o0, r), c, ky, kx});
          Value splat = vector::BroadcastOp::create(b, loc, vector, w);
          for (int64_t v = 0; v < vectors; ++v)
            acc[r * vectors + v] = vector::FMAOp::create(b, loc, splat, rows[v], acc[r * vectors + v]);
        }
      };
      // Narrow kernels are unrolled; wide ones (audio front ends) loop, to
      // keep the code small.
      if (kernelW <= kMaxUnrolledTaps) {
        for (int64_t kx = 0; kx < kernelW; ++kx)
          tap(index(kx), acc);
      } else {
        auto columns = scf::ForOp::create(b, loc, index(0), index(kernelW), index(1), acc);
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(columns.getBody());
        SmallVector<Value> carried(columns.getRegionIterArgs());
        tap(columns.getInductionVar(), carried);
        scf::YieldOp::create(b, loc, carried);
        acc.assign(columns.getResults().begin(), columns.getResults().end());
      }
      scf::YieldOp::create(b, loc, acc);
    }
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t v = 0; v < vectors; ++v) {
        SmallVector<Value> at{n, add(o0, r), y, add(x0, v * vl)};
        bool masked = mask && v == vectors - 1;
        Value value = epilogue(loop.getResult(r * vectors + v), at, masked ? mask : Value());
        if (mask && v == vectors - 1)
          vector::MaskedStoreOp::create(b, loc, op.getInit(), at, mask, value);
        else
          vector::StoreOp::create(b, loc, value, op.getInit(), at);
      }
  }

  /// The epilogue applied to the accumulator vector of the outputs at `at`
  /// (n, o, y, x..x+vl): each epilogue input is read at its map of that index,
  /// a vector where the map reads x, a broadcast scalar where it does not;
  /// the body's scalar ops are recreated on vectors.
  Value epilogue(Value acc, ArrayRef<Value> at, Value mask) {
    if (op.getEpilogue().empty())
      return acc;
    Block &body = op.getEpilogue().front();
    IRMapping mapping;
    mapping.map(body.getArgument(0), acc);
    for (auto [i, input] : llvm::enumerate(op.getEpilogueInputs())) {
      AffineMap map = cast<AffineMapAttr>((*op.getEpilogueMaps())[i]).getValue();
      SmallVector<Value> indices;
      bool alongRow = false;
      for (AffineExpr e : map.getResults()) {
        if (auto dim = dyn_cast<AffineDimExpr>(e)) {
          indices.push_back(at[dim.getPosition()]);
          alongRow |= dim.getPosition() == 3;
        } else {
          indices.push_back(index(0)); // a broadcast dim (the fold checked)
        }
      }
      Type type = cast<MemRefType>(input.getType()).getElementType();
      auto vectorType = VectorType::get({vl}, type);
      Value element;
      if (!alongRow) {
        element = vector::BroadcastOp::create(b, loc, vectorType,
                                              memref::LoadOp::create(b, loc, input, indices));
      } else if (mask) {
        Value zeros = arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(vectorType, b.getZeroAttr(type)));
        element = vector::MaskedLoadOp::create(b, loc, vectorType, input, indices, mask, zeros);
      } else {
        element = vector::LoadOp::create(b, loc, vectorType, input, indices);
      }
      mapping.map(body.getArgument(i + 1), element);
    }
    for (Operation &inner : body.without_terminator()) {
      auto vectorOf = [&](Type t) -> Type { return VectorType::get({vl}, t); };
      if (auto constant = dyn_cast<arith::ConstantOp>(inner)) {
        Value scalar = b.clone(inner)->getResult(0);
        mapping.map(constant.getResult(),
                    vector::BroadcastOp::create(b, loc, vectorOf(scalar.getType()), scalar));
        continue;
      }
      // Values defined outside the body (constants hoisted by CSE) broadcast.
      for (Value operand : inner.getOperands())
        if (!mapping.contains(operand) && !isa<VectorType>(operand.getType()))
          mapping.map(operand, vector::BroadcastOp::create(b, loc, vectorOf(operand.getType()),
                                                           operand));
      OperationState state(inner.getLoc(), inner.getName());
      for (Value operand : inner.getOperands())
        state.addOperands(mapping.lookup(operand));
      for (Type t : inner.getResultTypes())
        state.addTypes(vectorOf(t));
      state.addAttributes(inner.getAttrs());
      Operation *vectorized = b.create(state);
      mapping.map(inner.getResults(), vectorized->getResults());
    }
    return mapping.lookup(body.getTerminator()->getOperand(0));
  }

  /// input[n, c, iy, ix + lane * strideW] for the vl lanes (masked lanes read
  /// nothing and give 0).
  Value inputRow(Value c, Value iy, Value ix, Value mask) {
    Value input = op.getInput();
    SmallVector<Value> at{n, c, iy, ix};
    Value zeros = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vector, b.getFloatAttr(element, 0.0)));
    if (strideW == 1) {
      if (mask)
        return vector::MaskedLoadOp::create(b, loc, vector, input, at, mask, zeros);
      return vector::LoadOp::create(b, loc, vector, input, at);
    }
    auto indexType = VectorType::get({vl}, b.getIndexType());
    SmallVector<APInt> offsets;
    for (int64_t lane = 0; lane < vl; ++lane)
      offsets.push_back(APInt(64, lane * strideW));
    Value lanes = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(indexType, offsets));
    Value all = mask ? mask
                     : vector::ConstantMaskOp::create(
                           b, loc, VectorType::get({vl}, b.getI1Type()), ArrayRef<int64_t>{vl});
    return vector::GatherOp::create(b, loc, vector, input, at, lanes, all, zeros);
  }

  OpBuilder &b;
  Location loc;
  kiln::kernel::Conv2dOp op;
  int64_t vl;
  Type element;
  VectorType vector;
  int64_t channels = 0, outChannels = 0, kernelH = 0, kernelW = 0, outH = 0, outW = 0,
          strideH = 1, strideW = 1, dilationH = 1, dilationW = 1, groups = 1;
  OpFoldResult batch; // a symbolic batch is read from the result buffer
  Value n, y;
  Value firstInputChannel; // of the group being emitted
};

struct LowerConvolutionPass
    : kiln::cpu::impl::LowerConvolutionPassBase<LowerConvolutionPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<kiln::kernel::Conv2dOp> ops;
    getOperation().walk([&](kiln::kernel::Conv2dOp op) { ops.push_back(op); });
    if (ops.empty())
      return;
    auto target = kiln::kernel::requireTarget(getOperation(), getArgument());
    if (failed(target))
      return signalPassFailure();
    bool otherLoops = false;
    getOperation().walk([&](linalg::LinalgOp) { otherLoops = true; });
    for (kiln::kernel::Conv2dOp op : ops) {
      // Workgroups split the convolution's rows; another loop nest in the
      // kernel (an epilogue that did not fold) would be split wrongly.
      if (otherLoops) {
        op.emitOpError("shares its kernel with a loop nest that is not its epilogue");
        return signalPassFailure();
      }
      if (!op.getEpilogue().empty()) {
        for (Operation &inner : op.getEpilogue().front().without_terminator())
          if (!inner.hasTrait<OpTrait::Elementwise>() && !isa<arith::ConstantOp>(inner)) {
            inner.emitOpError("in a convolution epilogue has no vector form");
            return signalPassFailure();
          }
      }
      auto input = dyn_cast<MemRefType>(op.getInput().getType());
      if (!op.hasPureBufferSemantics() || !input || input.getRank() != 4 ||
          !input.getLayout().isIdentity()) {
        op.emitOpError("expects identity-layout rank-4 buffers (run after bufferization)");
        return signalPassFailure();
      }
      OpBuilder b(op);
      ConvolutionEmitter(b, op, target->vectorLength(input.getElementType())).emit();
    }
  }
};

} // namespace
