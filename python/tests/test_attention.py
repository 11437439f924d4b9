"""scaled_dot_product_attention compiles to one fused Kiln kernel.

Every case runs with fallback="error" and checks, from the compile records,
that the attention ran as a single `attention` kernel (no matmul or softmax
kernels, so the [L, S] scores were never materialized), at shapes that cover
full and ragged tiles of queries (192) and keys (64).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
import kiln

from kiln_test_utils import assert_kiln_ran, compile_kiln

pytestmark = pytest.mark.e2e

# (batch, heads, kv heads, queries, keys, head size): small, ragged in both
# tile directions, and more than one tile of each.
SHAPES = [
    (2, 4, 4, 8, 8, 16),
    (1, 2, 2, 37, 53, 24),
    (2, 4, 2, 200, 130, 32),
]


def _kernels_of_last_compile(before: int) -> list[list[str]]:
    records = kiln.compile_records()[before:]
    assert records and all(r.status == "compiled" for r in records), records
    return [list(k["ops"]) for r in records for k in r.kernels]


def check_fused(fn, *inputs, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Kiln's result matches eager's, and the attention was one kernel."""
    torch._dynamo.reset()
    with torch.no_grad():
        expected = fn(*inputs)
        before = len(kiln.compile_records())
        actual = compile_kiln(fn, fallback="error")(*inputs)
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)
    kernels = _kernels_of_last_compile(before)
    assert ["attention"] in kernels, kernels
    assert not any("matmul" in ops or "softmax" in ops for ops in kernels), kernels


def qkv(batch, heads, kv_heads, queries, keys, size, dtype=torch.float32):
    torch.manual_seed(queries * 31 + keys)
    return (torch.randn(batch, heads, queries, size, dtype=dtype),
            torch.randn(batch, kv_heads, keys, size, dtype=dtype),
            torch.randn(batch, kv_heads, keys, size, dtype=dtype))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention(shape, causal):
    q, k, v = qkv(*shape)
    gqa = shape[1] != shape[2]
    check_fused(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                               enable_gqa=gqa), q, k, v)


@pytest.mark.parametrize("shape", SHAPES[1:], ids=str)
def test_attention_masks(shape):
    """Boolean and additive masks, broadcast over batch, heads and queries."""
    q, k, v = qkv(*shape)
    batch, heads, _, queries, keys, _ = shape
    gqa = heads != shape[2]
    keep = torch.rand(batch, 1, queries, keys) > 0.3
    check_fused(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m,
                                                                  enable_gqa=gqa), q, k, v, keep)
    padding = torch.randn(batch, 1, 1, keys)  # BERT-style: one bias per key
    check_fused(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3,
                                                                  enable_gqa=gqa), q, k, v, padding)
    full = torch.randn(queries, keys)  # rank 2, broadcast over batch and heads
    check_fused(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m,
                                                                  enable_gqa=gqa), q, k, v, full)


def test_attention_float64():
    q, k, v = qkv(1, 2, 2, 70, 90, 16, dtype=torch.float64)
    check_fused(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v,
                rtol=1e-10, atol=1e-12)


def test_fully_masked_rows_give_zero_as_aten():
    """A query that may see no key gives 0 (and logsumexp 0), as ATen's CPU
    flash attention, not NaN: in the first and in a later tile of keys."""
    q, k, v = qkv(1, 1, 1, 6, 100, 8)
    keep = torch.rand(6, 100) > 0.5
    keep[1] = False
    keep[4, :64] = False  # the first tile of keys is masked, the second is not
    check_fused(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, keep)
    mask = torch.zeros(6, 100).masked_fill(~keep, float("-inf"))
    fn = lambda q, k, v, m: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(  # noqa: E731
        q, k, v, attn_mask=m)[:2]
    check_fused(fn, q, k, v, mask)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_logsumexp_matches_aten(causal):
    """The second result, which the op's backward reads."""
    q, k, v = qkv(2, 2, 2, 30, 70, 16)
    fn = lambda q, k, v: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(  # noqa: E731
        q, k, v, 0.0, causal)
    check_fused(fn, q, k, v)


def test_attention_training_forward_is_fused_and_gradients_match():
    """In training the forward attention is Kiln's (with the logsumexp the
    eager backward reads); gradients equal eager's."""
    q, k, v = (t.requires_grad_() for t in qkv(1, 2, 2, 40, 40, 16))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    torch._dynamo.reset()
    before = len(kiln.compile_records())
    out = compile_kiln(fn)(q, k, v)
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    expected = torch.autograd.grad(fn(q, k, v).sum(), (q, k, v))
    torch.testing.assert_close(out, fn(q, k, v), rtol=1e-4, atol=1e-5)
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    forward = [r for r in kiln.compile_records()[before:] if r.kind == "forward"]
    assert any(["attention"] == list(k["ops"]) for r in forward for k in r.kernels), forward


def test_dropout_falls_back_with_its_reason():
    """The fused attention kernel has no dropout: the op with dropout_p > 0
    stays in eager (F.scaled_dot_product_attention with dropout decomposes to
    math attention and Kiln's dropout instead), and fallback="error" names
    the reason."""
    q, k, v = qkv(1, 1, 1, 8, 8, 8)
    with pytest.raises(Exception, match="dropout_p must be 0"):
        torch._dynamo.reset()
        with torch.no_grad():
            compile_kiln(lambda q, k, v: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, 0.5)[0], fallback="error")(q, k, v)


# Attention written out as ops (kiln-recognize-attention): the same one
# kernel, whatever spelling of the scale and the mask a model uses.
def _by_hand_divided(q, k, v, mask):
    scores = q @ k.transpose(-2, -1) / (q.shape[-1] ** 0.5)
    return torch.softmax(scores + mask, dim=-1) @ v


def _by_hand_multiplied(q, k, v, mask):
    scores = torch.matmul(q, k.transpose(2, 3)) * q.shape[-1] ** -0.5
    return torch.matmul(F.softmax(mask + scores, dim=3), v)


def _by_hand_unscaled_unmasked(q, k, v, mask):
    return (q @ k.transpose(-1, -2)).softmax(-1) @ v


@pytest.mark.parametrize("shape", [s for s in SHAPES if s[1] == s[2]], ids=str)
@pytest.mark.parametrize("fn", [_by_hand_divided, _by_hand_multiplied, _by_hand_unscaled_unmasked],
                         ids=lambda f: f.__name__.removeprefix("_by_hand_"))
def test_attention_written_out_is_one_kernel(shape, fn):
    q, k, v = qkv(*shape)
    mask = torch.randn(shape[3], shape[4])
    check_fused(fn, q, k, v, mask)


def test_attention_written_out_one_head_3d():
    q, k, v = (t[:, 0] for t in qkv(3, 1, 1, 21, 17, 8))
    check_fused(lambda q, k, v: torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.3, -1) @ v,
                q, k, v)


def test_attention_written_out_keeps_softmax_nan_for_fully_masked_rows():
    # softmax over a row of -inf is NaN in eager; the fused kernel agrees
    # (where scaled_dot_product_attention gives 0, as ATen's does).
    q, k, v = qkv(1, 2, 2, 5, 7, 8)
    mask = torch.zeros(5, 7)
    mask[2] = float("-inf")
    fn = lambda q, k, v, m: torch.softmax(q @ k.transpose(-2, -1) + m, dim=-1) @ v  # noqa: E731
    torch._dynamo.reset()
    with torch.no_grad():
        expected = fn(q, k, v, mask)
        actual = compile_kiln(fn, fallback="error")(q, k, v, mask)
    assert expected[:, :, 2].isnan().all()
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5, equal_nan=True)
    assert_kiln_ran(strict=True)


def test_probabilities_used_elsewhere_stay_ops():
    q, k, v = qkv(2, 2, 2, 9, 9, 8)

    def fn(q, k, v):
        p = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return p @ v, p.sum(-1)

    torch._dynamo.reset()
    with torch.no_grad():
        expected = fn(q, k, v)
        before = len(kiln.compile_records())
        actual = compile_kiln(fn, fallback="error")(q, k, v)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    assert_kiln_ran(before, strict=True)
    assert not any("attention" in ops for ops in _kernels_of_last_compile(before))
