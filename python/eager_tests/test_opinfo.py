"""OpInfo on the kiln device against CPU eager: the compiler's conformance
subset (kiln.testing.conformance.CI_OPS) in float32, int64 and bool, up to 3
samples each; in the slow tier every Core ATen OpInfo the conformance suite
selects, in seven dtypes, up to 8 samples. Every sample must match CPU eager
(0 mismatches), whether it ran a Kiln kernel or ATen's CPU kernel through
the fallback; the module's last test prints which ops fell back."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils._pytree import tree_flatten, tree_map

import kiln.device
from kiln.testing import conformance

pytestmark = pytest.mark.e2e

DTYPES = ("float32", "int64", "bool")
SELECTED, _ = conformance.select(conformance.CI_OPS, DTYPES)
PAIRS = [(op, dtype) for op in SELECTED for dtype in op.dtypes]
SWEEP_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "bool")
_IN_CI = {(op.name, dtype) for op, dtype in PAIRS}
SWEEP = [(op, dtype) for op in conformance.select(None, SWEEP_DTYPES)[0] for dtype in op.dtypes
         if (op.name, dtype) not in _IN_CI]
FALLBACKS: Counter = Counter()
KERNELS: Counter = Counter()


def _move(value, device):
    return tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, value)


# OpInfos whose samples a move to another device cannot reproduce.
NOT_MOVABLE = {
    "as_strided.partial_views": "its input views part of a larger storage, which .to() does not copy",
}


# Where Kiln's half-precision kernels are further from the float64 answer
# than eager's by more than one rounding: they round an intermediate to the
# half type (the convolution before its bias; the normalized value before
# the affine), which eager keeps in float32. Strict: fixed, they fail here.
HALF_PRECISION_GAPS = {
    (name, dtype): "rounds an intermediate to the half type, which eager keeps in float32"
    for name in ("native_group_norm", "nn.functional.conv1d") for dtype in ("float16", "bfloat16")
}


def _marks(op, dtype):
    if op.name in NOT_MOVABLE:
        return [pytest.mark.skip(reason=NOT_MOVABLE[op.name])]
    if (op.name, dtype) in HALF_PRECISION_GAPS:
        return [pytest.mark.xfail(reason=HALF_PRECISION_GAPS[op.name, dtype], strict=True)]
    return []


def _params(pairs):
    return [pytest.param(op, dtype, id=f"{op.name}-{dtype}", marks=_marks(op, dtype)) for op, dtype in pairs]


@pytest.mark.parametrize("op, dtype", _params(PAIRS))
def test_opinfo_on_kiln_matches_cpu(op, dtype):
    check_on_kiln(op, dtype, conformance.CI_MAX_SAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("op, dtype", _params(SWEEP))
def test_opinfo_sweep_on_kiln_matches_cpu(op, dtype):
    check_on_kiln(op, dtype, conformance.DEFAULT_MAX_SAMPLES)


def check_on_kiln(op, dtype: str, max_samples: int) -> None:
    info = conformance.opinfos()[op.name]
    torch_dtype = getattr(torch, dtype)
    override = conformance._tolerance_override(info, torch_dtype)
    checked = 0
    for sample in list(info.sample_inputs("cpu", torch_dtype, requires_grad=False))[:max_samples]:
        try:
            expected = info(sample.input, *sample.args, **sample.kwargs)
        except Exception:
            continue  # eager refuses the sample: nothing to match
        kiln.device.reset_stats()
        moved = _move((sample.input, sample.args, sample.kwargs), "kiln")
        actual = info(moved[0], *moved[1], **moved[2])
        stats = kiln.device.stats()
        FALLBACKS.update(stats["fallback"])
        KERNELS.update(stats["kernel"])
        on_cpu = _move(actual, "cpu")
        problem = conformance.compare(on_cpu, expected, override, op.compare)
        if problem and conformance._ties_explain(op.name, sample, on_cpu, expected):
            problem = None  # equal values at other indices (topk, sort, max of ties)
        if problem and torch_dtype in HALF and _as_close_to_float64(info, sample, on_cpu, expected):
            problem = None  # eager rounds in between; Kiln computes in float32 and rounds once
        assert problem is None, f"{op.name} {dtype} on {conformance.describe_sample(sample)}: {problem}"
        checked += 1
    if checked == 0:
        pytest.skip("eager refuses every sample")


HALF = (torch.float16, torch.bfloat16)


def _as_close_to_float64(info, sample, actual, expected) -> bool:
    """Whether each half-precision output is as close to the op in float64
    as eager's is, within one rounding of the dtype: where they differ, the
    better answer is not a mismatch."""
    def widen(value):
        return value.double() if isinstance(value, torch.Tensor) and value.dtype in HALF else value

    try:
        reference = info(*tree_map(widen, (sample.input, *sample.args)), **tree_map(widen, sample.kwargs))
    except Exception:
        return False
    flat = [tree_flatten(x)[0] for x in (actual, expected, reference)]
    if not len(flat[0]) == len(flat[1]) == len(flat[2]):
        return False
    for kiln_out, eager_out, exact in zip(*flat):
        if not isinstance(kiln_out, torch.Tensor) or kiln_out.dtype not in HALF:
            continue
        exact = exact.double()
        rounding = torch.finfo(kiln_out.dtype).eps * exact.abs().clamp(min=1.0)
        kiln_error = (kiln_out.double() - exact).abs()
        eager_error = (eager_out.double() - exact).abs()
        if not bool((kiln_error <= eager_error + rounding).all()):
            return False
    return True


def test_report_the_ops_that_fell_back(capsys):
    with capsys.disabled():
        print(f"\nkiln device OpInfo: {sum(KERNELS.values())} Kiln kernel calls, "
              f"{sum(FALLBACKS.values())} fallback calls")
        for name, calls in FALLBACKS.most_common():
            print(f"  fallback: {name} x{calls}")
    assert sum(KERNELS.values()) > sum(FALLBACKS.values())
