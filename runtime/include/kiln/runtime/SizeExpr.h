//===- SizeExpr.h - Sizes computed from a graph's size symbols -----------===//
//
// A graph compiled with symbolic sizes names each dynamic size by a symbol
// (s0, s1, ... as Dynamo named them). Every other size the plan needs (buffer
// dims, workgroup counts) is an integer expression over those symbols, kept
// in postfix form so the runtime evaluates it with a small stack and no
// parsing.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SIZEEXPR_H
#define KILN_RUNTIME_SIZEEXPR_H

#include "kiln/runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

struct SizeExpr {
  /// Values are part of the artifact format: never renumber.
  enum class Op : uint8_t {
    Const = 0,    // push value
    Symbol = 1,   // push symbols[value]
    Add = 2,      // pop b, pop a, push a + b
    Mul = 3,      // ... a * b
    FloorDiv = 4, // ... floor(a / b), b > 0
    CeilDiv = 5,  // ... ceil(a / b), b > 0
    Mod = 6,      // ... a - b * floor(a / b), b > 0
    Min = 7,
    Max = 8,
  };
  struct Term {
    Op op;
    int64_t value = 0; // Const: the constant; Symbol: the symbol index
    bool operator==(const Term &o) const { return op == o.op && value == o.value; }
  };
  std::vector<Term> terms;

  bool empty() const { return terms.empty(); }
  bool operator==(const SizeExpr &o) const { return terms == o.terms; }

  static SizeExpr constant(int64_t value) { return {{{Op::Const, value}}}; }
  static SizeExpr symbol(uint32_t index) { return {{{Op::Symbol, index}}}; }
  /// a op b, for the binary ops.
  static SizeExpr binary(Op op, const SizeExpr &a, const SizeExpr &b);

  /// e.g. "(s0 * 4)", naming symbols by `names` where given.
  std::string str(const std::vector<std::string> &names = {}) const;
};

/// Whether `expr` is well formed: every operator has its operands, it leaves
/// exactly one value, and its symbols are below `numSymbols`.
Status verifySizeExpr(const SizeExpr &expr, size_t numSymbols);

/// The value of `expr` for these symbol values; errors on overflow and on a
/// divisor that is not positive (sizes never need either).
StatusOr<int64_t> evaluateSizeExpr(const SizeExpr &expr, const std::vector<int64_t> &symbols);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SIZEEXPR_H
