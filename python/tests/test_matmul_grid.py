"""Matmuls whose workgroups split the columns as well as the rows.

A matmul kernel (with its pointwise epilogue) runs on a grid of workgroups:
row chunks, and the count left per row chunk over the columns. With few rows
(decode-sized M) that is what puts every core to work. Each case is checked
against eager and asserts that the matmul kernel ran on several workgroups.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import kiln

pytestmark = [pytest.mark.e2e, pytest.mark.device("cpu")]  # the CPU matmul's workgroup grid


def f32(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def run(fn, *inputs, dynamic: bool = False):
    """Compiles fn with Kiln (fallback="error"), checks it against eager and
    returns the compile records of the graphs it made."""
    expected = fn(*inputs)
    before = len(kiln.compile_records())
    compiled = torch.compile(fn, backend="kiln", options={"fallback": "error"}, dynamic=dynamic)
    actual = compiled(*inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
    records = kiln.compile_records()[before:]
    assert records and all(r.status == "compiled" for r in records), records
    return compiled, records


def matmul_workgroups(records) -> list[int]:
    return [k["workgroups"] for r in records for k in r.kernels if "matmul" in k["name"]]


CASES = [
    # (id, fn, inputs): M below a register tile, at one, and past one.
    ("mm_one_row", torch.mm, lambda: (f32(1, 2048), f32(2048, 2100))),
    ("mm_rows_below_a_tile", torch.mm, lambda: (f32(5, 1024), f32(1024, 2100))),
    ("mm_tile_and_tail", torch.mm, lambda: (f32(13, 1024), f32(1024, 1100))),
    ("linear_one_row", F.linear, lambda: (f32(1, 2048), f32(2100, 2048))),
    ("linear_tile_and_tail", F.linear, lambda: (f32(7, 1024), f32(1100, 1024), f32(1100))),
    (
        "addmm_gelu_epilogue",
        lambda bias, a, b: F.gelu(torch.addmm(bias, a, b)),
        lambda: (f32(2050), f32(3, 1100), f32(1100, 2050)),
    ),
]


@pytest.mark.parametrize("fn, make", [pytest.param(f, m, id=n) for n, f, m in CASES])
def test_small_m_splits_columns(fn, make):
    _, records = run(fn, *make())
    counts = matmul_workgroups(records)
    assert counts and max(counts) > 1, [r.kernels for r in records]


def test_many_rows_split_on_a_grid():
    # 100 rows: two row chunks of the 64-row (AVX-512) or 48-row (AVX2)
    # blocks, each split over columns; results must not overlap or miss any.
    a, b = f32(100, 600), f32(600, 1500)
    _, records = run(lambda x, y: torch.relu(x @ y + 1.0), a, b)
    assert max(matmul_workgroups(records)) > 2


def test_symbolic_rows_split_columns(tmp_path):
    # One artifact for every M >= 2 (the grid is sized at launch from the
    # size symbol); its matmul kernel splits the columns as well as the rows,
    # as its dump says. (Dynamo specializes M = 1: a static graph, the
    # `one_row` cases above.) A module's weight keeps N static, as in a model.
    torch.manual_seed(0)
    linear = torch.nn.Linear(1024, 1100, bias=False)
    compiled = torch.compile(linear, backend="kiln", dynamic=True,
                             options={"fallback": "error", "dump_dir": str(tmp_path)})
    with torch.no_grad():
        for m in (4, 2, 3, 17, 64):
            x = f32(m, 1024)
            torch.testing.assert_close(compiled(x), linear(x), rtol=1e-4, atol=1e-4)
    (record,) = kiln.compile_records()
    assert record.status == "compiled" and record.symbols, record
    assert matmul_workgroups([record]) == [-1], record.kernels  # sized at launch
    attributes = _kernel_attributes(tmp_path / "graph_0" / "05-loops.mlir", "kernel_0_matmul")
    assert "kiln_kernel.workgroup_extent = #map" in attributes, attributes  # rows: symbolic
    assert "kiln_kernel.column_extent = 1100" in attributes, attributes


def _kernel_attributes(stage: Path, kernel: str) -> str:
    """The attribute dictionary of a kernel function in a dumped stage."""
    for line in stage.read_text().splitlines():
        if f"func.func private @{kernel}(" in line:
            return line[line.index(" attributes {"):]
    raise AssertionError(f"no kernel {kernel} in {stage}")


def test_reduction_epilogue_keeps_whole_rows():
    # softmax over the columns needs whole rows: whatever kernels it forms,
    # the result is eager's.
    run(lambda x, y: torch.softmax(x @ y, dim=-1), f32(3, 1024), f32(1024, 2100))
