"""float16 and bfloat16 in Kiln kernels: models and ops compile with
fallback="error" and match eager within a few units in the last place of
the dtype; arithmetic runs in float32 and each ATen op rounds once (see
kiln-widen-half-precision); half tensors cross the runtime boundary as
themselves. (The OpInfo conformance subset covers single ops in both
dtypes too: test_conformance.py.)"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import kiln
from kiln.testing.models import MLP, TransformerBlock
from kiln.testing.zoo import build
from kiln_test_utils import compile_kiln

pytestmark = pytest.mark.e2e

HALF = [torch.float16, torch.bfloat16]


def _ulps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps


def _assert_compiled_in_kiln() -> None:
    records = kiln.compile_records()
    assert records and all(r.status == "compiled" and not r.fallbacks for r in records), records
    assert sum(r.kernel_count for r in records) > 0


def _check(fn, *inputs, ulps: float = 2.0, atol_ulps: float | None = None):
    """Kiln's results have eager's dtypes and lie within `ulps` units in the
    last place (relative) of eager's, against an absolute floor of
    `atol_ulps` ulps (for sums whose terms cancel); integers and bools match
    exactly."""
    with torch.no_grad():
        expected = fn(*inputs)
        actual = compile_kiln(fn, fallback="error")(*inputs)
    _assert_compiled_in_kiln()
    pairs = zip(actual, expected) if isinstance(expected, tuple) else [(actual, expected)]
    for a, e in pairs:
        assert a.dtype == e.dtype
        eps = _ulps(e.dtype) if e.is_floating_point() else 0.0
        torch.testing.assert_close(a, e, rtol=ulps * eps,
                                   atol=(atol_ulps if atol_ulps is not None else ulps) * eps)
    return actual


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("batch", [1, 8])
def test_mlp_in_half_precision(dtype, batch):
    model = MLP(64, 128, 10).to(dtype).eval()
    (x,) = model.make_inputs(batch=batch)
    _check(model, x.to(dtype), ulps=4)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("batch, seq", [(1, 16), (2, 32)])
def test_transformer_block_in_half_precision(dtype, batch, seq):
    # Softmax, layer norm, GELU, attention and matmuls; errors of one
    # rounding compound through the block, hence the looser bound.
    model = TransformerBlock(width=64, heads=4, mlp_ratio=2).to(dtype).eval()
    inputs = tuple(t.to(dtype) if t.is_floating_point() else t
                   for t in model.make_inputs(batch=batch, seq=seq))
    _check(model, *inputs, ulps=8)


@pytest.mark.parametrize("dtype", HALF)
def test_pointwise_ops_round_like_eager(dtype):
    # One ATen op, one rounding: the same bits as eager's in almost every
    # element (exp and tanh may differ in float32's last bit before rounding).
    x = torch.linspace(-4, 4, 1000).to(dtype)
    y = torch.linspace(0.5, 3, 1000).to(dtype)
    for fn in (torch.add, torch.mul, torch.div, torch.sub):
        got = _check(fn, x, y, ulps=0, atol_ulps=0)
        assert got.dtype == dtype
    _check(lambda a: torch.tanh(torch.exp(a) * 0.5), x, ulps=1)


@pytest.mark.parametrize("dtype", HALF)
def test_reductions_accumulate_in_float32(dtype):
    # 4096 ones and a thousand of 0.01 summed in half precision would stall
    # (in bfloat16, 256 + 1 rounds to 256): float32 accumulation does not.
    x = torch.ones(2, 4096, dtype=dtype)
    got = _check(lambda t: t.sum(dim=1), x, ulps=0, atol_ulps=0)
    assert got.tolist() == [4096.0, 4096.0]
    small = torch.full((1000,), 0.01, dtype=dtype)
    _check(lambda t: t.sum(), small, ulps=1)
    _check(lambda t: (t.mean(dim=-1), t.amax(dim=-1), torch.softmax(t, -1)),
           torch.randn(4, 300).to(dtype), ulps=2)


@pytest.mark.parametrize("dtype", HALF)
def test_matmul_accumulates_in_float32(dtype):
    a = torch.randn(33, 300).to(dtype)
    b = torch.randn(300, 17).to(dtype)
    _check(torch.mm, a, b, ulps=2, atol_ulps=16)
    _check(lambda a, b: F.linear(a, b.t(), torch.ones(17, dtype=dtype)), a, b, ulps=2,
           atol_ulps=16)


@pytest.mark.parametrize("dtype", HALF)
def test_conversions_between_dtypes(dtype):
    x = torch.randn(64) * 100
    _check(lambda t: t.to(dtype), x, ulps=0, atol_ulps=0)                 # f32 -> half
    _check(lambda t: t.to(dtype), x.double(), ulps=0, atol_ulps=0)        # f64 -> half
    _check(lambda t: (t.to(dtype) * 2).float(), x, ulps=0, atol_ulps=0)   # half -> f32
    other = torch.bfloat16 if dtype == torch.float16 else torch.float16
    _check(lambda t: t.to(other), x.to(dtype) / 100, ulps=0, atol_ulps=0)  # half <-> half
    ints = torch.arange(-300, 300, 7)
    _check(lambda t: t.to(dtype), ints, ulps=0, atol_ulps=0)
    _check(lambda t: t.to(torch.int64), (x / 3).to(dtype), ulps=0, atol_ulps=0)
    _check(lambda t: (t > 0.5).to(dtype), x.to(dtype), ulps=0, atol_ulps=0)


@pytest.mark.parametrize("dtype", HALF)
def test_zoo_model_in_half_precision(dtype):
    model, make_inputs = build("gpt2")
    model = model.to(dtype)
    for size in ("small", "large"):
        kiln.reset()
        torch._dynamo.reset()
        (ids,) = make_inputs(size)
        with torch.no_grad():
            expected = model(ids)
            actual = compile_kiln(model, fallback="error")(ids)
        _assert_compiled_in_kiln()
        assert actual.dtype == dtype
        # Logits after two layers: compare against their own scale.
        scale = expected.float().abs().max().item()
        torch.testing.assert_close(actual.float(), expected.float(), rtol=0,
                                   atol=16 * _ulps(dtype) * scale)
