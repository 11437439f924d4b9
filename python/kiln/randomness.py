"""Random numbers in Kiln kernels: dropout that drops something.

A Kiln graph is a pure function of its inputs, so randomness enters as an
input: every call draws one seed per random op from torch's default
generator (so `torch.manual_seed` makes a compiled run reproducible), and the
kernels turn seed and element index into uniform numbers with a counter-based
integer hash. The stream is Kiln's own: no compiler reproduces eager's masks
bit for bit, only their distribution.

How the seed gets there: the decompositions (kiln/decompositions.py) call
`kiln::random_seed(salt)`, a custom op that aot_autograd traces like any
other (the salt, distinct per call site, keeps its CSE from merging two
dropouts). Before compiling, `lift_random_seeds` turns each such node into
a graph input, and `with_random_seeds` appends fresh seeds to every call's
arguments.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable

import torch
import torch.fx

aten = torch.ops.aten

# Seeds are non-negative int64 values below 2**31, hashed as 32-bit words.
_SEED_LIMIT = 2**31 - 1
_MASK32 = 0xFFFFFFFF
_salts = itertools.count()


def _draw_seeds(count: int) -> list[torch.Tensor]:
    """`count` fresh seeds (0-d int64) from torch's default generator."""
    return list(torch.randint(0, _SEED_LIMIT, (count,), dtype=torch.int64).unbind())


@torch.library.custom_op("kiln::random_seed", mutates_args=())
def random_seed(salt: int) -> torch.Tensor:
    """A fresh seed. Kiln lifts these nodes into graph inputs; this body runs
    only in eager fallbacks."""
    return _draw_seeds(1)[0].clone()


@random_seed.register_fake
def _random_seed_fake(salt: int) -> torch.Tensor:
    return torch.empty((), dtype=torch.int64)


def new_seed() -> torch.Tensor:
    """A seed node for a decomposition to build on."""
    return torch.ops.kiln.random_seed.default(next(_salts))


def _shift_right(x: torch.Tensor, bits: int) -> torch.Tensor:
    return aten.floor_divide.default(x, 1 << bits)  # x is non-negative


def _times_mod32(x: torch.Tensor, constant: int) -> torch.Tensor:
    """x * constant mod 2**32 for x < 2**32 without leaving int64: the
    constant's high and low 16 bits multiply separately."""
    high, low = constant >> 16, constant & 0xFFFF
    upper = aten.mul.Tensor(aten.bitwise_and.Scalar(aten.mul.Tensor(x, high), 0xFFFF), 1 << 16)
    return aten.bitwise_and.Scalar(aten.add.Tensor(upper, aten.mul.Tensor(x, low)), _MASK32)


def _hash32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash with good avalanche (Wellons' lowbias32)."""
    x = aten.bitwise_xor.Tensor(x, _shift_right(x, 16))
    x = _times_mod32(x, 0x7FEB352D)
    x = aten.bitwise_xor.Tensor(x, _shift_right(x, 15))
    x = _times_mod32(x, 0x846CA68B)
    return aten.bitwise_xor.Tensor(x, _shift_right(x, 16))


WORD_BITS = 24


def random_words(shape: list[int], seed: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Integers uniform in [0, 2**24), int64, one per element of a flat
    `shape`: the high bits of hash(hash(index + seed) ^ seed)."""
    index = aten.arange.default(math.prod(shape), dtype=torch.int64, device=device)
    x = _hash32(aten.bitwise_and.Scalar(aten.add.Tensor(index, seed), _MASK32))
    x = _hash32(aten.bitwise_xor.Tensor(x, seed))
    return _shift_right(x, 32 - WORD_BITS)


def uniform(shape: list[int], seed: torch.Tensor, dtype: torch.dtype,
            device: torch.device) -> torch.Tensor:
    """Numbers uniform in [0, 1) with 24 random bits, one per element."""
    bits = aten._to_copy.default(random_words(shape, seed, device), dtype=dtype)
    return aten.view.default(aten.mul.Tensor(bits, 2.0**-WORD_BITS), list(shape))


def integers(shape: list[int], low: int, span: int, dtype: torch.dtype,
             device: torch.device) -> torch.Tensor:
    """Integers uniform in [low, low + span) for 0 < span <= 2**32, in dtype.
    Up to 2**24 one word scaled (words * span >> 24, exact in int64); beyond,
    two words make 48 bits taken modulo span (bias below span / 2**48)."""
    words = random_words(shape, new_seed(), device)
    if span > 1 << WORD_BITS:
        words = aten.add.Tensor(aten.mul.Tensor(words, 1 << WORD_BITS),
                                random_words(shape, new_seed(), device))
        value = aten.remainder.Scalar(words, span)
    else:
        value = _shift_right(aten.mul.Tensor(words, span), WORD_BITS)
    value = aten.view.default(aten.add.Tensor(value, low), list(shape))
    return aten._to_copy.default(value, dtype=dtype)


def lift_random_seeds(gm: torch.fx.GraphModule) -> int:
    """Turn gm's kiln::random_seed nodes into graph inputs after the others;
    returns how many."""
    seeds = [n for n in gm.graph.nodes
             if n.op == "call_function" and n.target is torch.ops.kiln.random_seed.default]
    if not seeds:
        return 0
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    last = placeholders[-1] if placeholders else None  # torch.randn(3): no inputs
    for i, node in enumerate(seeds):
        where = (gm.graph.inserting_after(last) if last is not None
                 else gm.graph.inserting_before(next(iter(gm.graph.nodes))))
        with where:
            placeholder = gm.graph.placeholder(f"kiln_seed_{i}")
        placeholder.meta.update(node.meta)
        node.replace_all_uses_with(placeholder)
        gm.graph.erase_node(node)
        last = placeholder
    gm.graph.lint()
    gm.recompile()
    return len(seeds)


def with_random_seeds(fn: Callable[[list[Any]], Any], count: int) -> Callable[[list[Any]], Any]:
    """fn (boxed) with `count` fresh seeds appended to every call's arguments."""
    if count == 0:
        return fn

    def run(args: list[Any]) -> Any:
        return fn([*args, *_draw_seeds(count)])

    run._boxed_call = True  # type: ignore[attr-defined]
    return run
