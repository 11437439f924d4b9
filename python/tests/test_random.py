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
from kiln.testing import distributions

pytestmark = pytest.mark.e2e


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
    _kiln_ran("inference")
    assert not torch.equal(a1, b1), "two dropouts in one graph share a mask"
    assert not torch.equal(a1, a2), "a second call repeats the mask"
    assert torch.equal(a1, a3) and torch.equal(b1, b3), "manual_seed does not reproduce"
    # Independent masks agree on about half their elements.
    agree = ((a1 != 0) == (b1 != 0)).float().mean().item()
    assert 0.45 < agree < 0.55


def test_dropout_in_eval_mode_or_with_p_zero_is_the_identity():
    x = torch.randn(8, 9)
    torch.testing.assert_close(_compile(lambda x: F.dropout(x, 0.0, True))(x), x)
    _kiln_ran("inference")
    torch.testing.assert_close(_compile(lambda x: F.dropout(x, 0.4, False))(x), x)
    _kiln_ran("inference")


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
    _kiln_ran("inference")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rand_randn_bernoulli_distributions(dtype):
    """rand, randn (Box-Muller), their _like forms and bernoulli, in Kiln
    kernels: moments within 6 standard errors of the distribution's."""
    n = 1 << 15

    def draws(x):
        return (torch.rand(n, dtype=dtype), torch.randn(n, dtype=dtype), torch.rand_like(x),
                torch.randn_like(x), torch.bernoulli(torch.full_like(x, 0.3)),
                x.bernoulli(0.8))

    outs = _compile(draws)(torch.zeros(n, dtype=dtype))
    _kiln_ran("inference")
    assert all(o.dtype == dtype and o.shape == (n,) for o in outs)
    se = 6 / math.sqrt(n)
    for u in (outs[0], outs[2]):
        assert 0 <= u.min() and u.max() < 1
        assert abs(u.mean() - 0.5) < se * math.sqrt(1 / 12) and abs(u.var() - 1 / 12) < 0.003
    for z in (outs[1], outs[3]):
        assert abs(z.mean()) < se and abs(z.var() - 1) < 0.05
        assert abs((z.abs() < 1).double().mean() - 0.6827) < 0.01  # the normal's CDF, not only moments
    for b, p in ((outs[4], 0.3), (outs[5], 0.8)):
        assert set(b.unique().tolist()) <= {0.0, 1.0} and abs(b.mean() - p) < se
    assert not torch.equal(outs[0], outs[2]) and not torch.equal(outs[1], outs[3])


@pytest.mark.parametrize("case", distributions.CASES, ids=lambda c: c.name)
def test_random_ops_in_kiln_graphs(case):
    """normal_, random_, exponential_, ..., multinomial compiled: Kiln kernels
    (fallback="error") with the distribution's moments and support."""
    f = _compile(case.draw)
    x = torch.zeros(distributions.SAMPLES)
    sample = f(x)
    _kiln_ran("inference")
    case.check(sample)
    assert not torch.equal(f(x), sample)


def test_random_graph_without_inputs():
    """A graph whose only inputs are its seeds (torch.randn(4, 5) alone)."""
    f = _compile(lambda: torch.randn(4, 5) + torch.rand(4, 5))
    a, b = f(), f()
    _kiln_ran("inference")
    assert a.shape == (4, 5) and not torch.equal(a, b)


def test_checkpointed_dropout_backward_uses_the_forward_mask():
    """Inside torch.utils.checkpoint the backward recomputes the region: the
    seed must be the forward's (saved), or the recomputed mask differs."""
    x = torch.randn(16, 32, requires_grad=True)

    def region(t):
        return F.dropout(torch.sin(t), 0.5, True) * 2

    def f(x):
        return torch.utils.checkpoint.checkpoint(region, x, use_reentrant=False)

    y = _compile(f)(x)
    y.sum().backward()
    _kiln_ran("backward")
    kept = y.detach() != 0
    torch.testing.assert_close(x.grad, torch.where(kept, 4 * torch.cos(x.detach()), 0.0))


def test_half_precision_attention_backward_runs_in_kiln():
    """bfloat16 SDPA training (ATen's logsumexp is float32) runs in Kiln with
    fallback="error", the backward in float32 as ATen's CPU kernel does. Both
    round the gradients to bfloat16 after float32 sums taken in different
    orders, so each is held to the float64 gradients: Kiln's error at most
    twice eager's, plus one bfloat16 ulp of the gradients' scale."""
    q, k, v = (torch.randn(1, 2, 5, 8, dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    torch._dynamo.reset()
    sdpa = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    f = torch.compile(sdpa, backend="kiln", dynamic=False, options={"fallback": "error"})
    f(q, k, v).float().sum().backward()
    assert {r.kind for r in kiln.compile_records() if r.kernel_count} >= {"forward", "backward"}
    eq, ek, ev = (t.detach().clone().requires_grad_() for t in (q, k, v))
    sdpa(eq, ek, ev).float().sum().backward()
    rq, rk, rv = (t.detach().double().requires_grad_() for t in (q, k, v))
    sdpa(rq, rk, rv).sum().backward()
    for a, e, r in ((q, eq, rq), (k, ek, rk), (v, ev, rv)):
        kiln_error = (a.grad.double() - r.grad).abs().max().item()
        eager_error = (e.grad.double() - r.grad).abs().max().item()
        ulp = torch.finfo(torch.bfloat16).eps * r.grad.abs().max().item()
        assert kiln_error <= 2 * eager_error + ulp, (kiln_error, eager_error)
