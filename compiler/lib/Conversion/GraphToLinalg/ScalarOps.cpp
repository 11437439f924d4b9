// The scalar semantics of kiln_graph ops: the arith / math a linalg body
// computes for one element, with ATen's rules for NaN, integer division,
// rounding and casts.
#include "ScalarOps.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

using namespace mlir;
using namespace kiln::graph;

namespace kiln::scalar {

bool computesUnsigned(Operation *op) { return op->hasAttr(kUnsignedAttr); }

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
  if (type.isInteger(1)) // ATen's truthiness: any nonzero value (NaN too) is true
    return arith::ConstantOp::create(b, loc, b.getBoolAttr(value != 0));
  // Bits of the two's complement value: uint8's 200 is i8's -56.
  APInt bits(type.getIntOrFloatBitWidth(), (uint64_t)(int64_t)value, /*isSigned=*/true,
             /*implicitTrunc=*/true);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, bits));
}

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
/// max or min: the float op is NaN-propagating, like ATen; bools combine
/// with or (max) and and (min).
template <typename FloatOp, typename BoolOp, typename UnsignedOp, typename SignedOp>
static Value extremumScalar(OpBuilder &b, Location loc, Value x, Value y, bool isUnsigned) {
  if (isFloat(x.getType()))
    return FloatOp::create(b, loc, x, y);
  if (x.getType().isInteger(1))
    return BoolOp::create(b, loc, x, y);
  if (isUnsigned)
    return UnsignedOp::create(b, loc, x, y);
  return SignedOp::create(b, loc, x, y);
}
Value maxScalar(OpBuilder &b, Location loc, Value x, Value y, bool isUnsigned) {
  return extremumScalar<arith::MaximumFOp, arith::OrIOp, arith::MaxUIOp, arith::MaxSIOp>(
      b, loc, x, y, isUnsigned);
}
Value minScalar(OpBuilder &b, Location loc, Value x, Value y, bool isUnsigned) {
  return extremumScalar<arith::MinimumFOp, arith::AndIOp, arith::MinUIOp, arith::MinSIOp>(
      b, loc, x, y, isUnsigned);
}

/// The divisor y, or 1 where y is 0 (x / 0 traps; the importer's assert
/// raises ATen's error first) or, for signed division, -1 (INT_MIN / -1
/// overflows; callers handle -1 themselves).
static Value safeDivisor(OpBuilder &b, Location loc, Value y, bool isUnsigned) {
  Type type = y.getType();
  Value trapping =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, scalarConstant(b, loc, type, 0));
  if (!isUnsigned)
    trapping = arith::OrIOp::create(
        b, loc, trapping,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, scalarConstant(b, loc, type, -1)));
  return arith::SelectOp::create(b, loc, trapping, scalarConstant(b, loc, type, 1), y);
}

/// fmod (truncated: the sign of x) or, when `floored`, Python's remainder
/// (the sign of y); both are remui for unsigned integers. A signed divisor
/// of -1 gives 0, as it should.
static Value remainderScalar(OpBuilder &b, Location loc, Value x, Value y, bool floored,
                      bool isUnsigned) {
  Type type = x.getType();
  Value zero = scalarConstant(b, loc, type, 0);
  if (isUnsigned)
    return arith::RemUIOp::create(b, loc, x, safeDivisor(b, loc, y, true));
  Value r;
  if (isFloat(type)) {
    r = arith::RemFOp::create(b, loc, x, y);
  } else {
    // x % 1 is 0, as x % -1 is.
    r = arith::RemSIOp::create(b, loc, x, safeDivisor(b, loc, y, false));
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
static Value divRoundScalar(OpBuilder &b, Location loc, Value x, Value y, bool floored,
                     bool isUnsigned) {
  Type type = x.getType();
  Value zero = scalarConstant(b, loc, type, 0);
  if (isUnsigned) // both roundings are the truncated quotient
    return arith::DivUIOp::create(b, loc, x, safeDivisor(b, loc, y, true));
  if (!isFloat(type)) {
    // A divisor of -1 gives 0 - x, which wraps as ATen's does.
    Value isMinusOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y,
                                             scalarConstant(b, loc, type, -1));
    Value safe = safeDivisor(b, loc, y, false);
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
static Value horner(OpBuilder &b, Location loc, Value z, ArrayRef<double> coefficients) {
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

static Value trigScalar(OpBuilder &b, Location loc, Value x, Trig fn) {
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
static Value signScalar(OpBuilder &b, Location loc, Value x, bool isUnsigned) {
  Type t = x.getType();
  if (t.isInteger(1))
    return x;
  Value zero = scalarConstant(b, loc, t, 0);
  if (isUnsigned)
    return arith::ExtUIOp::create(b, loc, t,
                                  arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero));
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
static Value atanScalar(OpBuilder &b, Location loc, Value x) {
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
static Value hyperbolicScalar(OpBuilder &b, Location loc, Value x, bool isCosh) {
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

Value convertScalar(OpBuilder &b, Location loc, Value x, Type to, bool fromUnsigned) {
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
  // Half precision converts through float32, as ATen's c10::Half and
  // c10::BFloat16 do (a double or an integer rounds to float first).
  Type f32 = b.getF32Type();
  auto isHalf = [](Type t) { return t.isF16() || t.isBF16(); };
  if (isHalf(from) && to != f32)
    return convertScalar(b, loc, arith::ExtFOp::create(b, loc, f32, x), to, false);
  if (isHalf(to) && from != f32)
    return arith::TruncFOp::create(b, loc, to, convertScalar(b, loc, x, f32, fromUnsigned));
  if (isFloat(from) && isFloat(to)) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    return arith::TruncFOp::create(b, loc, to, x);
  }
  if (isFloat(from)) {
    // Through int64, as ATen casts to uint8 (and in-range values to any
    // integer); fptosi to a narrow type would be poison out of range.
    Value wide = arith::FPToSIOp::create(b, loc, b.getI64Type(), x);
    return to.isInteger(64) ? wide : arith::TruncIOp::create(b, loc, to, wide);
  }
  if (isFloat(to)) {
    if (fromUnsigned)
      return arith::UIToFPOp::create(b, loc, to, x);
    return arith::SIToFPOp::create(b, loc, to, x);
  }
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()) {
    if (fromUnsigned)
      return arith::ExtUIOp::create(b, loc, to, x);
    return arith::ExtSIOp::create(b, loc, to, x);
  }
  return arith::TruncIOp::create(b, loc, to, x);
}

static Value compareScalar(OpBuilder &b, Location loc, Operation *op, Value x, Value y,
                    bool isUnsigned) {
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
  bool isBool = isUnsigned || x.getType().isInteger(1); // false < true
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
static Value powScalar(OpBuilder &b, Location loc, Value x, Value e,
                std::optional<double> constantExponent, bool isUnsigned) {
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
  if (isUnsigned && !x.getType().isInteger(64)) {
    // ipowi reads a signed exponent: raise in int64 (exact modulo 2^8).
    Type i64 = b.getI64Type();
    Value wide = math::IPowIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, x),
                                       arith::ExtUIOp::create(b, loc, i64, e));
    return arith::TruncIOp::create(b, loc, x.getType(), wide);
  }
  // A negative exponent gives 0 but for bases 1 and -1, as in ATen (ipowi
  // leaves 0 ** -n undefined).
  Type t = x.getType();
  auto constant = [&](int64_t v) { return scalarConstant(b, loc, t, (double)v); };
  auto equal = [&](Value l, Value r) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, l, r);
  };
  Value odd = equal(arith::AndIOp::create(b, loc, e, constant(1)), constant(1));
  Value negativePower = arith::SelectOp::create(
      b, loc, equal(x, constant(1)), constant(1),
      arith::SelectOp::create(b, loc, equal(x, constant(-1)),
                              arith::SelectOp::create(b, loc, odd, constant(-1), constant(1)),
                              constant(0)));
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, e, constant(0));
  return arith::SelectOp::create(b, loc, negative, negativePower,
                                 math::IPowIOp::create(b, loc, x, e));
}

static Value sigmoidScalar(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value one = scalarConstant(b, loc, t, 1);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
}

static Value geluScalar(OpBuilder &b, Location loc, Value x, bool tanhApprox) {
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

static std::optional<double> splatValue(Value v) {
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
  bool u = computesUnsigned(op);
  return llvm::TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case<AddOp>([&](auto) { return addScalar(b, loc, args[0], args[1]); })
      .Case<SubOp>([&](auto) { return subScalar(b, loc, args[0], args[1]); })
      .Case<MulOp>([&](auto) { return mulScalar(b, loc, args[0], args[1]); })
      .Case<DivOp>([&](auto) -> Value {
        return arith::DivFOp::create(b, loc, args[0], args[1]);
      })
      .Case<FmodOp, RemainderOp>([&](Operation *o) {
        return remainderScalar(b, loc, args[0], args[1], /*floored=*/isa<RemainderOp>(o), u);
      })
      .Case<DivRoundOp>([&](DivRoundOp div) {
        return divRoundScalar(b, loc, args[0], args[1], div.getRoundingMode() == graph::RoundingMode::Floor, u);
      })
      .Case<Atan2Op>([&](auto) -> Value { return math::Atan2Op::create(b, loc, args[0], args[1]); })
      .Case<MaximumOp>([&](auto) { return maxScalar(b, loc, args[0], args[1], u); })
      .Case<MinimumOp>([&](auto) { return minScalar(b, loc, args[0], args[1], u); })
      .Case<PowOp>([&](PowOp pow) {
        return powScalar(b, loc, args[0], args[1], splatValue(pow.getRhs()), u);
      })
      .Case<EqOp, NeOp, LtOp, LeOp, GtOp, GeOp>(
          [&](Operation *cmp) { return compareScalar(b, loc, cmp, args[0], args[1], u); })
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
        return maxScalar(b, loc, args[0], scalarConstant(b, loc, resultElement, 0), u);
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
        if (u)
          return args[0];
        return math::AbsIOp::create(b, loc, args[0]);
      })
      .Case<SinOp>([&](auto) { return trigScalar(b, loc, args[0], Trig::Sin); })
      .Case<CosOp>([&](auto) { return trigScalar(b, loc, args[0], Trig::Cos); })
      .Case<TanOp>([&](auto) { return trigScalar(b, loc, args[0], Trig::Tan); })
      .Case<SignOp>([&](auto) { return signScalar(b, loc, args[0], u); })
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
        return geluScalar(b, loc, args[0], gelu.getApproximate() == graph::GeluApproximation::Tanh);
      })
      .Case<CloneOp>([&](auto) -> Value { return args[0]; })
      .Case<ConvertOp>([&](auto) { return convertScalar(b, loc, args[0], resultElement, u); })
      .Default([](auto) { return failure(); });
}

/// The identity of a min (`lowest` false) or max (`lowest` true) reduction:
/// +-inf for floats, the integer type's extreme value, or true/false.
Value extremeConstant(OpBuilder &b, Location loc, Type element, bool lowest, bool isUnsigned) {
  if (auto floatType = dyn_cast<FloatType>(element))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(floatType, lowest ? -INFINITY : INFINITY));
  unsigned width = element.getIntOrFloatBitWidth();
  APInt value = width == 1 || isUnsigned ? (lowest ? APInt::getMinValue(width) : APInt::getMaxValue(width))
                : lowest                 ? APInt::getSignedMinValue(width)
                                         : APInt::getSignedMaxValue(width);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(element, value));
}

Value combineIdentity(OpBuilder &b, Location loc, Type element, Combine kind, bool isUnsigned) {
  switch (kind) {
  case Combine::Sum:
    return scalarConstant(b, loc, element, 0);
  case Combine::Prod:
    return scalarConstant(b, loc, element, 1);
  case Combine::Max:
  case Combine::Min:
    return extremeConstant(b, loc, element, /*lowest=*/kind == Combine::Max, isUnsigned);
  }
  llvm_unreachable("unknown Combine");
}

Value combineScalar(OpBuilder &b, Location loc, Combine kind, Value acc, Value x, bool isUnsigned,
                    bool reassociate) {
  auto flags = arith::FastMathFlagsAttr::get(
      b.getContext(), reassociate ? arith::FastMathFlags::reassoc | arith::FastMathFlags::contract
                                  : arith::FastMathFlags::none);
  switch (kind) {
  case Combine::Sum:
    if (isFloat(acc.getType()))
      return arith::AddFOp::create(b, loc, acc, x, flags);
    return addScalar(b, loc, acc, x);
  case Combine::Prod:
    if (isFloat(acc.getType()))
      return arith::MulFOp::create(b, loc, acc, x, flags);
    return mulScalar(b, loc, acc, x);
  case Combine::Max:
    return maxScalar(b, loc, acc, x, isUnsigned);
  case Combine::Min:
    return minScalar(b, loc, acc, x, isUnsigned);
  }
  llvm_unreachable("unknown Combine");
}

/// Does (x, i) come before (best, bestIndex) in an argmax (or argmin)? The
/// larger (smaller) value wins, NaN above all, and the smaller index breaks
/// ties, so the result is the first extreme whatever the visiting order.
Value beatsScalar(OpBuilder &b, Location loc, Value x, Value i, Value best, Value bestIndex,
                  bool isMax, bool isUnsigned) {
  Value earlier = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, bestIndex);
  Value strict, equal;
  if (isFloat(x.getType())) {
    strict = arith::CmpFOp::create(b, loc, isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT,
                                   x, best);
    equal = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, best);
  } else {
    bool isBool = isUnsigned || x.getType().isInteger(1);
    auto predicate = isMax ? (isBool ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt)
                           : (isBool ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt);
    strict = arith::CmpIOp::create(b, loc, predicate, x, best);
    equal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, best);
  }
  Value beats = arith::OrIOp::create(b, loc, strict, arith::AndIOp::create(b, loc, equal, earlier));
  if (!isFloat(x.getType()))
    return beats;
  Value xNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  Value bestNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, best, best);
  Value falseValue = scalarConstant(b, loc, b.getI1Type(), 0);
  Value trueValue = scalarConstant(b, loc, b.getI1Type(), 1);
  return arith::SelectOp::create(
      b, loc, xNaN, arith::SelectOp::create(b, loc, bestNaN, earlier, trueValue),
      arith::SelectOp::create(b, loc, bestNaN, falseValue, beats));
}

} // namespace kiln::scalar
