"""dump_dir contents, dump_inputs replay, kiln.inspect and python -m kiln.dump."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import torch

import kiln
import kiln.inspect as kinspect
from kiln import _C
from kiln_test_utils import compile_kiln, line_of

pytestmark = pytest.mark.e2e

THIS_FILE = os.path.abspath(__file__)
STAGE_FILES = ("00-graph.mlir", "01-kernels.mlir", "02-plan.mlir", "kernels/kernels.ll", "kernels/kernels.s")
ARTIFACT_FILES = ("fx_graph.py", "graph.json", "artifact.kiln", "summary.json", *STAGE_FILES)


class Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.fc(x)).softmax(-1)  # kiln-test: small
        return y * torch.tensor([1.0, 2.0, 3.0])  # a lifted constant


def with_unsupported(x: torch.Tensor) -> torch.Tensor:
    y = x * 2 + 1
    return torch.special.bessel_j0(y).relu()  # kiln-test: unsupported


SMALL_LINE = line_of("# " + "kiln-test: small", THIS_FILE)
UNSUPPORTED_LINE = line_of("# " + "kiln-test: unsupported", THIS_FILE)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """graph_0: Small (compiled whole), graph_1: with_unsupported (split), graph_2/3: a training step."""
    root = tmp_path_factory.mktemp("dumps")
    options = {"dump_dir": str(root), "dump_inputs": True}
    torch._dynamo.reset()
    torch.manual_seed(0)
    with torch.no_grad():
        compile_kiln(Small().eval(), **options)(torch.randn(2, 4))
        compile_kiln(with_unsupported, **options)(torch.randn(3, 2))
    train = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh())
    compile_kiln(train, **options)(torch.randn(2, 3)).sum().backward()
    torch._dynamo.reset()
    return root


def summary(path: Path) -> dict:
    return json.loads((path / "summary.json").read_text())


def test_every_folder_has_its_files(dumps):
    assert sorted(p.name for p in dumps.iterdir()) == ["graph_0", "graph_1", "graph_2", "graph_3"]
    for name in ("graph_0", "graph_2", "graph_3"):
        for f in (*ARTIFACT_FILES, "inputs.npz", "outputs.npz"):
            assert (dumps / name / f).is_file(), f"{name}/{f}"
    split = dumps / "graph_1"
    for f in ("fx_graph.py", "fx_graph_split.py", "graph.json", "summary.json", "inputs.npz", "outputs.npz"):
        assert (split / f).is_file(), f
    for part in ("partition_0", "partition_1"):  # x * 2 + 1 before bessel_j0, relu after
        for f in (*ARTIFACT_FILES, "inputs.npz", "outputs.npz"):
            assert (split / part / f).is_file(), f"{part}/{f}"


def test_summary_lists_kernels_with_ops_and_source_lines(dumps):
    s = summary(dumps / "graph_0")
    assert s["status"] == "compiled" and s["kind"] == "inference"
    assert s["kernel_count"] == len(s["kernels"]) > 0
    for k in s["kernels"]:
        assert set(k) == {"name", "workgroups", "ops", "locations", "nodes", "partition"}
        assert k["workgroups"] >= 1 and k["ops"] and k["partition"] is None
    matmul = next(k for k in s["kernels"] if "matmul" in k["ops"])
    assert {"relu", "softmax"} <= set(matmul["ops"])
    assert f"{THIS_FILE}:{SMALL_LINE}" in matmul["locations"]

    s = summary(dumps / "graph_1")
    assert s["status"] == "partitioned" and s["partitions"] == 2
    assert [k["partition"] for k in s["kernels"]] == sorted(k["partition"] for k in s["kernels"])
    assert {k["partition"] for k in s["kernels"]} == {0, 1}
    assert s["kernel_count"] == len(s["kernels"])
    (fallback,) = s["fallbacks"]
    assert fallback["op"] == "aten.special_bessel_j0.default" and fallback["node"] == "special_bessel_j0"
    assert fallback["line"] == UNSUPPORTED_LINE
    part = summary(dumps / "graph_1" / "partition_1")
    assert part["partition"] == 1 and part["kernels"] and part["kernel_count"] == len(part["kernels"])
    assert any(f"{THIS_FILE}:{UNSUPPORTED_LINE}" in k["locations"] for k in part["kernels"])


def replay_folders(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("artifact.kiln"))


def test_dumped_inputs_replay_the_artifacts(dumps):
    folders = replay_folders(dumps)
    assert len(folders) == 5  # graph_0, two partitions, forward, backward
    for folder in folders:
        graph = json.loads((folder / "graph.json").read_text())
        with np.load(folder / "inputs.npz") as npz:
            assert npz.files == [f"arg{i}" for i in range(len(graph["inputs"]))], folder
            inputs = [torch.from_numpy(npz[name]) for name in npz.files]
        for spec, t in zip(graph["inputs"], inputs):
            assert list(t.shape) == spec["shape"], (folder, spec)
        with np.load(folder / "outputs.npz") as npz:
            expected = [torch.from_numpy(npz[name]) for name in npz.files]
        checksums = summary(folder)["output_checksums"]
        assert len(checksums) == len(expected) > 0, folder

        exe = _C.runtime.Executable((folder / "artifact.kiln").read_bytes())
        actual = exe.run(inputs)
        assert len(actual) == len(expected), folder
        for a, e, c in zip(actual, expected, checksums):
            torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5)
            assert a.double().sum().item() == pytest.approx(c, rel=1e-4, abs=1e-4), folder
            assert e.double().sum().item() == pytest.approx(c, rel=1e-12, abs=1e-12)


def test_graph_inputs_include_lifted_constants(dumps):
    graph = json.loads((dumps / "graph_0" / "graph.json").read_text())
    with np.load(dumps / "graph_0" / "inputs.npz") as npz:
        last = npz[f"arg{len(graph['inputs']) - 1}"]
    assert graph["inputs"][-1]["name"].startswith("_tensor_constant")
    np.testing.assert_array_equal(last, np.array([1.0, 2.0, 3.0], dtype=np.float32))


def test_no_inputs_without_dump_inputs(tmp_path):
    compile_kiln(lambda x: x.relu() + 1, dump_dir=str(tmp_path))(torch.randn(3))
    assert (tmp_path / "graph_0" / "artifact.kiln").is_file()
    assert not list(tmp_path.rglob("*.npz"))
    assert summary(tmp_path / "graph_0")["output_checksums"] is None


def test_records_match_summaries(tmp_path):
    compile_kiln(with_unsupported, dump_dir=str(tmp_path))(torch.randn(3, 2))
    (record,) = kiln.compile_records()
    s = summary(tmp_path / "graph_0")
    assert record.kernel_count == s["kernel_count"] == len(record.kernels) > 0
    assert record.kernels == s["kernels"]


# ---------------------------------------------------------------------------
# kiln.inspect


def run_inspect(capsys, *args: str) -> tuple[int, str, str]:
    code = kinspect.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_inspect_lists_graphs(dumps, capsys):
    code, out, _ = run_inspect(capsys, dumps)
    assert code == 0
    lines = out.splitlines()
    assert "4 graphs" in lines[0]
    assert lines[1].split()[:4] == ["graph", "kind", "status", "ops"]
    row = {line.split()[0]: line.split() for line in lines[2:]}
    kernels = summary(dumps / "graph_0")["kernel_count"]
    assert row["graph_0"][1:3] == ["inference", "compiled"] and row["graph_0"][4] == str(kernels)
    assert row["graph_1"][2] == "partitioned" and row["graph_1"][5] == "1"
    assert row["graph_2"][1] == "forward" and row["graph_3"][1] == "backward"


def test_inspect_one_graph_shows_kernels(dumps, capsys):
    code, out, _ = run_inspect(capsys, dumps, "--graph", "graph_0")
    assert code == 0
    for k in summary(dumps / "graph_0")["kernels"]:
        assert k["name"] in out and ", ".join(k["ops"]) in out
    assert f"{THIS_FILE}:{SMALL_LINE}" in out and "torch.relu(self.fc(x)).softmax(-1)" in out
    assert "Fallbacks: none" in out and "Stage times" in out and "artifact.kiln" in out

    code, out, _ = run_inspect(capsys, dumps, "--graph", "graph_1")
    assert code == 0
    assert "partition_0/kernel_" in out and "partition_1/kernel_" in out
    assert f"aten.special_bessel_j0.default (special_bessel_j0) at {THIS_FILE}:{UNSUPPORTED_LINE}" in out
    assert "partition_1/artifact.kiln" in out


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)


def node_svg(section: str, name: str) -> str:
    """The SVG of the Graphviz node titled name."""
    for chunk in section.split('<g id="node')[1:]:
        if f"<title>{name}</title>" in chunk:
            return chunk
    raise AssertionError(f"no node {name} drawn")


@pytest.mark.skipif(not kinspect.shutil.which("dot"), reason="Graphviz dot is not installed")
def test_inspect_html_draws_each_graph(dumps, tmp_path, capsys):
    report = tmp_path / "report.html"
    code, out, _ = run_inspect(capsys, dumps, "--html", report)
    assert code == 0 and f"wrote {report}" in out
    page = report.read_text()
    parser = _Tags()
    parser.feed(page)
    parser.close()
    assert parser.tags.count("svg") == page.count("<svg") == 4
    assert "html" in parser.tags and "table" in parser.tags

    sections = dict(re.findall(r'<section id="(graph_\d+)">(.*?)</section>', page, re.S))
    colors = kinspect.kernel_colors(kinspect.load_dump(dumps / "graph_0")[0])
    relu = node_svg(sections["graph_0"], "relu")
    assert any(f'fill="{c}"' in relu for c in colors.values())
    bessel = node_svg(sections["graph_1"], "special_bessel_j0")
    assert f'stroke="{kinspect.FALLBACK_LINE}"' in bessel and "stroke-dasharray" in bessel
    assert "stroke-dasharray" not in node_svg(sections["graph_1"], "relu")
    assert "aten.special_bessel_j0.default" in sections["graph_1"]


@pytest.mark.parametrize("graph", ["graph_2", "graph_3"])
def test_picture_colours_library_modules_by_kernel(dumps, graph):
    """graph_2/3 (a training step of nn.Sequential(Linear, Tanh)) have no source
    lines of the user's own: nodes map to kernels through their FX node names."""
    (g,) = kinspect.load_dump(dumps / graph)
    roles, notes = kinspect.node_roles(g)
    kernel_nodes = {name for name, role in roles.items() if role.kind == "kernel"}
    assert kernel_nodes, (roles, notes)
    in_kernels = {node for k in g.kernels for node in k["nodes"]}
    assert kernel_nodes == in_kernels
    colors = kinspect.kernel_colors(g)
    dot = kinspect.graph_dot(g, roles)
    for name in kernel_nodes:
        line = next(l for l in dot.splitlines() if l.strip().startswith(f'"{name}" ['))
        assert colors[roles[name].kernels[0]] in line, line


def test_inspect_html_without_dot(dumps, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(kinspect.shutil, "which", lambda name: None)
    report = tmp_path / "report.html"
    code, _, err = run_inspect(capsys, dumps, "--graph", "graph_1", "--html", report)
    assert code == 0
    page = report.read_text()
    assert "<svg" not in page and "Graphviz `dot` was not found" in page
    assert "Graphviz" in err
    assert "partition_0/kernel_" in page


def test_inspect_errors_are_one_line(tmp_path, capsys):
    for args in ([tmp_path / "missing"], [tmp_path]):
        code, out, err = run_inspect(capsys, *args)
        assert code == 2 and not out
        assert len(err.strip().splitlines()) == 1 and err.startswith("kiln-inspect: error: ")
    (tmp_path / "graph_0").mkdir()
    (tmp_path / "graph_0" / "summary.json").write_text("{}")
    code, _, err = run_inspect(capsys, tmp_path, "--graph", "graph_7")
    assert code == 2 and "graph_7" in err and "graph_0" in err


def test_kernel_membership_from_mlir_text():
    mlir = """\
module {
  func.func @g(%arg0: tensor<2xf32> loc("<fx graph json>":0:0)) -> tensor<2xf32> {
    %0 = kiln_kernel.kernel "kernel_0_add" extent(2) ins(%arg0 : tensor<2xf32>) -> (tensor<2xf32>) {
    ^bb0(%arg1: tensor<2xf32> loc("view"(#loc1))):
      %1 = kiln_graph.add %arg1, %arg1 {note = "}"} : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32> loc(#loc2)
      %2 = kiln_graph.relu %1 : tensor<2xf32> -> tensor<2xf32> loc("relu"(#loc1))
      kiln_kernel.yield %2 : tensor<2xf32> loc(#loc2)
    } loc(#loc2)
    %3 = kiln_graph.reshape %0 : tensor<2xf32> -> tensor<2xf32> loc(#loc3)
    %4 = kiln_kernel.kernel "kernel_1_mul" extent(2) ins(%3 : tensor<2xf32>) -> (tensor<2xf32>) {
    ^bb0(%arg1: tensor<2xf32> loc("<fx graph json>":0:0)):
      %5 = kiln_graph.mul %arg1, %arg1 : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32> loc(#loc4)
      kiln_kernel.yield %5 : tensor<2xf32> loc(#loc4)
    } loc(#loc4)
    return %4 : tensor<2xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("/src/model.py":3:0)
#loc2 = loc("add"(#loc1))
#loc3 = loc("view_1"(#loc1))
#loc4 = loc(fused[#loc2, "mul"(#loc1)])
"""
    assert kinspect.kernel_membership(mlir) == {
        "add": ["kernel_0_add", "kernel_1_mul"],
        "relu": ["kernel_0_add"],
        "mul": ["kernel_1_mul"],
    }


# ---------------------------------------------------------------------------
# python -m kiln.dump

SCRIPT = """\
import sys
import torch

print("script argv", sys.argv[1:], __name__)
f = torch.compile(lambda x: (x @ x.t()).relu() + 1, backend="kiln", dynamic=False)
f(torch.randn(3, 2))
"""


def test_python_m_kiln_dump_runs_a_script(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    done = subprocess.run(
        [sys.executable, "-m", "kiln.dump", "--inputs", str(script), "--flag", "x"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "script argv ['--flag', 'x'] __main__" in done.stdout
    graph = tmp_path / "kiln_dump" / "graph_0"
    for f in ("summary.json", "artifact.kiln", "inputs.npz", "outputs.npz"):
        assert (graph / f).is_file(), f
    assert f"1 graph dumped to {tmp_path / 'kiln_dump'}" in done.stderr
    row = next(line for line in done.stderr.splitlines() if line.startswith("graph_0 "))
    assert row.split()[1:3] == ["inference", "compiled"]


def test_python_m_kiln_dump_missing_script(tmp_path, capsys):
    from kiln.dump import main

    assert main([str(tmp_path / "nope.py")]) == 2
    assert "no such script" in capsys.readouterr().err
