"""The on-disk compile cache (kiln/cache.py) and the in-process sharing of
identical kernels."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import kiln
from kiln.cache import ArtifactCache, main as cache_main
from kiln_test_utils import assert_kiln_ran

pytestmark = pytest.mark.e2e


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)


def _run(model: torch.nn.Module, x: torch.Tensor, cache_dir: Path, **options) -> torch.Tensor:
    torch._dynamo.reset()
    kiln.reset()
    opts = {"fallback": "error", "cache": True, "cache_dir": str(cache_dir), **options}
    with torch.no_grad():
        out = torch.compile(model, backend="kiln", options=opts)(x)
        torch.testing.assert_close(out, model(x))
    assert_kiln_ran(strict=True)
    return out


def _only_record() -> kiln.CompileRecord:
    records = kiln.compile_records()
    assert len(records) == 1, records
    return records[0]


@pytest.fixture
def model_and_input():
    return MLP().eval(), torch.randn(4, 16)


def test_second_compile_loads_the_artifact_from_the_cache(model_and_input, tmp_path):
    model, x = model_and_input
    _run(model, x, tmp_path)
    cold = _only_record()
    assert cold.cache_hits == 0 and cold.kernel_count > 0
    assert len(ArtifactCache(tmp_path).entries()) == 1

    _run(model, x, tmp_path)
    warm = _only_record()
    assert warm.cache_hits == 1
    assert warm.status == "compiled" and warm.kernel_count == cold.kernel_count
    assert [k["ops"] for k in warm.kernels] == [k["ops"] for k in cold.kernels]
    assert "native" not in warm.stage_times_ms and "cache" in warm.stage_times_ms


def test_the_key_covers_input_shapes_and_the_cache_can_be_turned_off(model_and_input, tmp_path):
    model, x = model_and_input
    _run(model, x, tmp_path)
    _run(model, torch.randn(7, 16), tmp_path)
    assert _only_record().cache_hits == 0
    assert len(ArtifactCache(tmp_path).entries()) == 2

    off = tmp_path / "off"
    _run(model, x, off, cache=False)
    assert not off.exists()


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_a_bad_entry_is_reported_once_and_rebuilt(model_and_input, tmp_path, caplog, damage):
    model, x = model_and_input
    _run(model, x, tmp_path)
    [entry] = ArtifactCache(tmp_path).entries()
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        entry.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    elif damage == "garbage":
        entry.write_bytes(os.urandom(len(data)))
    else:
        entry.write_bytes(b"")

    with caplog.at_level(logging.WARNING, logger="kiln"):
        _run(model, x, tmp_path)
    assert _only_record().cache_hits == 0, "the bad entry was not trusted"
    warnings = [r.getMessage() for r in caplog.records if "unusable" in r.getMessage()]
    assert len(warnings) == 1 and str(entry) in warnings[0]
    assert entry.read_bytes()[:8] == data[:8] and len(entry.read_bytes()) > 100, "rebuilt"

    _run(model, x, tmp_path)
    assert _only_record().cache_hits == 1


def test_a_dump_always_compiles_every_stage(model_and_input, tmp_path):
    model, x = model_and_input
    _run(model, x, tmp_path / "cache")
    _run(model, x, tmp_path / "cache", dump_dir=str(tmp_path / "dump"))
    assert _only_record().cache_hits == 0
    [graph] = (tmp_path / "dump").iterdir()
    assert (graph / "06-llvm.mlir").exists() and (graph / "kernels" / "kernels.s").exists()
    kernel_files = sorted(p.name for p in (graph / "kernels").glob("kernel_*.s"))
    assert kernel_files, "one assembly file per kernel"


def test_an_unwritable_cache_warns_and_compiles(model_and_input, tmp_path, caplog):
    model, x = model_and_input
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="kiln"):
        _run(model, x, blocker / "cache")
    assert _only_record().status == "compiled"
    assert any("cannot write the compile cache" in r.getMessage() for r in caplog.records)


def test_kiln_cache_lists_and_clears(model_and_input, tmp_path, capsys):
    model, x = model_and_input
    _run(model, x, tmp_path)
    (tmp_path / "v1" / "ab").mkdir(parents=True, exist_ok=True)  # a real key may start "ab"
    (tmp_path / "v1" / "ab" / ("ab" + "0" * 62 + ".kiln")).write_bytes(b"junk")
    assert cache_main(["list", "--dir", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert "2 entries" in listing
    assert "kernels" in listing and "error:" in listing, "a bad entry is listed, not fatal"
    assert cache_main(["clear", "--dir", str(tmp_path)]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert ArtifactCache(tmp_path).entries() == []


def test_processes_share_one_cache_folder(model_and_input, tmp_path):
    """Two processes compiling the same graph at once into one folder: both
    succeed, and they leave one valid entry (writes are atomic renames)."""
    script = textwrap.dedent(f"""
        import torch, kiln
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 8)).eval()
        x = torch.randn(4, 16)
        f = torch.compile(model, backend="kiln",
                          options={{"fallback": "error", "cache": True,
                                   "cache_dir": {str(tmp_path)!r}}})
        with torch.no_grad():
            torch.testing.assert_close(f(x), model(x))
        record = kiln.compile_records()[0]
        assert record.status == "compiled" and record.kernel_count > 0, record
        print("hits", record.cache_hits)
    """)
    env = {**os.environ, "KILN_CACHE": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "hits" in out
    cache = ArtifactCache(tmp_path)
    [entry] = cache.entries()
    assert not list(tmp_path.rglob("*.tmp")), "no temporary files left behind"


def test_repeated_layers_compile_their_kernels_once(tmp_path):
    """The same layer three times: its kernels are compiled once and shared
    (the other two layers reuse them), and a second compile in this process
    compiles nothing natively. Whether the weight is packed, by a kernel of
    its own compiled once, depends on the CPU target."""
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(24, 24), torch.nn.GELU(), torch.nn.LayerNorm(24))
    model = torch.nn.Sequential(*[layer for _ in range(3)]).eval()
    x = torch.randn(5, 24)
    _run(model, x, tmp_path, cache=False)
    first = _only_record()
    layer_kernels = len(first.kernels) // 3
    assert layer_kernels > 0 and first.kernels_reused >= 2 * layer_kernels, first
    assert first.kernels_compiled <= first.kernels_reused, first

    _run(model, x, tmp_path, cache=False)
    again = _only_record()
    assert again.kernels_compiled == 0
    assert again.kernels_reused == first.kernels_compiled + first.kernels_reused
