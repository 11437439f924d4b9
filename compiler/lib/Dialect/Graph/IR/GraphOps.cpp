#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace kiln::graph;

#define GET_OP_CLASSES
#include "kiln/Dialect/Graph/IR/GraphOps.cpp.inc"

namespace kiln::graph {

FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return failure();
    result[i] = da == 1 ? db : da;
  }
  return result;
}

/// The leading dim's size (a constant or a symbolic expression); null for a
/// rank-0 value.
static AffineExpr leadingSize(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getRank() ? dimExpr(type, 0) : AffineExpr();
}

/// Nothing aligned and no parallel extent: the answer for a rank-0 result,
/// and the start of every other.
static LeadingDim notParallel(Operation *op) {
  LeadingDim info;
  info.aligned.assign(op->getNumOperands(), false);
  return info;
}

/// The op's leading loop is parallel; the caller says which operands align.
static std::optional<LeadingDim> parallel(Operation *op) {
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (result.getRank() == 0)
    return std::nullopt;
  LeadingDim info = notParallel(op);
  info.extent = dimExpr(result, 0);
  return info;
}

/// Operand v has the result's rank and leading size (no broadcast along it).
static bool sameLeadingDim(Operation *op, Value v) {
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  return cast<RankedTensorType>(v.getType()).getRank() == result.getRank() &&
         leadingSize(v) == dimExpr(result, 0);
}

LeadingDim elementwiseLeadingDim(Operation *op) {
  std::optional<LeadingDim> info = parallel(op);
  if (!info)
    return notParallel(op);
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    info->aligned[i] = sameLeadingDim(op, operand);
  return *info;
}

/// Row-wise ops (reductions over inner dims, softmax, layer norm) are
/// parallel and aligned along dim 0 unless they reduce over it.
static LeadingDim rowwise(Operation *op, bool reducesDim0, unsigned alignedOperands) {
  std::optional<LeadingDim> info = parallel(op);
  if (!info || reducesDim0)
    return notParallel(op);
  for (unsigned i = 0; i < alignedOperands && i < info->aligned.size(); ++i)
    info->aligned[i] = true;
  return *info;
}

} // namespace kiln::graph

#include "kiln/Dialect/Graph/IR/GraphInterfaces.cpp.inc"

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

/// Elementwise ops: the result shape is the broadcast of the operand shapes;
/// arithmetic results share the operands' element type, comparisons give i1.
LogicalResult kiln::graph::verifyElementwise(Operation *op) {
  SmallVector<AffineExpr> shape;
  for (Value operand : op->getOperands()) {
    auto next = broadcastDims(shape, dimExprs(tensorType(operand)));
    if (failed(next))
      return op->emitOpError("operand shapes are not broadcast-compatible");
    shape = *next;
  }
  auto result = tensorType(op->getResult(0));
  SmallVector<AffineExpr> resultDims = dimExprs(result);
  if (resultDims.size() != shape.size() ||
      !llvm::all_of(llvm::zip(resultDims, shape),
                    [](auto pair) { return sameSize(std::get<0>(pair), std::get<1>(pair)); }))
    return op->emitOpError("result shape must be the broadcast operand shape");

  Type resultElement = result.getElementType();
  if (op->hasTrait<Comparison>()) {
    if (!resultElement.isInteger(1))
      return op->emitOpError("comparison result must have i1 elements");
    if (tensorType(op->getOperand(0)).getElementType() !=
        tensorType(op->getOperand(1)).getElementType())
      return op->emitOpError("compared operands must share an element type");
    return success();
  }
  if (op->hasTrait<OwnElementTypes>())
    return success();
  for (Value operand : op->getOperands())
    if (tensorType(operand).getElementType() != resultElement)
      return op->emitOpError("operand element type ")
             << tensorType(operand).getElementType()
             << " differs from the result element type " << resultElement;
  if (op->hasTrait<FloatOnly>() && !isa<FloatType>(resultElement))
    return op->emitOpError("requires a floating-point element type");
  if (op->hasTrait<IntegerOnly>() && !isa<IntegerType>(resultElement))
    return op->emitOpError("requires an integer or bool element type");
  return success();
}

LogicalResult WhereOp::verify() {
  Type resultElement = tensorType(getResult()).getElementType();
  if (!tensorType(getCondition()).getElementType().isInteger(1))
    return emitOpError("condition must have i1 elements");
  if (tensorType(getOnTrue()).getElementType() != resultElement ||
      tensorType(getOnFalse()).getElementType() != resultElement)
    return emitOpError("selected values must have the result element type");
  return success();
}

/// Normalizes `dim` against `rank` (negative dims count from the back).
static FailureOr<int64_t> normalizeDim(int64_t dim, int64_t rank) {
  if (dim < -std::max<int64_t>(rank, 1) || dim >= std::max<int64_t>(rank, 1))
    return failure();
  return dim < 0 ? dim + rank : dim;
}

SmallVector<int64_t> kiln::graph::reducedDims(Value input, ArrayRef<int64_t> given) {
  int64_t rank = tensorType(input).getRank();
  SmallVector<int64_t> dims;
  if (rank == 0) // dim 0 or -1 of a 0-d tensor names the scalar: no loop to reduce
    return dims;
  for (int64_t d : given)
    dims.push_back(d < 0 ? d + rank : d);
  if (dims.empty())
    dims = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  llvm::sort(dims);
  return dims;
}

LogicalResult kiln::graph::verifyReduce(Operation *op, Value inputValue, ArrayRef<int64_t> given,
                           bool keepdim) {
  auto input = tensorType(inputValue);
  int64_t rank = input.getRank();
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t d : given) {
    auto dim = normalizeDim(d, rank);
    if (failed(dim) || (rank == 0 && d != 0 && d != -1))
      return op->emitOpError("dim ") << d << " is out of range for rank " << rank;
    if (!seen.insert(*dim).second)
      return op->emitOpError("dim ") << d << " appears more than once";
  }
  SmallVector<int64_t> expected;
  SmallVector<int64_t> dims = reducedDims(inputValue, given);
  for (int64_t i = 0; i < rank; ++i) {
    if (!llvm::is_contained(dims, i))
      expected.push_back(input.getDimSize(i));
    else if (keepdim)
      expected.push_back(1);
  }
  auto result = tensorType(op->getResult(0));
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError("result shape does not match the reduction of the input");
  if (result.getElementType() != input.getElementType())
    return op->emitOpError("result element type must match the input");
  if (isa<MeanOp>(op) && !isa<FloatType>(input.getElementType()))
    return op->emitOpError("requires a floating-point element type");
  if (isa<AllOp, AnyOp>(op) && !input.getElementType().isInteger(1))
    return op->emitOpError("requires a bool (i1) element type");
  return success();
}

LogicalResult kiln::graph::verifyArgReduce(Operation *op, Value inputValue, int64_t dim,
                                          bool keepdim) {
  auto input = tensorType(inputValue);
  int64_t rank = input.getRank();
  if (dim < 0 || dim >= std::max<int64_t>(rank, 1))
    return op->emitOpError("dim must be in [0, rank)");
  SmallVector<int64_t> expected;
  for (int64_t i = 0; i < rank; ++i)
    if (i != dim || keepdim)
      expected.push_back(i == dim ? 1 : input.getDimSize(i));
  auto result = tensorType(op->getResult(0));
  if (result.getShape() != ArrayRef<int64_t>(expected) || !result.getElementType().isInteger(64))
    return op->emitOpError("result must be i64, shaped as the input reduced over dim");
  if (rank > 0 && input.getDimSize(dim) == 0)
    return op->emitOpError("cannot reduce an empty dim");
  return success();
}

LeadingDim kiln::graph::reduceLeadingDim(Operation *op, ArrayRef<int64_t> reducedDims) {
  return rowwise(op, llvm::is_contained(reducedDims, 0), op->getNumOperands());
}

LeadingDim SoftmaxOp::getLeadingDim() {
  return rowwise(*this, getNormalizedDim() == 0, getOperation()->getNumOperands());
}
LeadingDim LogSoftmaxOp::getLeadingDim() {
  return rowwise(*this, getNormalizedDim() == 0, getOperation()->getNumOperands());
}
LeadingDim LayerNormOp::getLeadingDim() {
  // Only the input is read per row; weight and bias span the normalized dims.
  return rowwise(*this, (int64_t)getNormalizedRank() >= tensorType(getResult()).getRank(), 1);
}
LeadingDim MatmulOp::getLeadingDim() {
  std::optional<LeadingDim> info = parallel(*this);
  if (!info)
    return notParallel(*this);
  info->aligned[0] = true;                                   // rows of A
  info->aligned[1] = tensorType(getResult()).getRank() == 3; // B per batch
  return *info;
}
LeadingDim AttentionOp::getLeadingDim() {
  // Workgroups split the B * H (batch, head) pairs; the op runs alone in its
  // kernel (OwnKernel), so no operand needs to be aligned.
  LeadingDim info = notParallel(*this);
  auto result = tensorType(getResult());
  info.extent = dimExpr(result, 0) * dimExpr(result, 1);
  return info;
}
LeadingDim Conv2dOp::getLeadingDim() {
  // Workgroups split the N * OH output rows; the op runs alone in its kernel.
  LeadingDim info = notParallel(*this);
  auto result = tensorType(getResult());
  info.extent = dimExpr(result, 0) * dimExpr(result, 2);
  return info;
}
LeadingDim ReshapeOp::getLeadingDim() {
  // Row-major: equal leading sizes mean equal trailing element counts, so row
  // r of the result is exactly row r of the input.
  std::optional<LeadingDim> info = parallel(*this);
  if (!info)
    return notParallel(*this);
  info->aligned[0] = leadingSize(getInput()) == *info->extent;
  return *info;
}
LeadingDim PermuteOp::getLeadingDim() {
  std::optional<LeadingDim> info = parallel(*this);
  if (!info)
    return notParallel(*this);
  info->aligned[0] = getDims()[0] == 0;
  return *info;
}
LeadingDim ExpandOp::getLeadingDim() { return elementwiseLeadingDim(*this); }
LeadingDim SliceOp::getLeadingDim() {
  std::optional<LeadingDim> info = parallel(*this);
  if (!info)
    return notParallel(*this);
  info->aligned[0] = getDim() != 0;
  return *info;
}
LeadingDim ConcatOp::getLeadingDim() {
  std::optional<LeadingDim> info = parallel(*this);
  if (!info)
    return notParallel(*this);
  info->aligned.assign(info->aligned.size(), getDim() != 0);
  return *info;
}
LeadingDim EmbeddingOp::getLeadingDim() {
  // Row r of the result is looked up by index r; the table is read anywhere.
  std::optional<LeadingDim> info = parallel(*this);
  if (!info)
    return notParallel(*this);
  info->aligned[1] = tensorType(getIndices()).getRank() > 0;
  return *info;
}


template <typename SoftmaxOp>
static LogicalResult verifySoftmax(SoftmaxOp op) {
  auto input = tensorType(op.getInput());
  if (failed(normalizeDim((int64_t)op.getDim(), input.getRank())))
    return op.emitOpError("dim ") << (int64_t)op.getDim() << " is out of range for rank "
                                  << input.getRank();
  if (op.getResult().getType() != input)
    return op.emitOpError("result type must match the input type");
  if (!isa<FloatType>(input.getElementType()))
    return op.emitOpError("requires a floating-point element type");
  return success();
}
LogicalResult SoftmaxOp::verify() { return verifySoftmax(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifySoftmax(*this); }

LogicalResult LayerNormOp::verify() {
  auto input = tensorType(getInput());
  int64_t n = (int64_t)getNormalizedRank();
  if (n < 1 || n > input.getRank())
    return emitOpError("normalized_rank must be in [1, input rank]");
  ArrayRef<int64_t> normalized = input.getShape().take_back(n);
  for (Value affine : {getWeight(), getBias()})
    if (tensorType(affine).getShape() != normalized ||
        tensorType(affine).getElementType() != input.getElementType())
      return emitOpError("weight and bias must have the normalized shape and the input element type");
  if (getResult().getType() != input)
    return emitOpError("result type must match the input type");
  SmallVector<int64_t> statShape(input.getShape().drop_back(n));
  statShape.append(n, 1);
  for (Value stat : {getMean(), getRstd()})
    if (tensorType(stat).getShape() != ArrayRef<int64_t>(statShape))
      return emitOpError("mean and rstd must keep the normalized dims as size 1");
  if (!isa<FloatType>(input.getElementType()))
    return emitOpError("requires a floating-point element type");
  return success();
}

LogicalResult SizeOp::verify() {
  AffineMap map = getSize();
  if (map.getNumDims() != 0 || map.getNumResults() != 1)
    return emitOpError("size must be one expression over the size symbols (no dims): ")
           << AffineMapAttr::get(map);
  return success();
}

LogicalResult MatmulOp::verify() {
  auto lhs = tensorType(getLhs()), rhs = tensorType(getRhs());
  auto result = tensorType(getResult());
  int64_t rank = lhs.getRank();
  if ((rank != 2 && rank != 3) || rhs.getRank() != rank ||
      result.getRank() != rank)
    return emitOpError("operands and result must all be rank 2 (mm) or rank 3 (bmm)");
  // Sizes compare as expressions, so symbolic dims must agree symbolically.
  bool transposed = getTransposeRhs();
  auto size = [](RankedTensorType t, int64_t d) { return dimExpr(t, d); };
  AffineExpr rhsK = size(rhs, transposed ? rank - 1 : rank - 2);
  AffineExpr rhsN = size(rhs, transposed ? rank - 2 : rank - 1);
  if (!sameSize(size(lhs, rank - 1), rhsK))
    return emitOpError("contraction sizes differ: ")
           << describeSize(size(lhs, rank - 1)) << " vs " << describeSize(rhsK);
  if (rank == 3 && (!sameSize(size(lhs, 0), size(rhs, 0)) ||
                    !sameSize(size(result, 0), size(lhs, 0))))
    return emitOpError("batch sizes differ");
  if (!sameSize(size(result, rank - 2), size(lhs, rank - 2)) ||
      !sameSize(size(result, rank - 1), rhsN))
    return emitOpError("result shape must be [..., M, N]");
  // Half operands may give a float32 result: the products accumulate in
  // float32, as ATen's do (GPU targets read the halves directly, for
  // tensor cores).
  Type element = lhs.getElementType();
  bool halfToF32 = (element.isF16() || element.isBF16()) && result.getElementType().isF32();
  if (element != rhs.getElementType() || (element != result.getElementType() && !halfToF32))
    return emitOpError("element types must match (or be float16 or bfloat16 operands with a "
                       "float32 result)");
  return success();
}

LogicalResult AttentionOp::verify() {
  auto q = tensorType(getQ()), k = tensorType(getK()), v = tensorType(getV());
  auto result = tensorType(getResult());
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4 || result.getRank() != 4)
    return emitOpError("q, k, v and the result must be rank 4 ([B, H, L, E])");
  Type element = q.getElementType();
  if (!isa<FloatType>(element))
    return emitOpError("requires a floating-point element type");
  for (RankedTensorType t : {k, v, result})
    if (t.getElementType() != element)
      return emitOpError("element types must match");
  // Sizes compare as expressions: a symbolic batch or length must be the
  // same symbol (or an equal expression) wherever it appears.
  auto size = [](RankedTensorType t, unsigned d) { return dimExpr(t, d); };
  auto same = [](AffineExpr a, AffineExpr b) { return sameSize(a, b); };
  AffineExpr batch = size(q, 0), heads = size(q, 1), queries = size(q, 2);
  AffineExpr keys = size(k, 2);
  if (!same(size(k, 0), batch) || !same(size(v, 0), batch))
    return emitOpError("batch sizes differ");
  if (q.isDynamicDim(1) || k.isDynamicDim(1) || v.isDynamicDim(1))
    return emitOpError("head counts must be static");
  if (v.getDimSize(1) != k.getDimSize(1) || k.getDimSize(1) < 1 ||
      q.getDimSize(1) % k.getDimSize(1))
    return emitOpError("key and value heads must be equal and divide the query heads (")
           << q.getDimSize(1) << " query heads, " << k.getDimSize(1) << " key, "
           << v.getDimSize(1) << " value)";
  if (!same(size(k, 3), size(q, 3)))
    return emitOpError("query and key head sizes differ: ") << describeSize(size(q, 3)) << " vs "
                                                            << describeSize(size(k, 3));
  if (!same(size(v, 2), keys))
    return emitOpError("key and value lengths differ: ") << describeSize(keys) << " vs " << describeSize(size(v, 2));
  AffineExpr expected[] = {batch, heads, queries, size(v, 3)};
  if (!llvm::all_of(llvm::zip(dimExprs(result), expected),
                    [&](auto pair) { return same(std::get<0>(pair), std::get<1>(pair)); }))
    return emitOpError("result must be [B, H, L, Ev]");
  auto logsumexp = tensorType(getLogsumexp());
  if (logsumexp.getRank() != 3 ||
      !llvm::all_of(llvm::zip(dimExprs(logsumexp), expected),
                    [&](auto pair) { return same(std::get<0>(pair), std::get<1>(pair)); }) ||
      logsumexp.getElementType() !=
          (element.isF16() || element.isBF16() ? Float32Type::get(getContext()) : element))
    return emitOpError("logsumexp must be [B, H, L] of the query's element type (float32 "
                       "for a float16 or bfloat16 query, as ATen's)");
  if (Value maskValue = getMask()) {
    auto mask = tensorType(maskValue);
    AffineExpr full[] = {batch, heads, queries, keys};
    if (mask.getRank() != 4 || mask.getElementType() != element)
      return emitOpError("mask must be rank 4 with the query's element type");
    for (int64_t i = 0; i < 4; ++i)
      if (mask.getDimSize(i) != 1 && !same(size(mask, i), full[i]))
        return emitOpError("mask dim ") << i << " must be 1 or " << describeSize(full[i]) << ", got "
                                        << describeSize(size(mask, i));
  }
  return success();
}

LogicalResult Conv2dOp::verify() {
  auto input = tensorType(getInput()), weight = tensorType(getWeight());
  auto result = tensorType(getResult());
  if (input.getRank() != 4 || weight.getRank() != 4 || result.getRank() != 4)
    return emitOpError("input, weight and result must be rank 4 ([N, C, H, W], [O, C, KH, KW])");
  Type element = input.getElementType();
  if (!isa<FloatType>(element) || weight.getElementType() != element ||
      result.getElementType() != element)
    return emitOpError("requires one floating-point element type");
  if (getStrides().size() != 2 || getDilations().size() != 2 ||
      llvm::any_of(getStrides(), [](int64_t s) { return s < 1; }) ||
      llvm::any_of(getDilations(), [](int64_t d) { return d < 1; }))
    return emitOpError("strides and dilations must be two positive integers");
  // Only the batch may be symbolic (the same size in the input and result).
  if (!weight.hasStaticShape() || input.isDynamicDim(1) || input.isDynamicDim(2) ||
      input.isDynamicDim(3) || !sameSize(dimExpr(input, 0), dimExpr(result, 0)))
    return emitOpError("only the batch may be symbolic, and the same in the input and result");
  int64_t groups = getGroups();
  if (groups < 1 || weight.getDimSize(0) % groups != 0)
    return emitOpError("groups must be positive and divide the ")
           << weight.getDimSize(0) << " output channels, got " << groups;
  if (weight.getDimSize(1) * groups != input.getDimSize(1))
    return emitOpError("weight has ") << weight.getDimSize(1) << " input channels per group ("
                                      << groups << " groups), input "
                                      << input.getDimSize(1);
  SmallVector<int64_t> expected{input.getDimSize(0), weight.getDimSize(0)};
  for (int64_t d = 0; d < 2; ++d) {
    int64_t span = getDilations()[d] * (weight.getDimSize(2 + d) - 1) + 1;
    if (input.getDimSize(2 + d) < span)
      return emitOpError("kernel extent ") << span << " exceeds the input size "
                                            << input.getDimSize(2 + d);
    expected.push_back((input.getDimSize(2 + d) - span) / getStrides()[d] + 1);
  }
  if (result.getShape().drop_front() != ArrayRef<int64_t>(expected).drop_front())
    return emitOpError("result must be [N, O, OH, OW] = [")
           << expected[0] << ", " << expected[1] << ", " << expected[2] << ", " << expected[3]
           << "]";
  if (Value bias = getBias()) {
    auto type = tensorType(bias);
    if (type.getRank() != 1 || type.getDimSize(0) != weight.getDimSize(0) ||
        type.getElementType() != element)
      return emitOpError("bias must be [O] of the input's element type");
  }
  return success();
}

LogicalResult ReshapeOp::verify() {
  if (isSymbolic(getInput().getType()) || isSymbolic(getResult().getType())) {
    if (!sameSize(numElementsExpr(tensorType(getInput())),
                  numElementsExpr(tensorType(getResult()))))
      return emitOpError("element count changes from ")
             << AffineMapAttr::get(symbolMap(getContext(), numElementsExpr(tensorType(getInput())))) << " to "
             << AffineMapAttr::get(symbolMap(getContext(), numElementsExpr(tensorType(getResult()))));
  } else if (tensorType(getInput()).getNumElements() !=
             tensorType(getResult()).getNumElements())
    return emitOpError("element count changes from ")
           << tensorType(getInput()).getNumElements() << " to "
           << tensorType(getResult()).getNumElements();
  if (tensorType(getInput()).getElementType() !=
      tensorType(getResult()).getElementType())
    return emitOpError("element type must not change");
  return success();
}

LogicalResult PermuteOp::verify() {
  auto input = tensorType(getInput());
  ArrayRef<int64_t> dims = getDims();
  if ((int64_t)dims.size() != input.getRank())
    return emitOpError("dims must list every input dim once");
  SmallVector<int64_t> expected;
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= input.getRank() || !seen.insert(d).second)
      return emitOpError("dims must be a permutation of [0, rank)");
    expected.push_back(input.getDimSize(d));
  }
  if (tensorType(getResult()).getShape() != ArrayRef<int64_t>(expected) ||
      tensorType(getResult()).getElementType() != input.getElementType())
    return emitOpError("result type does not match the permuted input");
  return success();
}

LogicalResult ExpandOp::verify() {
  auto input = tensorType(getInput()), result = tensorType(getResult());
  if (input.getRank() > result.getRank())
    return emitOpError("cannot expand to a lower rank");
  int64_t offset = result.getRank() - input.getRank();
  for (int64_t i = 0; i < input.getRank(); ++i) {
    int64_t in = input.getDimSize(i), out = result.getDimSize(i + offset);
    if (in != out && in != 1)
      return emitOpError("input dim ") << i << " of size " << in
                                       << " cannot expand to " << out;
  }
  if (input.getElementType() != result.getElementType())
    return emitOpError("element type must not change");
  return success();
}

LogicalResult SliceOp::verify() {
  auto input = tensorType(getInput()), result = tensorType(getResult());
  if (input.getRank() != result.getRank() || input.getRank() == 0)
    return emitOpError("result rank must equal the (non-zero) input rank");
  int64_t dim = (int64_t)getDim(), step = (int64_t)getStep();
  if (dim < 0 || dim >= input.getRank())
    return emitOpError("dim out of range");
  if (step < 1)
    return emitOpError("step must be positive");
  int64_t size = result.getDimSize(dim), start = (int64_t)getStart();
  // (With a symbolic size in the sliced dim, the bounds hold by Dynamo's
  // shapes; the plan's sizes come from the same expressions.)
  bool symbolic = input.isDynamicDim(dim) || result.isDynamicDim(dim);
  if (start < 0 || (!symbolic && (start > input.getDimSize(dim) ||
                                  (size > 0 && start + (size - 1) * step >= input.getDimSize(dim)))))
    return emitOpError("slice reads past the end of dim ") << dim;
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (i != dim && !sameSize(dimExpr(input, i), dimExpr(result, i)))
      return emitOpError("only dim ") << dim << " may change size";
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  auto result = tensorType(getResult());
  int64_t dim = (int64_t)getDim();
  if (dim < 0 || dim >= result.getRank())
    return emitOpError("dim out of range");
  AffineExpr total = getAffineConstantExpr(0, getContext());
  for (Value input : getInputs()) {
    auto type = tensorType(input);
    if (type.getRank() != result.getRank() ||
        type.getElementType() != result.getElementType())
      return emitOpError("inputs must match the result rank and element type");
    for (int64_t i = 0; i < result.getRank(); ++i)
      if (i != dim && !sameSize(dimExpr(type, i), dimExpr(result, i)))
        return emitOpError("inputs differ from the result outside dim ") << dim;
    total = total + dimExpr(type, dim);
  }
  if (!sameSize(total, dimExpr(result, dim)))
    return emitOpError("result dim ") << dim << " must be the sum of the inputs'";
  return success();
}

LeadingDim IotaOp::getLeadingDim() { return elementwiseLeadingDim(*this); }

LeadingDim PadOp::getLeadingDim() {
  std::optional<LeadingDim> info = parallel(*this);
  if (!info)
    return notParallel(*this);
  // Row r of the result reads row r - low[0] of the input.
  info->aligned[0] = getLow()[0] == 0 && getHigh()[0] == 0;
  return *info;
}

LeadingDim IndexOp::getLeadingDim() {
  // Parallel over the result's rows; operands are read anywhere, so they
  // must be computed by earlier kernels (no operand is aligned).
  std::optional<LeadingDim> info = parallel(*this);
  return info ? *info : notParallel(*this);
}

SmallVector<AffineExpr> IndexOp::getBroadcastShape() {
  SmallVector<AffineExpr> shape;
  for (Value index : getIndices())
    shape = broadcastDims(shape, dimExprs(tensorType(index))).value_or(shape);
  return shape;
}

int64_t IndexOp::getBroadcastStart() {
  ArrayRef<int64_t> dims = getIndexedDims();
  bool adjacent = dims.back() - dims.front() + 1 == (int64_t)dims.size();
  return adjacent ? dims.front() : 0;
}

LogicalResult IotaOp::verify() {
  auto result = tensorType(getResult());
  if (result.getRank() != 1)
    return emitOpError("result must be 1-D");
  Type element = result.getElementType();
  Type expected = isa<FloatType>(element) ? Type(Float64Type::get(getContext()))
                                          : Type(IntegerType::get(getContext(), 64));
  if (getStart().getType() != expected || getStep().getType() != expected)
    return emitOpError("start and step must be ") << expected << " attributes for "
                                                  << element << " results";
  return success();
}

LogicalResult PadOp::verify() {
  auto input = tensorType(getInput()), result = tensorType(getResult());
  int64_t rank = input.getRank();
  if ((int64_t)getLow().size() != rank || (int64_t)getHigh().size() != rank)
    return emitOpError("low and high need one entry per input dim");
  if (result.getElementType() != input.getElementType() || result.getRank() != rank)
    return emitOpError("result must have the input's rank and element type");
  for (int64_t d = 0; d < rank; ++d) {
    AffineExpr expected = dimExpr(input, d) + getLow()[d] + getHigh()[d];
    auto constant = dyn_cast<AffineConstantExpr>(expected);
    if (!sameSize(dimExpr(result, d), expected) || (constant && constant.getValue() < 0))
      return emitOpError("result dim ") << d << " must be the input's plus low and high";
  }
  return success();
}

LogicalResult IndexOp::verify() {
  auto input = tensorType(getInput()), result = tensorType(getResult());
  ArrayRef<int64_t> dims = getIndexedDims();
  if (dims.empty() || dims.size() != getIndices().size())
    return emitOpError("needs one indexed dim per index tensor, and at least one");
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] < 0 || dims[k] >= input.getRank() || (k > 0 && dims[k] <= dims[k - 1]))
      return emitOpError("indexed dims must be sorted input dims");
  SmallVector<AffineExpr> broadcast;
  for (Value index : getIndices()) {
    if (!tensorType(index).getElementType().isInteger(64))
      return emitOpError("index tensors must be i64");
    auto next = broadcastDims(broadcast, dimExprs(tensorType(index)));
    if (failed(next))
      return emitOpError("index shapes are not broadcast-compatible");
    broadcast = *next;
  }
  SmallVector<AffineExpr> expected;
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      expected.push_back(dimExpr(input, d));
  int64_t start = getBroadcastStart();
  expected.insert(expected.begin() + start, broadcast.begin(), broadcast.end());
  SmallVector<AffineExpr> actual = dimExprs(result);
  if (actual.size() != expected.size() ||
      !llvm::all_of(llvm::zip(actual, expected),
                    [](auto pair) { return sameSize(std::get<0>(pair), std::get<1>(pair)); }) ||
      result.getElementType() != input.getElementType())
    return emitOpError("result must be ")
           << symbolicTensorType(expected, input.getElementType());
  return success();
}

LeadingDim GatherOp::getLeadingDim() {
  std::optional<LeadingDim> info = parallel(*this);
  if (!info)
    return notParallel(*this);
  info->aligned[1] = true; // the index is read at the result's position
  info->aligned[0] = getDim() != 0 && leadingSize(getInput()) == *info->extent;
  return *info;
}

LeadingDim CumsumOp::getLeadingDim() {
  // The scan is a loop over `dim` around the other dims, which the
  // workgroup distribution cannot split: one workgroup.
  return notParallel(*this);
}

LogicalResult GatherOp::verify() {
  auto input = tensorType(getInput()), index = tensorType(getIndex());
  auto result = tensorType(getResult());
  int64_t rank = std::max<int64_t>(input.getRank(), 1);
  if ((int64_t)getDim() < 0 || (int64_t)getDim() >= rank)
    return emitOpError("dim must be in [0, rank)");
  if (!index.getElementType().isInteger(64))
    return emitOpError("index must be i64");
  if (index.getRank() != input.getRank() || !sameShape(result, index) ||
      result.getElementType() != input.getElementType())
    return emitOpError("result must have the index's shape and the input's element type, "
                       "and the index the input's rank");
  // (Symbolic dims are checked where both are known.)
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (d != (int64_t)getDim() && !index.isDynamicDim(d) && !input.isDynamicDim(d) &&
        index.getDimSize(d) > input.getDimSize(d))
      return emitOpError("index dim ") << d << " is larger than the input's";
  return success();
}

LeadingDim ScatterOp::getLeadingDim() {
  // Writes go anywhere along `dim`, in order: one workgroup.
  return notParallel(*this);
}

LogicalResult ScatterOp::verify() {
  auto input = tensorType(getInput()), index = tensorType(getIndex());
  int64_t rank = input.getRank();
  if (rank == 0 || (int64_t)getDim() < 0 || (int64_t)getDim() >= rank)
    return emitOpError("needs an input of rank >= 1 and dim in [0, rank)");
  if (!index.getElementType().isInteger(64) || index.getRank() != rank)
    return emitOpError("index must be i64 of the input's rank");
  if (getSrc().getType() != index.clone(input.getElementType()))
    return emitOpError("src must have the index's shape and the input's element type");
  if (getResult().getType() != input)
    return emitOpError("result type must be the input type");
  for (int64_t d = 0; d < rank; ++d)
    if (d != (int64_t)getDim() && index.getDimSize(d) > input.getDimSize(d))
      return emitOpError("index dim ") << d << " is larger than the input's";
  return success();
}

LeadingDim SortOp::getLeadingDim() {
  // Each row before `dim` sorts on its own (read at the result's position).
  return rowwise(*this, /*reducesDim0=*/getDim() == 0, /*alignedOperands=*/1);
}

LogicalResult SortOp::verify() {
  auto input = tensorType(getInput());
  if ((int64_t)getDim() < 0 || (int64_t)getDim() >= std::max<int64_t>(input.getRank(), 1))
    return emitOpError("dim must be in [0, rank)");
  // With k, the results keep the first k along `dim`.
  SmallVector<AffineExpr> shape = dimExprs(input);
  if (IntegerAttr k = getKAttr()) {
    if (k.getInt() < 0 || input.getRank() == 0 ||
        (!input.isDynamicDim(getDim()) && k.getInt() > input.getDimSize(getDim())))
      return emitOpError("k must be in [0, the sorted dim's size]");
    shape[getDim()] = getAffineConstantExpr(k.getInt(), getContext());
  }
  if (tensorType(getValues()).getElementType() != input.getElementType() ||
      dimExprs(tensorType(getValues())) != shape)
    return emitOpError("values must have the input's type (k along dim with k)");
  if (!tensorType(getIndices()).getElementType().isInteger(64) ||
      dimExprs(tensorType(getIndices())) != shape)
    return emitOpError("indices must be i64 of the values' shape");
  return success();
}

LogicalResult CumsumOp::verify() {
  auto input = tensorType(getInput());
  if ((int64_t)getDim() < 0 || (int64_t)getDim() >= std::max<int64_t>(input.getRank(), 1))
    return emitOpError("dim must be in [0, rank)");
  if (getResult().getType() != input)
    return emitOpError("result type must be the input type");
  return success();
}

LogicalResult AssertOp::verify() {
  auto condition = tensorType(getCondition());
  if (condition.getRank() != 0 || !condition.getElementType().isInteger(1))
    return emitOpError("condition must be a tensor<i1>, got ") << condition;
  if (getMessage().empty())
    return emitOpError("needs a message");
  return success();
}

LogicalResult CollectiveOp::verify() {
  auto input = tensorType(getInput()), result = tensorType(getResult());
  if (input.getElementType() != result.getElementType())
    return emitOpError("changes the element type: ") << input << " to " << result;
  if (getGroup().empty())
    return emitOpError("names no process group");
  // all_reduce's group size is not part of torch's op, nor all_to_all's
  // without splits: 0 there (their shapes do not depend on it).
  int64_t ranks = getGroupSize();
  bool sameShape = getKind() == CollectiveKind::AllReduce || getKind() == CollectiveKind::AllToAll;
  if (ranks < (sameShape ? 0 : 1))
    return emitOpError("needs at least one rank, got group_size = ") << ranks;
  SmallVector<AffineExpr> expected = dimExprs(input), actual = dimExprs(result);
  bool alongDim0 = getKind() != CollectiveKind::AllReduce;
  if (alongDim0 && expected.empty())
    return emitOpError("gathers, scatters or exchanges along dim 0 of a 0-d tensor");
  // reduce_scatter: the result's rows times the ranks are the input's.
  if (getKind() == CollectiveKind::ReduceScatter && !actual.empty())
    actual[0] = actual[0] * ranks;
  if (getKind() == CollectiveKind::AllGather)
    expected[0] = expected[0] * ranks;
  if (actual.size() != expected.size() ||
      !llvm::all_of(llvm::zip(actual, expected),
                    [](auto pair) { return sameSize(std::get<0>(pair), std::get<1>(pair)); }))
    return emitOpError("over ") << ranks << " ranks cannot turn " << input << " into " << result;
  return success();
}

LogicalResult EmbeddingOp::verify() {
  auto weight = tensorType(getWeight()), indices = tensorType(getIndices());
  if (weight.getRank() != 2)
    return emitOpError("weight must be rank 2");
  if (!indices.getElementType().isInteger(64))
    return emitOpError("indices must be i64");
  SmallVector<AffineExpr> expected = dimExprs(indices);
  expected.push_back(dimExpr(weight, 1));
  auto result = tensorType(getResult());
  if (dimExprs(result).size() != expected.size() ||
      !llvm::all_of(llvm::zip(dimExprs(result), expected),
                    [](auto pair) { return sameSize(std::get<0>(pair), std::get<1>(pair)); }) ||
      result.getElementType() != weight.getElementType())
    return emitOpError("result must be indices shape + [embedding dim]");
  return success();
}

//===----------------------------------------------------------------------===//
// Folders
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// Folds a binary op on two splat constants of the result's shape, or
/// returns the operand that the other (a splat `identity`) leaves unchanged.
template <typename Op, typename FloatFn, typename IntFn>
static OpFoldResult foldBinary(Op op, ArrayRef<Attribute> operands,
                               FloatFn floatFn, IntFn intFn,
                               std::optional<double> rightIdentity) {
  auto resultType = tensorType(op.getResult());
  auto lhs = dyn_cast_or_null<SplatElementsAttr>(operands[0]);
  auto rhs = dyn_cast_or_null<SplatElementsAttr>(operands[1]);
  if (lhs && rhs && op.getLhs().getType() == resultType &&
      op.getRhs().getType() == resultType) {
    Type element = resultType.getElementType();
    if (isa<FloatType>(element))
      return DenseElementsAttr::get(
          resultType, floatFn(lhs.getSplatValue<APFloat>(),
                              rhs.getSplatValue<APFloat>()));
    if (element.isInteger(64))
      return DenseElementsAttr::get(
          resultType, intFn(lhs.getSplatValue<APInt>(), rhs.getSplatValue<APInt>()));
  }
  if (rhs && rightIdentity && op.getLhs().getType() == resultType) {
    Type element = resultType.getElementType();
    // Compared bitwise: for add only -0.0 is an identity (-0.0 + 0.0 is
    // +0.0), which a double comparison would not tell apart.
    if (auto floatType = dyn_cast<FloatType>(element)) {
      APFloat identity(*rightIdentity);
      bool losesInfo;
      identity.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
      if (rhs.getSplatValue<APFloat>().bitwiseIsEqual(identity))
        return op.getLhs();
    }
    if (element.isInteger(64) &&
        rhs.getSplatValue<APInt>().getSExtValue() == (int64_t)*rightIdentity)
      return op.getLhs();
  }
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      *this, adaptor.getOperands(), [](APFloat a, APFloat b) { return a + b; },
      [](APInt a, APInt b) { return a + b; }, -0.0);
}
OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      *this, adaptor.getOperands(), [](APFloat a, APFloat b) { return a - b; },
      [](APInt a, APInt b) { return a - b; }, 0.0);
}
OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      *this, adaptor.getOperands(), [](APFloat a, APFloat b) { return a * b; },
      [](APInt a, APInt b) { return a * b; }, 1.0);
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  // reshape(reshape(x)) == reshape(x): only the final shape matters.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getInput());
      splat && !isSymbolic(getResult().getType()))
    return splat.reshape(tensorType(getResult()));
  return {};
}

OpFoldResult PermuteOp::fold(FoldAdaptor) {
  // permute(permute(x, inner), outer) == permute(x, inner[outer[i]]): outputs
  // laid out in storage order undo the view that made them this way.
  bool composed = false;
  if (auto inner = getInput().getDefiningOp<PermuteOp>()) {
    ArrayRef<int64_t> innerDims = inner.getDims();
    SmallVector<int64_t> dims;
    for (int64_t d : getDims())
      dims.push_back(innerDims[d]);
    getInputMutable().assign(inner.getInput());
    setDims(dims);
    composed = true;
  }
  for (auto [i, d] : llvm::enumerate(getDims()))
    if ((int64_t)i != d)
      return composed ? getResult() : OpFoldResult();
  return getInput();
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getInput());
      splat && !isSymbolic(getResult().getType()))
    return SplatElementsAttr::get(tensorType(getResult()),
                                  splat.getSplatValue<Attribute>());
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType() && (int64_t)getStart() == 0)
    return getInput();
  return {};
}

namespace {
/// matmul(a, permute(b, swap of the last two dims)) -> matmul(a, b) with
/// transpose_rhs: the contraction reads b in place.
struct FoldTransposeIntoMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    auto permute = op.getRhs().getDefiningOp<PermuteOp>();
    if (!permute)
      return failure();
    ArrayRef<int64_t> dims = permute.getDims();
    int64_t rank = dims.size();
    for (int64_t i = 0; i < rank - 2; ++i)
      if (dims[i] != i)
        return failure();
    if (dims[rank - 2] != rank - 1 || dims[rank - 1] != rank - 2)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getRhsMutable().assign(permute.getInput());
      op.setTransposeRhs(!op.getTransposeRhs());
    });
    return success();
  }
};
} // namespace

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<FoldTransposeIntoMatmul>(context);
}
