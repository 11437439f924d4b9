#!/usr/bin/env python
"""Do Kiln's spinning workers slow the eager ops between Kiln partitions?

After a launch, Kiln's pool workers spin briefly before they sleep (the next
launch usually follows at once). In a split graph the next thing may be an
eager op instead, whose own threads then share the cores with spinners. This
measures it two ways, with medians over interleaved rounds:

  1. one eager op (a matmul, and an elementwise op, both multithreaded in
     ATen) timed right after a Kiln call, and again after the workers have
     gone to sleep (2 ms later);
  2. a graph that Kiln splits around an unsupported op (aten.cumprod):
     Kiln, eager and Inductor end to end.

    python benchmarks/bench_split.py
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time

import torch

import kiln
from kiln.testing.machine import cpu_name

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import Variant, compile_variant, measure  # noqa: E402


def eager_op_after_kiln(rounds: int) -> list[tuple[str, float, float]]:
    """(op, median us right after a Kiln call, median us with the pool asleep)."""
    w = torch.randn(512, 512)
    x = torch.randn(256, 512)
    launch = torch.compile(lambda t: torch.relu(t @ w), backend="kiln",
                           options={"fallback": "error"}, dynamic=False)
    big = torch.randn(1 << 20)
    ops = {
        "mm 256x512x512 (oneDNN)": lambda y: y @ w,
        "exp over 1M floats": lambda y: torch.exp(big),
    }
    results = []
    for name, op in ops.items():
        after, asleep = [], []
        for _ in range(rounds):
            y = launch(x)
            start = time.perf_counter()
            op(y)
            after.append((time.perf_counter() - start) * 1e6)
            time.sleep(0.002)
            start = time.perf_counter()
            op(y)
            asleep.append((time.perf_counter() - start) * 1e6)
        results.append((name, statistics.median(after), statistics.median(asleep)))
    return results


class Split(torch.nn.Module):
    """Linear layers with a cumulative product (left to eager) between them."""

    def __init__(self, width: int = 512) -> None:
        super().__init__()
        self.a = torch.nn.Linear(width, width)
        self.b = torch.nn.Linear(width, width)
        self.c = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        y = torch.cumprod(y * 0.01 + 1.0, dim=1)
        y = torch.relu(self.b(y))
        y = torch.cumprod(y * 0.01 + 1.0, dim=1)
        return self.c(y)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200, help="rounds of the eager-op timing")
    args = parser.parse_args(argv)
    logging.getLogger("kiln").setLevel(logging.ERROR)  # the cumprod fallback is intended
    print(f"{cpu_name()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} threads")
    with torch.no_grad():
        print("\n1. an eager op right after a Kiln launch, and with Kiln's pool asleep (median us)")
        print(f"{'op':<26} {'after Kiln':>11} {'pool asleep':>12} {'ratio':>6}")
        for name, after, asleep in eager_op_after_kiln(args.rounds):
            print(f"{name:<26} {after:>11.1f} {asleep:>12.1f} {after / asleep:>6.2f}")

        print("\n2. a graph split around aten.cumprod (batch 64, width 512), end to end")
        model = Split().eval()
        x = torch.randn(64, 512)
        expected = model(x)
        torch._dynamo.reset()
        kiln.reset()
        eager = Variant("eager", fn=model)
        kiln_v = Variant("kiln")
        compile_variant(kiln_v, lambda: torch.compile(model, backend="kiln", dynamic=False), (x,), expected)
        records = kiln.compile_records()
        inductor = Variant("inductor")
        compile_variant(inductor, lambda: torch.compile(model, dynamic=False), (x,), expected)
        variants = [eager, kiln_v, inductor]
        measure(variants, (x,), rounds=15, warmup=10, block_ms=20.0)
        parts = sum(r.partitions for r in records)
        print(f"Kiln: {parts} partitions, ops left to eager: "
              + ", ".join(sorted({f["op"] for r in records for f in r.fallbacks})))
        for v in variants:
            speed = eager.median_ms / v.median_ms if v.median_ms and eager.median_ms else None
            print(f"{v.name:<9} {v.median_ms or float('nan'):8.3f} ms"
                  + (f"  {speed:.2f}x eager" if speed else "") + (f"  failed: {v.error}" if v.error else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
