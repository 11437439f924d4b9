"""Dynamic shapes: one Kiln artifact per dynamic graph serves every size.

Each sweep runs a model over many sizes (primes and non-multiples of the
vector width among them), compares every call with eager, and checks from
Dynamo's counters and Kiln's compile records that Kiln compiled exactly the
graphs Dynamo asked for (the count backend="aot_eager" gets for the same
sizes: the first, static graph, one dynamic graph, and Dynamo's own
specializations such as size 1), each of them in Kiln kernels.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pytest
import torch
import torch.nn.functional as F
from torch._dynamo.utils import counters

import kiln
from kiln_test_utils import resized_inputs
from kiln.testing.models import MLP, TransformerBlock

pytestmark = pytest.mark.e2e

RTOL, ATOL = 1e-4, 1e-5


def _graphs_dynamo_compiles(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]],
                            **compile_kwargs: Any) -> int:
    """How many graphs backend="aot_eager" gets for this sequence of calls."""
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(fn, backend="aot_eager", **compile_kwargs)
    with torch.no_grad():
        for args in calls:
            compiled(*args)
    return counters["stats"]["unique_graphs"]


def _sweep(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]],
           fallback: str = "error", **compile_kwargs: Any) -> list[kiln.CompileRecord]:
    """Runs fn compiled by Kiln on every call's inputs, checks each result
    against eager, and that Kiln compiled what Dynamo asked for."""
    expected_graphs = _graphs_dynamo_compiles(fn, calls, **compile_kwargs)
    torch._dynamo.reset()
    counters.clear()
    kiln.reset()
    compiled = torch.compile(fn, backend="kiln", options={"fallback": fallback},
                             **compile_kwargs)
    with torch.no_grad():
        for args in calls:
            torch.testing.assert_close(compiled(*args), fn(*args), rtol=RTOL, atol=ATOL,
                                       msg=lambda m: f"{m}\nshapes {[a.shape for a in args]}")
    records = kiln.compile_records()
    assert counters["stats"]["unique_graphs"] == expected_graphs
    assert len(records) == expected_graphs, [r.name for r in records]
    for record in records:
        assert record.kernel_count > 0, record
        if fallback == "error":
            assert record.status == "compiled" and not record.fallbacks, record
    return records


def _dynamic_records(records: list[kiln.CompileRecord]) -> list[kiln.CompileRecord]:
    return [r for r in records if r.symbols]


BATCHES = [8, 4, 1, 2, 3, 5, 7, 13, 16, 17, 31, 33, 64]


def test_mlp_batch_sweep_uses_one_dynamic_artifact():
    """The model that used to drop to eager on its second batch size."""
    model = MLP(64, 96, 10).eval()
    calls = [model.make_inputs(batch=b) for b in BATCHES]
    records = _sweep(model, calls)
    dynamic = _dynamic_records(records)
    assert len(dynamic) == 1, records
    (symbol,) = dynamic[0].symbols
    assert symbol["min"] == 2  # Dynamo's 0/1 specialization


def test_transformer_block_batch_and_sequence_sweep():
    model = TransformerBlock(width=64, heads=4, mlp_ratio=2).eval()
    sizes = [(2, 16), (3, 16), (5, 16), (2, 7), (4, 33), (1, 64), (3, 1), (2, 129), (1, 512),
             (7, 97), (64, 3)]
    calls = [model.make_inputs(batch=b, seq=s) for b, s in sizes]
    records = _sweep(model, calls)
    assert any(len(r.symbols) == 2 for r in records), records


def test_dynamic_true_compiles_one_symbolic_graph_up_front():
    model = MLP(32, 48, 5).eval()
    calls = [model.make_inputs(batch=b) for b in (6, 11, 2, 40)]
    records = _sweep(model, calls, dynamic=True)
    assert len(records) == 1 and records[0].symbols, records


def test_mark_dynamic_range_is_the_artifacts_range():
    model = MLP(32, 48, 5).eval()

    def fn(x: torch.Tensor) -> torch.Tensor:
        return model(x)

    kiln.reset()
    compiled = torch.compile(fn, backend="kiln", options={"fallback": "error"})
    with torch.no_grad():
        for batch in (5, 9, 3):
            (x,) = model.make_inputs(batch=batch)
            torch._dynamo.mark_dynamic(x, 0, min=2, max=64)
            torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=ATOL)
    (record,) = kiln.compile_records()
    assert record.status == "compiled" and record.kernel_count > 0, record
    assert record.symbols == [{"name": record.symbols[0]["name"], "min": 2, "max": 64}]


def _sizes(*shapes: tuple[int, ...]) -> list[tuple[torch.Tensor, ...]]:
    return [(torch.randn(*shape),) for shape in shapes]


# The ops Kiln compiles with symbolic sizes, each in a small function run at
# several sizes with dynamic=True and fallback="error".
OPS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "pointwise": lambda x: torch.tanh(x) * torch.sigmoid(x) + torch.exp(-x.abs()) - x / 3,
    "unary_math": lambda x: torch.sqrt(x.abs() + 1) + torch.log1p(x.abs()) + torch.erf(x)
    + torch.floor(x) + torch.sign(x) + torch.sin(x) * torch.cos(x),
    "activations": lambda x: F.gelu(x) + F.relu(x) + F.silu(x) + F.hardtanh(x)
    + torch.clamp(x, -0.5, 0.5),
    "compare_where": lambda x: torch.where(x > 0.1, x, x * x) + (x <= 0).float(),
    "pow_max_min": lambda x: torch.maximum(x, x.pow(2) - 1) + torch.minimum(x, -x),
    "broadcast": lambda x: x - x.mean(dim=-1, keepdim=True) + x.sum(0, keepdim=True),
    "reductions": lambda x: x.sum(-1) + x.amax(-1) - x.amin(-1) + x.mean(-1)
    + (x / 8).prod(-1),
    "reduce_leading": lambda x: x.sum(0) + x.amax(0),
    "softmax": lambda x: torch.softmax(x, -1) + torch.log_softmax(x * 2, -1),
    "layer_norm": lambda x: F.layer_norm(x, (x.shape[-1],)),
    "matmul": lambda x: (x @ x.transpose(-2, -1)).relu() @ x,
    "views": lambda x: x.reshape(-1).view(x.shape[0], -1).unsqueeze(1).squeeze(1).t().exp(),
    "permute_expand": lambda x: x.unsqueeze(0).expand(3, *x.shape).permute(1, 0, 2).sin(),
    "select": lambda x: (x[1] + x[0]).sum() + x[:, 2] * x[1, 1],
    "dtype_cast": lambda x: (x * 10).to(torch.int64).to(torch.float32) / 10,
    "any_all": lambda x: (x > 0).any(-1).float() + (x > -5).all(-1).float(),
    "fills": lambda x: torch.zeros_like(x) + torch.full_like(x, 2.0) * torch.ones_like(x) + x,
    "cumsum": lambda x: torch.cumsum(x, 0) + torch.cumsum(x * 2, -1),
    "sort_topk": lambda x: torch.sort(x, -1)[0] * 2 + torch.sort(x, 0, descending=True)[1]
    + torch.topk(x, 3, -1)[0].sum(-1, True),
    "pad": lambda x: F.pad(x, (1, 2)).sum(-1) + F.pad(x, (0, 0, 2, 0), value=1.5)[2:].sum(-1),
    "gather": lambda x: torch.gather(x, 1, (x.abs() * 3).long() % x.shape[1]) * 2,
    "index": lambda x: x[torch.arange(x.shape[0]) % 3] + x[:, torch.tensor([0, 2, 1])].sum(-1, True)
    + x[torch.arange(x.shape[0])[:, None], torch.arange(x.shape[1])[None, :]],
    "index_select": lambda x: torch.index_select(x, 0, torch.arange(x.shape[0]).flip(0)).exp(),
    "symint_values": lambda x: x * x.shape[0] + (x > x.shape[1] // 4).float() - x.shape[1]
    + torch.remainder((x * 10).long(), x.shape[0]).float(),
    "int_division": lambda x: ((x * 10).to(torch.int64) // 3
                               + torch.remainder((x * 10).to(torch.int64), 4)
                               + torch.fmod((x * 10).to(torch.int64), (x.abs() * 5 + 1).to(torch.int64))
                               ).float() + torch.fmod(x, 0.3),
}


@pytest.mark.parametrize("name", list(OPS))
def test_op_under_symbolic_sizes(name):
    fn = OPS[name]
    calls = _sizes((5, 8), (9, 8), (17, 8), (3, 13), (64, 31))
    _sweep(fn, calls, dynamic=True)


def test_linear_stack_with_symbolic_batch_and_features():
    w = torch.randn(24, 16)

    def fn(x: torch.Tensor) -> torch.Tensor:
        return F.linear(F.gelu(F.linear(x, w.t())), w)

    calls = _sizes((4, 3, 24), (2, 5, 24), (7, 1, 24), (3, 11, 24))
    _sweep(fn, calls, dynamic=True)


_QKV = torch.randn(64, 192) / 8


def _attention(x: torch.Tensor, causal: bool, masked: bool) -> torch.Tensor:
    """Multi-head attention as models write it: q, k and v from one
    projection (which pins the width), heads split by views with static head
    counts, so only the batch and the length are symbolic."""
    b, s, _ = x.shape
    q, k, v = (x @ _QKV).view(b, s, 3, 4, 16).permute(2, 0, 3, 1, 4)
    mask = None
    if masked:  # a padding-style mask over the keys, built in the graph
        mask = torch.where(x[:, None, None, :, 0] > 1.5, float("-inf"), 0.0)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    return out.transpose(1, 2).reshape(b, s, 64)


@pytest.mark.parametrize("causal, masked", [(False, False), (True, False), (False, True)])
def test_fused_attention_under_symbolic_batch_and_length(causal, masked):
    """The fused attention kernel takes symbolic batch and lengths: ragged
    blocks of queries (192 rows) and tiles of keys (64) are sized at run
    time."""
    calls = _sizes((2, 7, 64), (3, 64, 64), (1, 193, 64), (2, 100, 64), (4, 1, 64))
    records = _sweep(lambda x: _attention(x, causal, masked), calls, dynamic=True)
    assert any(r.symbols for r in records), records


def test_attention_with_symbolic_heads_runs_in_eager_with_a_reason():
    """Raw q, k, v under dynamic=True make every dim symbolic, heads and head
    size too: attention stays in eager, saying why, and the rest compiles."""

    def fn(q: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q.relu(), q, q).exp()

    calls = _sizes((2, 4, 9, 16), (3, 4, 17, 16))
    (record,) = _sweep(fn, calls, fallback="eager", dynamic=True)
    assert [f["op"] for f in record.fallbacks] == [
        "aten._scaled_dot_product_flash_attention_for_cpu.default"]
    assert "head count or head size" in record.fallbacks[0]["reason"]


def test_ops_without_symbolic_lowering_fall_back_per_op():
    """A convolution takes a symbolic batch only: with symbolic image sizes
    it runs in eager, named in the records, and the rest of the graph still
    runs in Kiln kernels, even the partition after the convolution, which
    sees the image size only as a convolution's output size (s - 2)."""
    conv = torch.nn.Conv2d(8, 16, 3)

    def fn(x: torch.Tensor) -> torch.Tensor:
        return conv(x.exp()).relu() + 1

    calls = _sizes((5, 8, 10, 10), (9, 8, 10, 10), (3, 8, 13, 13))
    (record,) = _sweep(fn, calls, fallback="eager", dynamic=True)
    assert record.status == "partitioned"
    assert [f["op"] for f in record.fallbacks] == ["aten.convolution.default"]
    assert "only the batch" in record.fallbacks[0]["reason"]
    assert any(s["name"].endswith(" - 2") for s in record.symbols), record.symbols


def test_index_checks_compare_with_the_symbolic_size_at_run_time():
    """An index into a symbolic dim is checked against that call's size; the
    error names Dynamo's symbol, the op and the source line."""

    def fn(x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return x[i].exp()

    kiln.reset()
    compiled = torch.compile(fn, backend="kiln", dynamic=True, options={"fallback": "error"})
    for rows in (5, 9):
        x, i = torch.randn(rows, 3), torch.tensor([0, rows - 1, -rows])
        torch.testing.assert_close(compiled(x, i), fn(x, i))
    (record,) = kiln.compile_records()
    assert record.symbols and record.status == "compiled", record
    symbol = record.symbols[0]["name"]
    with pytest.raises(IndexError, match=rf"aten\.index\.Tensor.*test_dynamic\.py:\d+.*"
                                         rf"every index must be in \[-{symbol}, {symbol}\)"):
        compiled(torch.randn(7, 3), torch.tensor([7]))


def test_direct_convolution_with_a_symbolic_batch():
    """A CNN block (convolution, batch norm, ReLU, residual) over batch sizes:
    the direct convolution takes the symbolic batch, its epilogue fused."""
    conv = torch.nn.Conv2d(8, 16, 3, padding=1)
    bn = torch.nn.BatchNorm2d(16).eval()

    def fn(x: torch.Tensor) -> torch.Tensor:
        return F.relu(bn(conv(x))) + x.sum(1, keepdim=True)

    calls = _sizes(*[(b, 8, 10, 12) for b in (4, 5, 2, 9, 3, 16, 31)])
    records = _sweep(fn, calls)
    assert _dynamic_records(records), records


def test_negative_index_into_a_symbolic_dim_runs_in_eager_with_a_reason():
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x[-1].exp() + 1

    (record,) = _sweep(fn, _sizes((5, 8), (9, 8)), fallback="eager", dynamic=True)
    assert [f["op"] for f in record.fallbacks] == ["aten.select.int"]
    assert "negative index" in record.fallbacks[0]["reason"]


@pytest.mark.parametrize("name, sizes, fallback", [
    # A transformer and a convolution net gate; the rest of the zoo runs nightly.
    ("gpt2", [(2, 24), (3, 24), (2, 17), (4, 40), (5, 9), (1, 63)], "error"),
    pytest.param("bert", [(2, 24), (3, 24), (2, 17), (4, 40), (3, 1)], "error",
                 marks=pytest.mark.slow),
    # Direct convolution with a symbolic batch (image sizes static).
    ("cnn", [(2, None), (3, None), (5, None), (8, None), (17, None)], "error"),
    # The rest of the zoo: a static first graph, then one dynamic graph.
    *[pytest.param(name, [(2, 16), (3, 16), (2, 11)], "error", marks=pytest.mark.slow)
      for name in ("t5", "llama", "mistral")],
    *[pytest.param(name, [(2, None), (3, None), (5, None)], "error", marks=pytest.mark.slow)
      for name in ("vit", "swin", "resnet", "efficientnet", "wav2vec2", "unet")],
])
def test_zoo_models_under_dynamic_sizes(name, sizes, fallback):
    """Zoo models across batch sizes and sequence lengths: every call matches
    eager, Kiln compiles what Dynamo asks for, and each graph runs Kiln
    kernels (with fallback="error": every op of them, mask building, fused
    attention and SymFloat arithmetic included)."""
    from kiln.testing.zoo import build

    model, make_inputs = build(name)
    template = make_inputs("large")
    calls = [resized_inputs(template, b, s) for b, s in sizes]
    records = _sweep(model, calls, fallback=fallback)
    assert _dynamic_records(records), records


def test_an_int_argument_becomes_a_size_symbol_passed_by_value():
    """arange(n) for an int n that Dynamo makes dynamic: no tensor has that
    size, so the executable takes n itself (as a 0-d int64)."""

    def fn(x: torch.Tensor, n: int) -> torch.Tensor:
        return torch.arange(n) * 2 + x.sum()

    calls = [(torch.randn(4), n) for n in (5, 9, 17, 3, 64)]
    expected = _graphs_dynamo_compiles(fn, calls)
    torch._dynamo.reset()
    kiln.reset()
    compiled = torch.compile(fn, backend="kiln", options={"fallback": "error"})
    for x, n in calls:
        torch.testing.assert_close(compiled(x, n), fn(x, n), rtol=RTOL, atol=ATOL)
    records = kiln.compile_records()
    assert len(records) == expected and any(r.symbols for r in records), records
    assert all(r.status == "compiled" and r.kernel_count > 0 for r in records), records
