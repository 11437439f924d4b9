"""Compiled functions called from several Python threads at once, and
compiles running while another thread calls: every result is correct.
(Throughput by calling threads: benchmarks/bench_concurrency.py.)"""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

import kiln

pytestmark = pytest.mark.e2e


def _mlp(width: int = 256) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, width), nn.GELU(), nn.Linear(width, 64),
                         nn.LayerNorm(64)).eval()


class _Attention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


def _inputs(thread: int, count: int, batch: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(1000 * thread)
    return [torch.randn(batch, 64, generator=generator) for _ in range(count)]


def _run_threads(targets) -> None:
    """Runs each callable in its own thread; re-raises the first failure."""
    errors: list[BaseException] = []

    def guarded(fn):
        def run():
            try:
                fn()
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)
        return run

    threads = [threading.Thread(target=guarded(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("batch", [3, 64])
def test_eight_threads_call_one_compiled_function(batch):
    """Eight threads share one compiled model (its executable, arena pool and
    packed weights); each checks every one of its results against eager's."""
    model = _mlp()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="kiln", dynamic=False,
                             options={"fallback": "error", "cache": False})
    iterations = 40
    work = {i: _inputs(i, iterations, batch) for i in range(8)}
    with torch.no_grad():
        expected = {i: [model(x) for x in xs] for i, xs in work.items()}
        compiled(work[0][0])  # compiled once, before the threads race

    def caller(i: int):
        def run():
            with torch.no_grad():
                for x, e in zip(work[i], expected[i]):
                    torch.testing.assert_close(compiled(x), e, rtol=1e-4, atol=1e-5)
        return run

    _run_threads([caller(i) for i in range(8)])
    records = kiln.compile_records()
    assert len(records) == 1 and records[0].status == "compiled", records


def test_compiles_in_two_threads_while_a_third_calls():
    """Two threads compile (and run) different models while a third keeps
    calling a model compiled before: the compiler's shared state (thread
    pool, kernel object cache, records) and the runtime's stay consistent."""
    served = _mlp(128)
    torch._dynamo.reset()
    options = {"fallback": "error", "cache": False}
    serving = torch.compile(served, backend="kiln", dynamic=False, options=options)
    inputs = _inputs(99, 8, 16)
    with torch.no_grad():
        expected = [served(x) for x in inputs]
        serving(inputs[0])
    stop = threading.Event()
    calls = []

    def call():
        with torch.no_grad():
            while not stop.is_set():
                for x, e in zip(inputs, expected):
                    torch.testing.assert_close(serving(x), e, rtol=1e-4, atol=1e-5)
                    calls.append(1)

    def compile_model(make, shape):
        def run():
            try:
                model = make()
                x = torch.randn(*shape)
                with torch.no_grad():
                    compiled = torch.compile(model, backend="kiln", dynamic=False,
                                             options=options)
                    torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
            finally:
                compiled_done.append(1)
                if len(compiled_done) == 2:
                    stop.set()
        return run

    compiled_done: list[int] = []
    conv = lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten()).eval()
    attention = lambda: _Attention(32, 4).eval()
    _run_threads([call, compile_model(conv, (2, 3, 12, 12)),
                  compile_model(attention, (2, 7, 32))])
    assert calls, "the serving thread never ran"
    statuses = [r.status for r in kiln.compile_records()]
    assert len(statuses) >= 3 and all(s == "compiled" for s in statuses), statuses
