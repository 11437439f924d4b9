"""Throughput of one compiled model called from 1, 2 and 8 Python threads at
once: calls per second over all threads, Kiln and eager side by side.

Each thread calls the model in a loop on its own input for a fixed time
(after a warm-up); the model is compiled once, before the threads start.
The small MLP's launches split into several workgroups, so every call uses
the runtime's thread pool: this measures whether independent calls proceed
in parallel or queue behind one another. Prints the CPU it ran on and a
markdown table.

    python benchmarks/bench_concurrency.py
    python benchmarks/bench_concurrency.py --threads 1,2,4,8 --seconds 3
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import torch
from torch import nn

import kiln
from kiln.testing.machine import cpu_name


def mlp(batch: int) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).eval()
    return model, torch.randn(batch, 64)


def calls_per_second(fn, x: torch.Tensor, threads: int, seconds: float) -> float:
    """Calls of fn completed per second by `threads` threads together."""
    counts = [0] * threads
    start = threading.Barrier(threads + 1)
    stop = threading.Event()

    def worker(i: int) -> None:
        xi = x + i  # each thread its own input
        with torch.no_grad():
            for _ in range(20):
                fn(xi)
            start.wait()
            while not stop.is_set():
                fn(xi)
                counts[i] += 1

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    elapsed = time.perf_counter() - began
    for t in pool:
        t.join()
    return sum(counts) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2,8", help="comma-separated thread counts")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per count")
    args = parser.parse_args()
    counts = [int(n) for n in args.threads.split(",")]

    model, x = mlp(args.batch)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="kiln", options={"fallback": "error"})
    with torch.no_grad():
        compiled(x)
    assert all(r.status == "compiled" for r in kiln.compile_records())
    print(f"{cpu_name()}, {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()} | "
          f"MLP 64-256-64, batch {args.batch}, {args.seconds:.0f} s per count")
    print("| calling threads | Kiln calls/s | eager calls/s | Kiln vs eager |")
    print("|--:|--:|--:|--:|")
    for n in counts:
        kiln_rate = calls_per_second(compiled, x, n, args.seconds)
        eager_rate = calls_per_second(model, x, n, args.seconds)
        print(f"| {n} | {kiln_rate:,.0f} | {eager_rate:,.0f} | {kiln_rate / eager_rate:.2f}x |",
              flush=True)


if __name__ == "__main__":
    main()
