// kiln_graph -> linalg / tensor / arith / math, on tensors.
//
// Each graph op becomes the few linalg ops a hand-written CPU kernel would
// use; upstream elementwise fusion then merges producer chains. Reductions
// keep the input's dimension order as the loop order: reducing the innermost
// dim gives a unit-stride inner reduction, reducing an outer dim gives a
// unit-stride inner parallel loop that accumulates rows.
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

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

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Fast-math flags for reductions and contractions: reassociation lets LLVM
/// vectorize the reduction loop; contraction forms FMAs.
arith::FastMathFlagsAttr reductionFlags(OpBuilder &b) {
  return arith::FastMathFlagsAttr::get(
      b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
  if (type.isInteger(1)) // ATen's truthiness: any nonzero value (NaN too) is true
    return arith::ConstantOp::create(b, loc, b.getBoolAttr(value != 0));
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, (int64_t)value));
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

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type element) {
  return tensor::EmptyOp::create(b, loc, shape, element);
}

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
  Value init = emptyTensor(b, loc, resultType.getShape(), resultType.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, operands, ValueRange{init}, maps, iterators,
      "", "", [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value result = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, result);
      });
  return generic.getResult(0);
}

/// A reduction of `input` over `dims` (sorted) combining with `combine`,
/// starting from `initValue`; `map` transforms each element first. Returns
/// the tensor without the reduced dims.
Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> dims,
             Value initValue, BodyFn map, BodyFn combine,
             ValueRange extraInputs = {}) {
  MLIRContext *ctx = b.getContext();
  auto type = tensorType(input);
  int64_t rank = type.getRank();
  SmallVector<int64_t> keptShape;
  SmallVector<AffineExpr> keptExprs;
  SmallVector<IteratorType> iterators;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced = llvm::is_contained(dims, i);
    iterators.push_back(reduced ? IteratorType::reduction : IteratorType::parallel);
    if (!reduced) {
      keptShape.push_back(type.getDimSize(i));
      keptExprs.push_back(getAffineDimExpr(i, ctx));
    }
  }
  Type element = type.getElementType();
  Value empty = emptyTensor(b, loc, keptShape, element);
  Value init = linalg::FillOp::create(b, loc, initValue, empty).getResult(0);
  SmallVector<Value> inputs{input};
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, ctx)};
  // Extra inputs are per-row values (shaped like the kept dims).
  for (Value extra : extraInputs) {
    inputs.push_back(extra);
    maps.push_back(AffineMap::get(rank, 0, keptExprs, ctx));
  }
  maps.push_back(AffineMap::get(rank, 0, keptExprs, ctx));
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
Value keepDims(OpBuilder &b, Location loc, Value reduced, RankedTensorType type) {
  return reshapeTensor(b, loc, reduced, type);
}

/// `index` clamped into [0, size - 1]: gathers never read out of bounds.
Value clampIndex(OpBuilder &b, Location loc, Value index, int64_t size) {
  Value high = arith::ConstantIndexOp::create(b, loc, std::max<int64_t>(size - 1, 0));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, index, zero), high);
}

//===----------------------------------------------------------------------===//
// Scalar semantics
//===----------------------------------------------------------------------===//

bool isFloat(Type t) { return isa<FloatType>(t); }

Value addScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x.getType()))
    return arith::AddFOp::create(b, loc, x, y);
  if (x.getType().isInteger(1))
    return arith::OrIOp::create(b, loc, x, y);
  return arith::AddIOp::create(b, loc, x, y);
}
Value subScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x.getType()))
    return arith::SubFOp::create(b, loc, x, y);
  return arith::SubIOp::create(b, loc, x, y);
}
Value mulScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x.getType()))
    return arith::MulFOp::create(b, loc, x, y);
  if (x.getType().isInteger(1))
    return arith::AndIOp::create(b, loc, x, y);
  return arith::MulIOp::create(b, loc, x, y);
}
Value maxScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x.getType()))
    return arith::MaximumFOp::create(b, loc, x, y); // NaN-propagating, like ATen
  if (x.getType().isInteger(1))
    return arith::OrIOp::create(b, loc, x, y);
  return arith::MaxSIOp::create(b, loc, x, y);
}

/// fmod (truncated: the sign of x) or, when `floored`, Python's remainder
/// (the sign of y). Integer divisors 0 and -1 would trap in srem (x / 0, and
/// INT_MIN / -1 overflows); both give 0 here (for 0 the importer's assert
/// raises ATen's error first).
Value remainderScalar(OpBuilder &b, Location loc, Value x, Value y, bool floored) {
  Type type = x.getType();
  Value zero = scalarConstant(b, loc, type, 0);
  Value r;
  if (isFloat(type)) {
    r = arith::RemFOp::create(b, loc, x, y);
  } else {
    Value one = scalarConstant(b, loc, type, 1);
    Value trapping = arith::OrIOp::create(
        b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, zero),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, scalarConstant(b, loc, type, -1)));
    r = arith::RemSIOp::create(b, loc, x, arith::SelectOp::create(b, loc, trapping, one, y));
  }
  if (!floored)
    return r;
  // r + y when r is nonzero and its sign differs from y's.
  Value rNegative, yNegative, rNonzero;
  if (isFloat(type)) {
    rNegative = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, r, zero);
    yNegative = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, y, zero);
    rNonzero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, r, zero);
  } else {
    rNegative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, zero);
    yNegative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, y, zero);
    rNonzero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r, zero);
  }
  Value adjust = arith::AndIOp::create(
      b, loc, rNonzero, arith::XOrIOp::create(b, loc, rNegative, yNegative));
  return arith::SelectOp::create(b, loc, adjust, addScalar(b, loc, r, y), r);
}

/// x / y rounded toward zero or, when `floored`, toward negative infinity,
/// exactly as ATen computes it (div_floor_floating, div_floor_integer).
Value divRoundScalar(OpBuilder &b, Location loc, Value x, Value y, bool floored) {
  Type type = x.getType();
  Value zero = scalarConstant(b, loc, type, 0);
  if (!isFloat(type)) {
    // Divisors 0 and -1 would trap (x / 0; INT_MIN / -1 overflows): divide
    // by 1 instead; -1 gives 0 - x, which wraps as ATen's does.
    Value minusOne = scalarConstant(b, loc, type, -1), one = scalarConstant(b, loc, type, 1);
    Value isMinusOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, minusOne);
    Value trapping = arith::OrIOp::create(
        b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, zero), isMinusOne);
    Value safe = arith::SelectOp::create(b, loc, trapping, one, y);
    Value q = floored ? Value(arith::FloorDivSIOp::create(b, loc, x, safe))
                      : Value(arith::DivSIOp::create(b, loc, x, safe));
    return arith::SelectOp::create(b, loc, isMinusOne, arith::SubIOp::create(b, loc, zero, x), q);
  }
  Value quotient = arith::DivFOp::create(b, loc, x, y);
  if (!floored)
    return math::TruncOp::create(b, loc, quotient);
  auto cmp = [&](arith::CmpFPredicate p, Value l, Value r) -> Value {
    return arith::CmpFOp::create(b, loc, p, l, r);
  };
  Value mod = arith::RemFOp::create(b, loc, x, y);
  Value div = arith::DivFOp::create(b, loc, arith::SubFOp::create(b, loc, x, mod), y);
  Value adjust = arith::AndIOp::create(
      b, loc, cmp(arith::CmpFPredicate::UNE, mod, zero),
      arith::XOrIOp::create(b, loc, cmp(arith::CmpFPredicate::OLT, y, zero),
                            cmp(arith::CmpFPredicate::OLT, mod, zero)));
  div = arith::SelectOp::create(
      b, loc, adjust, arith::SubFOp::create(b, loc, div, scalarConstant(b, loc, type, 1)), div);
  Value floor = math::FloorOp::create(b, loc, div);
  Value roundUp = cmp(arith::CmpFPredicate::OGT, arith::SubFOp::create(b, loc, div, floor),
                      scalarConstant(b, loc, type, 0.5));
  floor = arith::SelectOp::create(
      b, loc, roundUp, arith::AddFOp::create(b, loc, floor, scalarConstant(b, loc, type, 1)), floor);
  Value result = arith::SelectOp::create(b, loc, cmp(arith::CmpFPredicate::UNE, div, zero), floor,
                                         math::CopySignOp::create(b, loc, zero, quotient));
  // A zero divisor gives the IEEE quotient (inf or NaN).
  return arith::SelectOp::create(b, loc, cmp(arith::CmpFPredicate::OEQ, y, zero), quotient, result);
}

/// c0 + z * (c1 + z * (c2 + ...)).
Value horner(OpBuilder &b, Location loc, Value z, ArrayRef<double> coefficients) {
  Type t = z.getType();
  Value acc = scalarConstant(b, loc, t, coefficients.back());
  for (double c : llvm::reverse(coefficients.drop_back()))
    acc = arith::AddFOp::create(b, loc, scalarConstant(b, loc, t, c),
                                arith::MulFOp::create(b, loc, z, acc));
  return acc;
}

/// sin, cos or tan of a float32 x, accurate for large |x| (RoPE angles reach
/// thousands of radians) and, relatively, for tiny |x|. MLIR's polynomial
/// approximations reduce the argument in float32 (losing ~1e-4 at 2000 rad)
/// and lose relative accuracy near 0, so the argument is reduced by pi/2 in
/// float64 to |r| <= pi/4, where Cephes' float32 minimax polynomials for sin
/// and cos are within an ulp or two, and the quadrant picks +-sin or +-cos.
enum class Trig { Sin, Cos, Tan };

Value trigScalar(OpBuilder &b, Location loc, Value x, Trig fn) {
  Type f32 = x.getType(), f64 = b.getF64Type();
  if (!f32.isF32()) {
    if (fn == Trig::Sin)
      return math::SinOp::create(b, loc, x);
    if (fn == Trig::Cos)
      return math::CosOp::create(b, loc, x);
    return math::TanOp::create(b, loc, x);
  }
  Value wide = arith::ExtFOp::create(b, loc, f64, x);
  Value quarters = math::RoundEvenOp::create(
      b, loc, arith::MulFOp::create(b, loc, wide, scalarConstant(b, loc, f64, 2 / M_PI)));
  // pi/2 as two doubles: k * hi is exact for |k| < 2^20, lo carries the rest.
  const double hi = 1.5707963267341256, lo = 6.077100506506192e-11;
  Value r = arith::SubFOp::create(
      b, loc, wide, arith::MulFOp::create(b, loc, quarters, scalarConstant(b, loc, f64, hi)));
  r = arith::SubFOp::create(b, loc, r,
                            arith::MulFOp::create(b, loc, quarters, scalarConstant(b, loc, f64, lo)));
  Value reduced = arith::TruncFOp::create(b, loc, f32, r);
  Value z = arith::MulFOp::create(b, loc, reduced, reduced);
  Value s = arith::AddFOp::create(
      b, loc, reduced,
      arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, reduced, z),
                            horner(b, loc, z, {-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4})));
  Value c = arith::AddFOp::create(
      b, loc,
      arith::SubFOp::create(b, loc, scalarConstant(b, loc, f32, 1),
                            arith::MulFOp::create(b, loc, scalarConstant(b, loc, f32, 0.5), z)),
      arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, z, z),
                            horner(b, loc, z, {4.166664568298827e-2, -1.388731625493765e-3,
                                               2.443315711809948e-5})));
  // Quadrant q = k mod 4; cos(x) = sin(x + pi/2), so cos uses quadrant q + 1.
  // NaN and infinities (whose r is NaN anyway) take k = 0: converting them to
  // an integer would be undefined.
  Value finite = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OLT, math::AbsFOp::create(b, loc, quarters),
      scalarConstant(b, loc, f64, 0x1p52));
  quarters = arith::SelectOp::create(b, loc, finite, quarters, scalarConstant(b, loc, f64, 0));
  Value k = arith::FPToSIOp::create(b, loc, b.getI64Type(), quarters);
  if (fn == Trig::Cos)
    k = arith::AddIOp::create(b, loc, k, scalarConstant(b, loc, b.getI64Type(), 1));
  Value q = arith::AndIOp::create(b, loc, k, scalarConstant(b, loc, b.getI64Type(), 3));
  auto is = [&](int64_t n) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, q,
                                 scalarConstant(b, loc, b.getI64Type(), n));
  };
  Value odd = arith::OrIOp::create(b, loc, is(1), is(3));
  if (fn == Trig::Tan) // tan(r + k pi/2) is tan(r) for even k, -cos(r)/sin(r) for odd
    return arith::SelectOp::create(b, loc, odd,
                                   arith::NegFOp::create(b, loc, arith::DivFOp::create(b, loc, c, s)),
                                   arith::DivFOp::create(b, loc, s, c));
  Value negative = arith::OrIOp::create(b, loc, is(2), is(3));
  Value magnitude = arith::SelectOp::create(b, loc, odd, c, s);
  return arith::SelectOp::create(b, loc, negative, arith::NegFOp::create(b, loc, magnitude),
                                 magnitude);
}

/// (x > 0) - (x < 0), as ATen computes it: NaN gives 0, bool is itself.
Value signScalar(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  if (t.isInteger(1))
    return x;
  Value zero = scalarConstant(b, loc, t, 0);
  if (!isFloat(t)) {
    Value positive = arith::ExtUIOp::create(
        b, loc, t, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, zero));
    Value negative = arith::ExtUIOp::create(
        b, loc, t, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero));
    return arith::SubIOp::create(b, loc, positive, negative);
  }
  Value positive = arith::UIToFPOp::create(
      b, loc, t, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero));
  Value negative = arith::UIToFPOp::create(
      b, loc, t, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero));
  return arith::SubFOp::create(b, loc, positive, negative);
}

/// atan of a float32 x (Cephes' atanf: |x| is reduced to [0, tan(pi/8)] by
/// atan(x) = pi/2 - atan(1/x) and pi/4 + atan((x-1)/(x+1)); MLIR's own
/// approximation is off by 2e-6 around |x| = 0.6).
Value atanScalar(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  if (!t.isF32())
    return math::AtanOp::create(b, loc, x);
  auto constant = [&](double v) { return scalarConstant(b, loc, t, v); };
  Value a = math::AbsFOp::create(b, loc, x);
  Value big = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a, constant(2.414213562373095));
  Value mid = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a, constant(0.4142135623730950));
  Value one = constant(1);
  Value reducedBig = arith::NegFOp::create(b, loc, arith::DivFOp::create(b, loc, one, a));
  Value reducedMid = arith::DivFOp::create(b, loc, arith::SubFOp::create(b, loc, a, one),
                                           arith::AddFOp::create(b, loc, a, one));
  Value y = arith::SelectOp::create(b, loc, big, reducedBig,
                                    arith::SelectOp::create(b, loc, mid, reducedMid, a));
  Value offset = arith::SelectOp::create(
      b, loc, big, constant(M_PI_2), arith::SelectOp::create(b, loc, mid, constant(M_PI_4), constant(0)));
  Value z = arith::MulFOp::create(b, loc, y, y);
  Value poly = horner(b, loc, z, {-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1,
                                  8.05374449538e-2});
  Value r = arith::AddFOp::create(
      b, loc, offset,
      arith::AddFOp::create(b, loc, y, arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, poly, z), y)));
  // Odd: the sign of x (NaN stays NaN through the arithmetic above).
  return math::CopySignOp::create(b, loc, r, x);
}

/// sinh from expm1, so small |x| does not cancel; cosh from exp.
Value hyperbolicScalar(OpBuilder &b, Location loc, Value x, bool isCosh) {
  Type t = x.getType();
  Value half = scalarConstant(b, loc, t, 0.5);
  if (isCosh) {
    Value e = math::ExpOp::create(b, loc, math::AbsFOp::create(b, loc, x));
    return arith::MulFOp::create(
        b, loc, half, arith::AddFOp::create(b, loc, e, arith::DivFOp::create(b, loc, scalarConstant(b, loc, t, 1), e)));
  }
  Value up = math::ExpM1Op::create(b, loc, x);
  Value down = math::ExpM1Op::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::MulFOp::create(b, loc, half, arith::SubFOp::create(b, loc, up, down));
}

Value minScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x.getType()))
    return arith::MinimumFOp::create(b, loc, x, y); // NaN-propagating, like ATen
  if (x.getType().isInteger(1))
    return arith::AndIOp::create(b, loc, x, y);
  return arith::MinSIOp::create(b, loc, x, y);
}

Value convertScalar(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0);
    if (isFloat(from)) // NaN is true, as in ATen
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x, zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
  }
  if (from.isInteger(1)) {
    if (isFloat(to))
      return arith::UIToFPOp::create(b, loc, to, x);
    return arith::ExtUIOp::create(b, loc, to, x);
  }
  if (isFloat(from) && isFloat(to)) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    return arith::TruncFOp::create(b, loc, to, x);
  }
  if (isFloat(from))
    return arith::FPToSIOp::create(b, loc, to, x);
  if (isFloat(to))
    return arith::SIToFPOp::create(b, loc, to, x);
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtSIOp::create(b, loc, to, x);
  return arith::TruncIOp::create(b, loc, to, x);
}

Value compareScalar(OpBuilder &b, Location loc, Operation *op, Value x, Value y) {
  if (isFloat(x.getType())) {
    auto predicate = llvm::TypeSwitch<Operation *, arith::CmpFPredicate>(op)
                         .Case<EqOp>([](auto) { return arith::CmpFPredicate::OEQ; })
                         .Case<NeOp>([](auto) { return arith::CmpFPredicate::UNE; })
                         .Case<LtOp>([](auto) { return arith::CmpFPredicate::OLT; })
                         .Case<LeOp>([](auto) { return arith::CmpFPredicate::OLE; })
                         .Case<GtOp>([](auto) { return arith::CmpFPredicate::OGT; })
                         .Default([](auto) { return arith::CmpFPredicate::OGE; });
    return arith::CmpFOp::create(b, loc, predicate, x, y);
  }
  bool isBool = x.getType().isInteger(1); // false < true
  auto predicate =
      llvm::TypeSwitch<Operation *, arith::CmpIPredicate>(op)
          .Case<EqOp>([](auto) { return arith::CmpIPredicate::eq; })
          .Case<NeOp>([](auto) { return arith::CmpIPredicate::ne; })
          .Case<LtOp>([&](auto) { return isBool ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt; })
          .Case<LeOp>([&](auto) { return isBool ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle; })
          .Case<GtOp>([&](auto) { return isBool ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt; })
          .Default([&](auto) { return isBool ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge; });
  return arith::CmpIOp::create(b, loc, predicate, x, y);
}

/// x ** e. A constant exponent uses multiplications or sqrt where exact.
Value powScalar(OpBuilder &b, Location loc, Value x, Value e,
                std::optional<double> constantExponent) {
  if (constantExponent) {
    double c = *constantExponent;
    if (c == 1.0)
      return x;
    if (c == 2.0)
      return mulScalar(b, loc, x, x);
    if (c == 3.0)
      return mulScalar(b, loc, mulScalar(b, loc, x, x), x);
    if (c == 0.5 && isFloat(x.getType()))
      return math::SqrtOp::create(b, loc, x);
    if (c == -1.0 && isFloat(x.getType()))
      return arith::DivFOp::create(b, loc, scalarConstant(b, loc, x.getType(), 1), x);
  }
  if (isFloat(x.getType()))
    return math::PowFOp::create(b, loc, x, e);
  return math::IPowIOp::create(b, loc, x, e);
}

Value sigmoidScalar(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value one = scalarConstant(b, loc, t, 1);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
}

Value geluScalar(OpBuilder &b, Location loc, Value x, bool tanhApprox) {
  Type t = x.getType();
  Value half = scalarConstant(b, loc, t, 0.5);
  Value one = scalarConstant(b, loc, t, 1);
  Value inner;
  if (tanhApprox) {
    Value x3 = arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, x, x), x);
    Value poly = arith::AddFOp::create(
        b, loc, x,
        arith::MulFOp::create(b, loc, scalarConstant(b, loc, t, 0.044715), x3));
    inner = math::TanhOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, scalarConstant(b, loc, t, std::sqrt(2.0 / M_PI)), poly));
  } else {
    inner = math::ErfOp::create(
        b, loc, arith::MulFOp::create(b, loc, x, scalarConstant(b, loc, t, M_SQRT1_2)));
  }
  return arith::MulFOp::create(
      b, loc, arith::MulFOp::create(b, loc, half, x),
      arith::AddFOp::create(b, loc, one, inner));
}

std::optional<double> splatValue(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
  if (!splat)
    return std::nullopt;
  if (isa<FloatType>(splat.getElementType()))
    return splat.getSplatValue<APFloat>().convertToDouble();
  return (double)splat.getSplatValue<APInt>().getSExtValue();
}

/// The scalar body of an elementwise graph op.
FailureOr<Value> elementwiseBody(OpBuilder &b, Location loc, Operation *op,
                                 ValueRange args, Type resultElement) {
  return llvm::TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case<AddOp>([&](auto) { return addScalar(b, loc, args[0], args[1]); })
      .Case<SubOp>([&](auto) { return subScalar(b, loc, args[0], args[1]); })
      .Case<MulOp>([&](auto) { return mulScalar(b, loc, args[0], args[1]); })
      .Case<DivOp>([&](auto) -> Value {
        return arith::DivFOp::create(b, loc, args[0], args[1]);
      })
      .Case<FmodOp, RemainderOp>([&](Operation *o) {
        return remainderScalar(b, loc, args[0], args[1], /*floored=*/isa<RemainderOp>(o));
      })
      .Case<DivRoundOp>([&](DivRoundOp div) {
        return divRoundScalar(b, loc, args[0], args[1], div.getRoundingMode() == "floor");
      })
      .Case<Atan2Op>([&](auto) -> Value { return math::Atan2Op::create(b, loc, args[0], args[1]); })
      .Case<MaximumOp>([&](auto) { return maxScalar(b, loc, args[0], args[1]); })
      .Case<MinimumOp>([&](auto) { return minScalar(b, loc, args[0], args[1]); })
      .Case<PowOp>([&](PowOp pow) {
        return powScalar(b, loc, args[0], args[1], splatValue(pow.getRhs()));
      })
      .Case<EqOp, NeOp, LtOp, LeOp, GtOp, GeOp>(
          [&](Operation *cmp) { return compareScalar(b, loc, cmp, args[0], args[1]); })
      .Case<WhereOp>([&](auto) -> Value {
        return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
      })
      .Case<BitwiseAndOp>([&](auto) -> Value { return arith::AndIOp::create(b, loc, args[0], args[1]); })
      .Case<BitwiseOrOp>([&](auto) -> Value { return arith::OrIOp::create(b, loc, args[0], args[1]); })
      .Case<BitwiseXorOp>([&](auto) -> Value { return arith::XOrIOp::create(b, loc, args[0], args[1]); })
      .Case<BitwiseNotOp>([&](auto) -> Value { // x ^ all-ones (true for bool)
        auto ones = b.getIntegerAttr(resultElement, APInt::getAllOnes(resultElement.getIntOrFloatBitWidth()));
        return arith::XOrIOp::create(b, loc, args[0], arith::ConstantOp::create(b, loc, ones));
      })
      .Case<NegOp>([&](auto) -> Value {
        if (isFloat(resultElement))
          return arith::NegFOp::create(b, loc, args[0]);
        return subScalar(b, loc, scalarConstant(b, loc, resultElement, 0), args[0]);
      })
      .Case<ReluOp>([&](auto) {
        return maxScalar(b, loc, args[0], scalarConstant(b, loc, resultElement, 0));
      })
      .Case<TanhOp>([&](auto) -> Value { return math::TanhOp::create(b, loc, args[0]); })
      .Case<ExpOp>([&](auto) -> Value { return math::ExpOp::create(b, loc, args[0]); })
      .Case<LogOp>([&](auto) -> Value { return math::LogOp::create(b, loc, args[0]); })
      .Case<SqrtOp>([&](auto) -> Value { return math::SqrtOp::create(b, loc, args[0]); })
      .Case<RsqrtOp>([&](auto) -> Value { return math::RsqrtOp::create(b, loc, args[0]); })
      .Case<SigmoidOp>([&](auto) { return sigmoidScalar(b, loc, args[0]); })
      .Case<AbsOp>([&](auto) -> Value {
        if (isFloat(resultElement))
          return math::AbsFOp::create(b, loc, args[0]);
        return math::AbsIOp::create(b, loc, args[0]);
      })
      .Case<SinOp>([&](auto) { return trigScalar(b, loc, args[0], Trig::Sin); })
      .Case<CosOp>([&](auto) { return trigScalar(b, loc, args[0], Trig::Cos); })
      .Case<TanOp>([&](auto) { return trigScalar(b, loc, args[0], Trig::Tan); })
      .Case<SignOp>([&](auto) { return signScalar(b, loc, args[0]); })
      .Case<FracOp>([&](auto) -> Value {
        return arith::SubFOp::create(b, loc, args[0], math::TruncOp::create(b, loc, args[0]));
      })
      .Case<Exp2Op>([&](auto) -> Value { return math::Exp2Op::create(b, loc, args[0]); })
      .Case<Expm1Op>([&](auto) -> Value { return math::ExpM1Op::create(b, loc, args[0]); })
      .Case<Log1pOp>([&](auto) -> Value { return math::Log1pOp::create(b, loc, args[0]); })
      .Case<Log2Op>([&](auto) -> Value { return math::Log2Op::create(b, loc, args[0]); })
      .Case<Log10Op>([&](auto) -> Value { return math::Log10Op::create(b, loc, args[0]); })
      .Case<ErfOp>([&](auto) -> Value { return math::ErfOp::create(b, loc, args[0]); })
      .Case<AtanOp>([&](auto) { return atanScalar(b, loc, args[0]); })
      .Case<AsinOp>([&](auto) -> Value { return math::AsinOp::create(b, loc, args[0]); })
      .Case<AcosOp>([&](auto) -> Value { return math::AcosOp::create(b, loc, args[0]); })
      .Case<AsinhOp>([&](auto) -> Value { return math::AsinhOp::create(b, loc, args[0]); })
      .Case<AcoshOp>([&](auto) -> Value { return math::AcoshOp::create(b, loc, args[0]); })
      .Case<AtanhOp>([&](auto) -> Value { return math::AtanhOp::create(b, loc, args[0]); })
      .Case<SinhOp, CoshOp>([&](Operation *o) { return hyperbolicScalar(b, loc, args[0], isa<CoshOp>(o)); })
      .Case<FloorOp>([&](auto) -> Value { return math::FloorOp::create(b, loc, args[0]); })
      .Case<CeilOp>([&](auto) -> Value { return math::CeilOp::create(b, loc, args[0]); })
      .Case<TruncOp>([&](auto) -> Value { return math::TruncOp::create(b, loc, args[0]); })
      .Case<RoundOp>([&](auto) -> Value { return math::RoundEvenOp::create(b, loc, args[0]); })
      .Case<GeluOp>([&](GeluOp gelu) {
        return geluScalar(b, loc, args[0], gelu.getApproximate() == "tanh");
      })
      .Case<CloneOp>([&](auto) -> Value { return args[0]; })
      .Case<ConvertOp>([&](auto) { return convertScalar(b, loc, args[0], resultElement); })
      .Default([](auto) { return failure(); });
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

/// The identity of a min (`lowest` false) or max (`lowest` true) reduction:
/// +-inf for floats, the integer type's extreme value, or true/false.
Value extremeConstant(OpBuilder &b, Location loc, Type element, bool lowest) {
  if (auto floatType = dyn_cast<FloatType>(element))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(floatType, lowest ? -INFINITY : INFINITY));
  unsigned width = element.getIntOrFloatBitWidth();
  APInt value = width == 1 ? APInt(1, lowest ? 0 : 1)
                : lowest   ? APInt::getSignedMinValue(width)
                           : APInt::getSignedMaxValue(width);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(element, value));
}

template <typename ReduceOp>
LogicalResult lowerReduce(RewriterBase &rewriter, ReduceOp op) {
  Location loc = op.getLoc();
  Type element = tensorType(op.getInput()).getElementType();
  SmallVector<int64_t> dims = op.getReducedDims();
  auto identity = [](OpBuilder &, Location, ValueRange args) { return args[0]; };
  // Each reduction is its start value and how it combines two partials.
  Value start;
  std::function<Value(OpBuilder &, Location, ValueRange)> combine; // outlives the branches
  if constexpr (std::is_same_v<ReduceOp, AmaxOp> || std::is_same_v<ReduceOp, AnyOp>) {
    start = extremeConstant(rewriter, loc, element, /*lowest=*/true);
    combine = [](OpBuilder &b, Location l, ValueRange a) { return maxScalar(b, l, a[0], a[1]); };
  } else if constexpr (std::is_same_v<ReduceOp, AminOp> || std::is_same_v<ReduceOp, AllOp>) {
    start = extremeConstant(rewriter, loc, element, /*lowest=*/false);
    combine = [](OpBuilder &b, Location l, ValueRange a) { return minScalar(b, l, a[0], a[1]); };
  } else if constexpr (std::is_same_v<ReduceOp, ProdOp>) {
    start = scalarConstant(rewriter, loc, element, 1);
    combine = [&](OpBuilder &b, Location l, ValueRange a) -> Value {
      if (isFloat(element))
        return arith::MulFOp::create(b, l, a[0], a[1], reductionFlags(b));
      return mulScalar(b, l, a[0], a[1]);
    };
  } else {
    start = scalarConstant(rewriter, loc, element, 0);
    combine = [&](OpBuilder &b, Location l, ValueRange a) -> Value {
      if (isFloat(element))
        return arith::AddFOp::create(b, l, a[0], a[1], reductionFlags(b));
      return addScalar(b, l, a[0], a[1]);
    };
  }
  Value reduced = reduce(rewriter, loc, op.getInput(), dims, start, identity, combine);
  if constexpr (std::is_same_v<ReduceOp, MeanOp>) {
    int64_t count = 1;
    for (int64_t d : dims)
      count *= tensorType(op.getInput()).getDimSize(d);
    reduced = elementwise(rewriter, loc, {reduced}, tensorType(reduced),
                          [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                            return arith::DivFOp::create(
                                b, l, a[0], scalarConstant(b, l, element, count));
                          });
  }
  rewriter.replaceOp(op, keepDims(rewriter, loc, reduced, tensorType(op.getResult())));
  return success();
}

/// softmax / log_softmax along one dim: a max pass, a sum-of-exp pass and a
/// pointwise pass that recomputes exp rather than storing it.
template <typename SoftmaxOp>
LogicalResult lowerSoftmax(RewriterBase &rewriter, SoftmaxOp op) {
  constexpr bool isLog = std::is_same_v<SoftmaxOp, LogSoftmaxOp>;
  Location loc = op.getLoc();
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
  Value sum = reduce(
      rewriter, loc, input, {dim}, 0,
      [](OpBuilder &b, Location l, ValueRange a) -> Value {
        return math::ExpOp::create(b, l, arith::SubFOp::create(b, l, a[0], a[1]));
      },
      [](OpBuilder &b, Location l, ValueRange a) -> Value {
        return arith::AddFOp::create(b, l, a[0], a[1], reductionFlags(b));
      },
      {max});
  // Broadcast the per-row values back along `dim`.
  RankedTensorType keptType = RankedTensorType::get(
      [&] { SmallVector<int64_t> s(type.getShape()); s[dim] = 1; return s; }(),
      type.getElementType());
  Value maxKept = keepDims(rewriter, loc, max, keptType);
  Value sumKept = keepDims(rewriter, loc, sum, keptType);
  Value result = elementwise(
      rewriter, loc, {input, maxKept, sumKept}, type,
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value shifted = arith::SubFOp::create(b, l, a[0], a[1]);
        if (isLog)
          return arith::SubFOp::create(b, l, shifted, math::LogOp::create(b, l, a[2]));
        return arith::DivFOp::create(b, l, math::ExpOp::create(b, l, shifted), a[2]);
      });
  rewriter.replaceOp(op, result);
  return success();
}

/// Layer norm with a corrected mean, then the centered sum of squares. The
/// correction pass (adding the mean of x - sum(x)/n) makes the mean of a
/// constant row exactly that constant, so its variance is exactly 0: without
/// it the rounding of sum(x)/n, times rsqrt(eps) ~ 316, shows in the output.
LogicalResult lowerLayerNorm(RewriterBase &rewriter, LayerNormOp op) {
  Location loc = op.getLoc();
  Value input = op.getInput();
  auto type = tensorType(input);
  Type element = type.getElementType();
  int64_t rank = type.getRank(), n = (int64_t)op.getNormalizedRank();
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(rank - n, rank));
  int64_t count = 1;
  for (int64_t d : dims)
    count *= type.getDimSize(d);
  auto identity = [](OpBuilder &, Location, ValueRange args) { return args[0]; };
  auto add = [](OpBuilder &b, Location l, ValueRange a) -> Value {
    return arith::AddFOp::create(b, l, a[0], a[1], reductionFlags(b));
  };
  Value sum = reduce(rewriter, loc, input, dims, 0, identity, add);
  auto rowType = tensorType(sum);
  Value roughMean = elementwise(rewriter, loc, {sum}, rowType,
                                [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                                  return arith::DivFOp::create(b, l, a[0], scalarConstant(b, l, element, count));
                                });
  Value deviation = reduce(
      rewriter, loc, input, dims, 0,
      [](OpBuilder &b, Location l, ValueRange a) -> Value {
        return arith::SubFOp::create(b, l, a[0], a[1]);
      },
      add, {roughMean});
  Value mean = elementwise(rewriter, loc, {roughMean, deviation}, rowType,
                           [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                             Value correction = arith::DivFOp::create(
                                 b, l, a[1], scalarConstant(b, l, element, count));
                             return arith::AddFOp::create(b, l, a[0], correction);
                           });
  Value squares = reduce(
      rewriter, loc, input, dims, 0,
      [](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value centered = arith::SubFOp::create(b, l, a[0], a[1]);
        return arith::MulFOp::create(b, l, centered, centered);
      },
      add, {mean});
  double eps = op.getEps().convertToDouble();
  Value rstd = elementwise(rewriter, loc, {squares}, rowType,
                           [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                             Value var = arith::DivFOp::create(b, l, a[0], scalarConstant(b, l, element, count));
                             return math::RsqrtOp::create(
                                 b, l, arith::AddFOp::create(b, l, var, scalarConstant(b, l, element, eps)));
                           });
  auto statType = tensorType(op.getMean());
  Value meanKept = keepDims(rewriter, loc, mean, statType);
  Value rstdKept = keepDims(rewriter, loc, rstd, statType);
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
  Value empty = emptyTensor(rewriter, loc, type.getShape(), element);
  Value init = linalg::FillOp::create(rewriter, loc,
                                      scalarConstant(rewriter, loc, element, 0), empty)
                   .getResult(0);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{op.getLhs(), op.getRhs()},
      ValueRange{init}, maps, iterators, "", "",
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value sum;
        if (isFloat(element)) {
          Value product = arith::MulFOp::create(b, l, a[0], a[1], reductionFlags(b));
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
  rewriter.replaceOp(op, reshapeTensor(rewriter, op.getLoc(), op.getInput(),
                                       tensorType(op.getResult())));
  return success();
}

LogicalResult lowerPermute(RewriterBase &rewriter, PermuteOp op) {
  auto type = tensorType(op.getResult());
  Value init = emptyTensor(rewriter, op.getLoc(), type.getShape(), type.getElementType());
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
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (int64_t i = 0; i < in.getRank(); ++i) {
    bool sliced = i == (int64_t)op.getDim();
    offsets.push_back(rewriter.getIndexAttr(sliced ? (int64_t)op.getStart() : 0));
    sizes.push_back(rewriter.getIndexAttr(out.getDimSize(i)));
    strides.push_back(rewriter.getIndexAttr(sliced ? (int64_t)op.getStep() : 1));
  }
  rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, out, op.getInput(),
                                                      offsets, sizes, strides);
  return success();
}

/// One generic over the result; each element is read from the input whose
/// range along `dim` holds it (indices clamped so no load is out of bounds).
LogicalResult lowerConcat(RewriterBase &rewriter, ConcatOp op) {
  Location loc = op.getLoc();
  auto type = tensorType(op.getResult());
  int64_t dim = (int64_t)op.getDim();
  SmallVector<std::pair<Value, int64_t>> parts; // non-empty inputs, offsets
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    int64_t size = tensorType(input).getDimSize(dim);
    if (size > 0)
      parts.push_back({input, offset});
    offset += size;
  }
  Value init = emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(type.getRank(), rewriter.getContext())};
  SmallVector<IteratorType> iterators(type.getRank(), IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{}, ValueRange{init}, maps,
      iterators, "", "", [&](OpBuilder &b, Location l, ValueRange) {
        SmallVector<Value> indices;
        for (int64_t i = 0; i < type.getRank(); ++i)
          indices.push_back(linalg::IndexOp::create(b, l, i));
        Value result;
        // Later parts win where their range starts: select forwards.
        for (auto [input, start] : parts) {
          int64_t size = tensorType(input).getDimSize(dim);
          Value startValue = arith::ConstantIndexOp::create(b, l, start);
          Value local = arith::SubIOp::create(b, l, indices[dim], startValue);
          SmallVector<Value> at(indices);
          at[dim] = clampIndex(b, l, local, size);
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
  Value init = emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
  SmallVector<AffineExpr> indexExprs;
  for (int64_t i = 0; i + 1 < rank; ++i)
    indexExprs.push_back(getAffineDimExpr(i, ctx));
  SmallVector<AffineMap> maps{AffineMap::get(rank, 0, indexExprs, ctx),
                              AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{op.getIndices()}, ValueRange{init},
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
  if (type.getNumElements() == 0)
    return scalarConstant(b, loc, type.getElementType(), 0);
  return tensor::ExtractOp::create(b, loc, input, source);
}

LogicalResult lowerIota(RewriterBase &rewriter, IotaOp op) {
  auto type = tensorType(op.getResult());
  Type element = type.getElementType();
  Location loc = op.getLoc();
  Value init = emptyTensor(rewriter, loc, type.getShape(), element);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, rewriter.getContext());
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{}, ValueRange{init}, ArrayRef<AffineMap>{identity},
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
  Value init = emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext());
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{}, ValueRange{init}, ArrayRef<AffineMap>{identity},
      iterators, "", "", [&](OpBuilder &b, Location l, ValueRange) {
        // Source index i - low per dim; outside the input, the pad value.
        SmallVector<Value> source;
        Value inside = arith::ConstantIntOp::create(b, l, 1, 1);
        for (int64_t d = 0; d < rank; ++d) {
          Value i = arith::SubIOp::create(b, l, linalg::IndexOp::create(b, l, d),
                                          arith::ConstantIndexOp::create(b, l, op.getLow()[d]));
          Value size = arith::ConstantIndexOp::create(b, l, inputType.getDimSize(d));
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value ok = arith::AndIOp::create(
              b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, i, zero),
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, size));
          inside = arith::AndIOp::create(b, l, inside, ok);
          source.push_back(clampIndex(b, l, i, inputType.getDimSize(d)));
        }
        Value pad = scalarConstant(b, l, type.getElementType(), op.getValue().convertToDouble());
        Value result = pad;
        if (inputType.getNumElements() > 0) {
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
  Value init = emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, op.getIndices(), ValueRange{init}, maps, iterators, "", "",
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
          int64_t size = inputType.getDimSize(d);
          Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), args[k]);
          Value wrapped = arith::AddIOp::create(b, l, i, arith::ConstantIndexOp::create(b, l, size));
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
  Value init = emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{op.getIndex()}, ValueRange{init}, maps,
      iterators, "", "", [&](OpBuilder &b, Location l, ValueRange args) {
        SmallVector<Value> source;
        for (int64_t d = 0; d < rank; ++d)
          source.push_back(d == dim ? clampIndex(b, l,
                                                 arith::IndexCastOp::create(
                                                     b, l, b.getIndexType(), args[0]),
                                                 inputType.getDimSize(d))
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
  if (rank == 0 || type.getNumElements() == 0) {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
  int64_t dim = op.getDim();
  int64_t length = type.getDimSize(dim);
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<int64_t> sliceShape(type.getShape());
  sliceShape[dim] = 1;
  auto sliceType = RankedTensorType::get(sliceShape, type.getElementType());
  auto sliceAt = [&](OpBuilder &b, Value tensor, OpFoldResult k) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes, strides(rank, b.getIndexAttr(1));
    offsets[dim] = k;
    for (int64_t s : sliceShape)
      sizes.push_back(b.getIndexAttr(s));
    return std::make_tuple(offsets, sizes, strides);
  };
  auto [offsets0, sizes, strides] = sliceAt(rewriter, op.getInput(), rewriter.getIndexAttr(0));
  Value first = tensor::ExtractSliceOp::create(rewriter, loc, sliceType, op.getInput(), offsets0,
                                               sizes, strides);
  Value out = emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
  out = tensor::InsertSliceOp::create(rewriter, loc, first, out, offsets0, sizes, strides);
  Value lower = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value upper = arith::ConstantIndexOp::create(rewriter, loc, length);
  Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto loop = scf::ForOp::create(
      rewriter, loc, lower, upper, step, ValueRange{out, first},
      [&](OpBuilder &b, Location l, Value k, ValueRange carried) {
        auto [offsets, sizes, strides] = sliceAt(b, carried[0], k);
        Value slice = tensor::ExtractSliceOp::create(b, l, sliceType, op.getInput(), offsets,
                                                     sizes, strides);
        // running += slice, written over the running slice.
        auto add = linalg::GenericOp::create(
            b, l, TypeRange{sliceType}, ValueRange{slice}, ValueRange{carried[1]},
            ArrayRef<AffineMap>{identity, identity}, iterators, "", "",
            [&](OpBuilder &nb, Location nl, ValueRange a) {
              linalg::YieldOp::create(nb, nl, addScalar(nb, nl, a[1], a[0]));
            });
        Value running = add.getResult(0);
        Value next = tensor::InsertSliceOp::create(b, l, running, carried[0], offsets, sizes,
                                                   strides);
        scf::YieldOp::create(b, l, ValueRange{next, running});
      });
  rewriter.replaceOp(op, loop.getResult(0));
  return success();
}

LogicalResult lowerConstant(RewriterBase &rewriter, ConstantOp op) {
  rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, op.getValue().getType(),
                                                 cast<TypedAttr>(op.getValue()));
  return success();
}

LogicalResult lowerOp(RewriterBase &rewriter, Operation *op) {
  rewriter.setInsertionPoint(op);
  if (isElementwise(op))
    return lowerElementwise(rewriter, op);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<SumOp, MeanOp, AmaxOp, AminOp, ProdOp, AllOp, AnyOp>([&](auto o) { return lowerReduce(rewriter, o); })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto o) { return lowerSoftmax(rewriter, o); })
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
      .Case<ConstantOp>([&](auto o) { return lowerConstant(rewriter, o); })
      .Default([](Operation *o) {
        return o->emitOpError("has no lowering to linalg");
      });
}

struct ConvertGraphToLinalgPass
    : kiln::impl::ConvertGraphToLinalgPassBase<ConvertGraphToLinalgPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<GraphDialect>(op->getDialect()))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    // Constants last: the lowerings above inspect constant operands.
    std::stable_partition(ops.begin(), ops.end(), [](Operation *op) { return !isa<ConstantOp>(op); });
    for (Operation *op : ops)
      if (failed(lowerOp(rewriter, op)))
        return signalPassFailure();
  }
};

} // namespace
