// Size expressions: the sizes a symbolic artifact computes from its symbols.
#include "kiln/runtime/SizeExpr.h"

#include <gtest/gtest.h>

namespace kiln::runtime {
namespace {

using Op = SizeExpr::Op;

SizeExpr s(uint32_t i) { return SizeExpr::symbol(i); }
SizeExpr c(int64_t v) { return SizeExpr::constant(v); }
SizeExpr bin(Op op, const SizeExpr &a, const SizeExpr &b) { return SizeExpr::binary(op, a, b); }

int64_t eval(const SizeExpr &e, std::vector<int64_t> symbols) {
  StatusOr<int64_t> value = evaluateSizeExpr(e, symbols);
  EXPECT_TRUE(value.ok()) << value.status().message();
  return value.ok() ? *value : -1;
}

TEST(SizeExprTest, EvaluatesEveryOperator) {
  EXPECT_EQ(eval(bin(Op::Add, bin(Op::Mul, s(0), s(1)), c(3)), {5, 7}), 38);
  EXPECT_EQ(eval(bin(Op::FloorDiv, s(0), c(4)), {13}), 3);
  EXPECT_EQ(eval(bin(Op::FloorDiv, c(-13), c(4)), {}), -4); // floored, as Python's //
  EXPECT_EQ(eval(bin(Op::CeilDiv, s(0), c(4)), {13}), 4);
  EXPECT_EQ(eval(bin(Op::CeilDiv, s(0), c(4)), {12}), 3);
  EXPECT_EQ(eval(bin(Op::Mod, s(0), c(4)), {13}), 1);
  EXPECT_EQ(eval(bin(Op::Mod, c(-13), c(4)), {}), 3); // sign of the divisor, as Python's %
  EXPECT_EQ(eval(bin(Op::Min, s(0), s(1)), {3, 9}), 3);
  EXPECT_EQ(eval(bin(Op::Max, s(0), s(1)), {3, 9}), 9);
}

TEST(SizeExprTest, PrintsWithSymbolNames) {
  SizeExpr e = bin(Op::Add, bin(Op::Mul, s(0), c(4)), s(1));
  EXPECT_EQ(e.str({"s77", "s12"}), "(s77 * 4) + s12");
  EXPECT_EQ(s(1).str(), "s1");
}

TEST(SizeExprTest, RejectsMalformedExpressionsAndBadArithmetic) {
  EXPECT_FALSE(verifySizeExpr(SizeExpr{}, 1).ok());
  EXPECT_FALSE(verifySizeExpr(SizeExpr{{{Op::Add, 0}}}, 1).ok());
  EXPECT_FALSE(verifySizeExpr(s(2), 2).ok());
  EXPECT_FALSE(verifySizeExpr(SizeExpr{{{Op::Const, 1}, {Op::Const, 2}}}, 0).ok());
  EXPECT_FALSE(verifySizeExpr(SizeExpr{{{static_cast<Op>(42), 0}}}, 0).ok());
  EXPECT_TRUE(verifySizeExpr(bin(Op::Mul, s(0), s(1)), 2).ok());

  EXPECT_FALSE(evaluateSizeExpr(bin(Op::FloorDiv, s(0), s(1)), {4, 0}).ok());
  EXPECT_FALSE(evaluateSizeExpr(bin(Op::Mul, s(0), s(0)), {INT64_MAX / 2}).ok());
  EXPECT_FALSE(evaluateSizeExpr(s(3), {1}).ok());
}

} // namespace
} // namespace kiln::runtime
