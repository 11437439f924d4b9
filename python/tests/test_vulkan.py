"""The Vulkan target on a Vulkan device (Mesa's lavapipe in CI).

Each test compiles with target="vulkan" and fallback="error", compares with
eager, and checks from the compile records and the loaded executables that
Vulkan kernels ran: the records name the target, the executables run on the
Vulkan device, and the bridge copied tensors to it.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import kiln
import kiln.compiler
from kiln_test_utils import (assert_ran_on_vulkan, spirv_tools_missing, unwrap_backend_error,
                             validate_spirv_kernels)

pytestmark = [pytest.mark.e2e, pytest.mark.device("vulkan")]


def _compile(fn, dynamic=False, **options):
    return torch.compile(fn, backend="kiln", dynamic=dynamic,
                         options={"target": "vulkan", "fallback": "error", **options})


class Block(torch.nn.Module):
    """Linear, ReLU, scaling, layer norm and softmax: matmul, elementwise and
    row kernels fused into one."""

    def __init__(self, width=64, hidden=32):
        super().__init__()
        self.linear = torch.nn.Linear(width, hidden)
        self.norm = torch.nn.LayerNorm(hidden)

    def forward(self, x):
        return torch.softmax(self.norm(torch.relu(self.linear(x)) * 2 + 1), -1)


@pytest.mark.parametrize("rows", [3, 37])
def test_block_static_sizes(rows):
    model = Block()
    x = torch.randn(rows, 64)
    with torch.no_grad():
        torch.testing.assert_close(_compile(model)(x), model(x), rtol=1e-4, atol=1e-5)
    assert_ran_on_vulkan()


def test_block_dynamic_sizes():
    model = Block()
    compiled = _compile(model, dynamic=True)
    with torch.no_grad():
        for rows in (2, 5, 300):
            x = torch.randn(rows, 64)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    records = kiln.compile_records()
    assert any(r.symbols for r in records), records
    assert_ran_on_vulkan()


def test_parameters_are_uploaded_once():
    model = Block()
    compiled = _compile(model)
    x = torch.randn(4, 64)
    with torch.no_grad():
        compiled(x)
        (executable,) = [e for e in kiln.compiler.executables() if e.device.startswith("vulkan")]
        first = executable.bytes_uploaded
        compiled(x + 1)
        # Only the new input: the weights stayed in device memory.
        assert executable.bytes_uploaded - first == x.numel() * 4
        # A changed parameter is copied again.
        model.linear.weight.add_(1)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)


def _mlp(x, w1, w2):
    return torch.nn.functional.gelu(x @ w1) @ w2


OPS = {
    "gelu_mlp": (_mlp, lambda: (torch.randn(8, 16), torch.randn(16, 32), torch.randn(32, 4))),
    "tanh_sigmoid": (lambda x: torch.tanh(x) * torch.sigmoid(x) - x.exp().log1p(),
                     lambda: (torch.randn(5, 7),)),
    "where_compare": (lambda x, y: torch.where(x > y, x, y * 2), lambda: (torch.randn(6, 9), torch.randn(9))),
    "sum_mean_max": (lambda x: x.sum(0) + x.mean(1, keepdim=True) + x.amax(-1, keepdim=True),
                     lambda: (torch.randn(12, 12),)),
    "full_reduction": (lambda x: (x * x).sum(), lambda: (torch.randn(1000),)),
    # Reductions into one element spread over a workgroup's threads (partials
    # in workgroup memory); fewer elements than threads leave some idle.
    "reductions_to_one": (lambda x, y, i: torch.stack([
        x.prod(), x.amin(), y.amax(), y.sum(), i.sum().float(), i.amax().float()]),
        lambda: (torch.rand(50) * 0.2 + 0.9, torch.randn(3000), torch.randint(-50, 50, (999,)))),
    # A matmul fused with the row reductions after it: a workgroup per row,
    # its threads sharing the matmul's columns and then each reduction
    # (thread-per-row loops here ran past lavapipe's 65535 loop iterations
    # per invocation, which silently cuts loops short).
    "matmul_then_row_reductions": (
        lambda x, w: torch.softmax(F.layer_norm(x @ w, (512,)), -1) + (x @ w).amax(-1, keepdim=True),
        lambda: (torch.randn(64, 256), torch.randn(256, 512) * 0.1)),
    "long_rows": (lambda x: torch.cat([x.sum(-1), x.amax(-1), x.var(-1)]), lambda: (torch.randn(3, 5000),)),
    # Reductions into one element and along long rows combine their
    # threads' partials by subgroups: float sums, max and min (NaN where any
    # element is, which SPIR-V's FMax alone leaves undefined), booleans
    # (any, all), 32-bit integer max; 64-bit sums keep the tree.
    "reductions_by_subgroups": (
        lambda x, n, i: torch.stack([x.sum(), x.amax(), n.amin(), n.amax(), (x > 4).any().float(),
                                     (x > -10).all().float(), (x > 100).any().float(),
                                     i.amax().float(), i.sum().float()]),
        lambda: (torch.randn(100000), torch.randn(100000).index_fill_(0, torch.tensor([77777]),
                                                                      float("nan")),
                 torch.randint(-5000, 5000, (100000,), dtype=torch.int32))),
    "row_max_with_nan": (lambda x: torch.cat([x.amax(-1), x.amin(-1), x.mean(-1)]),
                         lambda: (torch.randn(6, 5000).index_put_((torch.tensor([1, 4]),
                                                                   torch.tensor([7, 4999])),
                                                                  torch.tensor(float("nan"))),)),
    # Selections over 100000 elements, a chunk of iterations per thread
    # merged in thread order (thread 0 alone would loop past lavapipe's
    # limit): the first extreme where the maximum repeats in two threads'
    # chunks, NaN first, integers; and rows of ties.
    "argmax_over_the_workgroup": (
        lambda x, ties, n, i: torch.stack([x.argmax(), x.argmin(), ties.argmax(), ties.argmin(),
                                           n.argmax(), n.argmin(), i.argmax(), i.argmin()]),
        lambda: (torch.randn(100000),
                 torch.zeros(100000).index_fill_(0, torch.tensor([90000, 60000]), 1.0)
                 .index_fill_(0, torch.tensor([99999, 70001]), -1.0),
                 torch.randn(100000).index_fill_(0, torch.tensor([88888, 55555]), float("nan")),
                 torch.randint(-3, 3, (100000,)))),
    # Other lengths: 777 (chunks of 7, the last threads' chunks empty),
    # 130 (one element for most threads) and 1.
    "argmax_other_lengths": (
        lambda a, b, c: torch.stack([a.argmax(), a.argmin(), b.argmax(), c.argmax()]),
        lambda: (torch.randint(0, 5, (777,)).float(), torch.randn(130), torch.randn(1))),
    "row_max_with_indices": (lambda x: torch.cat([torch.stack(x.max(-1)), torch.stack(x.min(-1))]),
                             lambda: (torch.randint(0, 4, (3, 50000)).float(),)),
    "embedding": (lambda idx, table: table[idx].sum(1), lambda: (torch.randint(0, 10, (4, 3)), torch.randn(10, 8))),
    "int64_math": (lambda x: (x * 3 + 7) // 2 % 5, lambda: (torch.randint(-100, 100, (33,)),)),
    "cumsum": (lambda x: x.cumsum(-1), lambda: (torch.randn(4, 50),)),
    # Few rows along a long axis go by blocks (one thread per row would loop
    # past lavapipe's limit): whole-number floats, whose sums are exact in
    # any order, so that the answer is eager's bit for bit; an axis in the
    # middle; int64.
    "cumsum_by_blocks": (lambda x, middle, i: (x.cumsum(-1), middle.cumsum(1), i.cumsum(-1)),
                         lambda: (torch.randint(-9, 10, (2, 70000)).float(),
                                  torch.randint(-9, 10, (2, 5000, 3)).float(),
                                  torch.randint(-9, 10, (3, 40000)))),
    # 300 steps along the axis, each over 1000 rows: every thread runs the
    # steps, each taking its share of the rows (thread 0 alone would loop
    # 300 x 1000 times, past lavapipe's limit).
    "cumsum_many_rows": (lambda x: x.cumsum(0), lambda: (torch.randn(300, 1000),)),
    # A scatter along 300 columns: the columns over the threads, each
    # thread's 400 rows in order (thread 0 alone would loop 120000 times).
    "scatter_add_columns": (lambda x, idx, src: x.scatter_add(0, idx, src),
                            lambda: (torch.randn(50, 300), torch.randint(0, 50, (400, 300)),
                                     torch.randn(400, 300))),
    # Rows put with accumulation (an embedding's gradient): a scatter of
    # rows, its 64 columns over the threads.
    "index_put_rows_accumulate": (lambda x, idx, v: x.index_put((idx,), v, accumulate=True),
                                  lambda: (torch.randn(100, 64), torch.randint(-100, 100, (3000,)),
                                           torch.randn(3000, 64))),
    # Sorts by a bitonic network, each step over the threads: rows of
    # 3000 (not a power of two) with ties and NaN, both directions, a middle
    # dim, int64, and a top-k routing (many short rows, a workgroup taking
    # several).
    "sort_rows": (lambda x: (torch.sort(x, dim=-1, stable=True),
                             torch.sort(x, dim=0, descending=True, stable=True)),
                  lambda: (torch.randint(-50, 50, (3, 3000)).float().index_fill_(
                      1, torch.tensor([5, 2999, 1000]), float("nan")),)),
    "sort_middle_int64": (lambda x: torch.sort(x, dim=1, descending=True, stable=True),
                          lambda: (torch.randint(-5, 5, (2, 300, 3)),)),
    "topk_routing": (lambda x: torch.topk(torch.softmax(x, -1), 2, -1),
                     lambda: (torch.randn(500, 8),)),
    "index_add": (lambda x, idx, src: x.index_add(0, idx, src),
                  lambda: (torch.zeros(5, 3), torch.tensor([0, 2, 2, 4]), torch.randn(4, 3))),
    # 1-D scatters whose updates may meet: atomics, every thread taking
    # updates (thread 0 alone would loop 70000 times, past lavapipe's
    # limit). Float sums in any order (within rounding of eager's), int64
    # sums, int32 max and min exactly.
    "index_add_atomics": (lambda x, idx, src, i: (x.index_add(0, idx, src),
                                                   torch.zeros(7, dtype=torch.int64)
                                                   .index_add(0, idx % 7, i)),
                          lambda: (torch.zeros(10), torch.randint(0, 10, (70000,)),
                                   torch.randint(-4, 5, (70000,)).float() / 4,
                                   torch.randint(-1000, 1000, (70000,)))),
    "scatter_reduce_atomics": (lambda x, idx, src: (
        x.scatter_reduce(0, idx, src, "amax"), x.scatter_reduce(0, idx, src, "amin",
                                                                include_self=False)),
        lambda: (torch.randint(-50, 50, (13,), dtype=torch.int32),
                 torch.randint(0, 13, (90000,)),
                 torch.randint(-10**6, 10**6, (90000,), dtype=torch.int32))),
    # Without libm: log1p-based inverse hyperbolics, polynomial inverse trig,
    # powf by exponent splitting (signs, zeros and infinities as in C).
    "inverse_trig": (lambda x: torch.asin(x) + torch.acos(x) * torch.atanh(x) - torch.atan2(x, x + 2),
                     lambda: (torch.rand(64) * 1.8 - 0.9,)),
    # atan2 of signed zeros, where the polynomial divides 0 by 0.
    "atan2_zeros": (torch.atan2, lambda: (torch.tensor([0.0, 0.0, -0.0, -0.0, 1.0, 0.0]),
                                          torch.tensor([0.0, -0.0, 0.0, -0.0, 0.0, -2.0]))),
    "inverse_hyperbolic": (lambda x: torch.asinh(x * 30) + torch.acosh(x.abs() * 9 + 1),
                           lambda: (torch.randn(64),)),
    "pow": (torch.pow, lambda: (torch.tensor([-2.0, -0.5, 0.0, -0.0, 3.0, 7.5, 1e-40, float("inf")]),
                                torch.tensor([3.0, -3.0, -1.0, 3.0, 0.5, 6.25, 0.5, -2.0]))),
    # Vulkan leaves x / 0 undefined; PyTorch gives infinities and NaN.
    "divide_by_zero": (lambda x: torch.cat([x / 0.0, x / -0.0, x[:0].mean().reshape(1), x.trunc()]),
                       lambda: (torch.tensor([0.0, 1.5, -2.5, float("nan")]),)),
    # Fused attention: a float mask, causal with grouped-query heads.
    "attention_masked": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                         lambda: (torch.randn(2, 3, 9, 8), torch.randn(2, 3, 11, 8),
                                  torch.randn(2, 3, 11, 8), torch.randn(2, 1, 9, 11))),
    "attention_causal_gqa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                            enable_gqa=True),
                             lambda: (torch.randn(1, 4, 7, 16), torch.randn(1, 2, 7, 16),
                                      torch.randn(1, 2, 7, 16))),
    # A decode step's one query against 300 keys (a block of 1 query), and
    # heads of 512, for which no block fits in workgroup memory (a query
    # row per thread); a row whose keys are all masked.
    "attention_decode": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                         lambda: (torch.randn(2, 4, 1, 32), torch.randn(2, 4, 300, 32),
                                  torch.randn(2, 4, 300, 32))),
    "attention_wide_heads": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                             lambda: (torch.randn(1, 2, 3, 512), torch.randn(1, 2, 5, 512),
                                      torch.randn(1, 2, 5, 512))),
    "attention_masked_row": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                             lambda: (torch.randn(1, 2, 6, 8), torch.randn(1, 2, 9, 8),
                                      torch.randn(1, 2, 9, 8),
                                      torch.zeros(1, 1, 6, 9).index_fill_(2, torch.tensor([2]),
                                                                         float("-inf")))),
    # Convolution: an ungrouped one as an implicit GEMM by tiles (strided,
    # dilated, padded, its epilogue after the sums); a grouped one a
    # thread per output, with the epilogue fused.
    "conv_implicit_gemm": (lambda x, w, b: F.silu(F.conv2d(x, w, b, stride=2, padding=2, dilation=2)),
                           lambda: (torch.randn(2, 5, 23, 19), torch.randn(64, 5, 3, 3) * 0.3,
                                    torch.randn(64))),
    "conv_grouped_strided": (lambda x, w, b: F.relu(F.conv2d(x, w, b, stride=2, padding=1, groups=2)),
                             lambda: (torch.randn(2, 4, 9, 7), torch.randn(6, 2, 3, 3), torch.randn(6))),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_families(name):
    fn, make_inputs = OPS[name]
    inputs = make_inputs()
    torch.testing.assert_close(_compile(fn)(*inputs), fn(*inputs), rtol=1e-4, atol=1e-5,
                               equal_nan=True)
    assert_ran_on_vulkan()


def test_long_attention_goes_by_query_blocks_over_a_grid(tmp_path):
    """600 queries and keys: a thread per query row would loop 600 x 128
    times, past lavapipe's 65535; query blocks against key tiles through
    workgroup memory, the blocks spread over a grid of workgroups, keep each
    invocation's loops short. The batch is symbolic (one kernel, two sizes);
    the strategy shows in kiln-inspect."""
    from kiln.inspect import format_graph, load_dump

    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    compiled = _compile(fn, dump_dir=str(tmp_path))
    for batch in (1, 3):
        q, k, v = (torch.randn(batch, 2, 600, 64) for _ in range(3))
        for t in (q, k, v):
            torch._dynamo.mark_dynamic(t, 0)
        torch.testing.assert_close(compiled(q, k, v), fn(q, k, v), rtol=1e-4, atol=1e-5)
        assert_ran_on_vulkan()
    text = "\n".join(format_graph(graph) for graph in load_dump(tmp_path))
    assert ("attention by blocks of 16 queries and tiles of 16 keys through workgroup memory, "
            "the blocks over the grid") in text, text


def test_deterministic_scatter_sums_add_in_order(tmp_path):
    """By default a float index_add whose updates may meet adds them by
    atomics, in any order; under torch.use_deterministic_algorithms(True)
    (Dynamo recompiles when it changes) they add in the index's order on
    thread 0: the same bits every run, and eager's, whose CPU kernel adds in
    that order too."""
    from kiln.inspect import format_graph, load_dump

    fn = lambda x, i, s: x.index_add(0, i, s)  # noqa: E731
    for outputs, updates in ((10, 20000), (7, 3000)):
        torch._dynamo.reset()
        dump = tmp_path / str(updates)
        compiled = _compile(fn, dump_dir=str(dump))
        x = torch.zeros(outputs)
        i, s = torch.randint(0, outputs, (updates,)), torch.randn(updates)
        torch.testing.assert_close(compiled(x, i, s), fn(x, i, s), rtol=1e-4, atol=1e-3)
        assert_ran_on_vulkan()
        was = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)
        try:
            first = compiled(x, i, s)
            assert_ran_on_vulkan()
            assert torch.equal(first, fn(x, i, s))
            assert torch.equal(compiled(x, i, s), first)
        finally:
            torch.use_deterministic_algorithms(was)
        texts = [format_graph(graph) for graph in load_dump(dump)]
        assert len(texts) == 2, texts
        assert any("a loop nest of atomic updates" in t for t in texts), texts
        assert any("thread 0 alone" in t and "atomic updates" not in t for t in texts), texts


def test_elementwise_by_vector_loads_and_stores(tmp_path):
    """Rows of 64 (a multiple of 4): a thread takes 4 consecutive elements
    by vec4 loads and stores, the bias's too; rows of 6 go element by
    element. An input whose data starts 4 bytes into its storage is not
    aligned to a vec4: that launch takes the element-by-element branch, and
    the answer is the same."""
    from kiln.inspect import format_graph, load_dump

    fn = lambda x, b: torch.relu(x * 2 + b)  # noqa: E731
    compiled = _compile(fn, dump_dir=str(tmp_path))
    for rows, columns in ((37, 64), (300, 64), (5, 6)):
        x, b = torch.randn(rows, columns), torch.randn(columns)
        torch.testing.assert_close(compiled(x, b), fn(x, b), rtol=1e-5, atol=1e-6)
        assert_ran_on_vulkan()
        shifted = torch.randn(rows * columns + 1)[1:].view(rows, columns)
        torch.testing.assert_close(compiled(shifted, b), fn(shifted, b), rtol=1e-5, atol=1e-6)
    text = "\n".join(format_graph(graph) for graph in load_dump(tmp_path))
    assert ("a thread per 4 elements by vector loads and stores where the buffers are aligned "
            "(else a thread per element)") in text, text
    assert re.search(r"(?<!else )a thread per element", text), text


def test_attention_with_a_symbolic_sequence_goes_over_the_grid():
    """A symbolic sequence length: the query blocks split into the grid's 32
    columns, so 800 queries and keys stay under lavapipe's loop limit (one
    workgroup per (batch, head) pair running every block would not); one
    kernel serves two lengths."""
    def fn(qkv):  # one tensor, so that Dynamo knows the lengths are equal
        return F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)

    compiled = _compile(fn)
    for length in (37, 800):
        qkv = torch.randn(3, 1, 2, length, 64)
        torch._dynamo.mark_dynamic(qkv, 3)
        torch.testing.assert_close(compiled(qkv), fn(qkv), rtol=1e-4, atol=1e-5)
        assert_ran_on_vulkan()


def test_scans_by_blocks_with_rows_counted_at_launch():
    """A symbolic cumsum chooses at launch: few rows by blocks of the axis,
    many a step at a time. The blocks reassociate the sums (as ATen's CUDA
    cumsum does), so the tolerance follows the sums' size."""
    compiled = _compile(lambda x: x.cumsum(-1), dynamic=True)
    for shape in [(2, 70000), (3, 1000), (300, 400)]:
        x = torch.randn(*shape)
        torch.testing.assert_close(compiled(x), x.cumsum(-1), rtol=1e-5, atol=2e-3)
    assert_ran_on_vulkan()


def test_softmax_of_long_rows_counted_at_launch():
    """A symbolic softmax stores its exponentials as it sums them: that
    reduction still goes over the workgroup's threads (a thread per row of
    70000 would loop past lavapipe's limit)."""
    fn = lambda x: (x.softmax(-1), x.amax(-1), x.sum(-1))  # noqa: E731
    compiled = _compile(fn, dynamic=True)
    for shape in [(2, 70000), (300, 1000)]:
        x = torch.randn(*shape)
        torch.testing.assert_close(compiled(x), fn(x), rtol=1e-4, atol=1e-3)
    assert_ran_on_vulkan()


def test_sorts_with_lengths_counted_at_launch():
    """A symbolic row length: the network's stages are counted at launch
    (ceil(log2 n)), so one kernel sorts rows of 5, 1000 and 4097."""
    fn = lambda x: torch.sort(x, dim=-1, descending=True, stable=True)  # noqa: E731
    compiled = _compile(fn, dynamic=True)
    for shape in [(3, 5), (2, 1000), (4, 4097)]:
        x = torch.randint(-100, 100, shape).float()
        torch.testing.assert_close(compiled(x), fn(x), rtol=0, atol=0)
    assert_ran_on_vulkan()


def test_half_precision():
    model = Block().half()
    x = torch.randn(6, 64).half()
    with torch.no_grad():
        torch.testing.assert_close(_compile(model)(x), model(x), rtol=1e-2, atol=1e-2)
    assert_ran_on_vulkan()


_HALF_MATMULS = {
    # name: (function, its inputs at a size), two sizes each, ragged ones
    # (not multiples of the 64 x 64 x 32 tiles) among them.
    "mm": (lambda a, b: torch.relu(a @ b),
           lambda m, k, n: (torch.randn(m, k), torch.randn(k, n))),
    "linear": (lambda x, w, b: F.linear(x, w, b),  # B transposed, a bias after
               lambda m, k, n: (torch.randn(2, m, k), torch.randn(n, k), torch.randn(n))),
    "bmm": (lambda a, b: torch.bmm(a, b) * 0.5,
            lambda m, k, n: (torch.randn(3, m, k), torch.randn(3, k, n))),
}


# lavapipe compiles each emulated kernel in about 5 s: bmm (batches of the
# same tiles) runs nightly.
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name == "bmm" else name
                                  for name in sorted(_HALF_MATMULS)])
def test_tensor_core_matmuls_emulated_match_eager(name, tmp_path):
    """The NVIDIA target's tensor-core strategy (each warp's 32 x 32 outputs
    by mma m16n8k16 from fragments packed two halves to a register) runs
    here with the mma emulated through workgroup memory (target
    "vulkan:emulated-mma"): tiles, zero padding, fragment layouts and the
    accumulators' places in the output are those the PTX has, checked
    against float32 products. float16: lavapipe has no bfloat16."""
    from kiln.inspect import format_graph, load_dump

    fn, make = _HALF_MATMULS[name]
    for m, k, n in ((37, 48, 80), (130, 33, 70)):
        torch._dynamo.reset()
        dump = tmp_path / f"{m}x{k}x{n}"
        since = len(kiln.compile_records())
        args = [t.half() for t in make(m, k, n)]
        compiled = _compile(fn, target="vulkan:emulated-mma", dump_dir=str(dump))
        got = compiled(*args)
        want = fn(*[t.float() for t in args])
        assert got.dtype == torch.float16
        # float16 rounding of the result: 2^-11 of its magnitude.
        torch.testing.assert_close(got.float(), want, rtol=2e-3, atol=2e-3 * want.abs().max().item())
        assert_ran_on_vulkan(since, target="vulkan:emulated-mma")
        text = "\n".join(format_graph(graph) for graph in load_dump(dump))
        assert "matmul tiles 64x64x32 on tensor cores (mma m16n8k16 per warp, emulated)" in text, text


def _tf32(x: torch.Tensor) -> torch.Tensor:
    """x rounded to TF32 (10 mantissa bits, to nearest, ties away from zero)."""
    return ((x.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)


@pytest.mark.parametrize("precision", ["highest", "high"])
def test_float32_matmuls_use_tf32_tensor_cores_only_when_allowed(precision, tmp_path):
    """torch.set_float32_matmul_precision("high") lets float32 matmuls round
    their operands to TF32, as cuBLAS does: the tensor-core strategy then
    takes them (mma m16n8k8, emulated here), and the result is the product
    of the rounded operands. At "highest" (the default) they stay float32."""
    from kiln.inspect import format_graph, load_dump

    was = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        for m, k, n in ((37, 48, 80), (130, 33, 70)):
            torch._dynamo.reset()
            dump = tmp_path / f"{m}x{k}x{n}"
            a, b = torch.randn(m, k), torch.randn(k, n)
            got = _compile(lambda a, b: a @ b, target="vulkan:emulated-mma", dump_dir=str(dump))(a, b)
            assert_ran_on_vulkan(target="vulkan:emulated-mma")
            text = "\n".join(format_graph(graph) for graph in load_dump(dump))
            if precision == "high":
                want = (_tf32(a).double() @ _tf32(b).double()).float()
                assert "on tensor cores (mma m16n8k8 in TF32 per warp, emulated)" in text, text
            else:
                want = a @ b
                assert "tensor cores" not in text, text
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)
    finally:
        torch.set_float32_matmul_precision(was)


@pytest.mark.skipif(spirv_tools_missing() is not None, reason=str(spirv_tools_missing()))
def test_kernels_pass_spirv_val(tmp_path):
    model = Block()
    with torch.no_grad():
        _compile(model, dump_dir=str(tmp_path))(torch.randn(4, 64))
    assert validate_spirv_kernels(tmp_path) > 0


def test_inspect_shows_gpu_kernels(tmp_path):
    from kiln.inspect import format_graph, load_dump

    with torch.no_grad():
        _compile(Block(), dump_dir=str(tmp_path))(torch.randn(4, 64))
    (graph,) = load_dump(tmp_path)
    text = format_graph(graph)
    assert "target vulkan" in text
    # The block's norm shares each row's statistics over the threads,
    # through workgroup memory.
    assert re.search(r"gpu    128x1x1 threads per workgroup, [1-9][\d.]* (B|KiB) workgroup memory, "
                     r"SPIR-V kernels/", text), text
    # And which strategies the mapping used.
    assert "row reductions over the workgroup, by subgroups" in text, text
    assert "a thread per element" in text, text


def test_float64_math_the_device_lacks_is_an_unsupported_op():
    """GLSL has no float64 exp: fallback="error" names the op and the line;
    by default it runs in eager with that reason."""
    def fn(x):
        return torch.softmax(x, 0, dtype=torch.float64)  # float64 exp

    x = torch.randn(6)
    with pytest.raises(Exception) as caught:
        _compile(fn)(x)
    err = unwrap_backend_error(caught.value)
    assert isinstance(err, kiln.UnsupportedOpError), err
    assert err.op == "aten._softmax.default" and "float64" in err.reason
    assert err.file == __file__
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="kiln", options={"target": "vulkan"})
    torch.testing.assert_close(compiled(x), fn(x))
    (record,) = kiln.compile_records()[-1:]
    assert [f["op"] for f in record.fallbacks] == ["aten._softmax.default"], record.fallbacks


def test_a_failed_compile_dumps_the_stages_before_it(tmp_path):
    """The SPIR-V stage refuses float64 exp: the dump still has the IR of
    every stage before it, the last (the GPU stage) being what it was given."""
    with pytest.raises(Exception):
        _compile(lambda x: x.exp(), dump_dir=str(tmp_path))(torch.randn(6, dtype=torch.float64))
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    names = sorted(p.name for p in folder.iterdir())
    assert "00-graph.mlir" in names and "05-gpu.mlir" in names, names
    assert "math.exp" in (folder / "05-gpu.mlir").read_text()


def test_dumped_stages_parse_and_run_again(tmp_path):
    """Every stage a Vulkan compile dumps parses with kiln-opt, its target
    attribute included, and the GPU stage's output runs through the next
    pass (kiln-spirv-form-kernels) as it is, so a dump reproduces a bug."""
    build = Path(os.environ.get("KILN_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))
    kiln_opt = build / "bin" / "kiln-opt"
    if not kiln_opt.exists():
        pytest.fail(f"{kiln_opt} is not built")
    with torch.no_grad():
        _compile(Block(), dump_dir=str(tmp_path))(torch.randn(4, 64))
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    stages = sorted(folder.glob("0*.mlir"))
    assert len(stages) >= 6, stages
    for stage in stages:
        done = subprocess.run([str(kiln_opt), str(stage), "-o", os.devnull],
                              capture_output=True, text=True)
        assert done.returncode == 0, (stage.name, done.stderr[-2000:])
    done = subprocess.run([str(kiln_opt), str(folder / "05-gpu.mlir"),
                           "--pass-pipeline=builtin.module(kiln-spirv-form-kernels)"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "spirv.target_env" in done.stdout


def test_loops_a_device_cuts_short_are_an_error_not_a_wrong_answer():
    """A 1-D scatter of 70000 writes (which may meet, and where the last
    write wins no atomic helps, so thread 0 runs them alone, in order) runs
    70000 iterations in one thread: lavapipe stops an invocation's loops
    after 65535 iterations in all, and the kernel's check (its loop stopped
    below its bound) makes that an error naming the kernel. A device that
    runs loops to their end gives the right answer."""
    fn = lambda index, src: torch.zeros(10).index_copy(0, index, src)  # noqa: E731
    index, src = torch.randint(0, 10, (70000,)), torch.randn(70000)
    compiled = _compile(fn)
    compiled(index[:100], src[:100])  # compiles and loads; this size fits
    devices = {e.device for e in kiln.compiler.executables() if e.device.startswith("vulkan")}
    assert len(devices) == 1, devices
    torch._dynamo.reset()
    compiled = _compile(fn)
    if "llvmpipe" not in devices.pop():
        torch.testing.assert_close(compiled(index, src), fn(index, src), rtol=1e-4, atol=1e-3)
        return
    with pytest.raises(RuntimeError, match=r"kernel '\w*' ended a loop before its last "
                                           r"iteration: the Vulkan device \(llvmpipe"):
        compiled(index, src)
