"""kiln.explain against what torch.compile(backend="kiln") then really does."""

from __future__ import annotations

import torch

import kiln
from kiln.testing import zoo
from kiln.testing.models import MLP, TransformerBlock
from kiln_test_utils import assert_kiln_ran, line_of

import pytest

pytestmark = pytest.mark.e2e

THIS_FILE = __file__.rsplit("/", 1)[-1]


def compile_and_run(model, inputs, **options):
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="kiln", options={"fallback": "error", **options})
    with torch.no_grad():
        out = compiled(*inputs)
    return out


REPO_MODELS = {
    "mlp-8": lambda: (MLP().eval(), MLP().make_inputs(batch=8)),
    "mlp-33": lambda: (MLP().eval(), MLP().make_inputs(batch=33)),
    "block-2x16": lambda: (TransformerBlock().eval(), TransformerBlock().make_inputs(2, 16)),
    "block-3x40": lambda: (TransformerBlock().eval(), TransformerBlock().make_inputs(3, 40)),
    "gpt2": lambda: (zoo.build("gpt2").model, zoo.build("gpt2").make_inputs("small")),
    "resnet": lambda: (zoo.build("resnet").model, zoo.build("resnet").make_inputs("small")),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n == "resnet" else [])
                                  for n in REPO_MODELS])
def test_explain_predicts_the_kernels_of_a_repo_model(name, capsys):
    model, inputs = REPO_MODELS[name]()
    with torch.no_grad():
        report = kiln.explain(model, *inputs)
    printed = capsys.readouterr().out
    assert printed.startswith("kiln.explain (target cpu):")
    assert not kiln.compile_records(), "explain compiled something"

    assert report.eager_ops == 0, str(report)
    assert report.graph_breaks == [] and report.dynamo_graphs == 1
    (graph,) = report.graphs
    assert graph.kind == "inference" and graph.kernels and graph.partitions == 1
    for kernel in graph.kernels:
        assert kernel.ops and kernel.nodes
        assert f"kernel {kernel.name}: {' + '.join(kernel.ops)}" in printed

    # What really happens, with fallback="error".
    compile_and_run(model, inputs)
    (record,) = assert_kiln_ran(strict=True)
    # (kernel_count also counts the kernels that pack weights, made later.)
    assert [k["ops"] for k in record.kernels] == [k.ops for k in graph.kernels]
    assert [k["nodes"] for k in record.kernels] == [k.nodes for k in graph.kernels]
    assert sum(record.ops.values()) == len(graph.ops)


class WithFallbacks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        h = torch.special.bessel_j0(h)  # explain: eager
        return h.softmax(-1) + 1


def test_explain_names_the_eager_ops_with_reason_and_line():
    model = WithFallbacks().eval()
    x = torch.randn(4, 16)
    with torch.no_grad():
        report = kiln.explain(model, x, print_summary=False)
    (graph,) = report.graphs
    (eager,) = graph.eager_ops
    assert eager.op == "aten.special_bessel_j0.default"
    assert eager.where == f"{__file__}:{line_of('# explain: ' + 'eager', __file__)}"
    assert eager.code.startswith("h = torch.special.bessel_j0(h)")
    assert eager.reason == "op not supported by Kiln"
    assert graph.partitions == 2 and len(graph.kernels) >= 2
    assert all(o.runs_in == "kiln" for o in graph.ops if o.op != eager.op)
    text = str(report)
    assert f"eager: aten.special_bessel_j0.default at {__file__}:" in text

    # The compile agrees: the same op falls back, the rest is Kiln's.
    torch._dynamo.reset()
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend="kiln")(x), model(x))
    (record,) = kiln.compile_records()
    assert [f["op"] for f in record.fallbacks] == [eager.op]
    assert len(record.kernels) == len(graph.kernels)


def test_forced_ops_are_reported_as_forced():
    model = MLP().eval()
    with torch.no_grad():
        report = kiln.explain(model, *model.make_inputs(), force_eager=["aten.relu"],
                              print_summary=False)
    eager = report.graphs[0].eager_ops
    assert eager and all(o.op.startswith("aten.relu") for o in eager)
    assert all("force_eager" in o.reason for o in eager)


def breaks(x):
    y = torch.tanh(x) * 2
    print("side effect")  # explain: break
    return torch.relu(y) + 1


def test_explain_reports_graph_breaks_with_their_line(capsys):
    report = kiln.explain(breaks, torch.randn(8), check_dynamic=False)
    assert report.dynamo_graphs == 2 and len(report.graphs) == 2
    (brk,) = report.graph_breaks
    assert brk.where and brk.where.endswith(f"{THIS_FILE}:{line_of('# explain: ' + 'break', __file__)}")
    assert "print" in brk.reason or "builtin" in brk.reason.lower()
    assert "graph break at" in capsys.readouterr().out


def test_training_reports_forward_and_backward_without_touching_grads():
    model = MLP().train()
    (x,) = model.make_inputs()
    report = kiln.explain(model, x, print_summary=False, check_dynamic=False)
    kinds = [g.kind for g in report.graphs]
    assert kinds == ["forward", "backward"], kinds
    assert all(p.grad is None for p in model.parameters())
    assert report.eager_ops == 0
    assert all(g.kernels for g in report.graphs)


def test_recompile_notes_for_static_and_dynamic_sizes():
    def scatter_rows(x, index, src):
        return torch.relu(x).scatter_add(0, index, src) * 2

    x = torch.randn(6, 4)
    index = torch.randint(0, 6, (3, 4))
    src = torch.randn(3, 4)
    report = kiln.explain(scatter_rows, x, index, src, print_summary=False)
    assert report.eager_ops == 0
    notes = "\n".join(report.recompiles)
    assert "static sizes for" in notes and "[6, 4]" in notes
    assert "a new input size recompiles once" in notes
    # Scatters need static sizes: with symbolic ones, that op leaves Kiln.
    assert report.dynamic_eager_ops is not None
    assert [o.op for o in report.dynamic_eager_ops] == ["aten.scatter_add.default"]
    assert "aten.scatter_add.default" in notes
    assert "a different dtype, device" in notes

    dynamic = kiln.explain(scatter_rows, x, index, src, dynamic=True, print_summary=False)
    assert dynamic.graphs[0].symbols
    assert dynamic.dynamic_eager_ops is None
    assert "symbolic sizes for" in "\n".join(dynamic.recompiles)
    assert [o.op for o in dynamic.graphs[0].eager_ops] == ["aten.scatter_add.default"]


def test_explanation_is_plain_data():
    model = MLP().eval()
    with torch.no_grad():
        report = kiln.explain(model, *model.make_inputs(), print_summary=False)
    data = report.to_dict()
    assert data["target"] == "cpu" and data["graphs"][0]["kernels"]
    import json

    json.dumps(data)


def test_explain_validates_options():
    with pytest.raises(ValueError, match="unknown kiln option"):
        kiln.explain(torch.relu, torch.randn(2), bogus=1)
    with pytest.raises(ValueError):
        kiln.explain(torch.relu, torch.randn(2), target="cpu:no-such-cpu")


def test_the_recompiles_explain_predicts_are_the_ones_that_happen():
    model = MLP().eval()
    with torch.no_grad():
        report = kiln.explain(model, *model.make_inputs(batch=8), print_summary=False)
    notes = "\n".join(report.recompiles)
    assert "static sizes for L['x'] [8, 256]" in notes
    assert "_parameters" not in notes  # the model's own weights are not inputs
    assert "a new input size recompiles once" in notes
    assert report.dynamic_eager_ops == []

    torch._dynamo.reset()
    compiled = torch.compile(model, backend="kiln", options={"fallback": "error"})
    with torch.no_grad():
        for batch in (8, 5, 21, 64):
            (x,) = model.make_inputs(batch=batch)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    records = assert_kiln_ran(strict=True)
    # One static graph, then one symbolic one for every later batch size.
    assert len(records) == 2, records
    assert not records[0].symbols and records[1].symbols


def test_a_compile_failure_at_one_op_sends_only_that_op_to_eager(monkeypatch):
    """As the backend does: the ops the compiler's error names go to eager, and
    the rest of the graph is split again and still forms kernels."""
    import json

    from kiln import _C

    real = _C.compiler.form_kernels

    def fails_at_tanh(graph_json, target):
        names = [n["name"] for n in json.loads(graph_json)["nodes"]
                 if n["target"] == "aten.tanh.default"]
        if names:
            err = _C.CompileError(f'stage failed:\nloc("{names[0]}"): injected failure')
            err.nodes = names
            raise err
        return real(graph_json, target)

    monkeypatch.setattr(_C.compiler, "form_kernels", fails_at_tanh)

    def f(x, w):
        h = torch.relu(x @ w)
        return torch.tanh(h) * 2 + h.sum(-1, keepdim=True)

    report = kiln.explain(f, torch.randn(5, 8), torch.randn(8, 8), print_summary=False,
                          check_dynamic=False)
    (graph,) = report.graphs
    (eager,) = graph.eager_ops
    assert eager.op == "aten.tanh.default"
    assert eager.reason.startswith("Kiln failed to compile it: ")
    assert graph.kernels and graph.partitions >= 2 and graph.errors
    assert len(graph.kiln_ops) == len(graph.ops) - 1


def test_keyword_arguments_reach_the_model():
    def scaled(x, *, scale):
        return torch.relu(x) * scale

    report = kiln.explain(scaled, torch.randn(4, 4), kwargs={"scale": 3.0},
                          print_summary=False, check_dynamic=False)
    assert report.graphs and report.eager_ops == 0


def test_backward_needs_something_to_differentiate():
    with pytest.raises(ValueError, match="backward=True"):
        kiln.explain(torch.tanh, torch.randn(3), backward=True, print_summary=False)
    model = MLP().train()
    (x,) = model.make_inputs()
    # A bound method of the module: its parameters are found.
    report = kiln.explain(model.forward, x, backward=True, print_summary=False,
                          check_dynamic=False)
    assert [g.kind for g in report.graphs] == ["forward", "backward"]


def test_a_failing_dynamic_check_keeps_the_report(monkeypatch):
    import sys

    explain_module = sys.modules["kiln.explain"]  # (kiln.explain is the function)

    real = explain_module._capture

    def capture(model, inputs, kwargs, opts, dynamic, backward):
        if dynamic:
            raise RuntimeError("data-dependent guard")
        return real(model, inputs, kwargs, opts, dynamic, backward)

    monkeypatch.setattr(explain_module, "_capture", capture)
    report = kiln.explain(torch.relu, torch.randn(4), print_summary=False)
    assert report.graphs and report.dynamic_eager_ops is None
    assert any("failed: RuntimeError: data-dependent guard" in n for n in report.recompiles)
