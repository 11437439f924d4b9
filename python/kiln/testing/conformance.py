"""OpInfo conformance: every Core ATen OpInfo of PyTorch, compiled by Kiln.

PyTorch's OpInfo database (torch.testing._internal.common_methods_invocations
.op_db) describes each operator with the dtypes it supports and sample
inputs. For each selected OpInfo, each of its dtypes among DTYPES and each of
its first --max-samples sample inputs, this runs

    torch.compile(fn, backend="kiln", options={"fallback": "error"}, dynamic=False)

on ``fn = lambda *a, **k: op(*a, **k)`` and compares with eager through
torch.testing.assert_close (exact dtype, NaN equal to NaN, torch's default
tolerances for each output's dtype, raised to the OpInfo's own
toleranceOverride for the sample's dtype where it has one). Random ops
(tagged nondeterministic_seeded, or named like rand, normal, bernoulli,
dropout, multinomial...) are compared by shape, dtype and simple statistics,
ops that return uninitialized memory (empty*) by shape and dtype.

Selection. An OpInfo is selected when its op reaches Core ATen: its
``aten_name`` (else its ``name``; "nn.functional.", "linalg.", "special.",
"fft." and "torch.ops.aten." prefixes mapped to ATen spelling) names an
operator packet torch.ops.aten.<name> with at least one overload tagged
torch.Tag.core. Skipped: Python operator variants (``__radd__``...), in-place
OpInfos (``resize_``...), and OpInfos with no supported dtype among DTYPES.
A sample is skipped when it holds a tensor that is not a dense CPU tensor of
one of DTYPES (complex, sparse, half...), when eager raises on it, or when
making it raises. CI_OPS (the pytest subset) are always run too: a few of them
are composite ops (softmax, layer_norm, linear, matmul) that reach Core ATen
only through decompositions; the report lists them apart and they are not in
the Core ATen totals.

Classification, per sample and then per (OpInfo, dtype) pair, the worst sample
winning (crash > mismatch > fallback > compiled):

  compiled  ran, matched eager, and every graph Kiln received was compiled by
            Kiln (a graph of views only, or no graph because there is nothing
            to compute, counts too and is marked "no kernels" in the report);
  fallback  Kiln raised UnsupportedOpError (an op, dtype or argument it does
            not compile), or Dynamo broke the graph so the op ran in eager;
  mismatch  ran, but the result differs from eager (or it wrote into an input);
  crash     the worker died or timed out, or compiling or running raised
            anything else (kiln._C.CompileError included: Kiln claimed the op
            and failed on it). A crash or mismatch is rerun through the
            same pipeline without Kiln's compiler (aot_autograd with Kiln's
            decompositions, the ATen graph run by PyTorch; if that fails too,
            again with PyTorch's Core ATen decompositions), and the report
            says what those did: a bug of the compiler, of
            kiln/decompositions.py, or of PyTorch.

Samples run in worker processes (``python -m kiln.testing.conformance
--worker``, JSON lines over stdin/stdout) so that a sample that kills its
process is recorded as a crash and a fresh worker takes the rest.

known_failures.json lists every (OpInfo, dtype) pair that is not compiled,
with its category, a reason and the index of its first failing sample. A
failure not listed (or listed with another category) fails the check, and so
does a listed pair that now compiles, so the list stays honest.

    python -m kiln.testing.conformance                              # everything
    python -m kiln.testing.conformance --ops add,mm --dtypes float32 --check
    python -m kiln.testing.conformance --max-samples 200 \\
        --report python/tests/conformance/report.md --update-known-failures  # regenerate both
    python -m kiln.testing.conformance --reference-inputs --dtypes float32,int64,bool \\
        --max-samples 60                  # explore: OpInfo's harder reference inputs

pytest runs CI_OPS with up to 3 samples each (python/tests/test_conformance.py).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import functools
import json
import math
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from kiln.testing.machine import cpu_name

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool")
CATEGORIES = ("compiled", "fallback", "mismatch", "crash")
RANK = {c: i for i, c in enumerate(CATEGORIES)}  # higher is worse
NO_SAMPLES = "none"  # a pair none of whose samples could be run

DEFAULT_MAX_SAMPLES = 8
CASE_TIMEOUT_S = 60.0
WORKER_START_TIMEOUT_S = 300.0
# A long-lived worker accumulates Dynamo and Kiln state; start afresh now and then.
PAIRS_PER_WORKER = 150
SEED = 0

REPO_ROOT = Path(__file__).resolve().parents[3]
CONFORMANCE_DIR = REPO_ROOT / "python" / "tests" / "conformance"
KNOWN_FAILURES = CONFORMANCE_DIR / "known_failures.json"
REPORT = CONFORMANCE_DIR / "report.md"

# The pytest subset: common OpInfos spanning elementwise ops, reductions, shape
# ops, matmul, softmax and normalization, and indexing.
CI_OPS = (
    # elementwise
    "add", "sub", "mul", "div.no_rounding_mode", "neg", "abs", "exp", "log", "sqrt", "rsqrt",
    "sigmoid", "tanh", "sin", "pow", "where", "clamp", "maximum", "eq", "lt", "logical_and",
    "nn.functional.relu", "nn.functional.gelu", "asin", "atan2", "div.floor_rounding",
    "isnan", "round.decimals_3", "nn.functional.elu",
    # reductions
    "sum", "mean", "amax", "argmax", "var",
    # shape ops
    "view", "permute", "expand", "cat", "squeeze", "unsqueeze", "select", "slice",
    "flip", "repeat", "diagonal", "slice_scatter", "empty",
    # pooling and normalization in their decomposed forms
    "nn.functional.adaptive_avg_pool2d", "_native_batch_norm_legit",
    # matmul
    "mm", "bmm", "addmm", "nn.functional.linear", "matmul",
    # softmax and normalization
    "softmax", "log_softmax", "nn.functional.layer_norm", "native_layer_norm",
    # indexing
    "index_select", "gather", "nn.functional.embedding", "scatter", "scatter_reduce.mean",
    "index_put", "masked_scatter",
    # sorting and pooling decompositions
    "topk", "nn.functional.avg_pool3d", "max_pool2d_with_indices_backward",
    # Kiln's own kernels for composites: fused attention, direct convolution
    "nn.functional.scaled_dot_product_attention", "nn.functional.conv1d", "nn.functional.conv2d",
)
CI_DTYPES = ("float32", "bfloat16", "float16", "int64", "uint8", "bool")
CI_MAX_SAMPLES = 3

_RANDOM_WORDS = ("rand", "normal", "bernoulli", "dropout", "multinomial", "cauchy",
                 "exponential", "geometric", "uniform", "rrelu")


# ---------------------------------------------------------------------------
# Selecting OpInfos


@dataclass(frozen=True)
class Selected:
    """An OpInfo to run, and what the runner needs to know about it."""

    name: str  # OpInfo name, with ".<variant_test_name>" when it has one
    core: bool  # the packet has a Core ATen overload
    dtypes: tuple[str, ...]  # supported, among DTYPES, in DTYPES order
    compare: str  # "values", "random" or "uninitialized" (and per sample "dropout")


def full_name(op: Any) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


@functools.cache
def opinfos() -> dict[str, Any]:
    """Every OpInfo of PyTorch's op_db, by full name."""
    from torch.testing._internal.common_methods_invocations import op_db

    return {full_name(op): op for op in op_db}


_ATEN_PREFIXES = (("nn.functional.", ""), ("linalg.", "linalg_"), ("special.", "special_"),
                  ("fft.", "fft_"))


def aten_packet(op: Any) -> Any:
    """The torch.ops.aten packet an OpInfo names, or None."""
    import torch

    for candidate in (op.aten_name, op.name):
        if not candidate:
            continue
        name = candidate
        if name.startswith("torch.ops.aten."):
            name = name.split(".")[3]
        for prefix, spelling in _ATEN_PREFIXES:
            if name.startswith(prefix):
                name = spelling + name[len(prefix):]
        if "." in name:
            continue
        packet = getattr(torch.ops.aten, name, None)
        if isinstance(packet, torch._ops.OpOverloadPacket) and _overloads(packet):
            return packet
    return None


def _overloads(packet: Any) -> list[Any]:
    try:
        return [getattr(packet, name) for name in packet.overloads()]
    except (AttributeError, RuntimeError):
        return []


def _aten_name(packet: Any) -> str:
    return "aten." + packet._qualified_op_name.split("::")[1]


def _is_core(packet: Any) -> bool:
    import torch

    return any(torch.Tag.core in o.tags for o in _overloads(packet))


def _compare_mode(op: Any, packet: Any) -> str:
    import torch

    name = op.name.lower()
    if packet is not None and any(torch.Tag.nondeterministic_seeded in o.tags
                                  for o in _overloads(packet)):
        return "random"
    if any(word in name for word in _RANDOM_WORDS):
        return "random"
    if "empty" in name:
        return "uninitialized"
    return "values"


def select(names: Iterable[str] | None = None, dtypes: Iterable[str] = DTYPES,
           extra: Iterable[str] = CI_OPS) -> tuple[list[Selected], dict[str, str]]:
    """(the OpInfos to run, in op_db order; why each other OpInfo is skipped).

    names: run just these OpInfos (a name selects all its variants), whether
    or not they reach Core ATen. Otherwise: the Core ATen OpInfos and extra.
    """
    wanted_dtypes = [d for d in DTYPES if d in set(dtypes)]
    wanted = set(names) if names is not None else None
    extra = set(extra)
    selected: list[Selected] = []
    skipped: dict[str, str] = {}
    for key, op in opinfos().items():
        if wanted is not None and key not in wanted and op.name not in wanted:
            continue
        packet = aten_packet(op)
        core = packet is not None and _is_core(packet)
        if op.name.startswith("__"):
            skipped[key] = "Python operator variant"
            continue
        if op.name.endswith("_"):
            skipped[key] = "in-place only"
            continue
        if wanted is None and not core and key not in extra and op.name not in extra:
            skipped[key] = ("no torch.ops.aten operator of that name" if packet is None
                            else f"{_aten_name(packet)} has no Core ATen overload")
            continue
        supported = {str(d).removeprefix("torch.") for d in op.supported_dtypes("cpu")}
        op_dtypes = tuple(d for d in wanted_dtypes if d in supported)
        if not op_dtypes:
            skipped[key] = "no supported dtype among " + ", ".join(wanted_dtypes)
            continue
        selected.append(Selected(key, core, op_dtypes, _compare_mode(op, packet)))
    if wanted is not None:
        known = set(opinfos()) | {op.name for op in opinfos().values()}
        unknown = sorted(wanted - known)
        if unknown:
            raise ValueError(f"no OpInfo named {', '.join(unknown)}")
    return selected, skipped


# ---------------------------------------------------------------------------
# Running one (OpInfo, dtype) pair: in the worker process


def _dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def _tolerance_override(op: Any, dtype: Any) -> tuple[float, float]:
    """(rtol, atol): the largest tolerance the OpInfo's own toleranceOverride
    decorators give the dtype on CPU in any of its tests; (0, 0) when none."""
    from torch.testing._internal.common_device_type import toleranceOverride
    from torch.testing._internal.opinfo.core import DecorateInfo

    rtol = atol = 0.0
    for info in op.decorators:
        if isinstance(info, DecorateInfo):
            if info.device_type not in (None, "cpu"):
                continue
            decorators = info.decorators
        else:
            decorators = [info]
        for decorator in decorators:
            if isinstance(decorator, toleranceOverride) and dtype in decorator.d:
                override = decorator.d[dtype]
                rtol, atol = max(rtol, override.rtol), max(atol, override.atol)
    return rtol, atol


def tolerances(output_dtype: Any, override: tuple[float, float] = (0.0, 0.0)) -> tuple[float, float]:
    """(rtol, atol) for an output: torch's defaults for its dtype (an int64
    sample of sin gives float32), raised to the OpInfo's override if larger."""
    from torch.testing._comparison import default_tolerances

    rtol, atol = default_tolerances(output_dtype)
    return max(rtol, override[0]), max(atol, override[1])


def _plain(value: Any) -> str | None:
    """None when every tensor in value is a dense CPU tensor of one of DTYPES."""
    import torch
    from torch.utils._pytree import tree_leaves

    for leaf in tree_leaves(value):
        if not isinstance(leaf, torch.Tensor):
            continue
        if leaf.layout != torch.strided or leaf.device.type != "cpu":
            return f"a {leaf.layout} tensor on {leaf.device}"
        if str(leaf.dtype).removeprefix("torch.") not in DTYPES:
            return f"a {str(leaf.dtype).removeprefix('torch.')} tensor"
    return None


_SHORT = {"float32": "f32", "float64": "f64", "int64": "i64", "int32": "i32", "int8": "i8",
          "uint8": "u8", "bool": "b8"}


def _describe(value: Any, depth: int = 0) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        text = f"{_SHORT.get(dtype, dtype)}{list(value.shape)}"
        if value.numel() > 1 and not value.is_contiguous():
            text += f" strides {tuple(value.stride())}"
        return text
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_describe(v, depth + 1) for v in value[:8])
        more = ", ..." if len(value) > 8 else ""
        return f"[{inner}{more}]" if isinstance(value, list) else f"({inner}{more})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_describe(v, depth + 1)}" for k, v in value.items()) + "}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def describe_sample(sample: Any) -> str:
    parts = [f"input {_describe(sample.input)}"]
    if sample.args:
        parts.append(f"args {_describe(tuple(sample.args))}")
    kwargs = {k: v for k, v in sample.kwargs.items() if k not in ("device", "requires_grad")}
    if kwargs:
        parts.append(f"kwargs {_describe(kwargs)}")
    return "; ".join(parts)


# MLIR locations of the traced lambda: "file":line:col, which would make
# reasons change whenever this file does.
_SOURCE_LOC = re.compile(r'\("[^"]*":\d+:\d+\)')


# Kiln's CompileError ends with where it wrote a reproducer: a new path each time.
_REPRODUCER = re.compile(r"\n\s*Reproducer:.*", re.DOTALL)


def _one_line(text: str, limit: int = 400) -> str:
    text = _REPRODUCER.sub("", _SOURCE_LOC.sub("", str(text)))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    joined = " | ".join(lines)
    return joined if len(joined) <= limit else joined[: limit - 3] + "..."


def _unwrap(err: BaseException) -> BaseException:
    """The exception a backend raised, from Dynamo's BackendCompilerFailed."""
    seen = set()
    while id(err) not in seen:
        seen.add(id(err))
        inner = getattr(err, "inner_exception", None)
        if inner is None:
            return err
        err = inner
    return err


def _exception_text(err: BaseException) -> str:
    name = type(err).__module__ + "." + type(err).__qualname__
    name = name.removeprefix("builtins.")
    return f"{name}: {_one_line(str(err), 300)}"


def _values_equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - uncomparable values are not equal
        return False


def compare(actual: Any, expected: Any, override: tuple[float, float] = (0.0, 0.0),
            mode: str = "values") -> str | None:
    """None when actual matches expected, else what differs (one line).

    override: the OpInfo's (rtol, atol) for the sample's dtype, if it has one."""
    import torch
    from torch.utils._pytree import tree_leaves

    a_leaves, e_leaves = tree_leaves(actual), tree_leaves(expected)
    if len(a_leaves) != len(e_leaves):
        return f"{len(a_leaves)} outputs, eager gives {len(e_leaves)}"
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        what = f"output {i}" if len(e_leaves) > 1 else "output"
        if not isinstance(e, torch.Tensor):
            if isinstance(a, torch.Tensor) or not _values_equal(a, e):
                return f"{what}: {a!r}, eager gives {e!r}"
            continue
        if not isinstance(a, torch.Tensor):
            return f"{what}: a {type(a).__name__}, eager gives a tensor"
        if a.shape != e.shape or a.dtype != e.dtype:
            return (f"{what}: {_describe(a)} (dtype {a.dtype}), eager gives {_describe(e)} "
                    f"(dtype {e.dtype})")
        if mode == "uninitialized":
            continue
        if mode == "dropout":
            if a.isfinite().all() != e.isfinite().all():
                return f"{what}: non-finite values where eager has none (or the reverse)"
            continue
        if mode == "random":
            problem = _compare_statistics(a, e)
            if problem:
                return f"{what}: {problem}"
            continue
        rtol, atol = tolerances(e.dtype, override)
        try:
            torch.testing.assert_close(a, e, rtol=rtol, atol=atol, equal_nan=True, check_dtype=True)
        except AssertionError as err:
            return f"{what} {_describe(e)}: {_one_line(str(err), 350)}"
    return None


def _compare_statistics(a: Any, e: Any) -> str | None:
    """Random outputs: finite where eager's are, and, with enough elements,
    mean and spread within statistical noise of eager's, within its range."""
    if a.numel() == 0:
        return None
    a64, e64 = a.double(), e.double()
    if a64.isfinite().all() != e64.isfinite().all():
        return "non-finite values where eager has none (or the reverse)"
    finite_a, finite_e = a64[a64.isfinite()], e64[e64.isfinite()]
    n = min(finite_a.numel(), finite_e.numel())
    if n < 64:
        return None
    mean_a, mean_e = finite_a.mean().item(), finite_e.mean().item()
    std_a, std_e = finite_a.std().item(), finite_e.std().item()
    noise = 6 * max(std_e, 1e-12) * math.sqrt(2 / n)
    if abs(mean_a - mean_e) > noise + 1e-6 * abs(mean_e):
        return f"mean {mean_a:.4g}, eager {mean_e:.4g} (std {std_e:.4g}, n {n})"
    if std_e > 0 and not 0.7 <= std_a / std_e <= 1.4:
        return f"std {std_a:.4g}, eager {std_e:.4g} (n {n})"
    spread = std_e + 1e-12
    if finite_a.min() < finite_e.min() - spread or finite_a.max() > finite_e.max() + spread:
        return (f"range [{finite_a.min().item():.4g}, {finite_a.max().item():.4g}], eager "
                f"[{finite_e.min().item():.4g}, {finite_e.max().item():.4g}]")
    return None


# Ops whose order among equal values is unspecified (ATen's topk picks them
# in heap order, and its unstable sort of a long row in any order): their
# indices may differ from eager's where values tie.
_TIE_ORDER_UNSPECIFIED = ("topk", "sort", "argsort")


def _ties_explain(name: str, sample: Any, actual: Any, expected: Any) -> bool:
    """Do Kiln's (values, indices) differ from eager's only in the order of
    equal values? The values must match exactly and Kiln's indices must pick
    them from the input. (argsort: its indices must be a permutation along
    the dim that picks the values eager's pick, unless it was asked to be
    stable.)"""
    import torch

    if name.split(".")[0] == "argsort" and isinstance(actual, torch.Tensor):
        return _argsort_ties_explain(sample, actual, expected)
    if name.split(".")[0] not in _TIE_ORDER_UNSPECIFIED or not isinstance(actual, tuple):
        return False
    values, indices = actual
    if not torch.equal(values, expected[0]) or indices.shape != expected[1].shape:
        return False
    x = sample.input
    dim = sample.kwargs.get("dim", -1)
    positional = [a for a in sample.args if isinstance(a, int) and not isinstance(a, bool)]
    if name.startswith("topk") and len(positional) > 1:
        dim = positional[1]
    elif name.startswith("sort") and positional:
        dim = positional[0]
    if x.dim() == 0:
        return torch.equal(indices, expected[1])
    return torch.equal(torch.gather(x, dim, indices), values)


def _argsort_ties_explain(sample: Any, actual: Any, expected: Any) -> bool:
    import torch

    if sample.kwargs.get("stable") or actual.shape != expected.shape:
        return False
    x = sample.input
    if x.dim() == 0:
        return torch.equal(actual, expected)
    positional = [a for a in sample.args if isinstance(a, int) and not isinstance(a, bool)]
    dim = sample.kwargs.get("dim", positional[0] if positional else -1)
    positions = torch.arange(x.shape[dim]).view([-1 if d == dim % x.dim() else 1
                                                 for d in range(x.dim())])
    if not torch.equal(actual.sort(dim).values, positions.expand_as(actual)):
        return False
    picked, expected_picked = torch.gather(x, dim, actual), torch.gather(x, dim, expected)
    return bool(((picked == expected_picked) | (picked.isnan() & expected_picked.isnan())).all()
                if picked.is_floating_point() else torch.equal(picked, expected_picked))


def _inputs_differ(actual: Any, expected: Any, override: tuple[float, float]) -> str | None:
    """How the input tensors after the compiled call differ from eager's after
    its call, if they do. A tensor the op writes (batch norm's running
    statistics) is an output in effect: it gets the outputs' tolerances."""
    import torch
    from torch.utils._pytree import tree_leaves

    for i, (a, e) in enumerate(zip(tree_leaves(actual), tree_leaves(expected))):
        if isinstance(e, torch.Tensor) and not torch.equal(a, e):
            problem = compare(a, e, override)
            if problem is not None:
                return f"input {i} after the call (the op writes it): {problem}"
    return None


def _has_compute(record: Any) -> bool:
    from kiln.partition import VIEW_OPS

    return any(op.rsplit(".", 1)[0] not in VIEW_OPS for op in record.ops)


def _kiln_outcome(records: list[Any]) -> tuple[str, str, int]:
    """(category, reason, kernels) from the compile records of one call."""
    kernels = sum(r.kernel_count for r in records)
    for record in records:
        if record.fallbacks:
            first = record.fallbacks[0]
            return "fallback", f"{first['op']}: {first['reason']}", kernels
        if record.status != "compiled" and _has_compute(record):
            return "fallback", f"graph {record.name} ran as {record.status}", kernels
    return "compiled", "", kernels


class _Case:
    """One sample of one OpInfo in one dtype, run in eager and through Kiln."""

    def __init__(self, op: Any, sample: Any, mode: str, override: tuple[float, float]):
        self.op = op
        self.sample = sample
        self.mode = mode
        self.override = override
        fn = op.op
        self.fn = lambda *a, **k: fn(*a, **k)

    def inputs(self) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        """A fresh copy (aliasing between inputs, views and strides kept)."""
        return copy.deepcopy((self.sample.input, tuple(self.sample.args), dict(self.sample.kwargs)))

    def eager(self) -> tuple[Any, Any]:
        """(outputs, the inputs after the call)."""
        import torch

        x, args, kwargs = self.inputs()
        torch.manual_seed(SEED)
        return self.fn(x, *args, **kwargs), (x, args, kwargs)

    def compiled(self, backend: Any, options: dict[str, Any] | None) -> tuple[Any, Any, list[Any], dict]:
        """(outputs, the inputs after the call, Kiln's compile records, Dynamo's graph breaks)."""
        import torch
        import torch._dynamo
        from torch._dynamo.utils import counters

        import kiln

        x, args, kwargs = self.inputs()
        torch._dynamo.reset()
        counters.clear()
        compiled = torch.compile(self.fn, backend=backend, options=options,
                                 dynamic=dynamic_mode(), fullgraph=False)
        torch.manual_seed(SEED)
        out = compiled(x, *args, **kwargs)
        records = kiln.compile_records()  # before the next reset clears them
        breaks = dict(counters["graph_break"])
        return out, (x, args, kwargs), records, breaks

    def run(self) -> dict[str, Any]:
        from kiln.errors import UnsupportedOpError

        result: dict[str, Any] = {"desc": describe_sample(self.sample)}
        try:
            expected, eager_after = self.eager()
        except Exception as err:  # noqa: BLE001 - eager refuses the sample: not a Kiln case
            return {**result, "skip": f"eager raises {_exception_text(err)}"}
        try:
            actual, after, records, breaks = self.compiled("kiln", kiln_options())
        except Exception as err:  # noqa: BLE001 - classified below
            inner = _unwrap(err)
            if isinstance(inner, UnsupportedOpError):
                return {**result, "category": "fallback", "reason": f"{inner.op}: {inner.reason}"}
            crash = {**result, "category": "crash", "reason": _exception_text(inner)}
            return self._with_reference(crash, expected)
        if breaks:
            reason = _one_line(next(iter(breaks)), 1000).split(" | Hint:")[0]
            return {**result, "category": "fallback",
                    "reason": f"Dynamo graph break (ran in eager): {_one_line(reason, 200)}"}
        problem = compare(actual, expected, self.override, self.mode)
        if problem is not None and _ties_explain(self.op.name, self.sample, actual, expected):
            problem = None
        if problem is None and self.mode == "values":
            problem = _inputs_differ(after, eager_after, self.override)
        category, reason, kernels = _kiln_outcome(records)
        if problem is not None:
            mismatch = {**result, "category": "mismatch", "reason": problem, "kernels": kernels}
            return self._with_reference(mismatch, expected, actual)
        return {**result, "category": category, "reason": reason, "kernels": kernels,
                "graphs": len(records)}

    def _with_reference(self, result: dict[str, Any], expected: Any, actual: Any = None) -> dict[str, Any]:
        """Annotates a crash or mismatch with what the pipeline does without
        Kiln's compiler: the ATen graph from Kiln's decompositions run by
        PyTorch, and, when that fails too, from PyTorch's own Core ATen ones
        (which tells a bug in kiln/decompositions.py from one in PyTorch)."""
        outcome = self._reference_outcome(result["category"], expected, actual, kiln_table=True)
        if outcome.startswith(("runs", "matches")):
            result["without_kiln"] = f"Kiln's decompositions run by PyTorch: {outcome}"
            return result
        stock = self._reference_outcome(result["category"], expected, actual, kiln_table=False)
        result["without_kiln"] = (f"Kiln's decompositions run by PyTorch: {outcome}; "
                                  f"PyTorch's Core ATen decompositions: {stock}")
        return result

    def _reference_outcome(self, category: str, expected: Any, actual: Any, kiln_table: bool) -> str:
        try:
            reference, _, _, _ = self.compiled(functools.partial(_reference_backend,
                                                                 kiln_table=kiln_table), None)
        except Exception as err:  # noqa: BLE001 - reported, not raised
            return f"{'fails too' if category == 'crash' else 'raises'}: " \
                   f"{_exception_text(_unwrap(err))}"
        differs = compare(reference, expected, self.override, self.mode)
        if differs is None:
            return "runs and matches eager"
        if category == "crash":
            return f"runs but differs from eager: {differs}"
        same = compare(actual, reference, self.override, self.mode) is None
        return ("differs from eager too, and Kiln matches it" if same
                else "differs from eager too, differently from Kiln") + f": {differs}"


def _reference_backend(gm: Any, example_inputs: Any, kiln_table: bool = True) -> Any:
    """Kiln's pipeline without Kiln's compiler: aot_autograd with Kiln's
    decompositions (chosen as kiln_backend chooses them), or PyTorch's Core
    ATen decompositions, and the ATen graph run by PyTorch."""
    import torch._decomp
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    from kiln.decompositions import decomposition_table, needs_autograd

    def run_eagerly(graph: Any, inputs: Any) -> Any:
        return make_boxed_func(graph.forward)

    table = (decomposition_table(needs_autograd(gm, example_inputs)) if kiln_table
             else torch._decomp.core_aten_decompositions())
    backend = aot_autograd(fw_compiler=run_eagerly, decompositions=table)
    return backend(gm, example_inputs)


def _plain_seed_wrapper() -> None:
    """Random OpInfos call their op through wrapper_set_seed, which saves and
    restores the RNG state: Dynamo breaks the graph there, and Kiln would never
    see the op. The runner seeds eager and compiled runs alike, so a plain call
    does."""
    import torch.testing._internal.common_methods_invocations as cmi

    def wrapper_set_seed(op: Any, *args: Any, **kwargs: Any) -> Any:
        return op(*args, **kwargs)

    cmi.wrapper_set_seed = wrapper_set_seed


# Set by --dynamic (and inherited by the workers): compile every sample with
# dynamic=True, so that every size Dynamo does not specialize is symbolic.
DYNAMIC_ENV = "KILN_CONFORMANCE_DYNAMIC"


def dynamic_mode() -> bool:
    return os.environ.get(DYNAMIC_ENV) == "1"


# Set by --target (and inherited by the workers): Kiln's target for every
# sample; unset, the default target (the CPU this runs on).
TARGET_ENV = "KILN_CONFORMANCE_TARGET"


def kiln_options() -> dict[str, str]:
    """The options every sample is compiled with."""
    target = os.environ.get(TARGET_ENV)
    return {"fallback": "error", **({"target": target} if target else {})}


def iter_pair(name: str, dtype: str, max_samples: int, compare_mode: str | None = None,
              reference_inputs: bool = False) -> Iterator[tuple[str, Any]]:
    """Runs the pair's samples; yields ("begin", description) before each and
    ("sample", result dict) after it. reference_inputs: the OpInfo's
    reference inputs (its samples and more: extremal values, broadcasting,
    noncontiguous layouts) instead of its sample inputs."""
    import torch

    _plain_seed_wrapper()
    op = opinfos()[name]
    torch_dtype = _dtype(dtype)
    mode = compare_mode or _compare_mode(op, aten_packet(op))
    override = _tolerance_override(op, torch_dtype)
    torch.manual_seed(SEED)
    make = op.reference_inputs if reference_inputs else op.sample_inputs
    samples = iter(make("cpu", torch_dtype, requires_grad=False))
    for index in range(max_samples):
        try:
            sample = next(samples)
        except StopIteration:
            return
        except Exception as err:  # noqa: BLE001 - OpInfo's own sample code failed
            yield "sample", {"index": index, "desc": "", "skip": f"making the sample raises "
                                                                  f"{_exception_text(err)}"}
            return
        desc = describe_sample(sample)
        yield "begin", {"index": index, "desc": desc}
        not_plain = _plain((sample.input, sample.args, sample.kwargs))
        if not_plain:
            result = {"desc": desc, "skip": f"holds {not_plain}"}
        else:
            result = _Case(op, sample, _sample_mode(mode, sample), override).run()
        yield "sample", {"index": index, **result}


def _sample_mode(mode: str, sample: Any) -> str:
    """A sample that asks for dropout (scaled_dot_product_attention's
    dropout_p) draws random numbers, and its few outputs each mix many of
    them: their moments vary between two eager runs as much as between Kiln
    and eager, so only shapes, dtypes and finiteness are compared ("dropout";
    python/tests/test_random.py checks Kiln's dropout itself)."""
    dropout = sample.kwargs.get("dropout_p", 0.0)
    if mode in ("values", "random") and isinstance(dropout, (int, float)) and dropout > 0:
        return "dropout"
    return mode


@dataclass(frozen=True)
class Build:
    """A private copy of kiln._C: a run tests one build, even while another
    shell rebuilds the extension."""

    path: str  # the copy the workers import
    stamp: str  # when the original was built


_EXTENSION_ENV = "KILN_CONFORMANCE_EXTENSION"  # Build.path, for the worker
_BUILD_ENV = "KILN_CONFORMANCE_BUILD"  # Build.stamp


def snapshot_extension(folder: str) -> Build:
    """Copies the installed kiln._C into folder, once it has stopped changing."""
    import importlib.util
    import shutil

    # Where the installed package's extension is (an editable install keeps
    # it in the build tree's install folder, a wheel beside the package).
    spec = importlib.util.find_spec("kiln._C")
    if spec is None or not spec.origin:
        raise WorkerError("kiln._C is not built or installed; build it with `bash .ci/setup`")
    built = Path(spec.origin)
    copy_path = Path(folder) / built.name
    for _ in range(60):  # a build writing the file: wait until it is done
        before = built.stat()
        if time.time() - before.st_mtime > 2:
            shutil.copy2(built, copy_path)
            after = built.stat()
            if (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size):
                break
        time.sleep(2)
    else:
        raise WorkerError(f"{built} kept changing for two minutes")
    stamp = datetime.datetime.fromtimestamp(before.st_mtime).isoformat(" ", "seconds")
    return Build(str(copy_path), stamp)


def _load_extension(path: str) -> None:
    """Imports kiln._C from path (a Build's copy) instead of the package folder."""
    import importlib.util

    import kiln

    spec = importlib.util.spec_from_file_location("kiln._C", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["kiln._C"] = module
    kiln._C = module  # type: ignore[attr-defined]


def worker_main() -> int:
    """The worker: one JSON request per line on stdin, JSON events on stdout."""
    import faulthandler
    import logging
    import warnings

    # The protocol owns the real stdout; anything printed goes to stderr.
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    faulthandler.enable()
    warnings.simplefilter("ignore")
    logging.getLogger("kiln").setLevel(logging.ERROR)

    def send(event: str, **data: Any) -> None:
        channel.write(json.dumps({"event": event, **data}) + "\n")
        channel.flush()

    try:
        _load_extension(os.environ[_EXTENSION_ENV])
        opinfos()
    except Exception as err:  # noqa: BLE001 - told to the parent
        send("fatal", message=_exception_text(err))
        return 1
    send("ready", build=os.environ.get(_BUILD_ENV, ""))
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        started = time.perf_counter()
        index = 0
        try:
            for event, data in iter_pair(job["op"], job["dtype"], job["max_samples"],
                                         job.get("mode"), job.get("reference_inputs", False)):
                index = data["index"]
                send(event, **data)
        except Exception as err:  # noqa: BLE001 - a bug of this runner, reported as such
            send("sample", index=index, desc="", category="crash",
                 reason=f"the conformance runner itself failed: {_exception_text(err)}")
        send("end", seconds=time.perf_counter() - started)
    return 0


# ---------------------------------------------------------------------------
# Results


@dataclass
class PairResult:
    """The outcome of one (OpInfo, dtype) pair: its worst sample wins."""

    op: str
    dtype: str
    category: str = NO_SAMPLES
    reason: str = ""
    sample: int | None = None  # index of the first sample of that category
    desc: str = ""  # that sample's inputs
    without_kiln: str = ""  # for a crash or mismatch: the pipeline without Kiln's compiler
    samples: int = 0  # samples taken, skipped ones included
    counts: dict[str, int] = field(default_factory=dict)  # samples per category
    skips: list[str] = field(default_factory=list)
    kernels: int = 0
    seconds: float = 0.0
    core: bool = True
    detail: str = ""  # a crashed worker's last stderr lines

    @property
    def key(self) -> str:
        return f"{self.op}|{self.dtype}"

    def add(self, index: int, result: dict[str, Any]) -> None:
        self.samples = max(self.samples, index + 1)
        if "skip" in result:
            self.skips.append(f"sample {index}: {result['skip']}")
            return
        category = result["category"]
        self.counts[category] = self.counts.get(category, 0) + 1
        self.kernels += int(result.get("kernels", 0))
        if self.category == NO_SAMPLES or RANK[category] > RANK[self.category]:
            self.category = category
            self.reason = result.get("reason", "")
            self.sample = index
            self.desc = result.get("desc", "")
            self.without_kiln = result.get("without_kiln", "")
            self.detail = result.get("detail", "")

    @property
    def no_kernels(self) -> bool:
        """Compiled, but nothing reached a Kiln kernel (views only, or no graph)."""
        return self.category == "compiled" and self.kernels == 0


# ---------------------------------------------------------------------------
# Workers: the parent side


class WorkerError(RuntimeError):
    """A worker could not start (kiln._C missing, say): no result is possible."""


def _worker_env(tmp: str, build: Build) -> dict[str, str]:
    env = dict(os.environ)
    env["TMPDIR"] = tmp  # Kiln's reproducers of failed compiles go with the worker's log
    env[_EXTENSION_ENV] = build.path
    env[_BUILD_ENV] = build.stamp
    for name in ("KILN_DUMP_DIR", "KILN_DUMP_INPUTS", "KILN_FORCE_EAGER", "KILN_FALLBACK",
                 "KILN_TARGET"):
        env.pop(name, None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Worker:
    """A worker subprocess, restarted after it dies or hangs. Every process it
    starts imports the same build of kiln._C: `build`, or a copy it takes
    when it first starts."""

    def __init__(self, case_timeout: float = CASE_TIMEOUT_S, build: Build | None = None):
        self.case_timeout = case_timeout
        self.build = build
        self._own_build = build is None
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log_dir = tempfile.TemporaryDirectory(prefix="kiln-conformance-")
        self.log_path = Path(self.log_dir.name) / "worker.log"
        self.pairs = 0

    def start(self, attempts: int = 3, wait_s: float = 30.0) -> None:
        """Starts a worker; retries a while, as kiln._C may be in the middle of a rebuild."""
        for attempt in range(attempts):
            try:
                return self._start()
            except WorkerError:
                if attempt == attempts - 1:
                    raise
                if self._own_build:
                    self.build = None  # copy the extension afresh: it may have been mid-build
                time.sleep(wait_s)

    def _start(self) -> None:
        self.close()
        if self.build is None:
            self.build = snapshot_extension(self.log_dir.name)
        self.lines = queue.Queue()
        self.log_path.write_text("")
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            self._command(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            env=_worker_env(self.log_dir.name, self.build), cwd=str(REPO_ROOT),
        )
        log.close()
        self.pairs = 0
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()
        try:
            message = self._next(WORKER_START_TIMEOUT_S)
        except TimeoutError:
            message = {"message": f"no answer in {WORKER_START_TIMEOUT_S:.0f} s"}
        if message is None or message.get("event") != "ready":
            why = message.get("message") if message else self._stderr_tail()
            self.close(kill=True)
            raise WorkerError(f"the conformance worker did not start: {why}")


    def _command(self) -> list[str]:
        return [sys.executable, "-m", "kiln.testing.conformance", "--worker"]

    @staticmethod
    def _read(proc: subprocess.Popen[str], lines: "queue.Queue[str | None]") -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def _next(self, timeout: float) -> dict[str, Any] | None:
        """The next event; None when the worker exited; raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                raise TimeoutError from None
            if line is None:
                return None
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue  # not ours

    def _stderr_tail(self, offset: int = 0, lines: int = 25) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def run(self, op: str, dtype: str, max_samples: int, mode: str | None = None,
            core: bool = True, reference_inputs: bool = False) -> PairResult:
        if self.proc is None or self.proc.poll() is not None or self.pairs >= PAIRS_PER_WORKER:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        self.pairs += 1
        result = PairResult(op, dtype, core=core)
        started = time.perf_counter()
        # Where this pair's stderr starts, taken before the worker can write
        # any of it (it may print and die as soon as it reads the job).
        offset = self.log_path.stat().st_size
        self.proc.stdin.write(json.dumps({"op": op, "dtype": dtype, "max_samples": max_samples,
                                          "mode": mode, "reference_inputs": reference_inputs})
                              + "\n")
        self.proc.stdin.flush()
        index, desc = 0, ""
        while True:
            try:
                message = self._next(self.case_timeout)
            except TimeoutError:
                self.close(kill=True)
                result.add(index, {"category": "crash", "desc": desc,
                                   "reason": f"timeout: no result after {self.case_timeout:.0f} s"})
                break
            if message is None:
                result.add(index, {"category": "crash", "desc": desc, **self._death(offset)})
                self.close()
                break
            event = message.pop("event")
            if event == "begin":
                index, desc = message["index"], message["desc"]
            elif event == "sample":
                result.add(message.pop("index"), message)
            elif event == "end":
                break
        result.seconds = time.perf_counter() - started
        return result

    def _death(self, offset: int) -> dict[str, str]:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        tail = self._stderr_tail(offset)
        # The last line before faulthandler's report: usually the C++ message.
        lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
        fatal = next((i for i, ln in enumerate(lines) if ln.startswith("Fatal Python error")),
                     len(lines))
        said = lines[fatal - 1] if fatal > 0 else (lines[fatal] if lines else "")
        reason = f"worker {how}" + (f": {said[:300]}" if said else "")
        return {"reason": reason, "detail": tail}

    def close(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if kill and self.proc.poll() is None:
            self.proc.kill()
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired, AssertionError):
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __del__(self) -> None:
        self.close()


@dataclass(frozen=True)
class Job:
    op: Selected
    dtype: str
    max_samples: int
    reference_inputs: bool = False


def run_jobs(jobs: list[Job], workers: int = 1, case_timeout: float = CASE_TIMEOUT_S,
             on_result: Callable[[PairResult], None] | None = None,
             build: Build | None = None) -> list[PairResult]:
    """Runs the jobs on `workers` worker processes, all importing one build
    of kiln._C (by default a copy taken now); results in job order."""
    todo: queue.Queue[tuple[int, Job]] = queue.Queue()
    for item in enumerate(jobs):
        todo.put(item)
    results: list[PairResult | None] = [None] * len(jobs)
    lock = threading.Lock()
    errors: list[BaseException] = []

    own = None
    if build is None:
        own = tempfile.TemporaryDirectory(prefix="kiln-conformance-build-")
        build = snapshot_extension(own.name)

    def serve() -> None:
        worker = Worker(case_timeout, build)
        try:
            while not errors:
                try:
                    i, job = todo.get_nowait()
                except queue.Empty:
                    return
                result = worker.run(job.op.name, job.dtype, job.max_samples, job.op.compare,
                                    job.op.core, job.reference_inputs)
                with lock:
                    results[i] = result
                    if on_result:
                        on_result(result)
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller
            errors.append(err)
        finally:
            worker.close()

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(max(1, workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if own is not None:
        own.cleanup()
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]


# ---------------------------------------------------------------------------
# The known-failures list


def load_known(path: Path = KNOWN_FAILURES) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def save_known(known: dict[str, dict[str, Any]], path: Path = KNOWN_FAILURES) -> None:
    """Sorted, one entry a line (so that a change is a one-line diff)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"  {json.dumps(key)}: {json.dumps(known[key])}" for key in sorted(known)]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def _covers(result: PairResult, entry: dict[str, Any]) -> bool:
    """Did the run reach the sample the entry was recorded on?"""
    return int(entry.get("sample", 0)) < result.samples


def check_known(results: Iterable[PairResult], known: dict[str, dict[str, Any]]) -> list[str]:
    """Problems: failures not listed (or listed as another category), and
    listed pairs that now compile. A run with fewer samples than the entry's
    does not count against it when it sees less."""
    problems = []
    for r in results:
        if r.category == NO_SAMPLES:
            continue
        entry = known.get(r.key)
        if r.category == "compiled":
            if entry and _covers(r, entry):
                problems.append(f"{r.key}: stale: now passes, remove it from known_failures.json "
                                f"(listed as {entry['category']}: {entry['reason']})")
            continue
        where = f" [sample {r.sample}" + (f": {r.desc}]" if r.desc else "]")
        if entry is None:
            problems.append(f"{r.key}: new {r.category}: {r.reason}{where}")
        elif entry["category"] != r.category:
            if RANK[r.category] < RANK[entry["category"]] and not _covers(r, entry):
                continue
            problems.append(f"{r.key}: now {r.category} ({r.reason}){where}, known_failures.json "
                            f"lists {entry['category']} ({entry['reason']})")
    return problems


def updated_known(known: dict[str, dict[str, Any]], results: Iterable[PairResult]) -> dict[str, dict[str, Any]]:
    """known with the pairs this run covered replaced by what it found."""
    new = dict(known)
    for r in results:
        if r.category == NO_SAMPLES:
            continue
        entry = known.get(r.key)
        if entry and RANK[r.category] < RANK[entry["category"]] and not _covers(r, entry):
            continue  # the run did not reach the sample the entry is about
        if r.category == "compiled":
            new.pop(r.key, None)
        else:
            new[r.key] = {"category": r.category, "reason": r.reason, "sample": r.sample}
    return dict(sorted(new.items()))


# ---------------------------------------------------------------------------
# The report


def _git_revision() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{rev}{' (with uncommitted changes)' if dirty else ''}" if rev else "unknown"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def totals(results: Iterable[PairResult]) -> dict[str, Counter[str]]:
    """dtype -> category -> pairs (pairs with no runnable sample left out)."""
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        if r.category != NO_SAMPLES:
            table[r.dtype][r.category] += 1
    return table


def headline(results: list[PairResult]) -> tuple[str, str]:
    """(float32 share compiled, other dtypes' share compiled), over Core ATen pairs."""
    table = totals(r for r in results if r.core)
    f32 = table.get("float32", Counter())
    others: Counter[str] = Counter()
    for dtype, counts in table.items():
        if dtype != "float32":
            others.update(counts)
    return (_percent(f32["compiled"], sum(f32.values())),
            _percent(others["compiled"], sum(others.values())))


def _totals_table(results: list[PairResult]) -> list[str]:
    table = totals(results)
    lines = ["| dtype | pairs | compiled | fallback | mismatch | crash | compiled % |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    overall: Counter[str] = Counter()
    others: Counter[str] = Counter()
    for dtype in DTYPES:
        if dtype not in table:
            continue
        counts = table[dtype]
        overall.update(counts)
        if dtype != "float32":
            others.update(counts)
        lines.append(_totals_row(dtype, counts))
    if others and "float32" in table:
        lines.append(_totals_row("other dtypes", others))
    lines.append(_totals_row("**all**", overall))
    return lines


def _totals_row(label: str, counts: Counter[str]) -> str:
    n = sum(counts.values())
    cells = " | ".join(str(counts[c]) for c in CATEGORIES)
    return f"| {label} | {n} | {cells} | {_percent(counts['compiled'], n)} |"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


_DTYPE_REASON = re.compile(r"has dtype (\w+) (\(Kiln supports [^)]*\))")


def _cause(result: PairResult) -> str:
    """A fallback's reason; unsupported-dtype reasons count once per dtype, whatever the op."""
    match = _DTYPE_REASON.search(result.reason)
    if match:
        return f"dtype {match.group(1)} {match.group(2)}"
    return result.reason


def render_report(results: list[PairResult], skipped: dict[str, str], known: dict[str, Any],
                  *, command: str, max_samples: int, seconds: float, workers: int,
                  build: str = "") -> str:
    import torch

    core = [r for r in results if r.core]
    extra = [r for r in results if not r.core]
    core_ops = sorted({r.op for r in core})
    f32, others = headline(results)
    samples = sum(sum(r.counts.values()) for r in results)
    skipped_samples = sum(len(r.skips) for r in results)
    capped = sum(1 for r in results if r.samples >= max_samples)
    out = [
        "# OpInfo conformance report",
        "",
        "Regenerate (from the repository root"
        + ("):" if "--update-known-failures" not in command
           else "; also rewrites known_failures.json):"),
        "",
        "```bash",
        command,
        "```",
        "",
        f"- Date: {datetime.date.today().isoformat()}; CPU: {cpu_name()}; torch {torch.__version__}; "
        f"Kiln {_git_revision()}, kiln._C built {build or 'at an unknown time'}",
        f"- Run time: {seconds / 60:.1f} min with {workers} worker process(es); "
        f"{samples} samples run, {skipped_samples} skipped",
        f"- Samples: the first {max_samples} OpInfo sample inputs per (OpInfo, dtype) "
        f"(`--max-samples`; {capped} pairs reached that cap and may have more); each is "
        f"compiled with `torch.compile(fn, backend=\"kiln\", options={json.dumps(kiln_options())}, "
        f"dynamic={dynamic_mode()})` and compared with eager",
        f"- Selection: {len(core_ops)} OpInfos reach Core ATen (their ATen operator has an "
        f"overload tagged `torch.Tag.core`); {len(skipped)} other OpInfos of op_db were not run "
        "(see the end); dtypes " + ", ".join(d for d in DTYPES if any(r.dtype == d for r in results)),
        "",
        f"**{f32} of (Core ATen op, float32) pairs are compiled entirely by Kiln; "
        f"{others} of the pairs in the other dtypes.**",
        "",
        "## Totals: Core ATen OpInfos, (OpInfo, dtype) pairs",
        "",
        *_totals_table(core),
        "",
        "A pair is compiled when every sample ran through Kiln and matched eager; its "
        "worst sample decides otherwise (crash > mismatch > fallback > compiled). "
        f"{sum(1 for r in core if r.no_kernels)} compiled pairs ran no Kiln kernel "
        "(views only, or nothing to compute). Pairs none of whose samples could be run "
        f"are left out: {sum(1 for r in results if r.category == NO_SAMPLES)}.",
        "",
    ]
    bad = [r for r in results if r.category in ("mismatch", "crash")]
    out += ["## Mismatches and crashes", ""]
    if not bad:
        out += ["None.", ""]
    for r in sorted(bad, key=lambda r: (r.category, r.op, DTYPES.index(r.dtype))):
        listed = "listed" if r.key in known and known[r.key]["category"] == r.category else "NEW"
        out.append(f"- **{r.op}** {r.dtype} — {r.category} ({listed}), sample {r.sample} "
                   f"(`{_md(r.desc)}`): {_md(r.reason)}")
        if r.without_kiln:
            out.append(f"  - without Kiln's compiler: {_md(r.without_kiln)}")
        if r.detail:
            out += ["  ```", *[f"  {line}" for line in r.detail.splitlines()[-12:]], "  ```"]
    out.append("")

    out += ["## Fallback causes", "",
            "What stops Kiln, by pairs (the first unsupported op of the first failing sample; "
            "a dtype Kiln does not compile, whatever the op, counts under that dtype):", "",
            "| pairs | cause |", "|---:|---|"]
    causes = Counter(_cause(r) for r in results if r.category == "fallback")
    for cause, n in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"| {n} | {_md(cause)} |")
    out.append("")

    out += ["## Every pair not compiled, by OpInfo", ""]
    by_op: dict[str, list[PairResult]] = defaultdict(list)
    for r in results:
        by_op[r.op].append(r)
    for op in sorted(by_op):
        failing = [r for r in by_op[op] if r.category not in ("compiled", NO_SAMPLES)]
        if not failing:
            continue
        compiled = [r.dtype for r in by_op[op] if r.category == "compiled"]
        note = f" (compiled: {', '.join(compiled)})" if compiled else ""
        core_note = "" if by_op[op][0].core else " — composite, outside the Core ATen totals"
        out.append(f"- `{op}`{core_note}{note}")
        # One line per category and reason, the reason's dtype written {dtype}.
        grouped_dtypes: dict[tuple[str, str], list[str]] = defaultdict(list)
        for r in failing:
            grouped_dtypes[(r.category, r.reason.replace(f"dtype {r.dtype} ", "dtype {dtype} "))
                           ].append(r.dtype)
        for (category, reason), dtypes in grouped_dtypes.items():
            out.append(f"  - {', '.join(dtypes)}: {category} — {_md(reason)}")
    out.append("")

    if extra:
        out += ["## Composite OpInfos of the CI subset (not in the totals above)", "",
                *_totals_table(extra), ""]

    none = [r for r in results if r.category == NO_SAMPLES]
    out += ["## Pairs with no runnable sample", ""]
    out += [f"- `{r.op}` {r.dtype}: {_md(r.skips[0]) if r.skips else 'no sample inputs'}"
            for r in none] or ["None."]
    out.append("")

    out += ["## OpInfos not run", "", "| reason | OpInfos |", "|---|---|"]
    grouped: dict[str, list[str]] = defaultdict(list)
    for name, reason in skipped.items():
        grouped["no Core ATen overload" if "has no Core ATen overload" in reason else reason].append(name)
    for reason, names in sorted(grouped.items(), key=lambda kv: -len(kv[1])):
        out.append(f"| {_md(reason)} ({len(names)}) | {_md(', '.join(f'`{n}`' for n in sorted(names)))} |")
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# The command


def _progress_line(op: Selected, results: list[PairResult], n: int, total: int) -> str:
    parts = []
    for r in results:
        label = r.category if r.category != NO_SAMPLES else "no samples"
        parts.append(f"{r.dtype} {label}")
    seconds = sum(r.seconds for r in results)
    width = len(str(total))
    return f"[{n:>{width}}/{total}] {op.name:<36} {', '.join(parts)} ({seconds:.1f} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kiln.testing.conformance",
        description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", help="comma-separated OpInfo names (a name selects its variants; "
                        "default: the Core ATen OpInfos and the CI subset)")
    parser.add_argument("--ci", action="store_true",
                        help="the pytest subset: CI_OPS in " + ", ".join(CI_DTYPES) +
                        f", {CI_MAX_SAMPLES} samples")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated dtypes")
    parser.add_argument("--max-samples", type=int, default=None,
                        help=f"samples per (OpInfo, dtype) (default {DEFAULT_MAX_SAMPLES})")
    parser.add_argument("--reference-inputs", action="store_true",
                        help="use each OpInfo's reference inputs (more, and harder: extremal "
                        "values, noncontiguous layouts) instead of its sample inputs; for "
                        "exploring, not for the known failures, which index sample inputs")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--timeout", type=float, default=CASE_TIMEOUT_S,
                        help="seconds one sample may take before it counts as a crash")
    parser.add_argument("--report", type=Path, help="write the markdown report here")
    parser.add_argument("--known-failures", type=Path, default=KNOWN_FAILURES)
    parser.add_argument("--update-known-failures", action="store_true",
                        help="rewrite the known failures for the pairs this run covered")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 on a failure not in the known failures, or a listed one "
                        "that now passes")
    parser.add_argument("--dynamic", action="store_true",
                        help="compile with dynamic=True (symbolic sizes): ops without symbolic "
                        "lowerings fall back, and mismatches and crashes are what to look "
                        "for; the known failures are for static shapes and are not compared")
    parser.add_argument("--target",
                        help="compile for this Kiln target (vulkan, cpu:x86-64-v3...); the known "
                        "failures are for the default target and are not compared")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main()

    names = [n for n in args.ops.split(",") if n] if args.ops else None
    dtypes = [d for d in args.dtypes.split(",") if d]
    max_samples = args.max_samples or DEFAULT_MAX_SAMPLES
    if args.ci:
        names, dtypes = list(CI_OPS), [d for d in dtypes if d in CI_DTYPES]
        max_samples = args.max_samples or CI_MAX_SAMPLES
    unknown = sorted(set(dtypes) - set(DTYPES))
    if unknown:
        parser.error(f"unknown dtype(s) {', '.join(unknown)}; choose from {', '.join(DTYPES)}")
    try:
        selected, skipped = select(names, dtypes)
    except ValueError as err:
        parser.error(str(err))
    if args.reference_inputs and args.update_known_failures:
        parser.error("--update-known-failures records sample inputs; drop --reference-inputs")
    if args.dynamic and (args.update_known_failures or args.check):
        parser.error("the known failures are for static shapes; --dynamic does not use them")
    if args.target and (args.update_known_failures or args.check):
        parser.error("the known failures are for the default target; --target does not use them")
    if args.dynamic:
        os.environ[DYNAMIC_ENV] = "1"  # the workers inherit it
    if args.target:
        os.environ[TARGET_ENV] = args.target
    jobs = [Job(op, dtype, max_samples, args.reference_inputs)
            for op in selected for dtype in op.dtypes]
    print(f"kiln OpInfo conformance{' (dynamic=True)' if args.dynamic else ''}"
          f"{f' on target {args.target}' if args.target else ''}: "
          f"{len(selected)} OpInfos ({sum(s.core for s in selected)} "
          f"Core ATen), {len(jobs)} (OpInfo, dtype) pairs, up to {max_samples} samples each, "
          f"{args.jobs} worker(s), on {cpu_name()}", flush=True)

    pending: dict[str, list[PairResult]] = defaultdict(list)
    expected = Counter(job.op.name for job in jobs)
    by_name = {op.name: op for op in selected}
    done = [0]

    def progress(result: PairResult) -> None:
        pending[result.op].append(result)
        if len(pending[result.op]) == expected[result.op]:
            done[0] += 1
            results = sorted(pending[result.op], key=lambda r: DTYPES.index(r.dtype))
            print(_progress_line(by_name[result.op], results, done[0], len(selected)), flush=True)

    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="kiln-conformance-build-") as folder:
            build = snapshot_extension(folder)
            print(f"kiln._C: the build of {build.stamp}", flush=True)
            results = run_jobs(jobs, args.jobs, args.timeout, progress, build)
    except WorkerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started

    known = load_known(args.known_failures)
    problems = [] if args.dynamic or args.target else check_known(results, known)
    core = [r for r in results if r.core]
    print()
    for line in _totals_table(core):
        print(line)
    f32, others = headline(results)
    print(f"\nCore ATen: {f32} of float32 pairs compiled entirely by Kiln, {others} of the "
          f"other dtypes' pairs; {seconds / 60:.1f} min")
    for r in results:
        if r.category in ("mismatch", "crash"):
            print(f"{r.category.upper()} {r.key} sample {r.sample} ({r.desc}): {r.reason}")
            if r.without_kiln:
                print(f"    without Kiln's compiler: {r.without_kiln}")
    if args.update_known_failures:
        known = updated_known(known, results)
        save_known(known, args.known_failures)
        print(f"wrote {args.known_failures} ({len(known)} entries)")
    if args.report:
        command = "python -m kiln.testing.conformance " + " ".join(
            shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(render_report(results, skipped, known, command=command,
                                             max_samples=max_samples, seconds=seconds,
                                             workers=args.jobs, build=build.stamp))
        print(f"wrote {args.report}")
    if problems:
        shown = problems if args.check or len(problems) <= 40 else problems[:40]
        print(f"\n{len(problems)} differences from the known failures"
              + (" (before this update)" if args.update_known_failures else "") + ":")
        for p in shown:
            print(f"  {p}")
        if len(shown) < len(problems):
            print(f"  ... and {len(problems) - len(shown)} more (--check lists all)")
    return 1 if args.check and problems else 0


if __name__ == "__main__":
    sys.exit(main())
