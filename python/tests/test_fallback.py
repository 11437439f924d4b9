"""Unsupported ops: fallback="eager" runs them in PyTorch, fallback="error" names them."""

from __future__ import annotations

import json
import logging
import os

import pytest
import torch

import kiln
from kiln import _C
from kiln_test_utils import compile_kiln, line_of, unwrap_backend_error

pytestmark = pytest.mark.e2e

THIS_FILE = os.path.abspath(__file__)


def with_unsupported(x):
    y = x * 2 + 1
    z = torch.special.bessel_j0(y)  # kiln-test: unsupported
    return z.relu() - 1


UNSUPPORTED_LINE = line_of("# " + "kiln-test: unsupported", THIS_FILE)


def kiln_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "kiln" and r.levelno == logging.WARNING]


def test_unsupported_op_runs_eagerly_with_one_warning(caplog):
    line = UNSUPPORTED_LINE
    x = torch.randn(5, 3)
    compiled = compile_kiln(with_unsupported)
    with caplog.at_level(logging.WARNING, logger="kiln"):
        for _ in range(3):
            torch.testing.assert_close(compiled(x), with_unsupported(x), rtol=1e-4, atol=1e-5)
        x2 = torch.randn(5, 3)
        torch.testing.assert_close(compiled(x2), with_unsupported(x2), rtol=1e-4, atol=1e-5)

    messages = kiln_warnings(caplog)
    assert len(messages) == 1, messages
    assert "aten.special_bessel_j0.default" in messages[0]
    assert f"{THIS_FILE}:{line}" in messages[0]
    assert "torch.special.bessel_j0(y)" in messages[0]

    (record,) = kiln.compile_records()
    assert record.status == "partitioned"
    assert record.partitions == 2  # x * 2 + 1 before bessel_j0, relu - 1 after
    assert [f["op"] for f in record.fallbacks] == ["aten.special_bessel_j0.default"]
    assert record.fallbacks[0]["line"] == line


def test_same_line_warns_once_across_graphs(caplog):
    compiled_a = compile_kiln(with_unsupported)
    compiled_b = compile_kiln(lambda x: with_unsupported(x) * 3)
    with caplog.at_level(logging.WARNING, logger="kiln"):
        compiled_a(torch.randn(4, 2))
        compiled_b(torch.randn(4, 2))
    assert len(kiln_warnings(caplog)) == 1
    assert len(kiln.compile_records()) == 2


def test_unsupported_op_with_fallback_error_names_op_and_line(monkeypatch):
    line = UNSUPPORTED_LINE
    calls = []
    real_compile = _C.compiler.compile
    monkeypatch.setattr(_C.compiler, "compile", lambda *a: calls.append(a) or real_compile(*a))

    with pytest.raises(Exception) as info:
        compile_kiln(with_unsupported, fallback="error")(torch.randn(5, 3))

    err = unwrap_backend_error(info.value)
    assert isinstance(err, kiln.UnsupportedOpError), repr(err)
    assert err.op == "aten.special_bessel_j0.default"
    assert (err.file, err.line) == (THIS_FILE, line)
    assert "torch.special.bessel_j0(y)" in err.code
    assert f"aten.special_bessel_j0.default at {THIS_FILE}:{line}" in str(err)
    assert not calls, "Kiln compiled something before reporting the unsupported op"


def test_unsupported_dtype_falls_back(caplog):
    fn = lambda x: torch.relu(x) * 2  # noqa: E731
    x = torch.randn(4, 3).to(torch.int16)
    with caplog.at_level(logging.WARNING, logger="kiln"):
        torch.testing.assert_close(compile_kiln(fn)(x), fn(x))
    messages = kiln_warnings(caplog)
    assert messages and all("int16" in m for m in messages), messages
    assert kiln.compile_records()[0].status == "eager"


def test_unsupported_dtype_with_fallback_error():
    with pytest.raises(Exception) as info:
        compile_kiln(lambda x: x * 2, fallback="error")(torch.ones(3, dtype=torch.int16))
    err = unwrap_backend_error(info.value)
    assert isinstance(err, kiln.UnsupportedOpError)
    assert "int16" in err.reason


def test_compile_error_falls_back_to_eager(monkeypatch, caplog):
    def failing_compile(graph_json, target, keep_stages):
        raise _C.CompileError("model.py:3:5: error: 'kiln_graph.add' op injected failure")

    monkeypatch.setattr(_C.compiler, "compile", failing_compile)
    fn = lambda x: torch.tanh(x) + 1  # noqa: E731
    x = torch.randn(3, 4)
    with caplog.at_level(logging.WARNING, logger="kiln"):
        torch.testing.assert_close(compile_kiln(fn)(x), fn(x))
    messages = kiln_warnings(caplog)
    assert len(messages) == 1 and "injected failure" in messages[0], messages
    (record,) = kiln.compile_records()
    assert record.status == "eager" and record.errors


def test_compile_error_in_partition_runs_partition_eagerly(monkeypatch, caplog):
    real_compile = _C.compiler.compile

    def compile_fails_on_relu(graph_json, target, keep_stages):
        if "aten.relu.default" in graph_json:
            raise _C.CompileError("injected failure in the relu partition")
        return real_compile(graph_json, target, keep_stages)

    monkeypatch.setattr(_C.compiler, "compile", compile_fails_on_relu)
    x = torch.randn(5, 3)
    with caplog.at_level(logging.WARNING, logger="kiln"):
        torch.testing.assert_close(compile_kiln(with_unsupported)(x), with_unsupported(x), rtol=1e-4, atol=1e-5)
    (record,) = kiln.compile_records()
    assert record.partitions == 1 and len(record.errors) == 1


def test_compile_error_with_fallback_error_propagates(monkeypatch):
    def failing_compile(graph_json, target, keep_stages):
        raise _C.CompileError("injected failure")

    monkeypatch.setattr(_C.compiler, "compile", failing_compile)
    with pytest.raises(Exception) as info:
        compile_kiln(lambda x: x + 1, fallback="error")(torch.randn(3))
    err = unwrap_backend_error(info.value)
    assert isinstance(err, _C.CompileError) and "injected failure" in str(err)


def test_dump_dir(tmp_path):
    x = torch.randn(5, 3)
    compile_kiln(with_unsupported, dump_dir=str(tmp_path))(x)
    compile_kiln(lambda t: (t @ t.t()).softmax(-1), dump_dir=str(tmp_path))(x)

    whole = tmp_path / "graph_1"
    for name in ("fx_graph.py", "graph.json", "artifact.kiln", "summary.json"):
        assert (whole / name).is_file(), name
    assert sorted(p.name for p in whole.glob("[0-9][0-9]-*.mlir"))
    summary = __import__("json").loads((whole / "summary.json").read_text())
    assert summary["status"] == "compiled"
    assert summary["kernel_count"] > 0 and summary["artifact_bytes"] == (whole / "artifact.kiln").stat().st_size
    assert summary["ops"]["aten._softmax.default"] == 1

    split = tmp_path / "graph_0"
    summary = __import__("json").loads((split / "summary.json").read_text())
    assert summary["status"] == "partitioned"
    assert summary["fallbacks"][0]["op"] == "aten.special_bessel_j0.default"
    assert (split / "partition_0" / "graph.json").is_file()
    assert (split / "partition_1" / "artifact.kiln").is_file()


def test_force_eager_ops_run_in_pytorch_even_under_fallback_error(caplog):
    """force_eager (for testing boundaries) is not an error under fallback="error",
    is not warned about, and the records say why the ops ran in eager."""

    def f(x, w):
        return torch.relu(x @ w) + 1

    x, w = torch.randn(4, 8), torch.randn(8, 8)
    with caplog.at_level(logging.WARNING, logger="kiln"):
        out = compile_kiln(f, fallback="error", force_eager=["aten.mm"])(x, w)
    torch.testing.assert_close(out, f(x, w), rtol=1e-5, atol=1e-6)
    (record,) = kiln.compile_records()
    assert record.status == "partitioned" and record.kernel_count > 0
    assert [fb["op"] for fb in record.fallbacks] == ["aten.mm.default"]
    assert "force_eager" in record.fallbacks[0]["reason"]
    assert "running in PyTorch eager" not in caplog.text


def test_compile_error_names_the_failing_fx_node():
    graph = {
        "version": 1, "name": "g",
        "inputs": [{"name": "x", "shape": [2, 3], "dtype": "float32"}],
        "nodes": [{"name": "add_7", "target": "aten.add.Tensor",
                   "args": [{"ref": "x", "index": 0}, {"ref": "x", "index": 0}], "kwargs": {},
                   "outputs": [{"shape": [3, 3], "dtype": "float32"}], "loc": None}],
        "outputs": [{"ref": "add_7", "index": 0}],
    }
    with pytest.raises(_C.CompileError) as info:
        _C.compiler.compile(json.dumps(graph), "cpu", False)
    assert info.value.nodes == ["add_7"]


def _compile_fails_at(target: str):
    """compiler.compile that fails, located at the node, on graphs holding `target`."""
    real_compile = _C.compiler.compile

    def compile_(graph_json, target_name, keep_stages):
        names = [n["name"] for n in json.loads(graph_json)["nodes"] if n["target"] == target]
        if names:
            err = _C.CompileError(f"stage failed:\nloc(\"{names[0]}\"): injected failure")
            err.nodes = names
            raise err
        return real_compile(graph_json, target_name, keep_stages)

    return compile_


@pytest.mark.parametrize("shape", [(5, 8), (2, 3)])
def test_compile_error_at_one_op_runs_only_that_op_eagerly(monkeypatch, caplog, shape):
    """A graph Kiln supports whole, but the compiler fails at one op: that op runs
    in eager, everything else still runs in Kiln kernels, and the records say why."""
    monkeypatch.setattr(_C.compiler, "compile", _compile_fails_at("aten.tanh.default"))

    def f(x, w):
        h = torch.relu(x @ w)
        return torch.tanh(h) * 2 + h.sum(-1, keepdim=True)

    x, w = torch.randn(*shape), torch.randn(shape[1], shape[1])
    with caplog.at_level(logging.WARNING, logger="kiln"):
        torch.testing.assert_close(compile_kiln(f)(x, w), f(x, w), rtol=1e-4, atol=1e-5)
    (record,) = kiln.compile_records()
    assert record.status == "partitioned" and record.kernel_count >= 2, record
    assert [fb["op"] for fb in record.fallbacks] == ["aten.tanh.default"]
    assert record.fallbacks[0]["reason"].startswith("Kiln failed to compile it: ")
    assert "injected failure" in record.fallbacks[0]["reason"]
    assert "failed at aten.tanh.default (tanh)" in caplog.text


def test_compile_error_at_an_op_inside_a_partition(monkeypatch):
    """The same inside a partition of a split graph: the partition is split
    again around the failing op; the other partition is untouched."""
    monkeypatch.setattr(_C.compiler, "compile", _compile_fails_at("aten.mul.Tensor"))
    x = torch.randn(5, 3)
    torch.testing.assert_close(compile_kiln(with_unsupported)(x), with_unsupported(x), rtol=1e-4, atol=1e-5)
    (record,) = kiln.compile_records()
    ops = sorted(fb["op"] for fb in record.fallbacks)
    assert ops == ["aten.mul.Tensor", "aten.special_bessel_j0.default"], ops
    assert record.partitions >= 2 and record.kernel_count >= 2, record


@pytest.mark.parametrize("size", [5, 130])
def test_a_prim_whose_meta_lies_about_its_dtype_feeds_kiln_its_declared_dtype(size):
    """torch.copysign decomposes to prims.signbit, whose meta says float32
    while it returns bool; it runs in eager and feeds a Kiln partition
    typed by that meta. The boundary converts it to the declared dtype, so
    the partition gets what it was compiled for and the answer is eager's."""
    torch._dynamo.reset()
    fn = lambda a, b: torch.copysign(a, b) * 2  # noqa: E731
    a, b = torch.randn(size), torch.randn(size)
    b[0] = -0.0  # signbit, not sign: -0.0 copies its minus
    torch.testing.assert_close(compile_kiln(fn)(a, b), fn(a, b), rtol=0, atol=0)
    record = kiln.compile_records()[-1]
    assert record.status == "partitioned" and record.partitions >= 1, record
    assert any(f["op"] == "prims.signbit.default" for f in record.fallbacks), record.fallbacks


# Eager results of every dtype Kiln takes, crossing into a Kiln partition:
# each op is forced to eager, its consumer (the add) is Kiln's.
_EAGER_RESULTS = {
    torch.bool: lambda x: (x > 0) | (x < -1),
    torch.int64: lambda x: x.to(torch.int64) * 3,
    torch.int32: lambda x: x.to(torch.int32) * 3,
    torch.float16: lambda x: x.half() * 3,
    torch.bfloat16: lambda x: x.bfloat16() * 3,
    torch.float64: lambda x: x.double() * 3,
}


@pytest.mark.parametrize("dtype", list(_EAGER_RESULTS), ids=str)
def test_eager_results_of_every_dtype_cross_into_kiln(dtype):
    torch._dynamo.reset()
    make = _EAGER_RESULTS[dtype]
    fn = lambda x: make(x) + make(x * 2)  # noqa: E731
    x = torch.randn(37) * 4
    out = compile_kiln(fn, fallback="error", force_eager=["aten.mul"])(x)
    assert out.dtype == dtype
    torch.testing.assert_close(out, fn(x), rtol=0, atol=0)
    record = kiln.compile_records()[-1]
    assert record.status == "partitioned" and record.partitions >= 1, record
