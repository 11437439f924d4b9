"""The reference models compile with fallback="error" and match eager."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import kiln
from kiln.testing.models import MLP, TransformerBlock
from kiln_test_utils import compile_kiln

pytestmark = pytest.mark.e2e

RTOL, ATOL = 1e-4, 1e-5


def _check_model(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
    model.eval()
    with torch.no_grad():
        expected = model(*inputs)
        actual = compile_kiln(model, fallback="error")(*inputs)
    torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL)
    records = kiln.compile_records()
    assert records and all(r.status == "compiled" for r in records), records
    assert sum(r.kernel_count for r in records) > 0


def test_mlp_matches_eager():
    model = MLP(256, 512, 10)
    _check_model(model, model.make_inputs(batch=8))


def test_transformer_block_matches_eager():
    model = TransformerBlock(width=256, heads=4, mlp_ratio=4)
    _check_model(model, model.make_inputs(batch=8, seq=128))


def test_transformer_block_small_matches_eager():
    model = TransformerBlock(width=32, heads=2, mlp_ratio=2)
    _check_model(model, model.make_inputs(batch=1, seq=1))


def test_mlp_training_step_matches_eager():
    """Forward and backward graphs; ops the backward needs and Kiln lacks run
    eagerly (test_training.py checks gradients more widely)."""
    eager, compiled_model = MLP(64, 32, 10), MLP(64, 32, 10)
    (x,) = eager.make_inputs(batch=4)
    target = torch.tensor([1, 0, 3, 9])

    eager_loss = torch.nn.functional.nll_loss(eager(x), target)
    eager_loss.backward()
    compiled = compile_kiln(compiled_model)
    loss = torch.nn.functional.nll_loss(compiled(x), target)
    loss.backward()

    torch.testing.assert_close(loss, eager_loss, rtol=RTOL, atol=ATOL)
    for (name, p), q in zip(compiled_model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=RTOL, atol=ATOL, msg=name)
    # Both graphs ran Kiln kernels (not only eager fallbacks).
    ran = {r.kind for r in kiln.compile_records()
           if r.kernel_count > 0 and r.status in ("compiled", "partitioned")}
    assert {"forward", "backward"} <= ran, kiln.compile_records()


def test_backend_registered_without_importing_kiln():
    """torch.compile(backend="kiln") works after `import torch` alone (entry point)."""
    code = (
        "import sys, torch\n"
        "m = torch.nn.Linear(4, 4)\n"
        "x = torch.randn(2, 4)\n"
        "y = torch.compile(m, backend='kiln')(x)\n"
        "torch.testing.assert_close(y, m(x), rtol=1e-4, atol=1e-5)\n"
        "assert 'kiln' in sys.modules\n"
        "import kiln\n"
        "records = kiln.compile_records()\n"
        "assert any(r.status in ('compiled', 'partitioned') and r.kernel_count > 0\n"
        "           for r in records), records\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
