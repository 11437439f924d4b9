// kiln_graph -> linalg / tensor / arith / math, on tensors.
//
// Each graph op becomes the few linalg ops a hand-written CPU kernel would
// use; upstream elementwise fusion then merges producer chains. Reductions
// keep the input's dimension order as the loop order: reducing the innermost
// dim gives a unit-stride inner reduction, reducing an outer dim gives a
// unit-stride inner parallel loop that accumulates rows.
#include "kiln/Conversion/Passes.h"
#include "ScalarOps.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_CONVERTGRAPHTOLINALGPASS
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln::graph;
using utils::IteratorType;
using namespace kiln::scalar;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Fast-math flags for reductions and contractions: reassociation lets LLVM
/// vectorize the reduction loop; contraction forms FMAs.
arith::FastMathFlagsAttr reductionFlags(OpBuilder &b) {
  return arith::FastMathFlagsAttr::get(
      b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
}


/// The map reading an operand of shape `shape` inside a loop nest over
/// `outShape` with NumPy broadcasting (missing leading dims, size-1 dims).
AffineMap broadcastMap(ArrayRef<int64_t> shape, ArrayRef<int64_t> outShape,
                       MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  int64_t offset = outShape.size() - shape.size();
  for (auto [i, size] : llvm::enumerate(shape)) {
    if (size == 1 && outShape[i + offset] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(i + offset, ctx));
  }
  return AffineMap::get(outShape.size(), 0, exprs, ctx);
}

/// An empty tensor with these dims: symbolic ones are computed from the
/// kernel's size symbols. The tensor's type carries no encoding (linalg does
/// not keep the graph's symbols; the sizes are values from here on).
Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<AffineExpr> dims, Type element) {
  return tensor::EmptyOp::create(b, loc, kiln::kernel::dimSizes(b, loc, dims), element);
}

Value emptyLike(OpBuilder &b, Location loc, RankedTensorType type) {
  return emptyTensor(b, loc, dimExprs(type), type.getElementType());
}

/// The number of elements of some dims of a tensor, as a scalar of `element`
/// for the bodies that divide by it: a constant made where it is used, or a
/// value computed once from the size symbols.
struct ElementCount {
  ElementCount(OpBuilder &b, Location loc, RankedTensorType type, ArrayRef<int64_t> dims,
               Type element)
      : element(element) {
    AffineExpr count = getAffineConstantExpr(1, b.getContext());
    for (int64_t d : dims)
      count = count * dimExpr(type, d);
    if (auto constant = dyn_cast<AffineConstantExpr>(count)) {
      known = constant.getValue();
      return;
    }
    Value index = kiln::kernel::sizeValue(b, loc, count);
    Value integer = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
    dynamic = arith::SIToFPOp::create(b, loc, element, integer);
  }
  Value get(OpBuilder &b, Location loc) const {
    return known ? scalarConstant(b, loc, element, *known) : dynamic;
  }
  Type element;
  std::optional<int64_t> known;
  Value dynamic;
};

/// One parallel generic over `resultType` reading `operands` with broadcasting.
Value elementwise(OpBuilder &b, Location loc, ValueRange operands,
                  RankedTensorType resultType, BodyFn body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value operand : operands)
    maps.push_back(broadcastMap(tensorType(operand).getShape(),
                                resultType.getShape(), ctx));
  maps.push_back(AffineMap::getMultiDimIdentityMap(resultType.getRank(), ctx));
  SmallVector<IteratorType> iterators(resultType.getRank(), IteratorType::parallel);
  Value init = emptyLike(b, loc, resultType);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, operands, ValueRange{init}, maps, iterators,
      "", "", [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value result = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, result);
      });
  return generic.getResult(0);
}

/// A reduction of `input` over `dims` (sorted) combining with `combine`,
/// starting from `initValue`; `map` transforms each element first. Returns
/// the tensor without the reduced dims.
/// The loop nest of a reduction of `type` over `dims`: the iterator types,
/// and the shape and map of what remains (the kept dims).
struct ReductionNest {
  SmallVector<IteratorType> iterators;
  SmallVector<AffineExpr> keptDims;
  AffineMap kept;
};

ReductionNest reductionNest(RankedTensorType type, ArrayRef<int64_t> dims) {
  MLIRContext *ctx = type.getContext();
  ReductionNest nest;
  SmallVector<AffineExpr> keptExprs;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    bool reduced = llvm::is_contained(dims, i);
    nest.iterators.push_back(reduced ? IteratorType::reduction : IteratorType::parallel);
    if (!reduced) {
      nest.keptDims.push_back(dimExpr(type, i));
      keptExprs.push_back(getAffineDimExpr(i, ctx));
    }
  }
  nest.kept = AffineMap::get(type.getRank(), 0, keptExprs, ctx);
  return nest;
}

Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> dims,
             Value initValue, BodyFn map, BodyFn combine,
             ValueRange extraInputs = {}) {
  MLIRContext *ctx = b.getContext();
  auto type = tensorType(input);
  int64_t rank = type.getRank();
  auto [iterators, keptDims, kept] = reductionNest(type, dims);
  Type element = type.getElementType();
  Value empty = emptyTensor(b, loc, keptDims, element);
  Value init = linalg::FillOp::create(b, loc, initValue, empty).getResult(0);
  SmallVector<Value> inputs{input};
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, ctx)};
  // Extra inputs are per-row values (shaped like the kept dims).
  for (Value extra : extraInputs) {
    inputs.push_back(extra);
    maps.push_back(kept);
  }
  maps.push_back(kept);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, "", "", [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value mapped = map(nb, nloc, args.drop_back());
        Value combined = combine(nb, nloc, {args.back(), mapped});
        linalg::YieldOp::create(nb, nloc, combined);
      });
  return generic.getResult(0);
}

Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> dims,
             double initValue, BodyFn map, BodyFn combine, ValueRange extraInputs = {}) {
  Value init = scalarConstant(b, loc, tensorType(input).getElementType(), initValue);
  return reduce(b, loc, input, dims, init, map, combine, extraInputs);
}

/// Groups `from`'s dims into `to`'s (each group's product is one dim of
/// `to`, compared as expressions), or failure. Unit dims join a neighbour.
FailureOr<SmallVector<ReassociationIndices>> symbolicReassociation(ArrayRef<AffineExpr> from,
                                                                  ArrayRef<AffineExpr> to) {
  SmallVector<ReassociationIndices> groups;
  size_t i = 0;
  for (AffineExpr target : to) {
    if (i >= from.size())
      return failure();
    ReassociationIndices group{(int64_t)i};
    AffineExpr product = from[i++];
    while (!sameSize(product, target)) {
      if (i >= from.size())
        return failure();
      group.push_back(i);
      product = product * from[i++];
    }
    groups.push_back(group);
  }
  for (; i < from.size(); ++i) { // trailing unit dims
    auto unit = dyn_cast<AffineConstantExpr>(from[i]);
    if (groups.empty() || !unit || unit.getValue() != 1)
      return failure();
    groups.back().push_back(i);
  }
  return groups;
}

/// The reshape of a 1-D tensor to `dims` as a copy: element i of the result
/// is flat[row-major offset of i]. Taken for results with several symbolic
/// dims that do not group with the input's: memref lowering cannot expand
/// one dim into several dynamic ones, and a copy can always be fused. The
/// innermost index walks consecutive elements, so the loads stay contiguous.
Value copyFromFlat(OpBuilder &b, Location loc, Value flat, ArrayRef<AffineExpr> dims,
                   RankedTensorType plain) {
  int64_t rank = plain.getRank();
  SmallVector<OpFoldResult> sizes = kiln::kernel::dimSizes(b, loc, dims);
  // Row-major strides, computed once before the loop.
  SmallVector<Value> strides(rank);
  Value stride = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride = arith::MulIOp::create(b, loc, stride,
                                   getValueOrCreateConstantIndexOp(b, loc, sizes[d]));
  }
  Value init = tensor::EmptyOp::create(b, loc, sizes, plain.getElementType());
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{}, ValueRange{init},
      ArrayRef<AffineMap>{identity}, iterators, "", "",
      [&](OpBuilder &nb, Location l, ValueRange) {
        Value offset = linalg::IndexOp::create(nb, l, rank - 1);
        for (int64_t d = rank - 2; d >= 0; --d)
          offset = arith::AddIOp::create(
              nb, l, offset,
              arith::MulIOp::create(nb, l, linalg::IndexOp::create(nb, l, d), strides[d]));
        linalg::YieldOp::create(nb, l, tensor::ExtractOp::create(nb, l, flat, offset).getResult());
      });
  return generic.getResult(0);
}

/// A reshape between shapes with symbolic dims: one collapse or expand when
/// the dims group, else a collapse to 1-D and an expand with at most one
/// symbolic dim (what memref lowering handles), or a copy for more.
FailureOr<Value> reshapeSymbolic(OpBuilder &b, Location loc, Value value,
                                 RankedTensorType to, RankedTensorType symbolicFrom) {
  RankedTensorType plain = withoutEncoding(to);
  if (auto type = tensorType(value); type.getEncoding())
    value = tensor::CastOp::create(b, loc, withoutEncoding(type), value);
  if (sameShape(symbolicFrom, to))
    return value;
  SmallVector<AffineExpr> fromDims = dimExprs(symbolicFrom), toDims = dimExprs(to);
  if (fromDims.size() >= toDims.size() && !toDims.empty()) {
    if (auto groups = symbolicReassociation(fromDims, toDims); succeeded(groups))
      return (Value)tensor::CollapseShapeOp::create(b, loc, plain, value, *groups);
  }
  if (fromDims.size() < toDims.size() && !fromDims.empty()) {
    if (auto groups = symbolicReassociation(toDims, fromDims); succeeded(groups))
      return (Value)tensor::ExpandShapeOp::create(b, loc, plain, value, *groups,
                                                  kiln::kernel::dimSizes(b, loc, toDims));
  }
  if (fromDims.empty() || toDims.empty())
    return failure();
  auto from = tensorType(value);
  SmallVector<ReassociationIndices> all(1);
  for (int64_t d = 0; d < from.getRank(); ++d)
    all[0].push_back(d);
  auto flatType = RankedTensorType::get({ShapedType::kDynamic}, from.getElementType());
  if (from.getRank() > 1)
    value = tensor::CollapseShapeOp::create(b, loc, flatType, value, all);
  if (plain.getNumDynamicDims() > 1)
    return copyFromFlat(b, loc, value, toDims, plain);
  all[0].clear();
  for (int64_t d = 0; d < plain.getRank(); ++d)
    all[0].push_back(d);
  return (Value)tensor::ExpandShapeOp::create(b, loc, plain, value, all,
                                              kiln::kernel::dimSizes(b, loc, toDims));
}

/// Row-major reshape on tensors: an expand or collapse where the shapes allow
/// it, otherwise a collapse to 1-D followed by an expand.
Value reshapeTensor(OpBuilder &b, Location loc, Value value, RankedTensorType to) {
  auto from = tensorType(value);
  if (from == to)
    return value;
  SmallVector<ReassociationIndices> none;
  if (from.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, to, value, none);
  if (to.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, to, value, none);
  if (auto reassociation = getReassociationIndicesForReshape(from, to)) {
    if (from.getRank() > to.getRank())
      return tensor::CollapseShapeOp::create(b, loc, to, value, *reassociation);
    return tensor::ExpandShapeOp::create(b, loc, to, value, *reassociation);
  }
  auto flat = RankedTensorType::get({from.getNumElements()}, from.getElementType());
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < from.getRank(); ++i)
    all[0].push_back(i);
  if (from.getRank() > 1)
    value = tensor::CollapseShapeOp::create(b, loc, flat, value, all);
  if (to.getRank() == 1)
    return value;
  all[0].clear();
  for (int64_t i = 0; i < to.getRank(); ++i)
    all[0].push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, to, value, all);
}

/// Reinserts reduced dims as size 1 (keepdim).
Value keepDims(OpBuilder &b, Location loc, Value reduced, ArrayRef<AffineExpr> reducedDims,
               RankedTensorType type) {
  if (!isSymbolic(type))
    return reshapeTensor(b, loc, reduced, type);
  // Inserting unit dims always groups: this reshape cannot fail.
  return *reshapeSymbolic(b, loc, reduced, type,
                          symbolicTensorType(reducedDims, type.getElementType()));
}

/// `index` clamped into [0, size - 1]: gathers never read out of bounds.
Value clampIndex(OpBuilder &b, Location loc, Value index, int64_t size) {
  Value high = arith::ConstantIndexOp::create(b, loc, std::max<int64_t>(size - 1, 0));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, index, zero), high);
}

/// The same with a size known at run time (at least 1 where it is read).
Value clampIndex(OpBuilder &b, Location loc, Value index, Value size) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value high = arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, size, one), zero);
  return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, index, zero), high);
}


//===----------------------------------------------------------------------===//
// Op lowerings
//===----------------------------------------------------------------------===//

LogicalResult lowerElementwise(RewriterBase &rewriter, Operation *op) {
  auto resultType = tensorType(op->getResult(0));
  Type element = resultType.getElementType();
  bool failedBody = false;
  Value result = elementwise(
      rewriter, op->getLoc(), op->getOperands(), resultType,
      [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        auto value = elementwiseBody(b, loc, op, args, element);
        if (failed(value)) {
          failedBody = true;
          return args.empty() ? Value() : args[0];
        }
        return *value;
      });
  if (failedBody)
    return op->emitOpError("has no elementwise lowering");
  rewriter.replaceOp(op, result);
  return success();
}

template <typename ReduceOp>
LogicalResult lowerReduce(RewriterBase &rewriter, ReduceOp op) {
  Location loc = op.getLoc();
  Type element = tensorType(op.getInput()).getElementType();
  SmallVector<int64_t> dims = op.getReducedDims();
  auto identity = [](OpBuilder &, Location, ValueRange args) { return args[0]; };
  // Each reduction is its start value and how it combines two partials.
  Combine kind = std::is_same_v<ReduceOp, AmaxOp> || std::is_same_v<ReduceOp, AnyOp>   ? Combine::Max
                 : std::is_same_v<ReduceOp, AminOp> || std::is_same_v<ReduceOp, AllOp> ? Combine::Min
                 : std::is_same_v<ReduceOp, ProdOp>                                    ? Combine::Prod
                                                                                       : Combine::Sum;
  bool isUnsigned = computesUnsigned(op);
  Value start = combineIdentity(rewriter, loc, element, kind, isUnsigned);
  auto combine = [&](OpBuilder &b, Location l, ValueRange a) {
    return combineScalar(b, l, kind, a[0], a[1], isUnsigned, /*reassociate=*/true);
  };
  Value reduced = reduce(rewriter, loc, op.getInput(), dims, start, identity, combine);
  if constexpr (std::is_same_v<ReduceOp, MeanOp>) {
    ElementCount count(rewriter, loc, tensorType(op.getInput()), dims, element);
    auto keptType = symbolicTensorType(reductionNest(tensorType(op.getInput()), dims).keptDims,
                                            element);
    reduced = elementwise(rewriter, loc, {reduced}, keptType,
                          [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                            return arith::DivFOp::create(b, l, a[0], count.get(b, l));
                          });
  }
  rewriter.replaceOp(op, keepDims(rewriter, loc, reduced,
                                  reductionNest(tensorType(op.getInput()), dims).keptDims,
                                  tensorType(op.getResult())));
  return success();
}

/// argmax / argmin along one dim: one reduction carrying the best value and
/// its index.
template <typename ArgOp>
LogicalResult lowerArgReduce(RewriterBase &rewriter, ArgOp op) {
  constexpr bool isMax = std::is_same_v<ArgOp, ArgmaxOp>;
  Location loc = op.getLoc();
  auto type = tensorType(op.getInput());
  auto resultType = tensorType(op.getResult());
  Type i64 = rewriter.getI64Type();
  if (type.getRank() == 0) { // the only element is at index 0
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, DenseElementsAttr::get(resultType, rewriter.getI64IntegerAttr(0).getValue()));
    return success();
  }
  MLIRContext *ctx = rewriter.getContext();
  int64_t rank = type.getRank(), dim = op.getDim();
  ReductionNest nest = reductionNest(type, {dim});
  Type element = type.getElementType();
  bool isUnsigned = computesUnsigned(op);
  Value best = linalg::FillOp::create(rewriter, loc,
                                      extremeConstant(rewriter, loc, element, isMax, isUnsigned),
                                      emptyTensor(rewriter, loc, nest.keptDims, element))
                   .getResult(0);
  Value bestIndex =
      linalg::FillOp::create(rewriter, loc, extremeConstant(rewriter, loc, i64, /*lowest=*/false),
                             emptyTensor(rewriter, loc, nest.keptDims, i64))
          .getResult(0);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{best.getType(), bestIndex.getType()}, ValueRange{op.getInput()},
      ValueRange{best, bestIndex},
      ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, ctx), nest.kept, nest.kept},
      nest.iterators,
      "", "", [&](OpBuilder &b, Location l, ValueRange args) {
        Value i = arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, dim));
        Value beats = beatsScalar(b, l, args[0], i, args[1], args[2], isMax, isUnsigned);
        linalg::YieldOp::create(b, l,
                                ValueRange{arith::SelectOp::create(b, l, beats, args[0], args[1]),
                                           arith::SelectOp::create(b, l, beats, i, args[2])});
      });
  rewriter.replaceOp(op, keepDims(rewriter, loc, generic.getResult(1), nest.keptDims, resultType));
  return success();
}

/// softmax / log_softmax along one dim, computing each exp once: a max
/// pass; a pass that writes exp(x - max) and sums it (softmax) or only sums
/// it (log_softmax); and a pass that scales the exps by 1 / sum in place, as
/// ATen does (or subtracts max + log(sum) from x).
template <typename SoftmaxOp>
LogicalResult lowerSoftmax(RewriterBase &rewriter, SoftmaxOp op) {
  constexpr bool isLog = std::is_same_v<SoftmaxOp, LogSoftmaxOp>;
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Value input = op.getInput();
  auto type = tensorType(input);
  int64_t dim = op.getNormalizedDim();
  if (type.getRank() == 0) { // softmax of a scalar is 1 (log: 0)
    rewriter.replaceOp(op, elementwise(rewriter, loc, {input}, type,
                                       [&](OpBuilder &b, Location l, ValueRange) {
                                         return scalarConstant(b, l, type.getElementType(), isLog ? 0 : 1);
                                       }));
    return success();
  }
  auto identity = [](OpBuilder &, Location, ValueRange args) { return args[0]; };
  Value max = reduce(rewriter, loc, input, {dim}, -INFINITY, identity,
                     [](OpBuilder &b, Location l, ValueRange a) {
                       return maxScalar(b, l, a[0], a[1]);
                     });
  // Broadcast the per-row values back along `dim`.
  RankedTensorType keptType = symbolicTensorType(
      [&] { SmallVector<AffineExpr> d = dimExprs(type); d[dim] = rewriter.getAffineConstantExpr(1); return d; }(),
      type.getElementType());
  SmallVector<AffineExpr> rowDims = reductionNest(type, {dim}).keptDims;
  if constexpr (isLog) {
    Value sum = reduce(
        rewriter, loc, input, {dim}, 0,
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          return math::ExpOp::create(b, l, arith::SubFOp::create(b, l, a[0], a[1]));
        },
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          return arith::AddFOp::create(b, l, a[0], a[1], reductionFlags(b));
        },
        {max});
    Value maxKept = keepDims(rewriter, loc, max, rowDims, keptType);
    Value sumKept = keepDims(rewriter, loc, sum, rowDims, keptType);
    rewriter.replaceOp(op, elementwise(rewriter, loc, {input, maxKept, sumKept}, type,
                                       [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                                         Value shifted = arith::SubFOp::create(b, l, a[0], a[1]);
                                         return arith::SubFOp::create(
                                             b, l, shifted, math::LogOp::create(b, l, a[2]));
                                       }));
    return success();
  }
  // exp(x - max) into a full-size tensor, and its sum per row, in one pass.
  auto [iterators, keptExprs, kept] = reductionNest(type, {dim});
  AffineMap full = AffineMap::getMultiDimIdentityMap(type.getRank(), ctx);
  Type element = type.getElementType();
  Value zero = scalarConstant(rewriter, loc, element, 0);
  Value sumInit = linalg::FillOp::create(rewriter, loc, zero,
                                         emptyTensor(rewriter, loc, rowDims, element))
                      .getResult(0);
  Value expInit = emptyLike(rewriter, loc, type);
  auto exps = linalg::GenericOp::create(
      rewriter, loc, TypeRange{expInit.getType(), sumInit.getType()}, ValueRange{input, max},
      ValueRange{expInit, sumInit}, {full, kept, full, kept}, iterators, "", "",
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value e = math::ExpOp::create(b, l, arith::SubFOp::create(b, l, a[0], a[1]));
        linalg::YieldOp::create(
            b, l, ValueRange{e, arith::AddFOp::create(b, l, a[3], e, reductionFlags(b))});
      });
  // Scale the exps in place: their tensor is the init, so they share a buffer.
  SmallVector<IteratorType> parallel(type.getRank(), IteratorType::parallel);
  auto scaled = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{exps.getResult(1)}, ValueRange{exps.getResult(0)},
      {kept, full}, parallel, "", "", [&](OpBuilder &b, Location l, ValueRange a) {
        Value one = scalarConstant(b, l, element, 1);
        Value inverse = arith::DivFOp::create(b, l, one, a[0]); // hoisted out of the row
        linalg::YieldOp::create(b, l, ValueRange{arith::MulFOp::create(b, l, a[1], inverse)});
      });
  rewriter.replaceOp(op, scaled.getResult(0));
  return success();
}

/// Layer norm with its statistics in one pass over the row: the sums of
/// c = x - x0 and of c * c, where x0 is the row's first element, accumulated
/// in double for float inputs. Shifting by a value of the row keeps the
/// cancellation in sum(c * c) / n - mean(c)^2 small, and makes a constant
/// row's mean exactly that constant and its variance exactly 0 (otherwise
/// the rounding of the mean, times rsqrt(eps) ~ 316, shows in the output).
LogicalResult lowerLayerNorm(RewriterBase &rewriter, LayerNormOp op) {
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Value input = op.getInput();
  auto type = tensorType(input);
  Type element = type.getElementType();
  int64_t rank = type.getRank(), n = (int64_t)op.getNormalizedRank();
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(rank - n, rank));
  Type acc = element.getIntOrFloatBitWidth() <= 32 ? (Type)rewriter.getF64Type() : element;
  ElementCount count(rewriter, loc, type, dims, acc);
  auto [iterators, keptDims, kept] = reductionNest(type, dims);
  auto rowType = symbolicTensorType(keptDims, element);
  // x0: the row's first element, read at index 0 of every normalized dim.
  SmallVector<AffineExpr> firstExprs;
  for (int64_t i = 0; i < rank; ++i)
    firstExprs.push_back(i < rank - n ? getAffineDimExpr(i, ctx) : getAffineConstantExpr(0, ctx));
  AffineMap first = AffineMap::get(rank, 0, firstExprs, ctx);
  AffineMap full = AffineMap::getMultiDimIdentityMap(rank, ctx);
  auto zeros = [&](Type t) {
    return linalg::FillOp::create(rewriter, loc, scalarConstant(rewriter, loc, t, 0),
                                  emptyTensor(rewriter, loc, keptDims, t))
        .getResult(0);
  };
  Value sumInit = zeros(acc), squaresInit = zeros(acc);
  auto moments = linalg::GenericOp::create(
      rewriter, loc, TypeRange{sumInit.getType(), squaresInit.getType()},
      ValueRange{input, input}, ValueRange{sumInit, squaresInit}, {full, first, kept, kept},
      iterators, "", "", [&](OpBuilder &b, Location l, ValueRange a) {
        Value c = arith::SubFOp::create(b, l, a[0], a[1]);
        if (acc != element)
          c = arith::ExtFOp::create(b, l, acc, c);
        auto flags = reductionFlags(b);
        // A multiply and an add, not math.fma: LLVM's loop vectorizer knows
        // only those (and llvm.fmuladd) as reductions; contract fuses them.
        Value square = arith::MulFOp::create(b, l, c, c, flags);
        linalg::YieldOp::create(b, l,
                                ValueRange{arith::AddFOp::create(b, l, a[2], c, flags),
                                           arith::AddFOp::create(b, l, a[3], square, flags)});
      });
  double eps = op.getEps().convertToDouble();
  // mean = x0 + sum / n; rstd = 1 / sqrt(max(squares / n - (sum / n)^2, 0) + eps).
  unsigned rows = rank - n;
  AffineMap rowIdentity = AffineMap::getMultiDimIdentityMap(rows, ctx);
  SmallVector<AffineExpr> rowFirstExprs;
  for (int64_t i = 0; i < rank; ++i)
    rowFirstExprs.push_back(i < rows ? getAffineDimExpr(i, ctx) : getAffineConstantExpr(0, ctx));
  AffineMap rowFirst = AffineMap::get(rows, 0, rowFirstExprs, ctx);
  auto rowStats = linalg::GenericOp::create(
      rewriter, loc, TypeRange{rowType, rowType},
      ValueRange{moments.getResult(0), moments.getResult(1), input},
      ValueRange{emptyLike(rewriter, loc, rowType), emptyLike(rewriter, loc, rowType)},
      {rowIdentity, rowIdentity, rowFirst, rowIdentity, rowIdentity},
      SmallVector<utils::IteratorType>(rows, utils::IteratorType::parallel), "", "",
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value count_ = count.get(b, l);
        Value meanShift = arith::DivFOp::create(b, l, a[0], count_);
        Value meanSquare = arith::DivFOp::create(b, l, a[1], count_);
        Value var = arith::SubFOp::create(b, l, meanSquare,
                                          arith::MulFOp::create(b, l, meanShift, meanShift));
        var = arith::MaximumFOp::create(b, l, var, scalarConstant(b, l, acc, 0));
        Value rstd = math::RsqrtOp::create(
            b, l, arith::AddFOp::create(b, l, var, scalarConstant(b, l, acc, eps)));
        Value shift = acc != element ? arith::ExtFOp::create(b, l, acc, a[2]) : a[2];
        Value mean = arith::AddFOp::create(b, l, shift, meanShift);
        if (acc != element) {
          mean = arith::TruncFOp::create(b, l, element, mean);
          rstd = arith::TruncFOp::create(b, l, element, rstd);
        }
        linalg::YieldOp::create(b, l, ValueRange{mean, rstd});
      });
  Value mean = rowStats.getResult(0), rstd = rowStats.getResult(1);
  auto statType = tensorType(op.getMean());
  Value meanKept = keepDims(rewriter, loc, mean, dimExprs(rowType), statType);
  Value rstdKept = keepDims(rewriter, loc, rstd, dimExprs(rowType), statType);
  Value result = elementwise(
      rewriter, loc, {input, meanKept, rstdKept, op.getWeight(), op.getBias()}, type,
      [](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value normalized = arith::MulFOp::create(
            b, l, arith::SubFOp::create(b, l, a[0], a[1]), a[2]);
        return arith::AddFOp::create(b, l, arith::MulFOp::create(b, l, normalized, a[3]), a[4]);
      });
  rewriter.replaceOp(op, {result, meanKept, rstdKept});
  return success();
}

/// C[i, j] += A[i, k] * B[k, j]. For B in [K, N] the loops run (i, k, j): the
/// innermost loop walks rows of B and C with unit stride, which LLVM
/// vectorizes with FMAs. For B given transposed ([N, K], transpose_rhs) they
/// run (i, j, k): a unit-stride dot product of a row of A and a row of B.
LogicalResult lowerMatmul(RewriterBase &rewriter, MatmulOp op) {
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  auto type = tensorType(op.getResult());
  Type element = type.getElementType();
  bool batched = type.getRank() == 3;
  bool transposed = op.getTransposeRhs();
  unsigned numDims = batched ? 4 : 3;
  unsigned first = batched ? 1 : 0;
  // Loop positions of i, j, k.
  unsigned i = first, k = transposed ? first + 2 : first + 1,
           j = transposed ? first + 1 : first + 2;
  auto d = [&](unsigned n) { return getAffineDimExpr(n, ctx); };
  auto map = [&](unsigned x, unsigned y) {
    SmallVector<AffineExpr> exprs;
    if (batched)
      exprs.push_back(d(0));
    exprs.push_back(d(x));
    exprs.push_back(d(y));
    return AffineMap::get(numDims, 0, exprs, ctx);
  };
  SmallVector<AffineMap> maps{map(i, k), transposed ? map(j, k) : map(k, j), map(i, j)};
  SmallVector<IteratorType> iterators(numDims, IteratorType::parallel);
  iterators[k] = IteratorType::reduction;
  Value empty = emptyLike(rewriter, loc, type);
  Value init = linalg::FillOp::create(rewriter, loc,
                                      scalarConstant(rewriter, loc, element, 0), empty)
                   .getResult(0);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, ValueRange{op.getLhs(), op.getRhs()},
      ValueRange{init}, maps, iterators, "", "",
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value sum;
        if (isFloat(element)) {
          // Half operands of a float32 matmul widen as they are read.
          Value lhs = a[0], rhs = a[1];
          if (lhs.getType() != element) {
            lhs = arith::ExtFOp::create(b, l, element, lhs);
            rhs = arith::ExtFOp::create(b, l, element, rhs);
          }
          Value product = arith::MulFOp::create(b, l, lhs, rhs, reductionFlags(b));
          sum = arith::AddFOp::create(b, l, a[2], product, reductionFlags(b));
        } else {
          sum = addScalar(b, l, a[2], mulScalar(b, l, a[0], a[1]));
        }
        linalg::YieldOp::create(b, l, sum);
      });
  generic->setAttr(kiln::kernel::kContractionAttr,
                   rewriter.getStringAttr(transposed ? "ijk" : "ikj"));
  rewriter.replaceOp(op, generic.getResult(0));
  return success();
}

LogicalResult lowerReshape(RewriterBase &rewriter, ReshapeOp op) {
  auto from = tensorType(op.getInput()), to = tensorType(op.getResult());
  if (!isSymbolic(from) && !isSymbolic(to)) {
    rewriter.replaceOp(op, reshapeTensor(rewriter, op.getLoc(), op.getInput(), to));
    return success();
  }
  auto reshaped = reshapeSymbolic(rewriter, op.getLoc(), op.getInput(), to, from);
  if (failed(reshaped))
    return op.emitOpError("cannot reshape ") << from << " to " << to
                                             << " with symbolic sizes (a rank-0 side)";
  rewriter.replaceOp(op, *reshaped);
  return success();
}

LogicalResult lowerPermute(RewriterBase &rewriter, PermuteOp op) {
  auto type = tensorType(op.getResult());
  Value init = emptyLike(rewriter, op.getLoc(), type);
  auto transpose = linalg::TransposeOp::create(rewriter, op.getLoc(), op.getInput(),
                                               init, op.getDims());
  rewriter.replaceOp(op, transpose.getResult()[0]);
  return success();
}

LogicalResult lowerExpand(RewriterBase &rewriter, ExpandOp op) {
  rewriter.replaceOp(op, elementwise(rewriter, op.getLoc(), {op.getInput()},
                                     tensorType(op.getResult()),
                                     [](OpBuilder &, Location, ValueRange a) { return a[0]; }));
  return success();
}

LogicalResult lowerSlice(RewriterBase &rewriter, SliceOp op) {
  auto in = tensorType(op.getInput()), out = tensorType(op.getResult());
  Value input = op.getInput();
  if (in.getEncoding())
    input = tensor::CastOp::create(rewriter, op.getLoc(), withoutEncoding(in), input);
  SmallVector<OpFoldResult> offsets, strides;
  SmallVector<OpFoldResult> sizes = kiln::kernel::dimSizes(rewriter, op.getLoc(), dimExprs(out));
  for (int64_t i = 0; i < in.getRank(); ++i) {
    bool sliced = i == (int64_t)op.getDim();
    offsets.push_back(rewriter.getIndexAttr(sliced ? (int64_t)op.getStart() : 0));
    strides.push_back(rewriter.getIndexAttr(sliced ? (int64_t)op.getStep() : 1));
  }
  rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, withoutEncoding(out), input,
                                                      offsets, sizes, strides);
  return success();
}

/// One generic over the result; each element is read from the input whose
/// range along `dim` holds it (indices clamped so no load is out of bounds).
LogicalResult lowerConcat(RewriterBase &rewriter, ConcatOp op) {
  Location loc = op.getLoc();
  auto type = tensorType(op.getResult());
  int64_t dim = (int64_t)op.getDim();
  // Non-empty inputs, each with its offset and size along `dim` (constants,
  // or expressions over the size symbols computed before the loop).
  struct Part { Value input; AffineExpr start, size; };
  SmallVector<Part> parts;
  AffineExpr offset = rewriter.getAffineConstantExpr(0);
  for (Value input : op.getInputs()) {
    AffineExpr size = dimExpr(tensorType(input), dim);
    auto constant = dyn_cast<AffineConstantExpr>(size);
    if (!constant || constant.getValue() > 0)
      parts.push_back({input, offset, size});
    offset = offset + size;
  }
  SmallVector<std::pair<Value, Value>> bounds; // symbolic parts' start and size
  for (Part &part : parts)
    bounds.push_back({isa<AffineConstantExpr>(part.start)
                          ? Value()
                          : kiln::kernel::sizeValue(rewriter, loc, part.start),
                      isa<AffineConstantExpr>(part.size)
                          ? Value()
                          : kiln::kernel::sizeValue(rewriter, loc, part.size)});
  Value init = emptyLike(rewriter, loc, type);
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(type.getRank(), rewriter.getContext())};
  SmallVector<IteratorType> iterators(type.getRank(), IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, ValueRange{}, ValueRange{init}, maps,
      iterators, "", "", [&](OpBuilder &b, Location l, ValueRange) {
        SmallVector<Value> indices;
        for (int64_t i = 0; i < type.getRank(); ++i)
          indices.push_back(linalg::IndexOp::create(b, l, i));
        Value result;
        // Later parts win where their range starts: select forwards.
        for (auto [part, bound] : llvm::zip(parts, bounds)) {
          Value input = part.input;
          if (auto inputType = tensorType(input); inputType.getEncoding())
            input = tensor::CastOp::create(b, l, withoutEncoding(inputType), input);
          Value startValue = bound.first
                                 ? bound.first
                                 : arith::ConstantIndexOp::create(
                                       b, l, cast<AffineConstantExpr>(part.start).getValue())
                                       .getResult();
          Value local = arith::SubIOp::create(b, l, indices[dim], startValue);
          SmallVector<Value> at(indices);
          at[dim] = bound.second
                        ? clampIndex(b, l, local, bound.second)
                        : clampIndex(b, l, local, cast<AffineConstantExpr>(part.size).getValue());
          Value element = tensor::ExtractOp::create(b, l, input, at);
          if (!result) {
            result = element;
            continue;
          }
          Value inside = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                               indices[dim], startValue);
          result = arith::SelectOp::create(b, l, inside, element, result);
        }
        if (!result) // every input is empty, and so is the result
          result = scalarConstant(b, l, type.getElementType(), 0);
        linalg::YieldOp::create(b, l, result);
      });
  rewriter.replaceOp(op, generic.getResult(0));
  return success();
}

LogicalResult lowerEmbedding(RewriterBase &rewriter, EmbeddingOp op) {
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  auto type = tensorType(op.getResult());
  int64_t rank = type.getRank();
  int64_t rows = tensorType(op.getWeight()).getDimSize(0);
  Value weight = op.getWeight();
  Value init = emptyLike(rewriter, loc, type);
  SmallVector<AffineExpr> indexExprs;
  for (int64_t i = 0; i + 1 < rank; ++i)
    indexExprs.push_back(getAffineDimExpr(i, ctx));
  SmallVector<AffineMap> maps{AffineMap::get(rank, 0, indexExprs, ctx),
                              AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, ValueRange{op.getIndices()}, ValueRange{init},
      maps, iterators, "", "", [&](OpBuilder &b, Location l, ValueRange a) {
        Value row = clampIndex(b, l, arith::IndexCastOp::create(b, l, b.getIndexType(), a[0]),
                               rows);
        Value column = linalg::IndexOp::create(b, l, rank - 1);
        Value element = tensor::ExtractOp::create(b, l, weight, ValueRange{row, column});
        linalg::YieldOp::create(b, l, element);
      });
  rewriter.replaceOp(op, generic.getResult(0));
  return success();
}

/// input[source] for the gathering lowerings; an empty input (whose result
/// can still have elements only if nothing is read) yields 0 instead.
Value extractOrZero(OpBuilder &b, Location loc, Value input, ValueRange source) {
  auto type = tensorType(input);
  if (type.hasStaticShape() && type.getNumElements() == 0)
    return scalarConstant(b, loc, type.getElementType(), 0);
  return tensor::ExtractOp::create(b, loc, input, source);
}

LogicalResult lowerIota(RewriterBase &rewriter, IotaOp op) {
  auto type = tensorType(op.getResult());
  Type element = type.getElementType();
  Location loc = op.getLoc();
  Value init = emptyLike(rewriter, loc, type);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, rewriter.getContext());
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, ValueRange{}, ValueRange{init}, ArrayRef<AffineMap>{identity},
      ArrayRef<IteratorType>{IteratorType::parallel}, "", "",
      [&](OpBuilder &b, Location l, ValueRange) {
        Value i = arith::IndexCastOp::create(b, l, b.getI64Type(), linalg::IndexOp::create(b, l, 0));
        Value start = arith::ConstantOp::create(b, l, op.getStart());
        Value step = arith::ConstantOp::create(b, l, op.getStep());
        Value value;
        if (isFloat(element)) { // in f64, rounded once (ATen's accumulate type)
          Value fi = arith::SIToFPOp::create(b, l, b.getF64Type(), i);
          value = arith::AddFOp::create(b, l, start, arith::MulFOp::create(b, l, fi, step));
          if (element != b.getF64Type())
            value = arith::TruncFOp::create(b, l, element, value);
        } else {
          value = arith::AddIOp::create(b, l, start, arith::MulIOp::create(b, l, i, step));
          if (element != b.getI64Type())
            value = arith::TruncIOp::create(b, l, element, value);
        }
        linalg::YieldOp::create(b, l, value);
      });
  rewriter.replaceOp(op, generic.getResult(0));
  return success();
}

LogicalResult lowerPad(RewriterBase &rewriter, PadOp op) {
  auto type = tensorType(op.getResult());
  auto inputType = tensorType(op.getInput());
  int64_t rank = type.getRank();
  Location loc = op.getLoc();
  Value input = op.getInput();
  Value init = emptyLike(rewriter, loc, type);
  // The input's sizes, computed before the loop when symbolic.
  SmallVector<Value> inputSizes;
  for (int64_t d = 0; d < rank; ++d)
    inputSizes.push_back(kiln::kernel::sizeValue(rewriter, loc, dimExpr(inputType, d)));
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext());
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, ValueRange{}, ValueRange{init},
      ArrayRef<AffineMap>{identity}, iterators, "", "", [&](OpBuilder &b, Location l, ValueRange) {
        // Source index i - low per dim; outside the input, the pad value.
        SmallVector<Value> source;
        Value inside = arith::ConstantIntOp::create(b, l, 1, 1);
        for (int64_t d = 0; d < rank; ++d) {
          Value i = arith::SubIOp::create(b, l, linalg::IndexOp::create(b, l, d),
                                          arith::ConstantIndexOp::create(b, l, op.getLow()[d]));
          Value size = inputSizes[d];
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value ok = arith::AndIOp::create(
              b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, i, zero),
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, size));
          inside = arith::AndIOp::create(b, l, inside, ok);
          source.push_back(clampIndex(b, l, i, size));
        }
        Value pad = scalarConstant(b, l, type.getElementType(), op.getValue().convertToDouble());
        Value result = pad;
        if (!inputType.hasStaticShape() || inputType.getNumElements() > 0) {
          Value element = tensor::ExtractOp::create(b, l, input, source);
          result = arith::SelectOp::create(b, l, inside, element, pad);
        }
        linalg::YieldOp::create(b, l, result);
      });
  rewriter.replaceOp(op, generic.getResult(0));
  return success();
}

LogicalResult lowerIndex(RewriterBase &rewriter, IndexOp op) {
  MLIRContext *ctx = rewriter.getContext();
  auto type = tensorType(op.getResult());
  auto inputType = tensorType(op.getInput());
  int64_t rank = type.getRank();
  int64_t start = op.getBroadcastStart();
  int64_t broadcastRank = op.getBroadcastShape().size();
  ArrayRef<int64_t> indexed = op.getIndexedDims();
  Location loc = op.getLoc();
  Value input = op.getInput();
  // Index tensors are read at the broadcast coordinates, result dims
  // [start, start + broadcastRank), NumPy-broadcast: missing leading dims
  // are dropped and size-1 dims read element 0.
  SmallVector<AffineMap> maps;
  for (Value index : op.getIndices()) {
    auto indexType = tensorType(index);
    SmallVector<AffineExpr> exprs;
    int64_t skipped = broadcastRank - indexType.getRank();
    for (int64_t d = 0; d < indexType.getRank(); ++d)
      exprs.push_back(indexType.getDimSize(d) == 1 && type.getDimSize(start + skipped + d) != 1
                          ? getAffineConstantExpr(0, ctx)
                          : getAffineDimExpr(start + skipped + d, ctx));
    maps.push_back(AffineMap::get(rank, 0, exprs, ctx));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  Value init = emptyLike(rewriter, loc, type);
  // The indexed dims' sizes, computed before the loop when symbolic.
  SmallVector<Value> indexedSizes;
  for (int64_t d : indexed)
    indexedSizes.push_back(kiln::kernel::sizeValue(rewriter, loc, dimExpr(inputType, d)));
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, op.getIndices(), ValueRange{init}, maps,
      iterators, "", "",
      [&](OpBuilder &b, Location l, ValueRange args) {
        // Result dims outside the broadcast block walk the non-indexed input
        // dims in order.
        SmallVector<Value> source(inputType.getRank());
        int64_t resultDim = 0;
        for (int64_t d = 0; d < inputType.getRank(); ++d) {
          if (resultDim == start)
            resultDim += broadcastRank;
          if (!llvm::is_contained(indexed, d))
            source[d] = linalg::IndexOp::create(b, l, resultDim++);
        }
        for (auto [k, d] : llvm::enumerate(indexed)) {
          Value size = indexedSizes[k];
          Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), args[k]);
          Value wrapped = arith::AddIOp::create(b, l, i, size);
          Value negative = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i,
                                                 arith::ConstantIndexOp::create(b, l, 0));
          source[d] = clampIndex(b, l, arith::SelectOp::create(b, l, negative, wrapped, i), size);
        }
        linalg::YieldOp::create(b, l, extractOrZero(b, l, input, source));
      });
  rewriter.replaceOp(op, generic.getResult(0));
  return success();
}

LogicalResult lowerGather(RewriterBase &rewriter, GatherOp op) {
  MLIRContext *ctx = rewriter.getContext();
  auto type = tensorType(op.getResult());
  auto inputType = tensorType(op.getInput());
  int64_t rank = type.getRank();
  int64_t dim = op.getDim();
  Location loc = op.getLoc();
  Value input = op.getInput();
  SmallVector<AffineMap> maps(2, AffineMap::getMultiDimIdentityMap(rank, ctx));
  Value init = emptyLike(rewriter, loc, type);
  Value size = kiln::kernel::sizeValue(rewriter, loc, dimExpr(inputType, dim));
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, ValueRange{op.getIndex()}, ValueRange{init},
      maps, iterators, "", "", [&](OpBuilder &b, Location l, ValueRange args) {
        SmallVector<Value> source;
        for (int64_t d = 0; d < rank; ++d)
          source.push_back(
              d == dim ? clampIndex(b, l, arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]),
                                    size)
                       : Value(linalg::IndexOp::create(b, l, d)));
        linalg::YieldOp::create(b, l, extractOrZero(b, l, input, source));
      });
  rewriter.replaceOp(op, generic.getResult(0));
  return success();
}

/// Inclusive scan along `dim`: the first slice is copied, then each later
/// slice adds the running slice in place (an scf.for over the dim whose body
/// is one vectorizable generic over the other dims).
LogicalResult lowerCumsum(RewriterBase &rewriter, CumsumOp op) {
  auto type = tensorType(op.getResult());
  int64_t rank = type.getRank();
  Location loc = op.getLoc();
  if (rank == 0 || (type.hasStaticShape() && type.getNumElements() == 0)) {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
  int64_t dim = op.getDim();
  MLIRContext *ctx = rewriter.getContext();
  Value input = op.getInput();
  if (auto inputType = tensorType(input); inputType.getEncoding())
    input = tensor::CastOp::create(rewriter, loc, withoutEncoding(inputType), input);
  SmallVector<int64_t> sliceShape(type.getShape());
  sliceShape[dim] = 1;
  auto sliceType = RankedTensorType::get(sliceShape, type.getElementType());
  // The slice sizes (symbolic ones computed once, before the loop).
  SmallVector<AffineExpr> sliceDims = dimExprs(type);
  sliceDims[dim] = getAffineConstantExpr(1, ctx);
  SmallVector<OpFoldResult> sizes = kiln::kernel::dimSizes(rewriter, loc, sliceDims);
  SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
  auto offsetsAt = [&](OpBuilder &b, OpFoldResult k) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    offsets[dim] = k;
    return offsets;
  };
  SmallVector<OpFoldResult> offsets0 = offsetsAt(rewriter, rewriter.getIndexAttr(0));
  Value first = tensor::ExtractSliceOp::create(rewriter, loc, sliceType, input, offsets0,
                                               sizes, strides);
  Value out = emptyLike(rewriter, loc, type);
  out = tensor::InsertSliceOp::create(rewriter, loc, first, out, offsets0, sizes, strides);
  Value lower = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value upper = kiln::kernel::sizeValue(rewriter, loc, dimExpr(type, dim));
  Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto loop = scf::ForOp::create(
      rewriter, loc, lower, upper, step, ValueRange{out, first},
      [&](OpBuilder &b, Location l, Value k, ValueRange carried) {
        SmallVector<OpFoldResult> offsets = offsetsAt(b, k);
        Value slice = tensor::ExtractSliceOp::create(b, l, sliceType, input, offsets,
                                                     sizes, strides);
        // running += slice, written over the running slice. Float sums
        // may be reassociated, as a reduction's: a GPU scans a long axis
        // by blocks (as ATen's CUDA cumsum does).
        auto add = linalg::GenericOp::create(
            b, l, TypeRange{sliceType}, ValueRange{slice}, ValueRange{carried[1]},
            ArrayRef<AffineMap>{identity, identity}, iterators, "", "",
            [&](OpBuilder &nb, Location nl, ValueRange a) {
              Value sum = isa<FloatType>(a[1].getType())
                              ? arith::AddFOp::create(nb, nl, a[1], a[0], reductionFlags(nb))
                              : addScalar(nb, nl, a[1], a[0]);
              linalg::YieldOp::create(nb, nl, sum);
            });
        Value running = add.getResult(0);
        Value next = tensor::InsertSliceOp::create(b, l, running, carried[0], offsets, sizes,
                                                   strides);
        scf::YieldOp::create(b, l, ValueRange{next, running});
      });
  rewriter.replaceOp(op, loop.getResult(0));
  return success();
}

/// `body` at every position of `shape` in row-major order: an scf.for nest
/// carrying one tensor, which `body` updates and returns.
using UpdateFn = function_ref<Value(OpBuilder &, Location, ValueRange ivs, Value tensor)>;
Value forEachPosition(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value init,
                      UpdateFn body) {
  SmallVector<Value> ivs;
  std::function<Value(OpBuilder &, Location, Value)> nest = [&](OpBuilder &nb, Location l,
                                                                Value tensor) -> Value {
    if (ivs.size() == shape.size())
      return body(nb, l, ivs, tensor);
    auto loop = scf::ForOp::create(
        nb, l, arith::ConstantIndexOp::create(nb, l, 0),
        arith::ConstantIndexOp::create(nb, l, shape[ivs.size()]),
        arith::ConstantIndexOp::create(nb, l, 1), ValueRange{tensor},
        [&](OpBuilder &lb, Location ll, Value iv, ValueRange carried) {
          ivs.push_back(iv);
          Value updated = nest(lb, ll, carried[0]);
          ivs.pop_back();
          scf::YieldOp::create(lb, ll, updated);
        });
    return loop.getResult(0);
  };
  return nest(b, loc, init);
}

/// Scatter: a sequential loop over the index positions updating the result
/// in place (one-shot bufferization copies the input first only if it is
/// still read). Without include_self, a first loop resets the written
/// positions to the reduction's identity.
LogicalResult lowerScatter(RewriterBase &rewriter, ScatterOp op) {
  Location loc = op.getLoc();
  auto type = tensorType(op.getResult());
  ArrayRef<int64_t> positions = tensorType(op.getIndex()).getShape();
  int64_t dim = op.getDim();
  ScatterReduction reduce = op.getReduce();
  bool isUnsigned = computesUnsigned(op);
  Type element = type.getElementType();
  auto destination = [&](OpBuilder &b, Location l, ValueRange ivs) {
    Value i = tensor::ExtractOp::create(b, l, op.getIndex(), ivs);
    SmallVector<Value> coords(ivs);
    coords[dim] = clampIndex(b, l, arith::IndexCastOp::create(b, l, b.getIndexType(), i),
                             type.getDimSize(dim));
    return coords;
  };
  Value result = op.getInput();
  std::optional<Combine> kind;
  switch (reduce) {
  case ScatterReduction::Sum: kind = Combine::Sum; break;
  case ScatterReduction::Prod: kind = Combine::Prod; break;
  case ScatterReduction::Amax: kind = Combine::Max; break;
  case ScatterReduction::Amin: kind = Combine::Min; break;
  case ScatterReduction::None: break; // the last write wins
  }
  if (!op.getIncludeSelf() && kind) {
    Value identity = combineIdentity(rewriter, loc, element, *kind, isUnsigned);
    result = forEachPosition(rewriter, loc, positions, result,
                             [&](OpBuilder &b, Location l, ValueRange ivs, Value tensor) -> Value {
                               return tensor::InsertOp::create(b, l, identity, tensor,
                                                               destination(b, l, ivs));
                             });
  }
  result = forEachPosition(
      rewriter, loc, positions, result,
      [&](OpBuilder &b, Location l, ValueRange ivs, Value tensor) -> Value {
        SmallVector<Value> coords = destination(b, l, ivs);
        Value value = tensor::ExtractOp::create(b, l, op.getSrc(), ivs);
        if (kind) {
          // A float sum may be reassociated unless `ordered`: a GPU adds the
          // updates of a scatter whose positions may meet by atomics, in any
          // order (as ATen's CUDA index_add does). A CPU adds them in order.
          Value old = tensor::ExtractOp::create(b, l, tensor, coords);
          value = combineScalar(b, l, *kind, old, value, isUnsigned,
                                /*reassociate=*/*kind == Combine::Sum && !op.getOrdered());
        }
        return tensor::InsertOp::create(b, l, value, tensor, coords);
      });
  rewriter.replaceOp(op, result);
  return success();
}

/// Attention stays one op, in destination style: the CPU target lowers its
/// buffer form to fused loops (kiln-lower-attention).
LogicalResult lowerAttention(RewriterBase &rewriter, AttentionOp op) {
  Value empty = emptyLike(rewriter, op.getLoc(), tensorType(op.getResult()));
  Value logsumexp = emptyLike(rewriter, op.getLoc(), tensorType(op.getLogsumexp()));
  auto attention = kiln::kernel::AttentionOp::create(
      rewriter, op.getLoc(), TypeRange{empty.getType(), logsumexp.getType()}, op.getQ(),
      op.getK(), op.getV(), op.getMask(), empty, logsumexp, op.getScaleAttr(),
      op.getIsCausalAttr(), op.getMaskedRowsNanAttr());
  rewriter.replaceOp(op, attention);
  return success();
}

/// Sort stays one op as well (kiln-lower-sort), unsigned where its input
/// is. A top-k (with k) sorts into whole-length temporaries, of which it
/// keeps the first k along the dim (a target may select only those).
LogicalResult lowerSort(RewriterBase &rewriter, SortOp op) {
  Location loc = op.getLoc();
  auto inputType = tensorType(op.getInput());
  Value values = emptyLike(rewriter, loc, inputType);
  Value indices = emptyLike(rewriter, loc, inputType.clone(rewriter.getI64Type()));
  auto sort = kiln::kernel::SortOp::create(
      rewriter, loc, TypeRange{values.getType(), indices.getType()}, op.getInput(), values,
      indices, op.getDimAttr(), op.getDescendingAttr(), op.getKAttr());
  if (op->hasAttr(kUnsignedAttr))
    sort->setAttr(kUnsignedAttr, rewriter.getUnitAttr());
  if (!op.getK()) {
    rewriter.replaceOp(op, sort);
    return success();
  }
  int64_t rank = inputType.getRank();
  SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
  SmallVector<Value> firsts;
  for (auto [result, sorted] : llvm::zip(op->getResults(), sort->getResults())) {
    auto type = tensorType(result);
    SmallVector<OpFoldResult> sizes = kiln::kernel::dimSizes(rewriter, loc, dimExprs(type));
    firsts.push_back(tensor::ExtractSliceOp::create(rewriter, loc, withoutEncoding(type), sorted,
                                                    offsets, sizes, strides));
  }
  rewriter.replaceOp(op, firsts);
  return success();
}

/// Convolution stays one op too (kiln-lower-convolution); the elementwise ops
/// after it in its kernel become its epilogue (kiln-fuse-elementwise).
LogicalResult lowerConv2d(RewriterBase &rewriter, Conv2dOp op) {
  Value empty = emptyLike(rewriter, op.getLoc(), tensorType(op.getResult()));
  auto conv = kiln::kernel::Conv2dOp::create(
      rewriter, op.getLoc(), TypeRange{empty.getType()}, op.getInput(), op.getWeight(),
      op.getBias(), empty, ValueRange{}, op.getStridesAttr(), op.getDilationsAttr(),
      /*epilogue_maps=*/ArrayAttr(), op.getGroupsAttr());
  rewriter.replaceOp(op, conv);
  return success();
}

/// A size as a 0-d tensor, computed from the kernel's size symbols.
LogicalResult lowerSize(RewriterBase &rewriter, SizeOp op) {
  Location loc = op.getLoc();
  auto type = tensorType(op.getResult());
  Type element = type.getElementType();
  Value size = kiln::kernel::sizeValue(rewriter, loc, op.getSize().getResult(0));
  Value value = arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), size);
  if (isa<FloatType>(element))
    value = arith::SIToFPOp::create(rewriter, loc, element, value);
  else if (element != value.getType())
    value = arith::TruncIOp::create(rewriter, loc, element, value);
  rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, type, ValueRange{value});
  return success();
}

LogicalResult lowerConstant(RewriterBase &rewriter, ConstantOp op) {
  rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, op.getValue().getType(),
                                                 cast<TypedAttr>(op.getValue()));
  return success();
}

/// Ops whose lowerings compute their sizes from symbolic dims; the others
/// still need static shapes.
bool lowersSymbolicShapes(Operation *op) {
  return isElementwise(op) ||
         isa<SumOp, MeanOp, AmaxOp, AminOp, ProdOp, AllOp, AnyOp, SoftmaxOp, LogSoftmaxOp,
             ArgmaxOp, ArgminOp, LayerNormOp, MatmulOp, ReshapeOp, PermuteOp, ExpandOp,
             SliceOp, ConcatOp, EmbeddingOp, IotaOp, ConstantOp, AttentionOp, SizeOp, IndexOp,
             GatherOp, CumsumOp, PadOp, Conv2dOp, SortOp>(op);
}

LogicalResult lowerOp(RewriterBase &rewriter, Operation *op) {
  rewriter.setInsertionPoint(op);
  auto symbolic = [](Value v) { return isSymbolic(v.getType()); };
  if (!lowersSymbolicShapes(op) &&
      (llvm::any_of(op->getOperands(), symbolic) || llvm::any_of(op->getResults(), symbolic)))
    return op->emitOpError("does not support symbolic sizes yet; compile its graph with "
                           "static shapes (dynamic=False) or let it run in eager");
  if (isElementwise(op))
    return lowerElementwise(rewriter, op);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<SumOp, MeanOp, AmaxOp, AminOp, ProdOp, AllOp, AnyOp>([&](auto o) { return lowerReduce(rewriter, o); })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto o) { return lowerSoftmax(rewriter, o); })
      .Case<ArgmaxOp, ArgminOp>([&](auto o) { return lowerArgReduce(rewriter, o); })
      .Case<LayerNormOp>([&](auto o) { return lowerLayerNorm(rewriter, o); })
      .Case<MatmulOp>([&](auto o) { return lowerMatmul(rewriter, o); })
      .Case<ReshapeOp>([&](auto o) { return lowerReshape(rewriter, o); })
      .Case<PermuteOp>([&](auto o) { return lowerPermute(rewriter, o); })
      .Case<ExpandOp>([&](auto o) { return lowerExpand(rewriter, o); })
      .Case<SliceOp>([&](auto o) { return lowerSlice(rewriter, o); })
      .Case<ConcatOp>([&](auto o) { return lowerConcat(rewriter, o); })
      .Case<EmbeddingOp>([&](auto o) { return lowerEmbedding(rewriter, o); })
      .Case<IotaOp>([&](auto o) { return lowerIota(rewriter, o); })
      .Case<PadOp>([&](auto o) { return lowerPad(rewriter, o); })
      .Case<IndexOp>([&](auto o) { return lowerIndex(rewriter, o); })
      .Case<GatherOp>([&](auto o) { return lowerGather(rewriter, o); })
      .Case<CumsumOp>([&](auto o) { return lowerCumsum(rewriter, o); })
      .Case<ScatterOp>([&](auto o) { return lowerScatter(rewriter, o); })
      .Case<AttentionOp>([&](auto o) { return lowerAttention(rewriter, o); })
      .Case<Conv2dOp>([&](auto o) { return lowerConv2d(rewriter, o); })
      .Case<SortOp>([&](auto o) { return lowerSort(rewriter, o); })
      .Case<ConstantOp>([&](auto o) { return lowerConstant(rewriter, o); })
      .Case<SizeOp>([&](auto o) { return lowerSize(rewriter, o); })
      .Default([](Operation *o) {
        return o->emitOpError("has no lowering to linalg");
      });
}

/// `type` with unsigned integers (kiln_graph's uint8) made signless, in
/// tensors, memrefs and functions too.
Type signless(Type type) {
  if (auto integer = dyn_cast<IntegerType>(type))
    return integer.isUnsigned() ? IntegerType::get(type.getContext(), integer.getWidth()) : type;
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.clone(signless(tensor.getElementType()));
  if (auto memref = dyn_cast<MemRefType>(type)) // kernel arguments
    return MemRefType::get(memref.getShape(), signless(memref.getElementType()),
                           memref.getLayout(), memref.getMemorySpace());
  if (auto function = dyn_cast<FunctionType>(type)) {
    auto convert = [](TypeRange types) {
      return llvm::to_vector(llvm::map_range(types, [](Type t) { return signless(t); }));
    };
    return FunctionType::get(type.getContext(), convert(function.getInputs()),
                             convert(function.getResults()));
  }
  return type;
}

bool isUnsignedElement(Type type) {
  auto integer = dyn_cast<IntegerType>(getElementTypeOrSelf(type));
  return integer && integer.isUnsigned();
}

/// Marks each graph op that computes on unsigned values (kUnsignedAttr): its
/// first non-bool operand is unsigned (a where's condition is bool), or it
/// has none and its result is. Then makes every type in `root` signless.
void eraseSignedness(Operation *root) {
  MLIRContext *ctx = root->getContext();
  root->walk([&](Operation *op) {
    if (!isa<GraphDialect>(op->getDialect()) || op->getNumResults() == 0)
      return;
    Type subject = op->getResult(0).getType();
    for (Value operand : op->getOperands())
      if (!getElementTypeOrSelf(operand.getType()).isInteger(1)) {
        subject = operand.getType();
        break;
      }
    if (isUnsignedElement(subject))
      op->setAttr(kUnsignedAttr, UnitAttr::get(ctx));
  });
  root->walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(signless(arg.getType()));
    for (OpResult result : op->getResults())
      result.setType(signless(result.getType()));
    if (auto function = dyn_cast<func::FuncOp>(op))
      function.setFunctionType(cast<FunctionType>(signless(function.getFunctionType())));
    if (auto constant = dyn_cast<ConstantOp>(op))
      if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
          dense && isUnsignedElement(dense.getType()))
        constant.setValueAttr(dense.bitcast(signless(dense.getElementType())));
  });
}

/// Lowerings build linalg ops on plain tensor types; the graph ops still to
/// be lowered need their operands' symbolic dims. So a replacement whose type
/// lost the symbolic encoding is cast back to the graph op's result type
/// (the casts fold away once stripSymbolicEncodings removes the encodings).
class SymbolicShapeRewriter : public IRRewriter {
public:
  using IRRewriter::IRRewriter;
  void replaceOp(Operation *op, ValueRange newValues) override {
    SmallVector<Value> values(newValues);
    for (auto [value, result] : llvm::zip(values, op->getResults()))
      if (value.getType() != result.getType() && isSymbolic(result.getType()))
        value = tensor::CastOp::create(*this, op->getLoc(), result.getType(), value);
    IRRewriter::replaceOp(op, values);
  }
  void replaceOp(Operation *op, Operation *newOp) override {
    replaceOp(op, newOp->getResults());
  }
};

struct ConvertGraphToLinalgPass
    : kiln::impl::ConvertGraphToLinalgPassBase<ConvertGraphToLinalgPass> {
  void runOnOperation() override {
    eraseSignedness(getOperation());
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<GraphDialect>(op->getDialect()))
        ops.push_back(op);
    });
    SymbolicShapeRewriter rewriter(&getContext());
    // Constants last: the lowerings above inspect constant operands.
    std::stable_partition(ops.begin(), ops.end(), [](Operation *op) { return !isa<ConstantOp>(op); });
    for (Operation *op : ops)
      if (failed(lowerOp(rewriter, op)))
        return signalPassFailure();
    stripSymbolicEncodings(getOperation());
  }

  /// From here on sizes are values: the graph's symbolic encodings leave the
  /// types (the casts that added them at kernel entry fold away).
  static void stripSymbolicEncodings(Operation *root) {
    auto strip = [](Value v) {
      if (auto type = dyn_cast<RankedTensorType>(v.getType()); type && type.getEncoding() &&
                                                                 isa<AffineMapAttr>(type.getEncoding()))
        v.setType(withoutEncoding(type));
    };
    auto stripType = [](Type t) -> Type {
      if (auto type = dyn_cast<RankedTensorType>(t);
          type && type.getEncoding() && isa<AffineMapAttr>(type.getEncoding()))
        return withoutEncoding(type);
      return t;
    };
    root->walk([&](Operation *op) {
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            strip(arg);
      for (OpResult result : op->getResults())
        strip(result);
      if (auto func = dyn_cast<func::FuncOp>(op)) {
        FunctionType type = func.getFunctionType();
        auto inputs = llvm::map_to_vector(type.getInputs(), stripType);
        auto results = llvm::map_to_vector(type.getResults(), stripType);
        func.setFunctionType(FunctionType::get(op->getContext(), inputs, results));
      }
    });
  }
};

} // namespace
