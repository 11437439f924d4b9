"""The eager kiln device against CPU eager, side by side in one process.

1. Per-op overhead on a kernel-cache hit, for small ops: an 8-element add, a
   view, a 64x64 mm (median microseconds per call over interleaved rounds).
2. Eager training steps (forward, backward, AdamW) of the zoo's training
   loops on `kiln` and on the CPU, interleaved; the geomean of the ratios.
3. What ran where in those steps: the share of op calls that ran Kiln
   kernels, and the ops that fell back to ATen's CPU kernels.

Prints the CPU it ran on and markdown tables. Each figure is the median of
the rounds and, after the slash, the fastest round: on a shared machine
another tenant's load slows whole stretches of rounds (one device's and not
the other's, however they interleave), and the fastest rounds are the ones
least disturbed.

    python benchmarks/bench_device.py
    python benchmarks/bench_device.py --models mlp,gpt2 --size large --rounds 5
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import time
from collections import Counter
from typing import Callable

import torch

import kiln.device
from kiln.testing import training
from kiln.testing.machine import cpu_name

BATCH = {"mlp": 64, "cnn": 8, "gpt2": 4, "bert": 4}


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def op_overhead(rounds: int) -> list[tuple[str, float, float]]:
    cases = {
        "add, 8 elements": lambda d: (lambda a=torch.randn(8, device=d), b=torch.randn(8, device=d): a + b),
        "view": lambda d: (lambda a=torch.randn(8, 8, device=d): a.view(64)),
        "mm, 64x64": lambda d: (lambda a=torch.randn(64, 64, device=d), b=torch.randn(64, 64, device=d): a @ b),
    }
    rows = []
    for name, make in cases.items():
        fns = {device: make(device) for device in ("cpu", "kiln")}
        for fn in fns.values():
            per_call_us(fn, 200)  # warm: compiles the kernel, fills caches
        times: dict[str, list[float]] = {"cpu": [], "kiln": []}
        for _ in range(rounds):
            for device, fn in fns.items():
                times[device].append(per_call_us(fn, 2000))
        rows.append((name, summary(times["cpu"]), summary(times["kiln"])))
    return rows


def summary(times: list[float]) -> tuple[float, float]:
    """(median, fastest)."""
    return statistics.median(times), min(times)


def cell(figures: tuple[float, float]) -> str:
    return f"{figures[0]:.2f} / {figures[1]:.2f}"


def ratio(kiln_figures: tuple[float, float], cpu_figures: tuple[float, float]) -> str:
    return f"{kiln_figures[0] / cpu_figures[0]:.2f} / {kiln_figures[1] / cpu_figures[1]:.2f}"


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def training_steps(models: list[str], size: str, rounds: int) -> tuple[list[tuple[str, float, float]], dict]:
    rows, share = [], {}
    for name in models:
        case = getattr(training, name)(BATCH[name], size)
        steps = {}
        for device in ("cpu", "kiln"):
            model = copy.deepcopy(case.model).to(device)
            inputs = [x.to(device) for x in case.inputs]
            optimizer = training.OPTIMIZERS["adamw"](model.parameters())

            def step(model=model, inputs=inputs, optimizer=optimizer) -> None:
                loss = case.loss(model, *inputs)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                loss.item()

            step()  # compiles the device's kernels
            steps[device] = step
        kiln.device.reset_stats()
        steps["kiln"]()
        stats = kiln.device.stats()
        share[name] = (stats["kernel_calls"], stats["fallback_calls"], Counter(stats["fallback"]))
        times: dict[str, list[float]] = {"cpu": [], "kiln": []}
        for _ in range(rounds):
            for device, step in steps.items():
                start = time.perf_counter()
                step()
                times[device].append((time.perf_counter() - start) * 1e3)
        rows.append((name, summary(times["cpu"]), summary(times["kiln"])))
    return rows, share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="mlp,cnn,bert,gpt2")
    parser.add_argument("--size", choices=training.SIZES, default="small")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    print(f"CPU: {cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"kiln device on the {kiln.device.driver()} driver ({kiln._C.device.describe()})")
    print("\n## Per-op overhead on a cache hit (us per call; median / fastest round)\n")
    print("| op | CPU eager | kiln | kiln / CPU |\n|---|---|---|---|")
    for name, cpu, on_kiln in op_overhead(args.rounds):
        print(f"| {name} | {cell(cpu)} | {cell(on_kiln)} | {ratio(on_kiln, cpu)} |")

    models = args.models.split(",")
    rows, share = training_steps(models, args.size, args.rounds)
    print(f"\n## Eager training step, {args.size} models (ms; median / fastest of {args.rounds} rounds)\n")
    print("| model | CPU eager | kiln | kiln / CPU | Kiln kernel share of op calls |\n|---|---|---|---|---|")
    for name, cpu, on_kiln in rows:
        kernels, fallbacks, _ = share[name]
        print(f"| {name} | {cell(cpu)} | {cell(on_kiln)} | {ratio(on_kiln, cpu)} | "
              f"{kernels / max(kernels + fallbacks, 1):.1%} ({fallbacks} fallback calls) |")
    medians = geomean([k[0] / c[0] for _, c, k in rows])
    fastest = geomean([k[1] / c[1] for _, c, k in rows])
    print(f"\ngeomean kiln / CPU: {medians:.2f} (medians), {fastest:.2f} (fastest rounds)")
    fallbacks = sum((s[2] for s in share.values()), Counter())
    if fallbacks:
        print("fallback ops per step:", ", ".join(f"{op} x{n}" for op, n in fallbacks.most_common()))


if __name__ == "__main__":
    main()
