"""The NVIDIA and AMD targets, compile-only (this machine has no GPU): every
zoo model's graphs compile for cuda:sm_90 (gating), cuda:sm_80 and rocm:gfx942
(three models gating, all in the slow tier), cuda:sm_90a and rocm:gfx1100
(slow tier); ptxas assembles every
kernel, and the element-wise and row kernels use no stack and spill
nothing. The graphs come from a CPU compile's dump (graph.json), the form
Dynamo and aot_autograd hand Kiln."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch

from kiln.compiler import load_extension
from kiln.testing import nvidia, zoo

BUILD = Path(os.environ.get("KILN_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))

pytestmark = pytest.mark.e2e

_C = load_extension()


def _toolkit_or_skip() -> None:
    """CI's machines have the CUDA toolkit (ptxas); elsewhere the target is
    untestable, not broken."""
    if not shutil.which("ptxas") and not Path("/usr/local/cuda/bin/ptxas").exists():
        pytest.skip("no CUDA toolkit (ptxas) on this machine")


@pytest.fixture(scope="module")
def zoo_graphs(tmp_path_factory) -> dict[str, list[Path]]:
    """Each zoo model's inference graphs (graph.json), at the small size."""
    _toolkit_or_skip()
    graphs = nvidia.dump_zoo_graphs(tmp_path_factory.mktemp("zoo"))
    assert all(graphs.values()), graphs
    return graphs


def _check(graphs: list[Path], chip: str) -> None:
    for graph in graphs:
        result, kernels = nvidia.compile_graph(graph, chip)
        assert result.target == f"cuda-{chip}"
        assert result.kernel_count > 0 and len(kernels) == result.kernel_count
        ptx = [text for name, text in result.kernel_files if name.endswith(".ptx")]
        assert all(f".target {chip}" in text and ".extern .func" not in text for text in ptx)
        for kernel in kernels:
            # Element-wise and row kernels (no matmul, convolution or
            # attention tile) keep everything in registers.
            if not set(kernel.ops) & {"matmul", "conv2d", "attention", "batch_matmul"}:
                assert (kernel.stack_bytes, kernel.spill_stores, kernel.spill_loads) == (0, 0, 0), \
                    (graph, kernel)


# The gating tier: every model for sm_90, three (a transformer encoder, a
# decoder, a CNN) for sm_80 and gfx942; the slow tier the rest.
_GATING = {"bert", "llama", "resnet"}


def _tiered(names) -> list:
    return [name if name in _GATING else pytest.param(name, marks=pytest.mark.slow) for name in names]


@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_zoo_model_compiles_for_nvidia_sm_90(zoo_graphs, name):
    _check(zoo_graphs[name], "sm_90")


@pytest.mark.parametrize("name", _tiered(zoo.ZOO))
def test_zoo_model_compiles_for_nvidia_sm_80(zoo_graphs, name):
    _check(zoo_graphs[name], "sm_80")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_zoo_model_compiles_for_hopper_sm_90a(zoo_graphs, name):
    _check(zoo_graphs[name], "sm_90a")


def test_cuda_target_errors_name_the_fix(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="unknown CUDA target 'cuda:sm_70'"):
        _C.compiler.target_info("cuda:sm_70")
    monkeypatch.setenv("KILN_CUDA_DRIVER", str(tmp_path / "libcuda.so.1"))
    with pytest.raises(ValueError, match="target 'cuda' compiles for the GPU found here, and there is none "
                                         r"\(no CUDA driver: cannot load .*libcuda.so.1"):
        _C.compiler.target_info("cuda")
    info = _C.compiler.target_info("cuda:sm_90")
    assert info["format"] == "cuda-sm_90" and info["cpu"] == "sm_90"


def test_target_cuda_compiles_for_the_gpu_the_driver_finds(monkeypatch):
    """On the runtime's fake libcuda, a GPU of compute capability 9.0:
    "cuda" is "cuda:sm_90a", in the target's name and so in cache keys."""
    fake = BUILD / "unittests" / "runtime" / "libkiln_fake_cuda.so"
    if not fake.exists():
        pytest.fail(f"{fake} is not built (ninja -C {BUILD})")
    monkeypatch.setenv("KILN_CUDA_DRIVER", str(fake))
    info = _C.compiler.target_info("cuda")
    assert (info["name"], info["format"], info["cpu"]) == ("cuda:sm_90a", "cuda-sm_90a", "sm_90a")
    from kiln.compiler import CompileService
    from kiln.options import KilnOptions

    service = CompileService(KilnOptions.from_dict({"target": "cuda", "cache": False}))
    assert service.target == "cuda:sm_90a"


def test_without_a_toolkit_compiling_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("KILN_CUDA_PATH", str(tmp_path / "nowhere"))
    model = torch.nn.Linear(4, 4)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="kiln", options={"fallback": "error", "dump_dir": str(tmp_path / "d")})
    with torch.no_grad():
        compiled(torch.randn(2, 4))
    torch._dynamo.reset()
    json = next((tmp_path / "d").glob("graph_*/graph.json")).read_text()
    with pytest.raises(RuntimeError, match="KILN_CUDA_PATH is .*nowhere', which is not a CUDA toolkit"):
        _C.compiler.compile(json, "cuda:sm_90")


def _check_rocm(graphs: list[Path], chip: str) -> None:
    for graph in graphs:
        result = _C.compiler.compile(graph.read_text(), f"rocm:{chip}", keep_stages=True)
        assert result.target == f"rocm-{chip}" and result.kernel_count > 0
        assembly = {name.removesuffix(".amdgcn.s"): text for name, text in result.kernel_files
                    if name.endswith(".amdgcn.s")}
        assert len(assembly) == result.kernel_count
        for kernel in result.kernels:
            text = assembly[kernel.name]
            assert f'.amdgcn_target "amdgcn-amd-amdhsa--{chip}"' in text
            # As for NVIDIA: element-wise and row kernels keep everything in
            # registers (tiled convolutions may spill).
            if not set(kernel.ops) & {"matmul", "conv2d", "attention", "batch_matmul"}:
                assert ".vgpr_spill_count: 0" in text and ".sgpr_spill_count: 0" in text, (graph, kernel.name)


def _rocm_or_skip() -> None:
    if not Path("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode").is_dir() and not Path("/opt/rocm").is_dir():
        pytest.skip("no ROCm device libraries (apt install rocm-device-libs)")


@pytest.mark.parametrize("name", _tiered(zoo.ZOO))
def test_zoo_model_compiles_for_amd_gfx942(zoo_graphs, name):
    _rocm_or_skip()
    _check_rocm(zoo_graphs[name], "gfx942")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_zoo_model_compiles_for_amd_gfx1100(zoo_graphs, name):
    _rocm_or_skip()
    _check_rocm(zoo_graphs[name], "gfx1100")


def test_rocm_target_errors_name_the_fix(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="unknown ROCm target 'rocm:gfx90a': use 'rocm:gfx942' or 'rocm:gfx1100'"):
        _C.compiler.target_info("rocm:gfx90a")
    info = _C.compiler.target_info("rocm:gfx942")
    assert info["format"] == "rocm-gfx942" and info["subgroup_size"] == 64
    assert _C.compiler.target_info("rocm:gfx1100")["subgroup_size"] == 32
