"""kiln.compiler.CompileService: one object serializes, looks up the cache,
compiles, loads and records; its results are bound classes; and only the
errors a graph Kiln cannot take send it to eager (a bug propagates)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import kiln
from kiln.compiler import ArtifactLoadError, CompileService
from kiln.fx_serialize import serialize_graph
from kiln.options import KilnOptions

pytestmark = pytest.mark.e2e


def _aten_graph(batch: int = 4) -> torch.fx.GraphModule:
    from torch.fx.experimental.proxy_tensor import make_fx

    return make_fx(lambda x, w: torch.relu(x @ w) * 2, tracing_mode="fake")(
        torch.randn(batch, 8), torch.randn(8, 16))


@pytest.mark.parametrize("batch", [4, 9])
def test_compile_json_compiles_loads_and_hits_the_cache(batch, tmp_path):
    service = CompileService(KilnOptions(cache=True, cache_dir=str(tmp_path)))
    serialized = serialize_graph(_aten_graph(batch), "relu_mm")
    first = service.compile_json(serialized.graph, serialized.to_json(), "relu_mm")
    assert not first.cache_hit and first.kernel_count >= 1 and first.kernels
    assert isinstance(first.compiled, kiln._C.compiler.CompiledGraph)
    again = service.compile_json(serialized.graph, serialized.to_json(), "relu_mm")
    assert again.cache_hit and again.artifact == first.artifact
    assert [k["ops"] for k in again.kernels] == [k["ops"] for k in first.kernels]
    x, w = torch.randn(batch, 8), torch.randn(8, 16)
    for loaded in (first, again):
        (out,) = loaded.executable.run([x, w])
        torch.testing.assert_close(out, torch.relu(x @ w) * 2)


def test_compile_results_are_bound_classes():
    graph_json = serialize_graph(_aten_graph(), "relu_mm").to_json()
    compiled = kiln._C.compiler.compile(graph_json, "cpu", True)
    assert compiled.kernel_count == len(compiled.kernels) >= 1
    kernel = compiled.kernels[0]
    assert isinstance(kernel, kiln._C.compiler.KernelSummary)
    assert kernel.to_dict()["ops"] == list(kernel.ops) and "matmul" in kernel.ops
    assert [name for name, _ in compiled.stages][:3] == ["graph", "kernels", "plan"]
    assert any(name.endswith(".s") for name, _ in compiled.kernel_files)
    formed = kiln._C.compiler.form_kernels(graph_json, "cpu")
    assert formed.artifact == b"" and [k.ops for k in formed.kernels] == [k.ops for k in compiled.kernels]


def test_an_artifact_the_runtime_refuses_is_an_artifact_load_error():
    """Cross-compiled kernels do not load here: a named error, which the
    backend treats as a compile failure (fallback="error" raises it)."""
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("needs an x86-64 host to refuse AArch64 kernels")
    service = CompileService(KilnOptions(target="cpu:aarch64", cache=False))
    serialized = serialize_graph(_aten_graph(), "relu_mm")
    with pytest.raises(ArtifactLoadError, match="refused relu_mm's artifact.*cpu-aarch64"):
        service.compile_json(serialized.graph, serialized.to_json(), "relu_mm")
    assert ArtifactLoadError in service.compile_errors


def test_a_bug_in_the_compile_path_is_not_a_silent_fallback(monkeypatch):
    """Only CompileError, SerializeError and ArtifactLoadError fall back; a
    ValueError from a bug propagates instead of running the graph in eager."""
    def broken(*args, **kwargs):
        raise ValueError("a bug, not an unsupported graph")

    monkeypatch.setattr(kiln._C.compiler, "compile", broken)
    torch._dynamo.reset()
    model = torch.compile(nn.Sequential(nn.Linear(8, 4), nn.ReLU()), backend="kiln",
                          options={"cache": False})
    with pytest.raises(Exception, match="a bug, not an unsupported graph"):
        model(torch.randn(3, 8))
    assert not any(r.status == "eager" and r.ops for r in kiln.compile_records())
