"""Soak and leak checks: many calls of one compiled model, and many graphs
compiled and thrown away, with the process's resident memory, open file
descriptors and mapped kernel libraries measured along the way.

benchmarks/soak.py runs the long versions (100,000 calls, 1,000 graphs);
python/tests/test_soak.py short ones.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn


@dataclass(frozen=True)
class ProcessState:
    rss_bytes: int
    open_fds: int
    kernel_libraries: int  # kernel libraries mapped (memfd or file)

    @staticmethod
    def now() -> "ProcessState":
        gc.collect()
        with open("/proc/self/statm") as f:
            rss_pages = int(f.read().split()[1])
        libraries = set()
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and "kiln-kernels" in parts[5]:
                    libraries.add(parts[5].strip())
        return ProcessState(rss_pages * os.sysconf("SC_PAGE_SIZE"),
                            len(os.listdir("/proc/self/fd")), len(libraries))


@dataclass
class SoakResult:
    """States measured after the warm-up and then at checkpoints."""

    what: str
    iterations: int = 0
    states: list[tuple[int, ProcessState]] = field(default_factory=list)

    @property
    def first(self) -> ProcessState:
        return self.states[0][1]

    @property
    def last(self) -> ProcessState:
        return self.states[-1][1]

    def rss_growth_bytes(self) -> int:
        return self.last.rss_bytes - self.first.rss_bytes

    def summary(self) -> str:
        mb = 1 << 20
        return (f"{self.what}: {self.iterations} iterations; RSS {self.first.rss_bytes / mb:.1f} "
                f"-> {self.last.rss_bytes / mb:.1f} MB, open fds {self.first.open_fds} -> "
                f"{self.last.open_fds}, kernel libraries mapped {self.first.kernel_libraries} "
                f"-> {self.last.kernel_libraries}")


def _model(width: int) -> nn.Module:
    torch.manual_seed(width)
    return nn.Sequential(nn.Linear(32, width), nn.GELU(), nn.Linear(width, 16),
                         nn.LayerNorm(16)).eval()


def soak_calls(calls: int, checkpoints: int = 10, warmup: int = 200,
               progress: Callable[[str], None] | None = None) -> SoakResult:
    """Calls one compiled model `calls` times on fresh inputs, checking a
    result now and then against eager's."""
    model = _model(64)
    compiled = torch.compile(model, backend="kiln", dynamic=False,
                             options={"fallback": "error", "cache": False})
    result = SoakResult("calls of one compiled model", calls)
    x = torch.randn(8, 32)
    with torch.no_grad():
        for _ in range(warmup):
            compiled(x)
        model(x)  # eager's first call allocates too (the checks below make it)
        result.states.append((0, ProcessState.now()))
        every = max(1, calls // checkpoints)
        for i in range(1, calls + 1):
            x = torch.randn(8, 32)
            out = compiled(x)
            if i % every == 0:
                torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-5)
                result.states.append((i, ProcessState.now()))
                if progress:
                    progress(f"  {i}/{calls} calls: {result.states[-1][1]}")
    return result


def soak_compiles(graphs: int, checkpoints: int = 10, warmup: int = 5,
                  progress: Callable[[str], None] | None = None,
                  backend: str = "kiln") -> SoakResult:
    """Compiles `graphs` distinct models (each a new width, so no cache
    serves it), runs each once, and drops it. backend="eager" measures what
    Dynamo itself keeps per graph (torch._dynamo.reset() does not give all
    of it back: about 200 KB a graph with torch 2.13), the baseline for
    Kiln's own share."""
    result = SoakResult(f"graphs compiled ({backend}) and discarded", graphs)
    options = {"fallback": "error", "cache": False} if backend == "kiln" else None

    def one(width: int) -> None:
        model = _model(width)
        compiled = torch.compile(model, backend=backend, dynamic=False, options=options)
        x = torch.randn(4, 32)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
        del compiled
        torch._dynamo.reset()  # drops Dynamo's cache entry, and with it the executable

    for width in range(8, 8 + warmup):
        one(width)
    result.states.append((0, ProcessState.now()))
    every = max(1, graphs // checkpoints)
    for i in range(1, graphs + 1):
        one(8 + warmup + i)
        if i % every == 0:
            result.states.append((i, ProcessState.now()))
            if progress:
                progress(f"  {i}/{graphs} graphs: {result.states[-1][1]}")
    return result
