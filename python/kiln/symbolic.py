"""Symbolic sizes: Dynamo's SymInts as the size expressions of Kiln's graph JSON.

When Dynamo compiles a graph with dynamic shapes (the second distinct size
under ``dynamic=None``, ``dynamic=True``, or ``torch._dynamo.mark_dynamic``),
tensor sizes are SymInts whose ``node.expr`` is a sympy expression over
Dynamo's size symbols (``s77``, ``s27``, ...). Kiln numbers the symbols of a
graph in order of first appearance and writes each size as

    int | ["s", i] | ["+", a, b] | ["*", a, b] | ["//", a, c] | ["%", a, c]

(``c`` a positive constant: the sizes Kiln's compiler computes are affine in
the symbols, with products of symbols allowed). A size outside this grammar
makes its op run in eager, with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy
import torch

from kiln.errors import SerializeError

_INT64_MAX = 2**63 - 1


def is_symbolic(value: Any) -> bool:
    """A SymInt/SymFloat/SymBool whose value is not a known constant."""
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)) and not isinstance(
        _expr(value), (sympy.Integer, int)
    )


def _expr(value: Any) -> Any:
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.expr
    return value


def has_symbolic_shape(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and any(type(d) is not int for d in value.shape)


@dataclass
class SymbolTable:
    """The size symbols of one graph, numbered in order of first use."""

    names: list[str] = field(default_factory=list)
    ranges: list[tuple[int, int]] = field(default_factory=list)
    _index: dict[Any, int] = field(default_factory=dict)
    # Dynamo symbols rewritten over stand-ins (see bind_offsets), and the
    # stand-ins' ranges.
    _rebind: dict[Any, Any] = field(default_factory=dict)
    _stand_in_ranges: dict[Any, tuple[int, int]] = field(default_factory=dict)

    def index(self, symbol: sympy.Symbol, shape_env: Any) -> int:
        if symbol not in self._index:
            self._index[symbol] = len(self.names)
            self.names.append(str(symbol))
            self.ranges.append(self._stand_in_ranges.get(symbol) or _range(symbol, shape_env))
        return self._index[symbol]

    def bind_offsets(self, input_dims: set[Any], keep: set[Any], shape_env: Any) -> None:
        """Kiln binds each size symbol to an input dim equal to it. A graph
        (a partition, say) may see a symbol only offset, as a dim s53 - 2 (a
        convolution's output length). Such a symbol is rewritten over a
        stand-in symbol for that dim: s53 = (s53 - 2) + 2. Symbols that are
        some input's dim, or in `keep`, stay as they are."""
        direct = {e for e in input_dims if isinstance(e, sympy.Symbol)}
        for dim in sorted(input_dims, key=str):
            if not isinstance(dim, sympy.Add) or len(dim.free_symbols) != 1:
                continue
            (symbol,) = dim.free_symbols
            offset = sympy.expand(dim - symbol)
            if (symbol in direct or symbol in keep or symbol in self._rebind
                    or not isinstance(offset, sympy.Integer)):
                continue
            stand_in = sympy.Symbol(str(dim), integer=True)
            self._rebind[symbol] = stand_in - offset
            lo, hi = _range(symbol, shape_env)
            self._stand_in_ranges[stand_in] = (
                max(0, lo + int(offset)), hi if hi >= _INT64_MAX - abs(int(offset)) else hi + int(offset))

    def size(self, dim: Any, what: str) -> Any:
        """One dim (int or SymInt) as size JSON."""
        if type(dim) is int:
            return dim
        if not isinstance(dim, torch.SymInt):
            raise SerializeError(f"{what}: size {dim!r} is not an integer")
        expr = dim.node.expr
        if isinstance(expr, sympy.Integer):
            return int(expr)
        if self._rebind:
            expr = expr.xreplace(self._rebind)
        return self._encode(sympy.expand(expr), dim.node.shape_env, what)

    def to_json(self) -> list[dict[str, Any]]:
        return [{"name": name, "min": lo, "max": hi}
                for name, (lo, hi) in zip(self.names, self.ranges)]

    def _encode(self, expr: Any, shape_env: Any, what: str) -> Any:
        from torch.utils._sympy.functions import FloorDiv, Mod, PythonMod

        if isinstance(expr, sympy.Integer):
            return int(expr)
        if isinstance(expr, sympy.Symbol):
            return ["s", self.index(expr, shape_env)]
        if isinstance(expr, (sympy.Add, sympy.Mul)):
            op = "+" if isinstance(expr, sympy.Add) else "*"
            terms = [self._encode(a, shape_env, what) for a in expr.args]
            result = terms[0]
            for term in terms[1:]:
                result = [op, result, term]
            return result
        if isinstance(expr, sympy.Pow) and isinstance(expr.exp, sympy.Integer) and expr.exp >= 1:
            base = self._encode(expr.base, shape_env, what)
            result = base
            for _ in range(int(expr.exp) - 1):
                result = ["*", result, base]
            return result
        if isinstance(expr, (FloorDiv, PythonMod, Mod)):
            lhs, rhs = expr.args
            if not (isinstance(rhs, sympy.Integer) and rhs > 0):
                raise SerializeError(
                    f"{what}: size {expr} divides by {rhs}, which is not a positive constant "
                    "(Kiln computes sizes that divide by constants)")
            op = "//" if isinstance(expr, FloorDiv) else "%"
            return [op, self._encode(lhs, shape_env, what), int(rhs)]
        raise SerializeError(f"{what}: size {expr} uses {type(expr).__name__}, which Kiln "
                             "does not compute")


def _range(symbol: sympy.Symbol, shape_env: Any) -> tuple[int, int]:
    """The values Dynamo allows the symbol (its value range), within int64.
    Kiln's symbols are sizes: one that may be negative (an int argument such
    as a negative index made dynamic) is refused."""
    lo, hi = 0, _INT64_MAX
    ranges = getattr(shape_env, "var_to_range", {}) if shape_env is not None else {}
    value_range = ranges.get(symbol)
    if value_range is not None:
        lower = value_range.lower
        if not isinstance(lower, (int, sympy.Integer)) or int(lower) < 0:
            raise SerializeError(f"{symbol} may be negative (Dynamo's range for it starts at "
                                 f"{lower}); Kiln's size symbols are sizes")
        # Bounds are sympy integers, or infinities (int_oo) that stay int64's.
        if isinstance(value_range.lower, (int, sympy.Integer)):
            lo = max(lo, int(value_range.lower))
        if isinstance(value_range.upper, (int, sympy.Integer)):
            hi = min(hi, int(value_range.upper))
    return lo, hi


def _hint(value: Any) -> int | None:
    if type(value) is int:
        return value
    hint = getattr(value.node, "hint", None)
    return int(hint) if hint is not None else None


def dense_order(value: torch.Tensor) -> tuple[int, ...] | None:
    """For a tensor with symbolic sizes at storage offset 0: the order of its
    dims in memory (outer to inner) if it is dense for every value of the
    symbols, else None. The order comes from the traced sizes; the strides are
    then checked as expressions, so no guard is added."""
    from kiln.layout import physical_order

    if sympy.sympify(_expr(value.storage_offset())) != 0:
        return None
    sizes, strides = list(value.shape), list(value.stride())
    hinted_sizes = [_hint(d) for d in sizes]
    hinted_strides = [_hint(d) for d in strides]
    if None in hinted_sizes or None in hinted_strides:
        return None
    order = physical_order(hinted_sizes, hinted_strides)
    if order is None:
        return None
    size_exprs = {sympy.sympify(_expr(d)) for d in sizes}

    def at_least_one(expr: sympy.Expr) -> sympy.Expr:
        # Contiguous strides are products of Max(1, size) (PyTorch's formula,
        # e.g. for a convolution's output length): that is the size itself
        # unless the size is 0, and then the tensor is empty and its strides
        # do not matter.
        def is_max_one(e: sympy.Expr) -> bool:
            return (type(e).__name__ == "Max" and len(e.args) == 2 and sympy.Integer(1) in e.args
                    and next(a for a in e.args if a != 1) in size_exprs)
        return expr.replace(is_max_one, lambda e: next(a for a in e.args if a != 1))

    expected = sympy.Integer(1)
    for d in reversed(order):
        size = sympy.sympify(_expr(sizes[d]))
        stride = at_least_one(sympy.sympify(_expr(strides[d])))
        if size != 1 and sympy.expand(stride - expected) != 0:
            return None
        expected = expected * size
    return order
