"""Differential testing of Kiln/eager partition boundaries.

Each seed generates a small random program from ops Kiln supports: views
(transpose, permute, reshape, expand, slices, select), pointwise ops with
broadcasting, matmuls, reductions, softmax and layer norm, in-place updates
of copies (directly and through views), and scaled_dot_product_attention
(which Kiln leaves to PyTorch), with several outputs, some of which view the inputs or each other. Its inputs may be
non-contiguous, broadcast or aliased. The program runs forward and backward
through torch.compile twice: with backend="aot_eager" (the reference: the same
aot_autograd graphs, run by PyTorch) and with backend="kiln", where the
force_eager option sends a random subset of its ATen ops to PyTorch, so that
tensors cross Kiln/eager boundaries in both directions, in forward and
backward graphs. Every output (values and strides) and every gradient must
match; NaN anywhere is a failure.

    python -m kiln.testing.boundaries --seeds 0:5000       # the long run
    python -m kiln.testing.boundaries --seed 17 --show     # one case, its program

pytest runs a fixed seed range (python/tests/test_boundaries.py).
"""

from __future__ import annotations

import argparse
import logging
import math
import platform
import random
import sys
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from kiln.testing.machine import cpu_name

RTOL, ATOL = 1e-5, 1e-6
# A few values per dim keep sums short, so rounding stays below ATOL.
DIM_SIZES = (1, 2, 3, 4, 5, 6)


@dataclass
class Case:
    """One generated program and how to make its inputs."""

    seed: int
    source: str  # "def program(...):\n ..."
    input_code: list[str]  # one statement per input, in order
    force_fraction: float  # share of ATen ops forced to eager

    def function(self) -> Callable[..., Any]:
        scope: dict[str, Any] = {"torch": torch, "F": torch.nn.functional}
        exec(compile(self.source, f"<boundary case {self.seed}>", "exec"), scope)
        return scope["program"]

    def make_inputs(self, dtype: torch.dtype = torch.float32
                    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """(the program's arguments, the leaves that gradients are taken for);
        the same numbers in any dtype (float64 gives the exact reference)."""
        gen = torch.Generator().manual_seed(self.seed)
        scope: dict[str, Any] = {"torch": torch, "gen": gen, "leaves": [], "dtype": dtype}
        for line in self.input_code:
            exec(line, scope)
        args = [scope[f"in{i}"] for i in range(len(self.input_code))]
        return args, scope["leaves"]

    def forced(self, node: torch.fx.Node) -> bool:
        """The force_eager predicate: a fixed pseudo-random choice per seed and node."""
        return zlib.crc32(f"{self.seed}:{node.name}".encode()) / 2**32 < self.force_fraction

    def describe(self) -> str:
        inputs = "\n".join(self.input_code)
        return (f"# seed {self.seed}, force_fraction {self.force_fraction}\n"
                f"# inputs:\n{inputs}\n{self.source}")


# ---------------------------------------------------------------------------
# Generating programs


class _Builder:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.lines: list[str] = []
        self.input_code: list[str] = []
        self.shapes: dict[str, tuple[int, ...]] = {}  # value name -> shape
        self.computed: list[str] = []  # values made by ops (not inputs)
        self.count = 0

    # -- values ---------------------------------------------------------------

    def shape(self, rank: int | None = None) -> tuple[int, ...]:
        rank = rank if rank is not None else self.rng.choice((1, 2, 2, 3, 3, 4))
        return tuple(self.rng.choice(DIM_SIZES[1:]) for _ in range(rank))

    def new_input(self, shape: tuple[int, ...], kind: str | None = None) -> str:
        """A program argument of this shape: contiguous, or a view of a bigger
        leaf (transposed, sliced, broadcast), or an alias of an earlier input."""
        i = len(self.input_code)
        name = f"in{i}"
        rng = self.rng
        kind = kind or rng.choice(("contiguous", "contiguous", "transposed", "sliced",
                                   "broadcast", "alias"))
        dims = len(shape)
        leaf = f"leaf{i}"
        randn = "torch.randn({}, generator=gen).to(dtype)"
        if kind == "alias":
            same = [n for n, s in self.shapes.items() if n.startswith("in") and s == shape]
            if same:
                self.input_code.append(f"{name} = {rng.choice(same)}")
                self.shapes[name] = shape
                return name
            kind = "contiguous"
        if kind == "transposed" and dims >= 2:
            perm = list(range(dims))
            rng.shuffle(perm)
            # leaf.permute(perm) has shape shape when leaf's dim perm[d] is shape[d].
            base_shape = tuple(shape[perm.index(j)] for j in range(dims))
            make = f"{randn.format(base_shape)}.requires_grad_()"
            view = f"{leaf}.permute({perm})"
        elif kind == "sliced" and dims >= 1:
            d = rng.randrange(dims)
            base_shape = tuple(n * 2 + 1 if k == d else n for k, n in enumerate(shape))
            make = f"{randn.format(base_shape)}.requires_grad_()"
            index = ", ".join("1::2" if k == d else ":" for k in range(dims))
            view = f"{leaf}[{index}]"
        elif kind == "broadcast" and dims >= 1:
            d = rng.randrange(dims)
            base_shape = tuple(1 if k == d else n for k, n in enumerate(shape))
            make = f"{randn.format(base_shape)}.requires_grad_()"
            view = f"{leaf}.expand({list(shape)})"
        else:
            make = f"{randn.format(shape)}.requires_grad_()"
            view = leaf
        self.input_code.append(f"{leaf} = {make}; leaves.append({leaf}); {name} = {view}")
        self.shapes[name] = shape
        return name

    def emit(self, expr: str, shape: tuple[int, ...]) -> str:
        name = f"v{self.count}"
        self.count += 1
        self.lines.append(f"    {name} = {expr}")
        self.shapes[name] = shape
        self.computed.append(name)
        return name

    def pick(self) -> str:
        """A value to use: usually a recent one, sometimes an input."""
        names = list(self.shapes)
        recent = self.computed[-3:] if self.computed else names
        return self.rng.choice(recent if self.rng.random() < 0.7 else names)

    # -- ops ------------------------------------------------------------------

    def step(self) -> None:
        kind = self.rng.choices(
            ("unary", "binary", "matmul", "reduce", "softmax", "norm", "view", "cat", "attention",
             "mutate"),
            weights=(3, 3, 2, 1.5, 1, 0.7, 4, 0.7, 0.7, 0.7),
        )[0]
        getattr(self, f"op_{kind}")(self.pick())

    def op_unary(self, x: str) -> None:
        expr = self.rng.choice((
            "torch.tanh({x})", "torch.sigmoid({x})", "torch.relu({x})", "-{x}", "{x} * 0.5",
            "F.gelu({x})", "torch.sqrt({x} * {x} + 1)", "torch.rsqrt({x} * {x} + 1)",
            "torch.exp(torch.tanh({x}))", "1 / ({x} * {x} + 1)", "torch.log({x} * {x} + 1)",
        ))
        self.emit(expr.format(x=x), self.shapes[x])

    def op_binary(self, x: str) -> None:
        shape = self.shapes[x]
        # The other operand: same shape, or broadcasting (size-1 dims, fewer dims).
        other_shape = list(shape)
        for d in range(len(shape)):
            if self.rng.random() < 0.25:
                other_shape[d] = 1
        if other_shape and self.rng.random() < 0.2:
            other_shape = other_shape[1:]
        other_shape_t = tuple(other_shape)
        same = [n for n, s in self.shapes.items() if s == other_shape_t and n != x]
        y = self.rng.choice(same) if same and self.rng.random() < 0.6 else self.new_input(other_shape_t)
        expr = self.rng.choice((
            "{x} + {y}", "{x} - {y}", "{x} * {y}", "{x} / ({y} * {y} + 1)",
            "torch.maximum({x}, {y})", "torch.where({x} > {y}, {x}, {y} * 2)",
        ))
        self.emit(expr.format(x=x, y=y), shape)

    def op_matmul(self, x: str) -> None:
        shape = self.shapes[x]
        if len(shape) < 2:
            x = self.emit(f"{x}.unsqueeze(0)", (1, *shape))
            shape = self.shapes[x]
        k = shape[-1]
        n = self.rng.choice(DIM_SIZES[1:])
        others = [m for m, s in self.shapes.items()
                  if len(s) == len(shape) and s[:-2] == shape[:-2] and s[-1] == k and m != x]
        scale = f"{1 / math.sqrt(k):.6f}"
        if len(shape) == 3 and others and self.rng.random() < 0.5:  # attention-like x @ y^T
            y = self.rng.choice(others)
            self.emit(f"({x} @ {y}.transpose(-1, -2)) * {scale}", (*shape[:-1], self.shapes[y][-2]))
            return
        w = self.new_input((k, n))
        self.emit(f"({x} @ {w}) * {scale}", (*shape[:-1], n))

    def op_reduce(self, x: str) -> None:
        shape = self.shapes[x]
        if not shape:
            return self.op_unary(x)
        d = self.rng.randrange(len(shape))
        keep = self.rng.random() < 0.5
        fn = self.rng.choice(("sum", "mean", "amax"))
        out = list(shape)
        if keep:
            out[d] = 1
        else:
            del out[d]
        self.emit(f"{x}.{fn}(dim={d}, keepdim={keep})", tuple(out))

    def op_softmax(self, x: str) -> None:
        shape = self.shapes[x]
        if not shape:
            return self.op_unary(x)
        d = self.rng.randrange(len(shape))
        fn = self.rng.choice(("torch.softmax", "torch.log_softmax"))
        self.emit(f"{fn}({x}, dim={d})", shape)

    def op_norm(self, x: str) -> None:
        shape = self.shapes[x]
        if not shape or shape[-1] < 3:
            return self.op_softmax(x)
        n = shape[-1]
        w, b = self.new_input((n,)), self.new_input((n,))
        # A row of broadcast values has zero variance, where rsqrt(eps) ~ 316
        # turns any difference in summation order into 1e-5 (forward Kiln
        # makes such rows exact; the backward's decomposed sums still differ
        # from eager's fused kernel there). Adding a random row keeps the
        # boundaries under test and the conditioning sane; test_ops checks
        # constant rows themselves.
        spread = self.new_input((n,), kind="contiguous")
        self.emit(f"F.layer_norm({x} + {spread}, ({n},), {w}, {b})", shape)

    def op_view(self, x: str) -> None:
        shape = self.shapes[x]
        rank = len(shape)
        rng = self.rng
        choices = ["unsqueeze", "reshape", "flatten", "contiguous"]
        if rank >= 2:
            choices += ["transpose", "transpose", "permute"]
        if rank >= 1:
            choices += ["slice", "step", "select", "narrow"]
        if 1 in shape:
            choices += ["expand", "squeeze"]
        op = rng.choice(choices)
        if op == "transpose":
            a, b = rng.sample(range(rank), 2)
            out = list(shape)
            out[a], out[b] = out[b], out[a]
            self.emit(f"{x}.transpose({a}, {b})", tuple(out))
        elif op == "permute":
            perm = list(range(rank))
            rng.shuffle(perm)
            self.emit(f"{x}.permute({perm})", tuple(shape[p] for p in perm))
        elif op == "unsqueeze":
            d = rng.randrange(rank + 1)
            self.emit(f"{x}.unsqueeze({d})", (*shape[:d], 1, *shape[d:]))
        elif op == "reshape":
            target = _regroup(shape, rng)
            self.emit(f"{x}.reshape({list(target)})", target)
        elif op == "flatten":
            self.emit(f"{x}.flatten()", (math.prod(shape),))
        elif op == "contiguous":
            self.emit(f"{x}.contiguous()", shape)
        elif op in ("slice", "step", "narrow"):
            candidates = [d for d in range(rank) if shape[d] >= 2]
            if not candidates:
                return self.op_unary(x)
            d = rng.choice(candidates)
            out = list(shape)
            index = [":"] * rank
            if op == "step":
                index[d] = "::2"
                out[d] = (shape[d] + 1) // 2
            else:
                index[d] = "1:"
                out[d] = shape[d] - 1
            if op == "narrow":
                self.emit(f"{x}.narrow({d}, 1, {shape[d] - 1})", tuple(out))
            else:
                self.emit(f"{x}[{', '.join(index)}]", tuple(out))
        elif op == "select":
            d = rng.randrange(rank)
            i = rng.randrange(shape[d])
            self.emit(f"{x}.select({d}, {i})", tuple(n for k, n in enumerate(shape) if k != d))
        elif op == "expand":
            out = tuple(3 if n == 1 else n for n in shape)
            self.emit(f"{x}.expand({list(out)})", out)
        elif op == "squeeze":
            d = shape.index(1)
            self.emit(f"{x}.squeeze({d})", tuple(n for k, n in enumerate(shape) if k != d))

    def op_attention(self, x: str) -> None:
        """scaled_dot_product_attention: an op Kiln leaves to PyTorch, whose
        backward reads the layouts of the tensors its forward saved."""
        shape = self.shapes[x]
        if len(shape) < 3:
            return self.op_matmul(x)
        same = [n for n, s in self.shapes.items() if s == shape]
        k, v = self.rng.choice(same), self.rng.choice(same)
        causal = self.rng.random() < 0.5
        if len(shape) == 3:  # PyTorch's fused CPU kernel (and its backward) wants heads
            q, k, v = (f"{t}.unsqueeze(1)" for t in (x, k, v))
            self.emit(f"F.scaled_dot_product_attention({q}, {k}, {v}, is_causal={causal}).squeeze(1)",
                      shape)
            return
        self.emit(f"F.scaled_dot_product_attention({x}, {k}, {v}, is_causal={causal})", shape)

    def op_mutate(self, x: str) -> None:
        """In-place ops on a fresh copy, directly or through a view of it:
        functionalization turns them into out-of-place ops and scatters."""
        shape = self.shapes[x]
        y = self.emit(f"{x}.clone()", shape)
        if shape and self.rng.random() < 0.6:
            d = self.rng.randrange(len(shape))
            self.lines.append(f"    {y}.narrow({d}, 0, 1).fill_(0.25)")
        else:
            self.lines.append(f"    {y}.mul_(0.5)")

    def op_cat(self, x: str) -> None:
        shape = self.shapes[x]
        if not shape:
            return self.op_unary(x)
        d = self.rng.randrange(len(shape))
        out = list(shape)
        out[d] *= 2
        self.emit(f"torch.cat([{x}, torch.tanh({x})], dim={d})", tuple(out))

    def finish(self) -> list[str]:
        """The values returned: 1-4 of them, views of inputs and of each other included."""
        names = list(self.shapes)
        count = self.rng.randint(1, min(4, len(names)))
        outputs = [self.computed[-1]] + self.rng.sample(names, count - 1)
        return list(dict.fromkeys(outputs))


def _regroup(shape: tuple[int, ...], rng: random.Random) -> tuple[int, ...]:
    """A reshape target: two adjacent dims merged, or one dim split in two."""
    dims = list(shape)
    if len(dims) >= 2 and rng.random() < 0.5:
        d = rng.randrange(len(dims) - 1)
        dims[d:d + 2] = [dims[d] * dims[d + 1]]
    else:
        splittable = [d for d, n in enumerate(dims) if n in (4, 6)]
        if splittable:
            d = rng.choice(splittable)
            dims[d:d + 1] = [2, dims[d] // 2]
        else:
            dims.append(1)
    return tuple(dims)


def generate(seed: int) -> Case:
    """The case for a seed (deterministic)."""
    b = _Builder(seed)
    for _ in range(b.rng.randint(1, 2)):
        b.new_input(b.shape())
    for _ in range(b.rng.randint(3, 9)):
        b.step()
    outputs = b.finish()
    params = ", ".join(f"in{i}" for i in range(len(b.input_code)))
    body = "\n".join(b.lines)
    source = f"def program({params}):\n{body}\n    return ({', '.join(outputs)},)\n"
    fraction = b.rng.choice((0.0, 0.25, 0.5, 0.75))
    return Case(seed, source, b.input_code, fraction)


# ---------------------------------------------------------------------------
# Running and comparing


@dataclass
class Outcome:
    seed: int
    ok: bool
    message: str = ""
    graphs: int = 0
    kernels: int = 0
    forced: int = 0
    eager_ops: int = 0
    rounding: int = 0  # tensors outside RTOL/ATOL but as exact as aot_eager's
    kinds: set[str] = field(default_factory=set)


def _run(case: Case, backend: str, options: dict[str, Any] | None,
         dtype: torch.dtype = torch.float32) -> tuple[list[Any], list[Any]]:
    torch._dynamo.reset()
    args, leaves = case.make_inputs(dtype)
    compiled = torch.compile(case.function(), backend=backend, options=options,
                             dynamic=False, fullgraph=True)
    outputs = list(compiled(*args))
    weights = torch.Generator().manual_seed(case.seed + 1)
    loss = sum((o * torch.randn(o.shape, generator=weights).to(dtype)).sum() for o in outputs)
    grads = torch.autograd.grad(loss, leaves, allow_unused=True) if leaves else []
    return [o.detach() for o in outputs], list(grads)


def _compare(what: str, actual: Any, expected: Any) -> str | None:
    if actual is None or expected is None:
        return None if actual is None and expected is None else f"{what}: one of them is None"
    if actual.isnan().any() or expected.isnan().any():
        return f"{what}: NaN (kiln {actual.isnan().sum().item()}, aot_eager {expected.isnan().sum().item()})"
    try:
        torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL)
    except AssertionError as err:
        return f"{what}: {err}"
    return None


def _same_layout(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same storage offset and the same strides wherever they matter: a dim of
    size 1 has no meaningful stride (FakeTensor and eager kernels may give it
    different ones), and an empty tensor has none at all."""
    if a.shape != b.shape or a.storage_offset() != b.storage_offset():
        return False
    if a.numel() == 0:
        return True
    return all(sa == sb for n, sa, sb in zip(a.shape, a.stride(), b.stride()) if n > 1)


def _error(value: Any, exact: Any) -> float:
    return (value.double() - exact).abs().max().item() if value is not None else 0.0


def _within_rounding(actual: Any, exact: Any, noise: float) -> bool:
    """Is Kiln as close to the float64 answer as PyTorch itself is?

    Kiln sums in another order than PyTorch's kernels, so an ill-conditioned
    value (a layer norm over a near-constant row, a gradient that cancels to
    zero) can differ by more than RTOL/ATOL while both are equally right.
    `noise` is the largest error aot_eager itself makes, against float64, on
    any tensor of the same kind (outputs, or gradients) of the program: a
    cancelling sum can be exact in eager by luck, but not in general. A wrong
    element, a stale buffer or a misread stride misses by far more.
    """
    return _error(actual, exact) <= 4 * noise + ATOL


def check(case: Case) -> Outcome:
    """Runs the case through aot_eager and Kiln and compares everything."""
    import kiln

    outcome = Outcome(case.seed, ok=False)
    expected = _run(case, "aot_eager", None)
    kiln.reset()
    try:
        actual = _run(case, "kiln", {"force_eager": case.forced})
    except Exception as err:  # noqa: BLE001 - any failure is the finding
        outcome.message = f"kiln raised {type(err).__name__}: {err}"
        return outcome
    records = kiln.compile_records()
    outcome.graphs = len(records)
    outcome.kernels = sum(r.kernel_count for r in records)
    outcome.kinds = {r.kind for r in records}
    outcome.forced = sum(1 for r in records for f in r.fallbacks if f["reason"].startswith("forced"))
    outcome.eager_ops = sum(len(r.fallbacks) for r in records)

    problems = []
    exact: tuple[list[Any], list[Any]] | None = None
    for group, name in ((0, "output"), (1, "gradient of leaf")):
        for i, (a, e) in enumerate(zip(actual[group], expected[group])):
            problem = _compare(f"{name} {i}", a, e)
            if problem and "NaN" not in problem:
                if exact is None:
                    exact = _run(case, "aot_eager", None, torch.float64)
                noise = max(_error(x, t) for x, t in zip(expected[group], exact[group]))
                if _within_rounding(a, exact[group][i], noise):
                    outcome.rounding += 1
                    problem = None
            if problem:
                problems.append(problem)
            if group == 0 and not _same_layout(a, e):
                problems.append(f"output {i}: layout stride={a.stride()} offset={a.storage_offset()}, "
                                f"aot_eager stride={e.stride()} offset={e.storage_offset()}")
    outcome.ok = not problems
    outcome.message = "\n".join(problems)
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0:200", help="range START:STOP (default 0:200)")
    parser.add_argument("--seed", type=int, help="run this one seed")
    parser.add_argument("--show", action="store_true", help="print each case's program")
    parser.add_argument("--max-failures", type=int, default=20)
    args = parser.parse_args(argv)
    if args.seed is not None:
        seeds = range(args.seed, args.seed + 1)
    else:
        start, stop = (int(s) for s in args.seeds.split(":"))
        seeds = range(start, stop)

    logging.getLogger("kiln").setLevel(logging.ERROR)
    print(f"kiln boundary differential test: seeds {seeds.start}..{seeds.stop - 1} "
          f"on {platform.processor() or platform.machine()} ({cpu_name()})", flush=True)
    passed = failed = kernels = forced = graphs = rounding = 0
    start_time = time.perf_counter()
    for n, seed in enumerate(seeds, 1):
        case = generate(seed)
        if args.show:
            print(case.describe())
        outcome = check(case)
        kernels += outcome.kernels
        forced += outcome.forced
        graphs += outcome.graphs
        rounding += outcome.rounding
        if outcome.ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL seed {seed}\n{case.describe()}\n{outcome.message}\n", flush=True)
            if failed >= args.max_failures:
                break
        if n % 50 == 0:
            rate = n / (time.perf_counter() - start_time)
            print(f"  {n}/{len(seeds)} cases, {failed} failed, {rate:.2f} cases/s", flush=True)
    elapsed = time.perf_counter() - start_time
    print(f"{graphs} Kiln-compiled ATen graphs, {kernels} Kiln kernels, "
          f"{forced} ops forced to eager, {elapsed:.0f} s; {rounding} tensors outside "
          f"rtol {RTOL}/atol {ATOL} but as close to float64 as aot_eager's")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
