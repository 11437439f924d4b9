#include "kiln/runtime/SizeExpr.h"

#include <algorithm>
#include <iterator>

namespace kiln::runtime {

using Op = SizeExpr::Op;

static bool isBinary(Op op) { return op >= Op::Add && op <= Op::Max; }

SizeExpr SizeExpr::binary(Op op, const SizeExpr &a, const SizeExpr &b) {
  SizeExpr result = a;
  result.terms.insert(result.terms.end(), b.terms.begin(), b.terms.end());
  result.terms.push_back({op, 0});
  return result;
}

Status verifySizeExpr(const SizeExpr &expr, size_t numSymbols) {
  int64_t depth = 0;
  for (size_t i = 0; i < expr.terms.size(); ++i) {
    const SizeExpr::Term &term = expr.terms[i];
    if (term.op == Op::Const) {
      ++depth;
    } else if (term.op == Op::Symbol) {
      if (term.value < 0 || (uint64_t)term.value >= numSymbols)
        return Status::error("size expression term " + std::to_string(i) + " names symbol " +
                             std::to_string(term.value) + ", but the graph has " +
                             std::to_string(numSymbols));
      ++depth;
    } else if (isBinary(term.op)) {
      if (depth < 2)
        return Status::error("size expression term " + std::to_string(i) +
                             " lacks an operand");
      --depth;
    } else {
      return Status::error("size expression term " + std::to_string(i) +
                           " has unknown operator " +
                           std::to_string(static_cast<int>(term.op)));
    }
  }
  if (depth != 1)
    return Status::error("size expression leaves " + std::to_string(depth) +
                         " values instead of one");
  return Status::OK();
}

static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

StatusOr<int64_t> evaluateSizeExpr(const SizeExpr &expr, const std::vector<int64_t> &symbols) {
  // Runs for every symbolic buffer and launch on every call: the stack lives
  // on the C++ stack unless the expression is unusually long.
  int64_t inlineStack[32];
  std::vector<int64_t> heapStack;
  int64_t *stack = inlineStack;
  if (expr.terms.size() > std::size(inlineStack)) {
    heapStack.resize(expr.terms.size());
    stack = heapStack.data();
  }
  size_t depth = 0;
  for (const SizeExpr::Term &term : expr.terms) {
    if (term.op == Op::Const) {
      stack[depth++] = term.value;
      continue;
    }
    if (term.op == Op::Symbol) {
      if (term.value < 0 || (uint64_t)term.value >= symbols.size())
        return Status::error("size expression names an unknown symbol");
      stack[depth++] = symbols[term.value];
      continue;
    }
    if (depth < 2)
      return Status::error("malformed size expression");
    int64_t b = stack[--depth];
    int64_t a = stack[depth - 1], r = 0;
    bool overflow = false;
    switch (term.op) {
    case Op::Add: overflow = __builtin_add_overflow(a, b, &r); break;
    case Op::Mul: overflow = __builtin_mul_overflow(a, b, &r); break;
    case Op::FloorDiv:
    case Op::CeilDiv:
    case Op::Mod:
      if (b <= 0)
        return Status::error("size expression divides by " + std::to_string(b));
      r = floorDiv(a, b);
      if (term.op == Op::CeilDiv)
        r = floorDiv(a + b - 1, b); // a + b - 1 cannot overflow for sizes
      else if (term.op == Op::Mod)
        r = a - r * b;
      break;
    case Op::Min: r = std::min(a, b); break;
    case Op::Max: r = std::max(a, b); break;
    default: return Status::error("malformed size expression");
    }
    if (overflow)
      return Status::error("size expression overflows int64");
    stack[depth - 1] = r;
  }
  if (depth != 1)
    return Status::error("malformed size expression");
  return stack[0];
}

std::string SizeExpr::str(const std::vector<std::string> &names) const {
  std::vector<std::string> stack;
  for (const Term &term : terms) {
    if (term.op == Op::Const) {
      stack.push_back(std::to_string(term.value));
    } else if (term.op == Op::Symbol) {
      stack.push_back(term.value >= 0 && (uint64_t)term.value < names.size()
                          ? names[term.value]
                          : "s" + std::to_string(term.value));
    } else if (stack.size() >= 2) {
      std::string b = stack.back();
      stack.pop_back();
      std::string &a = stack.back();
      switch (term.op) {
      case Op::Add: a = "(" + a + " + " + b + ")"; break;
      case Op::Mul: a = "(" + a + " * " + b + ")"; break;
      case Op::FloorDiv: a = "(" + a + " // " + b + ")"; break;
      case Op::CeilDiv: a = "ceildiv(" + a + ", " + b + ")"; break;
      case Op::Mod: a = "(" + a + " % " + b + ")"; break;
      case Op::Min: a = "min(" + a + ", " + b + ")"; break;
      case Op::Max: a = "max(" + a + ", " + b + ")"; break;
      default: a = "?"; break;
      }
    }
  }
  std::string text = stack.size() == 1 ? stack.back() : "<malformed>";
  // Drop one redundant pair of outer parentheses.
  if (text.size() > 2 && text.front() == '(' && text.back() == ')') {
    int depth = 0;
    bool outer = true;
    for (size_t i = 0; i + 1 < text.size() && outer; ++i) {
      depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
      outer = depth > 0;
    }
    if (outer)
      text = text.substr(1, text.size() - 2);
  }
  return text;
}

} // namespace kiln::runtime
