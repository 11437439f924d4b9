"""The runtime built alone (-DKILN_ENABLE_COMPILER=OFF), as on a GPU machine
without LLVM 22: kiln-run, and a kiln._C that runs artifacts compiled here
and refuses to compile with a clear error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def _configure_and_build(build: Path, python: bool, *targets: str) -> None:
    cmake = shutil.which("cmake")
    if not cmake:
        pytest.fail("cmake is not installed (run .ci/setup)")
    subprocess.run([cmake, "-G", "Ninja", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                    "-DKILN_ENABLE_COMPILER=OFF", f"-DKILN_ENABLE_PYTHON={'ON' if python else 'OFF'}",
                    f"-DPython3_EXECUTABLE={sys.executable}"],
                   check=True, capture_output=True, text=True)
    cache = (build / "CMakeCache.txt").read_text()
    assert "MLIR_DIR" not in cache and "LLVM_DIR" not in cache, "a runtime-only build looked for MLIR"
    built = subprocess.run(["ninja", "-C", str(build), *targets], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-2000:]


def _artifact(tmp_path: Path) -> tuple[Path, torch.Tensor, torch.Tensor]:
    torch._dynamo.reset()

    def fn(x):
        return torch.softmax(x * 2.0, dim=-1) + 1.0

    x = torch.randn(8, 33)
    dump = tmp_path / "dump"
    torch.compile(fn, backend="kiln", dynamic=False,
                  options={"fallback": "error", "dump_dir": str(dump), "dump_inputs": True})(x)
    torch._dynamo.reset()
    return dump / "graph_0" / "artifact.kiln", x, fn(x)


def test_kiln_run_builds_without_mlir_and_runs_an_artifact_compiled_here(tmp_path):
    build = tmp_path / "build"
    _configure_and_build(build, False, "kiln-run")
    kiln_run = build / "bin" / "kiln-run"
    linked = subprocess.run(["ldd", str(kiln_run)], capture_output=True, text=True).stdout
    assert "LLVM" not in linked and "MLIR" not in linked
    artifact, _, _ = _artifact(tmp_path)
    ran = subprocess.run([str(kiln_run), str(artifact), "--random"], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert "output 0: float32[8x33]" in ran.stdout


_RUN_WITHOUT_COMPILER = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("_C", sys.argv[1])
C = importlib.util.module_from_spec(spec)
spec.loader.exec_module(C)
x, expected = torch.load(sys.argv[3])
exe = C.runtime.Executable(open(sys.argv[2], "rb").read())
(out,) = exe.run([x])
torch.testing.assert_close(out, expected)
assert C.compiler.available is False
try:
    C.compiler.compile("{}", "cpu")
except C.CompileError as err:
    print("refused:", err)
"""


@pytest.mark.slow  # builds the extension's torch files again: minutes
def test_the_torch_bridge_builds_without_mlir_and_runs_but_does_not_compile(tmp_path):
    build = tmp_path / "build"
    _configure_and_build(build, True, "_C")
    (extension,) = (build / "python" / "kiln").glob("_C*.so")
    linked = subprocess.run(["ldd", str(extension)], capture_output=True, text=True).stdout
    assert "libMLIR" not in linked and "libLLVM" not in linked
    artifact, x, expected = _artifact(tmp_path)
    torch.save((x, expected), tmp_path / "io.pt")
    ran = subprocess.run([sys.executable, "-c", _RUN_WITHOUT_COMPILER, str(extension), str(artifact),
                          str(tmp_path / "io.pt")], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ""})
    assert ran.returncode == 0, ran.stderr
    assert ("refused: this Kiln was built without its compiler (KILN_ENABLE_COMPILER=OFF): it loads "
            "and runs artifacts compiled elsewhere") in ran.stdout
    assert "kiln._C.compiler.compile" in ran.stdout
