"""The offline tools on real dumps: kiln-run replays a dumped graph without
Python and prints the checksum Python computes for the same outputs."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build")) / "bin"


def _tool(name: str) -> Path:
    """The built tool. A missing one fails the test (a suite that skipped it
    would be green without testing it)."""
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{path} is not built: build the tools (cmake --build {BIN.parent}) "
                    "or set KILN_BUILD_DIR to the build folder")
    return path


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _dump_graph(tmp_path: Path):
    def fn(x, w):
        return torch.softmax(torch.relu(x @ w.t()) * 0.5, dim=-1)

    x = torch.randn(16, 32)
    w = torch.randn(24, 32)
    compiled = torch.compile(
        fn, backend="kiln", dynamic=False,
        options={"fallback": "error", "dump_dir": str(tmp_path), "dump_inputs": True},
    )
    out = compiled(x, w)
    graph = tmp_path / "graph_0"
    assert (graph / "artifact.kiln").exists() and (graph / "inputs.npz").exists()
    return graph, out


def test_kiln_run_replays_a_dump_with_the_same_checksum(tmp_path):
    kiln_run = _tool("kiln-run")
    graph, out = _dump_graph(tmp_path)
    result = subprocess.run(
        [str(kiln_run), str(graph / "artifact.kiln"), "--inputs", str(graph / "inputs.npz")],
        capture_output=True, text=True, check=True,
    )
    match = re.search(r"output 0: float32\[16x24\] checksum=(\S+)", result.stdout)
    assert match, result.stdout
    assert float(match.group(1)) == pytest.approx(out.double().sum().item(), rel=1e-6)


def test_kiln_run_replays_a_dynamic_dump(tmp_path):
    """A dynamic graph's dump replays too: inputs.npz holds what the
    executable takes (SymInt arguments that are input sizes dropped, a size
    that is no input's dim as a 0-d int64, 0-d tensors kept 0-d)."""
    kiln_run = _tool("kiln-run")

    def fn(x: torch.Tensor, n: int, scale: torch.Tensor) -> torch.Tensor:
        return (x * scale).relu().sum(-1) + torch.arange(n).sum() + x.shape[0]

    x, scale = torch.randn(6, 5), torch.tensor(0.5, dtype=torch.float64)
    compiled = torch.compile(
        fn, backend="kiln", dynamic=True,
        options={"fallback": "error", "dump_dir": str(tmp_path), "dump_inputs": True},
    )
    out = compiled(x, 7, scale)
    torch.testing.assert_close(out, fn(x, 7, scale))
    graph = tmp_path / "graph_0"
    result = subprocess.run(
        [str(kiln_run), str(graph / "artifact.kiln"), "--inputs", str(graph / "inputs.npz")],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    match = re.search(r"output 0: float\S*\[6\] checksum=(\S+)", result.stdout)
    assert match, result.stdout
    assert float(match.group(1)) == pytest.approx(out.double().sum().item(), rel=1e-6)


def test_kiln_compile_rebuilds_the_dumped_graph(tmp_path):
    kiln_compile = _tool("kiln-compile")
    kiln_run = _tool("kiln-run")
    graph, out = _dump_graph(tmp_path)
    rebuilt = tmp_path / "rebuilt.kiln"
    subprocess.run([str(kiln_compile), str(graph / "graph.json"), "-o", str(rebuilt)],
                   capture_output=True, text=True, check=True)
    result = subprocess.run([str(kiln_run), str(rebuilt), "--inputs", str(graph / "inputs.npz")],
                            capture_output=True, text=True, check=True)
    match = re.search(r"checksum=(\S+)", result.stdout)
    assert match and float(match.group(1)) == pytest.approx(out.double().sum().item(), rel=1e-6)


def test_kiln_run_rejects_a_corrupt_artifact(tmp_path):
    kiln_run = _tool("kiln-run")
    graph, _ = _dump_graph(tmp_path)
    data = bytearray((graph / "artifact.kiln").read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupt = tmp_path / "corrupt.kiln"
    corrupt.write_bytes(bytes(data))
    result = subprocess.run([str(kiln_run), str(corrupt), "--random"], capture_output=True, text=True)
    assert result.returncode == 1
    assert "corrupt" in result.stderr.lower(), result.stderr


def test_failed_compile_writes_a_reproducer(tmp_path, monkeypatch, caplog):
    import kiln._C as C

    real_compile = C.compiler.compile

    def failing_compile(*args, **kwargs):
        raise C.CompileError("stage 'llvm' failed: injected by the test")

    monkeypatch.setattr(C.compiler, "compile", failing_compile)
    x = torch.randn(4, 8)
    with caplog.at_level("WARNING", logger="kiln"):
        out = torch.compile(lambda t: t.exp() + 1, backend="kiln", dynamic=False,
                            options={"dump_dir": str(tmp_path)})(x)
    torch.testing.assert_close(out, x.exp() + 1)  # fell back to eager
    message = "\n".join(r.getMessage() for r in caplog.records)
    match = re.search(r"Reproduce with: (kiln-compile (\S+) -o (\S+) --target cpu)", message)
    assert match, message
    repro = Path(match.group(2)).parent
    assert (repro / "graph.json").exists() and (repro / "error.txt").exists()
    assert "kiln_graph.exp" in (repro / "graph.mlir").read_text()
    assert "injected by the test" in (repro / "error.txt").read_text()

    # The printed command reproduces the compile with the offline tool.
    monkeypatch.setattr(C.compiler, "compile", real_compile)
    kiln_compile = _tool("kiln-compile")
    subprocess.run([str(kiln_compile), match.group(2), "-o", match.group(3)], check=True,
                   capture_output=True)
    assert Path(match.group(3)).exists()


class _Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))  # the line kiln-import's locations point at


def test_kiln_import_turns_a_pt2_into_kiln_graph_mlir(tmp_path):
    from kiln.import_export import main as kiln_import

    program = torch.export.export(_Small().eval(), (torch.randn(2, 8),))
    pt2 = tmp_path / "small.pt2"
    torch.export.save(program, str(pt2))
    mlir = tmp_path / "small.mlir"
    assert kiln_import([str(pt2), "-o", str(mlir)]) == 0
    text = mlir.read_text()
    assert "kiln_graph.matmul" in text and "kiln_graph.relu" in text
    assert f'"{Path(__file__).resolve()}"' in text  # user source lines, not torch's linear.py
    # The offline tools take it from here.
    kiln_compile, kiln_run = _tool("kiln-compile"), _tool("kiln-run")
    artifact = tmp_path / "small.kiln"
    subprocess.run([str(kiln_compile), str(mlir), "-o", str(artifact)], check=True,
                   capture_output=True)
    result = subprocess.run([str(kiln_run), str(artifact), "--random"], check=True,
                            capture_output=True, text=True)
    assert "output 0: float32[2x4]" in result.stdout


def test_kiln_import_reports_a_missing_file(tmp_path, capsys):
    from kiln.import_export import main as kiln_import

    assert kiln_import([str(tmp_path / "nope.pt2")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_dump_has_each_kernels_llvm_ir_and_assembly(tmp_path):
    graph, _ = _dump_graph(tmp_path)
    summary = __import__("json").loads((graph / "summary.json").read_text())
    for kernel in summary["kernels"]:
        ll = (graph / "kernels" / f"{kernel['name']}.ll").read_text()
        asm = (graph / "kernels" / f"{kernel['name']}.s").read_text()
        # Exported under a content-hashed symbol, which the header names.
        symbol = re.match(rf"; {kernel['name']}: exported as (kiln_[0-9a-f]+) ", ll).group(1)
        assert f"define void @{symbol}(" in ll
        assert asm.startswith(f"# {kernel['name']}: exported as {symbol} ")
        assert f"\n{symbol}:" in asm


def test_kiln_run_saves_its_random_inputs_bfloat16_as_float32(tmp_path):
    """--save-inputs writes the inputs it ran on (--random's, seeded), so that
    a reference can be computed from them elsewhere (the GPU check does);
    .npy has no bfloat16, so bfloat16 tensors are saved widened to float32,
    exactly, outputs too."""
    import numpy as np

    kiln_run = _tool("kiln-run")
    fn = lambda a, b: (a @ b).relu()  # noqa: E731
    dump = tmp_path / "dump"
    a, b = torch.randn(5, 7, dtype=torch.bfloat16), torch.randn(7, 3, dtype=torch.bfloat16)
    torch.compile(fn, backend="kiln", dynamic=False, options={"fallback": "error", "dump_dir": str(dump)})(a, b)
    artifact = dump / "graph_0" / "artifact.kiln"
    saved_in, saved_out = tmp_path / "in.npz", tmp_path / "out.npz"
    subprocess.run([str(kiln_run), str(artifact), "--random", "--seed", "3", "--save-inputs", str(saved_in),
                    "--save-outputs", str(saved_out), "--quiet"], check=True, capture_output=True, text=True)
    inputs, outputs = np.load(saved_in), np.load(saved_out)
    assert inputs.files == ["input_0", "input_1"] and outputs.files == ["output_0"]
    x, y = (torch.from_numpy(inputs[key]) for key in inputs.files)
    assert x.dtype == torch.float32 and x.shape == (5, 7) and torch.equal(x, x.bfloat16().float())
    want = fn(x.bfloat16(), y.bfloat16())
    torch.testing.assert_close(torch.from_numpy(outputs["output_0"]), want.float(), rtol=1e-2, atol=1e-2)
