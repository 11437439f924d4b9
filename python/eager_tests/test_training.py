"""Training on the kiln device, eagerly, against the same loop on the CPU:
the zoo's training loops and the one-line-switch script
(examples/train_gpt2.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kiln.testing import training

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name,batch", [("mlp", 8), ("mlp", 3), ("cnn", 4), ("bert", 2), ("gpt2", 3)])
def test_zoo_loops_train_on_kiln_as_on_cpu(name, batch, assert_trains_like_cpu):
    assert_trains_like_cpu(getattr(training, name)(batch), steps=4, kernel_share=0.95)


def run_example(device: str, tmp_path: Path, *flags: str) -> list[float]:
    losses = tmp_path / f"{device}.json"
    subprocess.run([sys.executable, str(ROOT / "examples" / "train_gpt2.py"), "--device", device,
                    "--losses", str(losses), *flags], check=True, capture_output=True, text=True, timeout=300,
                   env={**os.environ, "KILN_EAGER_FALLBACK": "allow"})
    return json.loads(losses.read_text())


def test_one_line_switch_script_matches_cpu(tmp_path):
    """The plain GPT-2 script (AdamW, DataLoader with pinned memory, gradient
    clipping, a checkpoint saved and loaded) with --device kiln instead of
    cpu: 20 steps, dropout off, the same losses within float tolerance."""
    cpu = run_example("cpu", tmp_path, "--dropout", "0")
    on_kiln = run_example("kiln", tmp_path, "--dropout", "0")
    assert len(on_kiln) == 20
    assert on_kiln == pytest.approx(cpu, rel=2e-3)


def test_one_line_switch_script_compiled_matches_eager_cpu(tmp_path):
    """The same script under torch.compile(backend="kiln") on the device."""
    cpu = run_example("cpu", tmp_path, "--dropout", "0", "--steps", "6")
    compiled = run_example("kiln", tmp_path, "--dropout", "0", "--steps", "6", "--compile")
    assert compiled == pytest.approx(cpu, rel=2e-3)


def test_one_line_switch_script_with_dropout_trains(tmp_path):
    losses = run_example("kiln", tmp_path, "--steps", "6")
    assert all(torch.isfinite(torch.tensor(losses)))
