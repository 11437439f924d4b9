#!/usr/bin/env python
"""Compile the reference models with Kiln and compare them with eager and Inductor.

For each model: compile time, Kiln kernel count, max abs error against eager,
and the median latency of eager, Kiln and Inductor, measured side by side
(interleaved rounds after a warm-up) in one process; and the peak memory of
one call of each (peak_memory.py; Kiln's arenas held between calls included).

    python benchmarks/bench_models.py            # full run
    python benchmarks/bench_models.py --quick    # fewer repeats
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

import kiln
from kiln.testing.models import MLP, TransformerBlock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peak_memory import peak_call_bytes  # noqa: E402


@dataclass
class Variant:
    name: str
    fn: Callable[..., Any] | None = None
    compile_s: float | None = None
    kernels: int | None = None
    max_err: float | None = None
    times_ms: list[float] = field(default_factory=list)
    # Peak memory of one call beyond what was resident before it, plus what
    # the backend holds between calls (Kiln's arenas); see peak_memory.py.
    peak_bytes: int | None = None
    held_bytes: int = 0  # what Kiln's executables hold after the first call
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms else None


def build_models(args: argparse.Namespace) -> list[tuple[str, torch.nn.Module, tuple[torch.Tensor, ...]]]:
    models = []
    if "mlp" in args.models:
        mlp = MLP(256, 512, 10).eval()
        models.append((f"MLP 256-512-512-10 (batch {args.batch})", mlp, mlp.make_inputs(batch=args.batch)))
    if "transformer" in args.models:
        block = TransformerBlock(width=256, heads=4, mlp_ratio=4).eval()
        inputs = block.make_inputs(batch=args.batch, seq=args.seq)
        models.append((f"TransformerBlock w256 h4 ({args.batch}x{args.seq})", block, inputs))
    return models


def max_abs_err(actual: Any, expected: torch.Tensor) -> float:
    return (actual.float() - expected.float()).abs().max().item()


def first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    inner = getattr(err, "inner_exception", None)
    if inner is not None:
        return f"{type(inner).__name__}: {first_line(inner)}"
    return text[0] if text else type(err).__name__


def trace_once(model: torch.nn.Module, inputs: tuple) -> None:
    """Dynamo traces the model with no compiler. The first trace of a model's
    code in a process costs 0.2-0.5 s more than later ones (Mistral's cold
    compile: Kiln 1.36 s when it compiled first, 0.89 s second; Inductor
    3.0 s first, 2.5 s second); paid here, neither backend's cold compile
    carries it for the other."""
    torch._dynamo.reset()
    torch.compile(model, backend="eager", dynamic=False)(*inputs)
    torch._dynamo.reset()


def compile_variant(
    variant: Variant, make: Callable[[], Callable[..., Any]], inputs: tuple, expected: torch.Tensor
) -> None:
    """Compile (the first call), check the result; on failure record why."""
    try:
        arenas, total = kiln.held_memory(packed_weights=False), kiln.held_memory()
        start = time.perf_counter()
        fn = make()
        out = fn(*inputs)
        variant.compile_s = time.perf_counter() - start
        # Arenas allocated by the first call, held between calls after it.
        # (Packed weight copies scale with the model, not the call: noted.)
        variant.held_bytes = max(0, kiln.held_memory(packed_weights=False) - arenas)
        packed = kiln.held_memory() - total - variant.held_bytes
        if packed > 0:
            variant.notes.append(f"packed weights {packed / 2**20:.2f} MB")
        variant.max_err = max_abs_err(out, expected)
        variant.fn = fn
    except Exception as err:  # report and keep benchmarking the rest
        variant.error = first_line(err)
        if "-v" in sys.argv or "--verbose" in sys.argv:
            traceback.print_exc()


def calibrate(fn: Callable[..., Any], inputs: tuple, target_ms: float) -> int:
    """Iterations per timed block so one block takes about target_ms."""
    fn(*inputs)
    start = time.perf_counter()
    n = 0
    while time.perf_counter() - start < target_ms / 1e3 / 4 and n < 10_000:
        fn(*inputs)
        n += 1
    per_iter_ms = (time.perf_counter() - start) * 1e3 / max(n, 1)
    return max(1, int(target_ms / max(per_iter_ms, 1e-6)))


def measure(variants: list[Variant], inputs: tuple, rounds: int, warmup: int, block_ms: float) -> None:
    """Median latencies, interleaved; then each variant's peak memory per call."""
    ready = [v for v in variants if v.fn is not None]
    inner = calibrate(ready[0].fn, inputs, block_ms)
    for v in ready:
        for _ in range(warmup):
            v.fn(*inputs)
    for r in range(rounds):
        # Rotate the order so no variant always runs first in a round.
        for v in ready[r % len(ready):] + ready[: r % len(ready)]:
            start = time.perf_counter()
            for _ in range(inner):
                v.fn(*inputs)
            v.times_ms.append((time.perf_counter() - start) * 1e3 / inner)
    for v in ready:
        peak = peak_call_bytes(v.fn, inputs)
        if peak is not None:
            v.peak_bytes = peak + v.held_bytes


def bench_model(name: str, model: torch.nn.Module, inputs: tuple, args: argparse.Namespace) -> list[Variant]:
    torch._dynamo.reset()
    kiln.reset()
    with torch.no_grad():
        expected = model(*inputs)
        eager = Variant("eager", fn=model)
        trace_once(model, inputs)

        kiln_v = Variant("kiln")
        compile_variant(
            kiln_v,
            lambda: torch.compile(model, backend="kiln", options={"fallback": "error"}, dynamic=False),
            inputs,
            expected,
        )
        records = kiln.compile_records()
        if records:
            kiln_v.kernels = sum(r.kernel_count for r in records)
            kiln_ms = sum(r.compile_time_ms for r in records)
            stages: dict[str, float] = {}
            for r in records:
                for stage, ms in r.stage_times_ms.items():
                    stages[stage] = stages.get(stage, 0.0) + ms
            top = sorted(stages.items(), key=lambda kv: -kv[1])[:4]
            kiln_v.notes.append(
                f"{len(records)} graph(s); Kiln compile+load {kiln_ms:.0f} ms"
                + (" (" + ", ".join(f"{s} {ms:.0f}" for s, ms in top) + ")" if top else "")
            )

        variants = [eager, kiln_v]
        if not args.no_inductor:
            inductor = Variant("inductor")
            compile_variant(inductor, lambda: torch.compile(model, dynamic=False), inputs, expected)
            if inductor.error is None:
                inductor.notes.append("compile time may come from Inductor's on-disk FX graph cache")
            variants.append(inductor)

        measure(variants, inputs, args.rounds, args.warmup, args.block_ms)
    return variants


def megabytes(n: int | None) -> float | None:
    return None if n is None else n / 2**20


def fmt(value: float | None, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def print_table(results: list[tuple[str, list[Variant]]]) -> None:
    header = (f"{'model':<34} {'backend':<9} {'compile s':>9} {'kernels':>7} {'max|err|':>9} "
              f"{'median ms':>10} {'vs eager':>8} {'peak MB':>8}")
    print(header)
    print("-" * len(header))
    for model_name, variants in results:
        eager_ms = variants[0].median_ms
        for i, v in enumerate(variants):
            label = model_name if i == 0 else ""
            if v.error:
                print(f"{label:<34} {v.name:<9} failed: {v.error}")
                continue
            speedup = eager_ms / v.median_ms if eager_ms and v.median_ms else None
            print(
                f"{label:<34} {v.name:<9} {fmt(v.compile_s, '9.2f'):>9} {fmt(v.kernels, 'd'):>7} "
                f"{fmt(v.max_err, '9.1e'):>9} {fmt(v.median_ms, '10.3f'):>10} "
                f"{fmt(speedup, '7.2f') + 'x' if speedup else '-':>8} {fmt(megabytes(v.peak_bytes), '8.2f'):>8}"
            )
        by_name = {v.name: v for v in variants}
        k, ind = by_name.get("kiln"), by_name.get("inductor")
        if k and ind and k.median_ms and ind.median_ms:
            print(f"{'':<34} kiln vs inductor: {ind.median_ms / k.median_ms:.2f}x (>1 means Kiln is faster)")
        for v in variants:
            for note in v.notes:
                print(f"{'':<34} {v.name}: {note}")
        print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer warm-up runs and rounds")
    parser.add_argument("--models", default="mlp,transformer", help="comma-separated: mlp, transformer")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (eager/inductor)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per backend")
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--block-ms", type=float, default=None, help="target length of one timed block")
    parser.add_argument("--no-inductor", action="store_true", help="skip the Inductor comparison")
    parser.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failures")
    args = parser.parse_args(argv)
    args.models = {m.strip() for m in args.models.split(",") if m.strip()}
    args.rounds = args.rounds or (7 if args.quick else 31)
    args.warmup = args.warmup or (3 if args.quick else 20)
    args.block_ms = args.block_ms or (5.0 if args.quick else 20.0)
    if args.threads:
        torch.set_num_threads(args.threads)

    print(
        f"kiln {kiln.__version__} | torch {torch.__version__} | threads {torch.get_num_threads()} | "
        f"rounds {args.rounds} x ~{args.block_ms:g} ms blocks, warm-up {args.warmup}"
    )
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load > 0.5 * cpus:
        print(f"warning: the machine is busy (load {load:.1f} on {cpus} CPUs); timings are unreliable")
    print()
    results = []
    for name, model, inputs in build_models(args):
        results.append((name, bench_model(name, model, inputs, args)))
    print_table(results)
    failed = [v for _, vs in results for v in vs if v.name == "kiln" and v.error]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
