// Attention written out by hand becomes kiln_graph.attention.
//
// Many models spell attention as ops: softmax(q @ kᵀ * scale + mask) @ v,
// with the heads folded into the batch of two bmm's. As ops, the [L, S]
// scores are a tensor of their own, written and read twice; as one
// kiln_graph.attention they stay in registers (online softmax over key
// tiles, kiln-lower-attention). The match is exact: the scores, the scaled
// and masked scores and the probabilities must have no other use, the scale
// must be a constant, the mask must broadcast to [B, H, L, S], and a row
// whose keys are all masked gives NaN, as softmax does (`masked_rows_nan`).
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_RECOGNIZEATTENTIONPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::graph;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The value of a constant scalar (a 0-d or all-ones splat), if `v` is one.
std::optional<double> scalarConstant(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseFPElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat() || dense.getType().getNumElements() != 1)
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// The 4-D [B, H, R, C] tensor a bmm operand [B * H, R, C] was reshaped
/// from; a 3-D operand with no such source is its own, one head.
struct Heads {
  Value value; // 4-D, or 3-D meaning H = 1
  ReshapeOp reshape; // the reshape from it, if any
};
Heads headsOf(Value operand) {
  auto type = typeOf(operand);
  if (auto reshape = operand.getDefiningOp<ReshapeOp>()) {
    auto source = typeOf(reshape.getInput());
    if (source.getRank() == 4 && source.hasStaticShape() && type.hasStaticShape() &&
        source.getDimSize(0) * source.getDimSize(1) == type.getDimSize(0) &&
        source.getShape().drop_front(2) == type.getShape().drop_front(1))
      return {reshape.getInput(), reshape};
  }
  return {operand, ReshapeOp()};
}

struct Match {
  Value q, k, v;  // [B, H, R, C], or [B * H, R, C] read as B * H single heads
  // With kSource, k is permute(kSource, kDims) (and `k` above is kᵀ).
  Value kSource;
  SmallVector<int64_t> kDims;
  Value mask;     // as added to the scores
  int64_t maskLevel = 0; // rank of the scores the mask was added to
  double scale = 1.0;
  SmallVector<Operation *> chain; // replaced ops, consumers first
};

/// softmax(q @ kᵀ * scale + mask) @ v ending at `pv` ([B * H, L, Ev]). The
/// reshapes between the heads folded into the batch ([B * H, ..]) and the
/// 4-D scores ([B, H, L, S]) may sit anywhere in the chain (canonicalize
/// sinks them below pointwise ops).
std::optional<Match> match(MatmulOp pv) {
  auto outType = typeOf(pv.getResult());
  if (pv.getTransposeRhs() || outType.getRank() != 3 || !outType.hasStaticShape() ||
      !outType.getElementType().isF32())
    return std::nullopt;
  Match m;
  m.chain.push_back(pv);
  Heads p = headsOf(pv.getLhs());
  if (p.reshape) {
    if (!p.reshape.getResult().hasOneUse())
      return std::nullopt;
    m.chain.push_back(p.reshape);
  }
  auto softmax = p.value.getDefiningOp<SoftmaxOp>();
  int64_t rank = typeOf(p.value).getRank();
  if (!softmax || softmax.getNormalizedDim() != rank - 1 || !softmax.getResult().hasOneUse())
    return std::nullopt;
  m.chain.push_back(softmax);
  // Back from the probabilities to the scores' matmul: at most one mask
  // add, one constant scale and one reshape from [B * H, L, S] to 4-D.
  Value x = softmax.getInput();
  bool scaled = false, reshaped = false;
  MatmulOp qk;
  while (!qk) {
    Operation *def = x.getDefiningOp();
    if (!def || !x.hasOneUse())
      return std::nullopt;
    auto full = typeOf(x);
    if (auto add = dyn_cast<AddOp>(def); add && !m.mask) {
      bool lhsIsScores = typeOf(add.getLhs()) == full;
      Value scores = lhsIsScores ? add.getLhs() : add.getRhs();
      Value mask = lhsIsScores ? add.getRhs() : add.getLhs();
      if (typeOf(scores) != full || typeOf(mask).getElementType() != full.getElementType() ||
          !typeOf(mask).hasStaticShape() || typeOf(mask).getRank() > full.getRank())
        return std::nullopt;
      for (int64_t d = 1; d <= typeOf(mask).getRank(); ++d) {
        int64_t size = typeOf(mask).getShape()[typeOf(mask).getRank() - d];
        if (size != 1 && size != full.getShape()[full.getRank() - d])
          return std::nullopt;
      }
      m.mask = mask;
      m.maskLevel = full.getRank();
      x = scores;
    } else if (auto mul = dyn_cast<MulOp>(def); mul && !scaled) {
      bool lhsIsScores = typeOf(mul.getLhs()) == full;
      std::optional<double> c = scalarConstant(lhsIsScores ? mul.getRhs() : mul.getLhs());
      if (!c || typeOf(lhsIsScores ? mul.getLhs() : mul.getRhs()) != full)
        return std::nullopt;
      m.scale = *c;
      scaled = true;
      x = lhsIsScores ? mul.getLhs() : mul.getRhs();
    } else if (auto div = dyn_cast<DivOp>(def); div && !scaled) {
      std::optional<double> c = scalarConstant(div.getRhs());
      if (!c || *c == 0.0 || typeOf(div.getLhs()) != full)
        return std::nullopt;
      m.scale = 1.0 / *c;
      scaled = true;
      x = div.getLhs();
    } else if (auto reshape = dyn_cast<ReshapeOp>(def); reshape && !reshaped && rank == 4) {
      auto in = typeOf(reshape.getInput());
      if (in.getRank() != 3 || full.getRank() != 4 || !in.hasStaticShape() ||
          in.getDimSize(0) != full.getDimSize(0) * full.getDimSize(1) ||
          in.getShape().drop_front() != full.getShape().drop_front(2))
        return std::nullopt;
      reshaped = true;
      x = reshape.getInput();
    } else if (auto matmul = dyn_cast<MatmulOp>(def); matmul && typeOf(x).getRank() == 3) {
      qk = matmul;
      break;
    } else {
      return std::nullopt;
    }
    m.chain.push_back(def);
  }
  if (rank == 4 && !reshaped)
    return std::nullopt;
  m.chain.push_back(qk);
  // k: read transposed by the matmul, or kᵀ is a permute (of the 3-D
  // operand, or of the 4-D tensor it was reshaped from): k is the same
  // permute with its last two dims swapped (splitting heads and transposing
  // fold into one permute, [0, 2, 3, 1]).
  Value k;
  if (qk.getTransposeRhs()) {
    k = qk.getRhs();
  } else {
    Heads kt = headsOf(qk.getRhs());
    auto permute = kt.value.getDefiningOp<PermuteOp>();
    if (!permute)
      return std::nullopt;
    m.kDims.assign(permute.getDims().begin(), permute.getDims().end());
    std::swap(m.kDims[m.kDims.size() - 1], m.kDims[m.kDims.size() - 2]);
    k = permute.getResult(); // kᵀ: k is made at the rewrite
    m.kSource = permute.getInput();
  }
  // Heads: the 4-D tensors q, k and v were reshaped from, where all three
  // have them with the same [B, H]; else B * H single heads.
  Heads q = headsOf(qk.getLhs()), v = headsOf(pv.getRhs());
  Value k4 = typeOf(k).getRank() == 4 ? k : headsOf(k).value;
  auto leading = [](Value t) { return typeOf(t).getShape().take_front(2); };
  if (typeOf(q.value).getRank() == 4 && typeOf(v.value).getRank() == 4 &&
      typeOf(k4).getRank() == 4 && leading(q.value) == leading(k4) &&
      leading(q.value) == leading(v.value)) {
    m.q = q.value, m.k = k4, m.v = v.value;
  } else if (typeOf(k).getRank() == 3) {
    m.q = qk.getLhs(), m.k = k, m.v = pv.getRhs();
  } else {
    return std::nullopt;
  }
  // The shapes, with k as [.., S, E] (kᵀ transposed back).
  SmallVector<int64_t> kShape(typeOf(m.k).getShape());
  if (m.kSource) {
    if (kShape.size() != m.kDims.size())
      return std::nullopt;
    std::swap(kShape[kShape.size() - 1], kShape[kShape.size() - 2]);
  }
  auto kt = RankedTensorType::get(kShape, typeOf(m.k).getElementType());
  auto qt = typeOf(m.q), vt = typeOf(m.v);
  int64_t r = qt.getRank();
  if (!qt.hasStaticShape() || !kt.hasStaticShape() || !vt.hasStaticShape() ||
      qt.getShape().drop_back(2) != kt.getShape().drop_back(2) ||
      qt.getShape().drop_back(2) != vt.getShape().drop_back(2) ||
      qt.getShape().back() != kt.getShape().back() ||
      kt.getShape()[r - 2] != vt.getShape()[r - 2] || !qt.getElementType().isF32() ||
      kt.getElementType() != qt.getElementType() || vt.getElementType() != qt.getElementType())
    return std::nullopt;
  return m;
}

/// `v` as a 4-D [B, H, R, C] tensor (a 3-D one is one head per batch).
Value asHeads(OpBuilder &b, Location loc, Value v) {
  auto type = typeOf(v);
  if (type.getRank() == 4)
    return v;
  SmallVector<int64_t> shape(type.getShape());
  shape.insert(shape.begin() + 1, 1);
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()), v);
}

/// The 4-D shape of the mask as the attention op takes it (each dim 1 or
/// the scores' [B, H, L, S]; `heads` is [B, H] of the attention's q), if it
/// has one.
std::optional<SmallVector<int64_t>> maskShape(const Match &m, ArrayRef<int64_t> heads) {
  auto type = typeOf(m.mask);
  SmallVector<int64_t> shape(type.getShape());
  // Right-aligned against the scores it was added to.
  shape.insert(shape.begin(), m.maskLevel - type.getRank(), 1);
  if (m.maskLevel == 4) // added to [B, H, L, S]: fits B * H single heads if it broadcasts both
    return heads[1] != 1 || (shape[0] == 1 && shape[1] == 1) ? std::optional(shape) : std::nullopt;
  if (shape[0] == 1) // [1, L, S] over [B * H, L, S]
    return SmallVector<int64_t>{1, 1, shape[1], shape[2]};
  if (shape[0] == heads[0] * heads[1]) // one mask per (batch, head)
    return SmallVector<int64_t>{heads[0], heads[1], shape[1], shape[2]};
  return std::nullopt;
}

struct RecognizeAttentionPass
    : kiln::kernel::impl::RecognizeAttentionPassBase<RecognizeAttentionPass> {
  void runOnOperation() override {
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp op) { matmuls.push_back(op); });
    // Consumers first: a chain's second matmul is found before its first.
    // Ops erased with a match are remembered, not looked at (their memory
    // is freed).
    DenseSet<Operation *> erased;
    for (MatmulOp pv : llvm::reverse(matmuls)) {
      if (erased.contains(pv.getOperation()))
        continue; // erased as part of an earlier match
      std::optional<Match> m = match(pv);
      if (!m)
        continue;
      auto qType = typeOf(m->q);
      SmallVector<int64_t> heads =
          qType.getRank() == 4 ? SmallVector<int64_t>(qType.getShape().take_front(2))
                               : SmallVector<int64_t>{qType.getDimSize(0), 1};
      std::optional<SmallVector<int64_t>> maskDims;
      if (m->mask && !(maskDims = maskShape(*m, heads)))
        continue;
      OpBuilder b(pv);
      Location loc = pv.getLoc();
      Value key = m->k;
      if (m->kSource) {
        auto source = typeOf(m->kSource);
        SmallVector<int64_t> shape;
        for (int64_t d : m->kDims)
          shape.push_back(source.getDimSize(d));
        key = PermuteOp::create(b, loc, RankedTensorType::get(shape, source.getElementType()),
                                m->kSource, b.getDenseI64ArrayAttr(m->kDims));
      }
      Value q = asHeads(b, loc, m->q), k = asHeads(b, loc, key), v = asHeads(b, loc, m->v);
      Value mask = m->mask;
      if (mask && ArrayRef<int64_t>(*maskDims) != typeOf(mask).getShape())
        mask = ReshapeOp::create(
            b, loc, RankedTensorType::get(*maskDims, typeOf(mask).getElementType()), mask);
      auto qt = typeOf(q), vt = typeOf(v);
      Type element = qt.getElementType();
      auto resultType = RankedTensorType::get(
          {qt.getDimSize(0), qt.getDimSize(1), qt.getDimSize(2), vt.getDimSize(3)}, element);
      auto lseType =
          RankedTensorType::get({qt.getDimSize(0), qt.getDimSize(1), qt.getDimSize(2)}, element);
      auto attention = AttentionOp::create(b, loc, TypeRange{resultType, lseType}, q, k, v, mask,
                                           b.getF64FloatAttr(m->scale), b.getBoolAttr(false));
      attention.setMaskedRowsNan(true);
      Value result = ReshapeOp::create(b, loc, pv.getResult().getType(), attention.getResult());
      pv.getResult().replaceAllUsesWith(result);
      for (Operation *op : m->chain)
        if (op->use_empty()) {
          erased.insert(op);
          op->erase();
        }
    }
  }
};

} // namespace
