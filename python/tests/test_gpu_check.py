"""The GPU check script's dry run (benchmarks/gpu/check.py): here, with no
GPU, it prepares artifacts for cuda:sm_90 with their inputs and eager
references, checks each is a valid artifact for the chip, and stops where a
CUDA driver is required. On a GPU the same folder's `run` checks and times
them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_dry_run_prepares_valid_artifacts_and_stops_before_the_driver(tmp_path):
    if not shutil.which("ptxas"):
        pytest.skip("no CUDA toolkit (ptxas) on this machine")
    out = tmp_path / "gpu-check"
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks/gpu/check.py"), "prepare", str(out),
                             "--models", "cnn", "--dry-run"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "artifacts for cuda:sm_90 are valid; stopping where a driver is required" in result.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["chip"] == "sm_90" and manifest["graphs"]
    for entry in manifest["graphs"]:
        graph = out / entry["graph"]
        assert entry["kernels"] > 0
        for name in (entry["artifact"], "inputs.npz", "outputs.npz"):
            assert (graph / name).stat().st_size > 0, name
    # The kernel set at real sizes (traced on fake tensors: nothing that
    # size ran here), compiled for the chip, for `run` to check and time
    # there against torch.
    kernels = {entry["name"]: entry for entry in manifest["kernels"]}
    assert {"add", "softmax", "layer_norm", "attention_bf16", "matmul_bf16_8192",
            "matmul_f32_1024"} <= kernels.keys()
    for entry in kernels.values():
        assert entry["kernels"] > 0 and (out / entry["graph"] / entry["artifact"]).stat().st_size > 0
    assert kernels["matmul_bf16_8192"]["shapes"] == [[8192, 8192], [8192, 8192]]
    # The folder is self-contained: its own kiln-run and script; `run` there,
    # without a driver, says so and fails.
    rerun = subprocess.run([sys.executable, str(out / "check.py"), "run", str(out)],
                           capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 1 and "stopping where a driver is required" in rerun.stdout
