"""OpInfo on the kiln device against CPU eager: the compiler's conformance
subset (kiln.testing.conformance.CI_OPS) in float32, int64 and bool, up to 3
samples each. Every sample must match CPU eager (0 mismatches), whether it
ran a Kiln kernel or ATen's CPU kernel through the fallback; the module's
last test prints which ops fell back."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils._pytree import tree_map

import kiln.device
from kiln.testing import conformance

pytestmark = pytest.mark.e2e

DTYPES = ("float32", "int64", "bool")
SELECTED, _ = conformance.select(conformance.CI_OPS, DTYPES)
PAIRS = [(op, dtype) for op in SELECTED for dtype in op.dtypes]
FALLBACKS: Counter = Counter()
KERNELS: Counter = Counter()


def _move(value, device):
    return tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, value)


@pytest.mark.parametrize("op, dtype", [pytest.param(op, dtype, id=f"{op.name}-{dtype}") for op, dtype in PAIRS])
def test_opinfo_on_kiln_matches_cpu(op, dtype):
    info = conformance.opinfos()[op.name]
    torch_dtype = getattr(torch, dtype)
    override = conformance._tolerance_override(info, torch_dtype)
    checked = 0
    for sample in list(info.sample_inputs("cpu", torch_dtype, requires_grad=False))[: conformance.CI_MAX_SAMPLES]:
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
        assert problem is None, f"{op.name} {dtype} on {conformance.describe_sample(sample)}: {problem}"
        checked += 1
    if checked == 0:
        pytest.skip("eager refuses every sample")


def test_report_the_ops_that_fell_back(capsys):
    with capsys.disabled():
        print(f"\nkiln device OpInfo: {sum(KERNELS.values())} Kiln kernel calls, "
              f"{sum(FALLBACKS.values())} fallback calls")
        for name, calls in FALLBACKS.most_common():
            print(f"  fallback: {name} x{calls}")
    assert sum(KERNELS.values()) > sum(FALLBACKS.values())
