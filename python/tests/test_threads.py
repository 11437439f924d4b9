"""Kiln's runtime threads follow torch.get_num_threads() unless
KILN_NUM_THREADS says otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from kiln import _C
from kiln_test_utils import assert_kiln_ran

pytestmark = [pytest.mark.e2e, pytest.mark.device("cpu")]  # the CPU device's thread pool


def test_calls_use_torch_threads():
    if os.environ.get("KILN_NUM_THREADS"):
        pytest.skip("KILN_NUM_THREADS fixes the count")
    saved = torch.get_num_threads()
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).eval()
    x = torch.randn(32, 64)
    try:
        for threads in (1, max(2, saved)):
            torch.set_num_threads(threads)
            compiled = torch.compile(model, backend="kiln", options={"fallback": "error"})
            with torch.no_grad():
                torch.testing.assert_close(compiled(x), model(x))
            assert_kiln_ran(strict=True)
            assert _C.runtime.num_threads() == min(threads, os.cpu_count() or 1)
    finally:
        torch.set_num_threads(saved)


def test_kiln_num_threads_overrides_torch():
    script = textwrap.dedent("""
        import torch, kiln
        from kiln import _C
        torch.set_num_threads(1)
        model = torch.nn.Linear(8, 8).eval()
        with torch.no_grad():
            torch.compile(model, backend="kiln")(torch.randn(4, 8))
        print("threads", _C.runtime.num_threads())
    """)
    env = {**os.environ, "KILN_NUM_THREADS": "3", "KILN_CACHE": "0"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "threads 3" in out.stdout


def test_held_memory_counts_the_arenas_of_live_executables():
    # Two matmul kernels with an intermediate between them: it lives in the
    # graph's arena, allocated at the first call and held after it.
    import gc

    import kiln

    def fn(x, w1, w2):
        return torch.relu(x @ w1) @ w2

    x, w1, w2 = torch.randn(64, 128), torch.randn(128, 256), torch.randn(256, 32)
    gc.collect()
    before = kiln.held_memory()
    compiled = torch.compile(fn, backend="kiln", options={"fallback": "error"}, dynamic=False)
    torch.testing.assert_close(compiled(x, w1, w2), fn(x, w1, w2), rtol=1e-4, atol=1e-4)
    assert_kiln_ran(strict=True)
    held = kiln.held_memory() - before
    assert held >= 64 * 256 * 4, held
    compiled(x, w1, w2)  # a later call reuses the arena
    assert kiln.held_memory() - before == held
