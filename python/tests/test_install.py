"""`pip wheel .` builds a wheel that installs into a fresh virtual environment,
outside the repository, and compiles a model there after `import torch` alone.

The wheel is built by the plain command, with pip's build isolation: pip
makes a build environment with scikit-build-core and torch==2.13.0, and
CMake and ninja build in build-wheel/, which shares ccache's entries with
build/. The fresh environment gets torch==2.13.0 as the wheel's dependency,
from pip's usual sources.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

# A wheel build and a fresh environment: minutes, so nightly.
pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NATIVE_TOOLS = ("kiln-compile", "kiln-run", "kiln-opt", "kiln-import-fx")
PYTHON_TOOLS = ("kiln-inspect", "kiln-import", "kiln-cache")

MODEL = textwrap.dedent("""
    import sys
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).eval()
    compiled = torch.compile(model, backend="kiln", options={"fallback": "error"})
    with torch.no_grad():
        for batch in (4, 13):
            x = torch.randn(batch, 32)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)

    import kiln  # only now: the entry point loaded it
    records = kiln.compile_records()
    assert records and all(r.status == "compiled" and r.kernel_count for r in records), records
    assert "site-packages" in kiln.__file__ and not kiln.__file__.startswith(sys.argv[1]), kiln.__file__
    print("compiled", len(records), "graphs in", kiln.__file__)
""")


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (
        f"{' '.join(map(str, command))} failed ({result.returncode}):\n"
        f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result


def _clean_env() -> dict[str, str]:
    """The environment without anything pointing into the repository."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KILN_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", str(ROOT), "-w", str(out)],
         timeout=3600)
    (found,) = out.glob("kiln-*.whl")
    return found


def test_the_wheel_holds_the_package_extension_and_tools(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(archive.read(n).decode() for n in names
                            if n.endswith(".dist-info/entry_points.txt"))
        metadata = next(archive.read(n).decode() for n in names
                        if n.endswith(".dist-info/METADATA"))
        archive.extractall(tmp_path)
    assert any(n.startswith("kiln/_C") and n.endswith(".so") for n in names)
    assert "kiln/backend.py" in names and "kiln/explain.py" in names
    scripts = {Path(n).name for n in names if ".data/scripts/" in n}
    assert scripts == set(NATIVE_TOOLS), scripts
    for tool in PYTHON_TOOLS:
        assert f"{tool} = kiln." in entry_points
    assert "[torch_dynamo_backends]\nkiln = kiln.backend:kiln_backend" in entry_points
    assert "Requires-Dist: torch==2.13.0" in metadata
    # Nothing may point into the build tree: the run paths are the package's
    # own ($ORIGIN) and the system's LLVM.
    binaries = [p for p in tmp_path.rglob("*") if p.is_file() and
                (p.suffix == ".so" or p.name in NATIVE_TOOLS)]
    assert len(binaries) == 5
    for binary in binaries:
        dynamic = _run(["readelf", "-d", str(binary)]).stdout
        for line in dynamic.splitlines():
            if "RUNPATH" in line or "RPATH" in line:
                paths = line.split("[", 1)[1].rstrip("]").split(":")
                assert all(p.startswith("$ORIGIN") or p.startswith("/usr/lib") for p in paths), (
                    binary, paths)


def test_the_wheel_compiles_a_model_in_a_fresh_environment(wheel, tmp_path):
    venv = tmp_path / "venv"
    env = _clean_env()
    base_python = getattr(sys, "_base_executable", sys.executable)
    _run([base_python, "-m", "venv", str(venv)], env=env, timeout=300)
    python = venv / "bin" / "python"
    # torch==2.13.0 comes in as the wheel's dependency.
    _run([str(python), "-m", "pip", "install", "-q", str(wheel)], env=env, cwd=tmp_path,
         timeout=1800)

    script = tmp_path / "model.py"
    script.write_text(MODEL)
    result = _run([str(python), str(script), str(ROOT)], env=env, cwd=tmp_path, timeout=600)
    assert "compiled 2 graphs in" in result.stdout or "compiled 1 graphs in" in result.stdout

    # The commands, from the environment's bin/, outside the repository.
    for tool in NATIVE_TOOLS + PYTHON_TOOLS:
        assert (venv / "bin" / tool).exists(), tool
    help_text = _run([str(venv / "bin" / "kiln-run"), "--help"], env=env, cwd=tmp_path)
    assert "kiln-run" in help_text.stdout + help_text.stderr
    graph = tmp_path / "g.mlir"
    graph.write_text(textwrap.dedent("""
        func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
          %0 = kiln_graph.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
          return %0 : tensor<4x8xf32>
        }
    """))
    _run([str(venv / "bin" / "kiln-compile"), str(graph), "-o", str(tmp_path / "g.kiln")],
         env=env, cwd=tmp_path)
    ran = _run([str(venv / "bin" / "kiln-run"), str(tmp_path / "g.kiln"), "--random"],
               env=env, cwd=tmp_path)
    assert "float32[4x8]" in ran.stdout
    _run([str(venv / "bin" / "kiln-cache"), "info"], env={**env, "KILN_CACHE_DIR": str(tmp_path / "c")},
         cwd=tmp_path)
