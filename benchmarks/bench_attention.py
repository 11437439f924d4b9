#!/usr/bin/env python
"""Eager, Inductor and Kiln side by side on scaled_dot_product_attention.

Each case is one attention call (inference, float32) at a model-like shape:
full and causal, an additive padding mask, grouped-query heads. Kiln runs it
as one fused kernel (online softmax over tiles of keys; kiln-lower-attention);
eager runs ATen's CPU flash attention; Inductor its own lowering. Latencies
are medians of interleaved rounds in one process (bench_models.measure).

    python benchmarks/bench_attention.py
    python benchmarks/bench_attention.py --threads 1
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import sys

import torch
import torch.nn.functional as F

import kiln
from kiln.testing.machine import cpu_name

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import Variant, compile_variant, fmt, measure  # noqa: E402

# name, (batch, heads, kv heads, length, head size), causal, padding mask
CASES = [
    ("bert-base", (8, 12, 12, 128, 64), False, True),
    ("gpt2 prefill", (1, 12, 12, 512, 64), True, False),
    ("llama gqa prefill", (1, 32, 8, 256, 128), True, False),
    ("long", (1, 8, 8, 2048, 64), True, False),
    ("small", (2, 2, 2, 24, 16), False, False),
]


def make_case(shape, causal: bool, padded: bool):
    batch, heads, kv_heads, length, size = shape
    torch.manual_seed(0)
    q = torch.randn(batch, heads, length, size)
    k = torch.randn(batch, kv_heads, length, size)
    v = torch.randn(batch, kv_heads, length, size)
    gqa = heads != kv_heads
    if padded:
        mask = torch.zeros(batch, 1, 1, length)
        mask[:, :, :, length * 3 // 4:] = float("-inf")

        def fn(q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
        return fn, (q, k, v, mask)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    return fn, (q, k, v)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0, help="torch and Kiln threads (0: default)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
        os.environ["KILN_NUM_THREADS"] = str(args.threads)
    print(f"CPU: {cpu_name()}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
          f"{datetime.date.today()}")
    chosen = [c for c in CASES if not args.cases or c[0] in args.cases.split(",")]
    rows, ratios_eager, ratios_inductor = [], [], []
    for name, shape, causal, padded in chosen:
        fn, inputs = make_case(shape, causal, padded)
        torch._dynamo.reset()
        with torch.no_grad():
            expected = fn(*inputs)
            variants = [Variant("eager", fn=fn), Variant("inductor"), Variant("kiln")]
            compile_variant(variants[1], lambda: torch.compile(fn, dynamic=False), inputs, expected)
            before = len(kiln.compile_records())
            compile_variant(
                variants[2],
                lambda: torch.compile(fn, backend="kiln", options={"fallback": "error"},
                                      dynamic=False),
                inputs, expected)
            kernels = [list(k["ops"]) for r in kiln.compile_records()[before:] for k in r.kernels]
            measure(variants, inputs, args.rounds, warmup=2, block_ms=50)
        eager, inductor, kiln_v = variants
        fused = ["attention"] in kernels
        vs_eager = eager.median_ms / kiln_v.median_ms if kiln_v.median_ms else None
        vs_ind = inductor.median_ms / kiln_v.median_ms if kiln_v.median_ms and inductor.median_ms else None
        if vs_eager:
            ratios_eager.append(vs_eager)
        if vs_ind:
            ratios_inductor.append(vs_ind)
        b, h, hk, n, e = shape
        label = f"{b}x{h}x{n}x{e}" + (f" kv{hk}" if hk != h else "") + (" causal" if causal else "") + (
            " mask" if padded else "")
        rows.append((name, label, eager.median_ms, inductor.median_ms, kiln_v.median_ms, vs_eager,
                     vs_ind, fused, kiln_v.error or inductor.error or ""))
        print(f"{name}: eager {fmt(eager.median_ms, '.3f')} ms, Inductor {fmt(inductor.median_ms, '.3f')} "
              f"ms, Kiln {fmt(kiln_v.median_ms, '.3f')} ms (fused: {fused}) {kiln_v.error or ''}",
              flush=True)
    print()
    print("| case | shape | eager ms | Inductor ms | Kiln ms | Kiln vs eager | Kiln vs Inductor | one kernel |")
    print("|---|---|--:|--:|--:|--:|--:|:-:|")
    for name, label, e, i, k, ve, vi, fused, err in rows:
        print(f"| {name} | {label} | {fmt(e, '.3f')} | {fmt(i, '.3f')} | {fmt(k, '.3f')} | "
              f"{fmt(ve, '.2f')}x | {fmt(vi, '.2f')}x | {'yes' if fused else 'no'} |")
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None  # noqa: E731
    print(f"| **geomean** | | | | | **{fmt(geo(ratios_eager), '.2f')}x** | "
          f"**{fmt(geo(ratios_inductor), '.2f')}x** | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
