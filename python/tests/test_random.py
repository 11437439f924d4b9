"""Dropout in Kiln kernels (kiln/randomness.py): its masks cannot equal
eager's bit for bit, so these tests check what must hold instead: the kept
fraction, the scaling, the gradient through the same mask, fresh masks per
call and per op, reproducibility under torch.manual_seed, and the uniform
stream's moments."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import kiln
from kiln import randomness

pytestmark = pytest.mark.usefixtures("kiln_ext")


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="kiln", options={"fallback": "error"}, dynamic=False)


def _kiln_ran(kind: str) -> None:
    assert any(r.kind == kind and r.status == "compiled" and r.kernel_count > 0
               for r in kiln.compile_records()), kiln.compile_records()


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("shape", [(64, 257), (3, 5, 7, 11)])
def test_dropout_keeps_about_one_minus_p_and_scales(p, shape):
    x = torch.rand(shape) + 0.5  # no zeros: a zero in the output means dropped
    y = _compile(lambda x: F.dropout(x, p=p, training=True))(x)
    _kiln_ran("inference")
    kept = y != 0
    n = x.numel()
    # Within 5 standard deviations of a binomial's mean.
    assert abs(kept.sum().item() - n * (1 - p)) < 5 * math.sqrt(n * p * (1 - p)) + 1
    torch.testing.assert_close(y[kept], x[kept] / (1 - p))


def test_dropout_gradient_uses_the_forward_mask():
    x = torch.randn(32, 48, requires_grad=True)
    y = _compile(lambda x: F.dropout(torch.tanh(x), p=0.3, training=True) * 3)(x)
    y.sum().backward()
    _kiln_ran("forward")
    _kiln_ran("backward")
    kept = y.detach() != 0
    expected = torch.where(kept, 3 / 0.7 * (1 - torch.tanh(x.detach()) ** 2), 0.0)
    torch.testing.assert_close(x.grad, expected)


def test_masks_differ_per_call_and_per_op_and_follow_manual_seed():
    x = torch.ones(40, 50)

    def two_dropouts(x):
        return F.dropout(x, 0.5, True), F.dropout(x, 0.5, True)

    f = _compile(two_dropouts)
    torch.manual_seed(7)
    a1, b1 = f(x)
    a2, _ = f(x)
    torch.manual_seed(7)
    a3, b3 = f(x)
    assert not torch.equal(a1, b1), "two dropouts in one graph share a mask"
    assert not torch.equal(a1, a2), "a second call repeats the mask"
    assert torch.equal(a1, a3) and torch.equal(b1, b3), "manual_seed does not reproduce"
    # Independent masks agree on about half their elements.
    agree = ((a1 != 0) == (b1 != 0)).float().mean().item()
    assert 0.45 < agree < 0.55


def test_dropout_in_eval_mode_or_with_p_zero_is_the_identity():
    x = torch.randn(8, 9)
    torch.testing.assert_close(_compile(lambda x: F.dropout(x, 0.0, True))(x), x)
    torch.testing.assert_close(_compile(lambda x: F.dropout(x, 0.4, False))(x), x)


def test_uniform_stream_moments():
    """Mean, variance, the 16 bins of the lowest and highest bits, and the
    correlation of neighbours, over 2**16 numbers of two seeds."""
    n = 1 << 16
    f = _compile(lambda seed: randomness.uniform([n], seed, torch.float32, torch.device("cpu")))
    for seed in (0, 123456789):
        u = f(torch.tensor(seed, dtype=torch.int64)).double()
        assert 0.0 <= u.min() and u.max() < 1.0
        assert abs(u.mean().item() - 0.5) < 5 * math.sqrt(1 / 12 / n)
        assert abs(u.var().item() - 1 / 12) < 0.003
        for bins in ((u * 16).floor(), ((u * 2**24).floor() % 16)):
            counts = torch.bincount(bins.long(), minlength=16).double()
            chi2 = ((counts - n / 16) ** 2 / (n / 16)).sum().item()
            assert chi2 < 50, chi2  # 15 degrees of freedom: p < 1e-5 above 50
        centred = u - u.mean()
        correlation = (centred[1:] * centred[:-1]).mean() / centred.var()
        assert abs(correlation.item()) < 0.02
