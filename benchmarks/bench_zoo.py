#!/usr/bin/env python
"""Eager, Inductor and Kiln side by side on the model zoo (kiln.testing.zoo).

For each model: the median latency of eager, Inductor and Kiln, measured the
way bench_models.py does (interleaved rounds after a warm-up, in one
process); cold compile times of Kiln and Inductor (wall time of the first
call, Dynamo included, each with an empty cache folder of its own, after
Dynamo alone traced the model once: the first trace of a model's Python code
in a process costs more, whichever backend pays it) and
Kiln's warm start (the first call of a fresh torch.compile whose artifacts
are in Kiln's on-disk cache: the total, and the slowest graph's load); Kiln's
kernel count and how many ops it leaves to eager (Kiln runs with the default
fallback="eager"); the peak memory of one call of each backend
(peak_memory.py); Kiln's speedup over eager and over Inductor, and their
geometric means. Ends with a markdown table for the README.

    python benchmarks/bench_zoo.py                      # every model, large inputs
    python benchmarks/bench_zoo.py --models bert,cnn --repeat 5
"""

from __future__ import annotations

import argparse
import datetime
import logging
import math
import os
import sys
import tempfile
from dataclasses import dataclass, field

import torch

import kiln
from kiln.testing.machine import cpu_name
from kiln.testing.zoo import SIZES, ZOO, build

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import Variant, compile_variant, fmt, measure, megabytes, trace_once  # noqa: E402


@dataclass
class Result:
    name: str
    shapes: str
    eager: Variant
    inductor: Variant | None
    kiln: Variant
    kiln_graphs: int = 0
    warm_s: float | None = None  # first call again, every artifact from the disk cache
    warm_graph_ms: float | None = None  # the slowest graph's cache load
    fallback_ops: int = 0
    # op -> count, for the ops Kiln left to eager
    fallbacks: dict[str, int] = field(default_factory=dict)

    def speedup(self, baseline: Variant | None) -> float | None:
        if baseline is None or not baseline.median_ms or not self.kiln.median_ms:
            return None
        return baseline.median_ms / self.kiln.median_ms


def describe(inputs: tuple[torch.Tensor, ...]) -> str:
    return " ".join("x".join(map(str, t.shape)) for t in inputs)


def bench_model(name: str, args: argparse.Namespace) -> Result:
    model, make_inputs = build(name)
    inputs = make_inputs(args.size)
    torch._dynamo.reset()
    kiln.reset()
    with torch.no_grad():
        expected = model(*inputs)
        eager = Variant("eager", fn=model)
        trace_once(model, inputs)

        kiln_v = Variant("kiln")
        options = {"cache_dir": args.cache_dir}
        compile_variant(
            kiln_v, lambda: torch.compile(model, backend="kiln", dynamic=False, options=options),
            inputs, expected,
        )
        records = kiln.compile_records()  # before anything resets Dynamo
        result = Result(name, describe(inputs), eager, None, kiln_v, kiln_graphs=len(records))
        kiln_v.kernels = sum(r.kernel_count for r in records)
        for r in records:
            for f in r.fallbacks:
                result.fallbacks[f["op"]] = result.fallbacks.get(f["op"], 0) + 1
        result.fallback_ops = sum(result.fallbacks.values())
        kiln_v.notes += [e.splitlines()[0] for r in records for e in r.errors]

        variants = [eager, kiln_v]
        if not args.no_inductor:
            inductor = Variant("inductor")
            compile_variant(
                inductor, lambda: torch.compile(model, backend="inductor", dynamic=False),
                inputs, expected,
            )
            result.inductor = inductor
            variants.append(inductor)

        measure(variants, inputs, args.repeat, args.warmup, args.block_ms)

        if kiln_v.fn is not None:  # warm start: Dynamo again, Kiln from its cache
            torch._dynamo.reset()
            kiln.reset()
            warm = Variant("kiln warm")
            compile_variant(
                warm, lambda: torch.compile(model, backend="kiln", dynamic=False, options=options),
                inputs, expected,
            )
            records = kiln.compile_records()
            if warm.error is None and records and all(r.cache_hits for r in records if r.kernel_count):
                result.warm_s = warm.compile_s
                result.warm_graph_ms = max(r.compile_time_ms for r in records)
    return result


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def speedup_text(value: float | None) -> str:
    return f"{value:.2f}x" if value else "-"


def peaks(r: Result) -> str:
    """Peak memory per call of eager, Inductor and Kiln, in MB (bench_models.measure)."""
    variants = (r.eager, r.inductor, r.kiln)
    return " / ".join(fmt(megabytes(v.peak_bytes) if v else None, ".2f") for v in variants)


def print_table(results: list[Result]) -> None:
    header = (
        f"{'model':<13} {'inputs':<16} {'eager ms':>9} {'ind. ms':>9} {'kiln ms':>9} "
        f"{'kiln/eager':>10} {'kiln/ind.':>9} {'compile s':>9} {'ind. s':>7} {'warm s':>6} "
        f"{'graph ms':>8} {'kernels':>7} {'eager ops':>9} {'max|err|':>8} {'peak MB e/i/k':>16}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        ind = r.inductor
        print(
            f"{r.name:<13} {r.shapes:<16} {fmt(r.eager.median_ms, '.3f'):>9} "
            f"{fmt(ind.median_ms if ind else None, '.3f'):>9} {fmt(r.kiln.median_ms, '.3f'):>9} "
            f"{speedup_text(r.speedup(r.eager)):>10} {speedup_text(r.speedup(ind)):>9} "
            f"{fmt(r.kiln.compile_s, '.2f'):>9} {fmt(ind.compile_s if ind else None, '.2f'):>7} "
            f"{fmt(r.warm_s, '.2f'):>6} {fmt(r.warm_graph_ms, '.1f'):>8} "
            f"{fmt(r.kiln.kernels, 'd'):>7} {r.fallback_ops:>9} {fmt(r.kiln.max_err, '.1e'):>8} "
            f"{peaks(r):>16}"
        )
        for v in (r.kiln, ind):
            if v is not None and v.error:
                print(f"{'':<13} {v.name} failed: {v.error}")
            elif v is not None:
                for note in v.notes:
                    print(f"{'':<13} {v.name}: {note}")
    print()
    vs_eager = geomean([s for r in results if (s := r.speedup(r.eager))])
    vs_inductor = geomean([s for r in results if (s := r.speedup(r.inductor))])
    print(f"geometric mean speedup of Kiln: {speedup_text(vs_eager)} over eager, "
          f"{speedup_text(vs_inductor)} over Inductor (>1 means Kiln is faster)")
    ops: dict[str, int] = {}
    for r in results:
        for op, n in r.fallbacks.items():
            ops[op] = ops.get(op, 0) + n
    if ops:
        print("ops Kiln left to eager (all models): "
              + ", ".join(f"{op} x{n}" for op, n in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))))


def print_markdown(results: list[Result], header: str) -> None:
    print(f"<!-- {header} -->")
    print("| model | inputs | eager ms | Inductor ms | Kiln ms | Kiln vs eager | Kiln vs Inductor "
          "| Kiln compile s | Inductor compile s | Kiln warm start s (slowest graph ms) "
          "| Kiln kernels | ops in eager | peak MB per call: eager / Inductor / Kiln |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in results:
        ind = r.inductor
        kiln_ms = fmt(r.kiln.median_ms, ".3f", "failed")
        print(
            f"| {r.name} | {r.shapes} | {fmt(r.eager.median_ms, '.3f')} "
            f"| {fmt(ind.median_ms if ind else None, '.3f', 'failed' if ind else '-')} | {kiln_ms} "
            f"| {speedup_text(r.speedup(r.eager))} | {speedup_text(r.speedup(ind))} "
            f"| {fmt(r.kiln.compile_s, '.2f')} | {fmt(ind.compile_s if ind else None, '.2f')} "
            f"| {fmt(r.warm_s, '.2f')} ({fmt(r.warm_graph_ms, '.1f')}) "
            f"| {fmt(r.kiln.kernels, 'd')} | {r.fallback_ops} | {peaks(r)} |"
        )
    vs_eager = geomean([s for r in results if (s := r.speedup(r.eager))])
    vs_inductor = geomean([s for r in results if (s := r.speedup(r.inductor))])
    print(f"| **geomean** | | | | | **{speedup_text(vs_eager)}** | **{speedup_text(vs_inductor)}** "
          "| | | | | | |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(ZOO), help=f"comma-separated, from: {', '.join(ZOO)}")
    parser.add_argument("--size", default="large", choices=SIZES, help="input size of every model")
    parser.add_argument("--repeat", type=int, default=15, help="timed rounds per backend")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls per backend first")
    parser.add_argument("--block-ms", type=float, default=10.0, help="target length of one timed block")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads, and Kiln's KILN_NUM_THREADS unless set")
    parser.add_argument("--no-inductor", action="store_true", help="skip the Inductor comparison")
    parser.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failures")
    args = parser.parse_args(argv)
    # Cold compiles: empty cache folders for Kiln and Inductor (set before
    # Inductor first reads its variable), removed at exit.
    scratch = tempfile.TemporaryDirectory(prefix="kiln-bench-")
    args.cache_dir = os.path.join(scratch.name, "kiln")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(scratch.name, "inductor")
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if m not in ZOO]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; models are {', '.join(ZOO)}")
    if args.threads:
        torch.set_num_threads(args.threads)
        os.environ.setdefault("KILN_NUM_THREADS", str(args.threads))  # read when Kiln's pool starts
    if not args.verbose:
        # One warning per op and line would bury the table; it counts them instead.
        logging.getLogger("kiln").setLevel(logging.ERROR)

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    kiln_threads = os.environ.get("KILN_NUM_THREADS", "all")
    header = (f"{cpu_name()}, {os.cpu_count()} CPUs, threads: torch {torch.get_num_threads()} "
              f"Kiln {kiln_threads} | {now} | kiln {kiln.__version__} | "
              f"torch {torch.__version__} | {args.size} inputs | median of {args.repeat} rounds "
              f"x ~{args.block_ms:g} ms blocks, warm-up {args.warmup}")
    print(header)
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load > 0.5 * cpus:
        print(f"warning: the machine is busy (load {load:.1f} on {cpus} CPUs); timings are unreliable"
              + ("" if args.threads else "; --threads 1 suffers least from sharing"))
    print()

    results = []
    for name in names:
        print(f"{name} ...", file=sys.stderr, flush=True)
        results.append(bench_model(name, args))
    print_table(results)
    print()
    print_markdown(results, header)
    return 1 if any(r.kiln.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
