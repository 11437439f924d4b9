#!/usr/bin/env python
"""Kiln's matmul against torch.mm (oneDNN/MKL) and Inductor, shape by shape.

The shapes are those of torch.mm and nn.Linear in models: M in {1, 8, 128,
1024} with K and N in {768, 3072}, and squares from 256 to 2048. Each is
compiled alone (`a @ b`, B as [K, N]; with --linear, an nn.Linear layer,
`x @ w.t()` with w a parameter, which Kiln packs once) and timed side by
side with eager and Inductor (interleaved
rounds, medians), in GFLOP/s. Small shapes are bound by the per-call cost of
any torch.compile backend (~20-40 us): for them, compare the kernel alone
with `kiln-run --profile` on a dump (KILN_DUMP_DIR).

    python benchmarks/bench_gemm.py                  # every shape
    python benchmarks/bench_gemm.py --shapes 1024x3072x768,2048 --threads 1
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import sys

import torch

import kiln
from kiln.testing.machine import cpu_name

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import Variant, compile_variant, fmt, measure  # noqa: E402


def default_shapes() -> list[tuple[int, int, int]]:
    shapes = [(m, k, n) for m in (1, 8, 128, 1024) for k in (768, 3072) for n in (768, 3072)]
    shapes += [(s, s, s) for s in (256, 512, 1024, 2048)]
    return shapes


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    shapes = []
    for part in text.split(","):
        dims = [int(d) for d in part.strip().split("x")]
        shapes.append(tuple(dims * 3 if len(dims) == 1 else dims))  # type: ignore[arg-type]
    return shapes


def bench_shape(m: int, k: int, n: int, args: argparse.Namespace) -> dict:
    gen = torch.Generator().manual_seed(m * 7 + k * 3 + n)
    a = torch.randn(m, k, generator=gen)
    b = torch.randn(n, k, generator=gen) if args.linear else torch.randn(k, n, generator=gen)

    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x @ y

    inputs: tuple[torch.Tensor, ...] = (a, b)
    if args.linear:
        # An nn.Linear layer: its weight is a parameter, which Kiln packs
        # once (KilnOptions.pack_weights) and eager multiplies as w.t().
        layer = torch.nn.Linear(k, n, bias=False)
        with torch.no_grad():
            layer.weight.copy_(b)
        layer.weight.requires_grad_(False)
        fn, inputs = layer, (a,)  # type: ignore[assignment]
    torch._dynamo.reset()
    kiln.reset()
    expected = fn(*inputs)
    eager = Variant("torch.mm", fn=fn)
    kiln_v = Variant("kiln")
    compile_variant(kiln_v, lambda: torch.compile(
        fn, backend="kiln", dynamic=False, options={"fallback": "error", "cache": False}),
        inputs, expected)
    variants = [eager, kiln_v]
    if not args.no_inductor:
        inductor = Variant("inductor")
        compile_variant(inductor, lambda: torch.compile(fn, backend="inductor", dynamic=False),
                        inputs, expected)
        variants.append(inductor)
    measure(variants, inputs, args.repeat, args.warmup, args.block_ms)
    flop = 2.0 * m * k * n
    row = {"shape": f"{m}x{k}x{n}", "mflop": flop / 1e6}
    for v in variants:
        row[v.name] = flop / (v.median_ms * 1e6) if v.median_ms else None
        if v.error:
            row[v.name + " error"] = v.error
    row["max_err"] = kiln_v.max_err
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default=None,
                        help="comma-separated MxKxN (or S for SxSxS); default: the issue's set")
    parser.add_argument("--linear", action="store_true", help="nn.Linear: x @ w.t() with w a parameter")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--repeat", type=int, default=9, help="timed rounds per backend")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--block-ms", type=float, default=20.0)
    parser.add_argument("--no-inductor", action="store_true")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    shapes = parse_shapes(args.shapes) if args.shapes else default_shapes()

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{cpu_name()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} threads | {now} | "
          f"{'x @ w.t()' if args.linear else 'a @ b'} | GFLOP/s, median of {args.repeat} rounds")
    names = ["torch.mm", "kiln"] + ([] if args.no_inductor else ["inductor"])
    print(f"{'shape':>16} {'MFLOP':>8} " + " ".join(f"{n:>9}" for n in names)
          + f" {'kiln/mm':>8} {'max|err|':>9}")
    ratios, big = [], []
    for m, k, n in shapes:
        print(f"{m}x{k}x{n} ...", file=sys.stderr, flush=True)
        row = bench_shape(m, k, n, args)
        ratio = (row["kiln"] / row["torch.mm"]) if row.get("kiln") and row.get("torch.mm") else None
        if ratio:
            ratios.append(ratio)
            if row["mflop"] >= 50:
                big.append(ratio)
        print(f"{row['shape']:>16} {row['mflop']:>8.1f} "
              + " ".join(f"{fmt(row.get(name), '.1f'):>9}" for name in names)
              + f" {fmt(ratio, '.2f'):>8} {fmt(row['max_err'], '.1e'):>9}")
        for name in names:
            if row.get(name + " error"):
                print(f"{'':>16} {name} failed: {row[name + ' error']}")
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None  # noqa: E731
    print(f"Kiln / torch.mm throughput: geomean {fmt(geo(ratios), '.2f')} over all shapes, "
          f"min {fmt(min(big) if big else None, '.2f')} over shapes of at least 50 MFLOP")
    return 0


if __name__ == "__main__":
    sys.exit(main())
