#include "kiln/Target/CPU/Passes.h"

#include <limits>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "kiln/Target/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace {

/// A scalar math op -> a call to libm's `name` (f64) or `name`f (f32),
/// declared once per module. For the functions LLVM has no lowering for and
/// whose MLIR polynomial approximations are less accurate than ATen's
/// (inverse trigonometric and hyperbolic functions, f64 erf); they are rare
/// in models, so the scalar call costs little.
template <typename MathOp>
struct MathToLibmCall : OpRewritePattern<MathOp> {
  MathToLibmCall(MLIRContext *ctx, StringRef name, bool float64Only = false)
      : OpRewritePattern<MathOp>(ctx, /*benefit=*/2), name(name), float64Only(float64Only) {}

  LogicalResult matchAndRewrite(MathOp op, PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!type.isF64() && (float64Only || !type.isF32()))
      return failure();
    std::string symbol = (name + (type.isF32() ? "f" : "")).str();
    auto module = op->template getParentOfType<ModuleOp>();
    auto callee = module.template lookupSymbol<func::FuncOp>(symbol);
    if (!callee) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      SmallVector<Type> operands(op->getNumOperands(), type);
      callee = func::FuncOp::create(rewriter, op.getLoc(), symbol,
                                    rewriter.getFunctionType(operands, {type}));
      callee.setPrivate();
    }
    rewriter.replaceOpWithNewOp<func::CallOp>(op, callee, op->getOperands());
    return success();
  }

  StringRef name;
  bool float64Only;
};

/// atan2(y, x) for y = x = 0 as IEEE and libm give it (0 for x = +0, pi
/// for x = -0, signed as y), around the polynomial, which divides 0 by 0
/// there and returns NaN (a bool atan2 meets it at every false pair).
struct Atan2OfZeros : OpRewritePattern<math::Atan2Op> {
  Atan2OfZeros(MLIRContext *ctx) : OpRewritePattern<math::Atan2Op>(ctx, /*benefit=*/2) {}
  static constexpr llvm::StringLiteral kGuarded = "kiln.zeros_guarded";

  LogicalResult matchAndRewrite(math::Atan2Op op, PatternRewriter &rewriter) const override {
    if (op->hasAttr(kGuarded))
      return failure();
    Location loc = op.getLoc();
    Value y = op.getLhs(), x = op.getRhs();
    Type type = op.getType();
    auto constant = [&](double value) -> Value {
      auto scalar = rewriter.getFloatAttr(getElementTypeOrSelf(type), value);
      if (auto shaped = dyn_cast<ShapedType>(type))
        return arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(shaped, scalar));
      return arith::ConstantOp::create(rewriter, loc, scalar);
    };
    auto atan2 = math::Atan2Op::create(rewriter, loc, y, x);
    atan2->setAttr(kGuarded, rewriter.getUnitAttr());
    Value zero = constant(0.0);
    // x's sign bit, which -0 has too.
    Value xNegative = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OLT,
        math::CopySignOp::create(rewriter, loc, constant(1.0), x), zero);
    Value yZero = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OEQ, y, zero);
    Value xZero = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OEQ, x, zero);
    Value bothZero = arith::AndIOp::create(rewriter, loc, yZero, xZero);
    Value angle =
        arith::SelectOp::create(rewriter, loc, xNegative, constant(3.14159265358979323846), zero);
    Value onAxis = math::CopySignOp::create(rewriter, loc, angle, y);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, bothZero, onAxis, atan2);
    return success();
  }
};

/// asinh, acosh and atanh of float32 through log1p (which the polynomial
/// patterns then approximate), for targets without libm: the textbook
/// log(x + sqrt(x^2 + 1)) loses all precision near zero and cancels for
/// negative x. Very large arguments take log(x) + log(2), as x^2 would
/// overflow.
struct InverseHyperbolic : RewritePattern {
  InverseHyperbolic(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/2, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isa<math::AsinhOp, math::AcoshOp, math::AtanhOp>(op) || !op->getResult(0).getType().isF32())
      return failure();
    Location loc = op->getLoc();
    Value x = op->getOperand(0);
    auto constant = [&](double value) -> Value {
      return arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(value));
    };
    Value one = constant(1.0);
    Value large = constant(4096.0);
    auto logOfLarge = [&](Value a) -> Value {
      return arith::AddFOp::create(rewriter, loc, math::LogOp::create(rewriter, loc, a),
                                   constant(0.69314718055994530942));
    };
    auto below = [&](Value a, Value b) -> Value {
      return arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OLT, a, b);
    };
    Value result;
    if (isa<math::AsinhOp>(op)) {
      // asinh(a) = log1p(a + a^2 / (1 + sqrt(1 + a^2))), odd.
      Value a = math::AbsFOp::create(rewriter, loc, x);
      Value square = arith::MulFOp::create(rewriter, loc, a, a);
      Value root = math::SqrtOp::create(rewriter, loc, arith::AddFOp::create(rewriter, loc, one, square));
      Value small = math::Log1pOp::create(
          rewriter, loc,
          arith::AddFOp::create(rewriter, loc, a,
                                arith::DivFOp::create(rewriter, loc, square,
                                                      arith::AddFOp::create(rewriter, loc, one, root))));
      Value magnitude = arith::SelectOp::create(rewriter, loc, below(a, large), small, logOfLarge(a));
      result = math::CopySignOp::create(rewriter, loc, magnitude, x);
    } else if (isa<math::AcoshOp>(op)) {
      // acosh(x) = log1p(t + sqrt(2t + t^2)), t = x - 1; NaN below 1.
      Value t = arith::SubFOp::create(rewriter, loc, x, one);
      Value root = math::SqrtOp::create(
          rewriter, loc,
          arith::MulFOp::create(rewriter, loc, t, arith::AddFOp::create(rewriter, loc, t, constant(2.0))));
      Value small = math::Log1pOp::create(rewriter, loc, arith::AddFOp::create(rewriter, loc, t, root));
      Value value = arith::SelectOp::create(rewriter, loc, below(x, large), small, logOfLarge(x));
      result = arith::SelectOp::create(rewriter, loc, below(x, one),
                                       constant(std::numeric_limits<double>::quiet_NaN()), value);
    } else {
      // atanh(a) = log1p(2a / (1 - a)) / 2, odd.
      Value a = math::AbsFOp::create(rewriter, loc, x);
      Value ratio = arith::DivFOp::create(rewriter, loc, arith::AddFOp::create(rewriter, loc, a, a),
                                          arith::SubFOp::create(rewriter, loc, one, a));
      Value magnitude = arith::MulFOp::create(
          rewriter, loc, math::Log1pOp::create(rewriter, loc, ratio), constant(0.5));
      result = math::CopySignOp::create(rewriter, loc, magnitude, x);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// powf of float32 for targets without libm, to within a few ulp:
/// x = m * 2^e with log2(m) in [-1/2, 1/2], y * log2(x) = y*e + y*log2(m)
/// summed in float64 (y*e exactly), split into an integer n and a fraction
/// f, and the result 2^f * 2^n. exp(y * log(x)) in float32 loses
/// |y * log(x)| ulp, which is many. Zeros, infinities, NaNs and negative
/// bases take the IEEE special cases as C's powf does.
struct PreciseFloat32Pow : OpRewritePattern<math::PowFOp> {
  PreciseFloat32Pow(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(math::PowFOp op, PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return failure();
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type(), f64 = b.getF64Type(), i32 = b.getI32Type();
    auto f = [&](double v) -> Value { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); };
    auto d = [&](double v) -> Value { return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v)); };
    auto i = [&](int32_t v) -> Value { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v)); };
    auto cmpf = [&](arith::CmpFPredicate p, Value l, Value r) -> Value {
      return arith::CmpFOp::create(b, loc, p, l, r);
    };
    auto cmpi = [&](arith::CmpIPredicate p, Value l, Value r) -> Value {
      return arith::CmpIOp::create(b, loc, p, l, r);
    };
    auto select = [&](Value c, Value t, Value e) -> Value { return arith::SelectOp::create(b, loc, c, t, e); };
    Value x = op.getLhs(), y = op.getRhs();
    Value ax = math::AbsFOp::create(b, loc, x);

    // m in [1, 2) and e from the bits (of ax * 2^24 for a subnormal ax).
    Value subnormal = cmpf(arith::CmpFPredicate::OLT, ax, f(1.17549435e-38));
    Value scaled = select(subnormal, arith::MulFOp::create(b, loc, ax, f(16777216.0)), ax);
    Value bits = arith::BitcastOp::create(b, loc, i32, scaled);
    Value e = arith::SubIOp::create(b, loc, arith::ShRUIOp::create(b, loc, bits, i(23)),
                                    select(subnormal, i(127 + 24), i(127)));
    Value m = arith::BitcastOp::create(
        b, loc, f32,
        arith::OrIOp::create(b, loc, arith::AndIOp::create(b, loc, bits, i(0x7fffff)), i(0x3f800000)));
    // Keep log2(m) in [-1/2, 1/2].
    Value high = cmpf(arith::CmpFPredicate::OGT, m, f(1.41421356237309504880));
    m = select(high, arith::MulFOp::create(b, loc, m, f(0.5)), m);
    e = select(high, arith::AddIOp::create(b, loc, e, i(1)), e);
    Value yLog2m = arith::MulFOp::create(b, loc, y, math::Log2Op::create(b, loc, m));
    Value t = arith::AddFOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, arith::ExtFOp::create(b, loc, f64, y),
                              arith::SIToFPOp::create(b, loc, f64, e)),
        arith::ExtFOp::create(b, loc, f64, yLog2m));
    // Beyond +-300 the result is 0 or inf either way.
    t = arith::MinimumFOp::create(b, loc, arith::MaximumFOp::create(b, loc, t, d(-300)), d(300));
    Value n = math::RoundEvenOp::create(b, loc, t);
    Value fraction = arith::TruncFOp::create(b, loc, f32, arith::SubFOp::create(b, loc, t, n));
    Value power = math::ExpOp::create(b, loc, arith::MulFOp::create(b, loc, fraction,
                                                                    f(0.69314718055994530942)));
    // 2^n in two factors, each a normal float32.
    Value ni = arith::FPToSIOp::create(b, loc, i32, n);
    Value half = arith::DivSIOp::create(b, loc, ni, i(2));
    for (Value k : {half, arith::SubIOp::create(b, loc, ni, half).getResult()}) {
      Value clamped = arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, k, i(-126)), i(127));
      Value scale = arith::BitcastOp::create(
          b, loc, f32, arith::ShLIOp::create(b, loc, arith::AddIOp::create(b, loc, clamped, i(127)), i(23)));
      power = arith::MulFOp::create(b, loc, power, scale);
    }
    // A zero, infinite or NaN base or exponent: exp(y * log(|x|)) is 0, inf
    // or NaN as it should be.
    Value naive = math::ExpOp::create(b, loc, arith::MulFOp::create(b, loc, y, math::LogOp::create(b, loc, ax)));
    Value infinity = f(std::numeric_limits<float>::infinity());
    Value finite = arith::AndIOp::create(
        b, loc,
        arith::AndIOp::create(b, loc, cmpf(arith::CmpFPredicate::OGT, ax, f(0)),
                              cmpf(arith::CmpFPredicate::OLT, ax, infinity)),
        cmpf(arith::CmpFPredicate::OLT, math::AbsFOp::create(b, loc, y), infinity));
    Value magnitude = select(finite, power, naive);
    // A negative base (or -0): an integer y keeps the magnitude, negated for
    // an odd one; any other y gives NaN.
    Value negative = cmpi(arith::CmpIPredicate::slt, arith::BitcastOp::create(b, loc, i32, x), i(0));
    Value integral = cmpf(arith::CmpFPredicate::OEQ, math::FloorOp::create(b, loc, y), y);
    Value halfY = arith::MulFOp::create(b, loc, y, f(0.5));
    Value odd = arith::AndIOp::create(b, loc, integral,
                                      cmpf(arith::CmpFPredicate::ONE, math::FloorOp::create(b, loc, halfY), halfY));
    Value signed_ = select(odd, arith::NegFOp::create(b, loc, magnitude), magnitude);
    Value nan = f(std::numeric_limits<float>::quiet_NaN());
    Value zeroBase = cmpf(arith::CmpFPredicate::OEQ, ax, f(0));
    Value negativeResult = select(arith::OrIOp::create(b, loc, integral, zeroBase), signed_, nan);
    Value result = select(negative, negativeResult, magnitude);
    // pow(x, 0) = 1 and pow(1, y) = 1, NaNs included.
    Value one = arith::OrIOp::create(b, loc, cmpf(arith::CmpFPredicate::OEQ, y, f(0)),
                                     cmpf(arith::CmpFPredicate::OEQ, x, f(1)));
    rewriter.replaceOp(op, select(one, f(1), result));
    return success();
  }
};

struct ApproximateMathPass
    : kiln::cpu::impl::ApproximateMathPassBase<ApproximateMathPass> {
  using ApproximateMathPassBase::ApproximateMathPassBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    MLIRContext *ctx = &getContext();
    if (libmCalls) {
      patterns.add<MathToLibmCall<math::ErfOp>>(ctx, "erf", /*float64Only=*/true);
      patterns.add<MathToLibmCall<math::AsinOp>>(ctx, "asin");
      patterns.add<MathToLibmCall<math::AcosOp>>(ctx, "acos");
      patterns.add<MathToLibmCall<math::AsinhOp>>(ctx, "asinh");
      patterns.add<MathToLibmCall<math::AcoshOp>>(ctx, "acosh");
      patterns.add<MathToLibmCall<math::AtanhOp>>(ctx, "atanh");
      patterns.add<MathToLibmCall<math::Atan2Op>>(ctx, "atan2");
    } else {
      patterns.add<InverseHyperbolic, PreciseFloat32Pow, Atan2OfZeros>(ctx);
    }
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
