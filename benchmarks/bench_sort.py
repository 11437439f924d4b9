#!/usr/bin/env python
"""Sorting: Kiln's bitonic network (kiln_graph.sort) against eager and
Inductor, side by side in one run, and on the Vulkan target (lavapipe: a CPU
implementation of Vulkan, a sanity figure only).

Cases: a mixture-of-experts top-2 routing over 8 experts (many short rows),
top-k of a vocabulary-sized row, sorts of rows of 1000 and 32768, and one
row of 2^20. Each variant is checked against eager (values and indices; the
inputs have no ties, so the indices are unique) and timed as bench_models.py
times models: median of interleaved rounds after a warm-up.

    python benchmarks/bench_sort.py
    python benchmarks/bench_sort.py --cases routing,rows_1000 --no-vulkan
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

import kiln
from kiln.testing.machine import cpu_name

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import Variant, first_line, fmt, measure  # noqa: E402


def _distinct(*shape: int) -> torch.Tensor:
    """Values without ties (a shuffled range), so indices compare exactly."""
    numel = 1
    for size in shape:
        numel *= size
    return (torch.randperm(numel).float() / numel).reshape(shape)


CASES = {
    "routing": (lambda x: torch.topk(torch.softmax(x, -1), 2, dim=-1),
                lambda: (_distinct(4096, 8),)),
    "topk_vocab": (lambda x: torch.topk(x, 50, dim=-1), lambda: (_distinct(4, 32000),)),
    "rows_1000": (lambda x: torch.sort(x, dim=-1), lambda: (_distinct(256, 1000),)),
    "rows_32768": (lambda x: torch.sort(x, dim=-1, descending=True),
                   lambda: (_distinct(8, 32768),)),
    "one_row_1M": (lambda x: torch.sort(x), lambda: (_distinct(1 << 20),)),
}


def _compile(variant: Variant, make, inputs: tuple, expected: tuple) -> None:
    """Compile (the first call) and check values and indices against eager."""
    try:
        start = time.perf_counter()
        fn = make()
        out = fn(*inputs)
        variant.compile_s = time.perf_counter() - start
        variant.max_err = max((a.double() - e.double()).abs().max().item()
                              for a, e in zip(out, expected))
        variant.fn = fn
    except Exception as err:  # report and go on with the other variants
        variant.error = first_line(err)


def _kiln(fn, target: str):
    def make():
        torch._dynamo.reset()
        return torch.compile(fn, backend="kiln", dynamic=False,
                             options={"target": target, "fallback": "error"})
    return make


def _inductor(fn):
    def make():
        torch._dynamo.reset()
        return torch.compile(fn, dynamic=False)
    return make


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"from: {', '.join(CASES)}")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per variant")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per variant first")
    parser.add_argument("--block-ms", type=float, default=20.0,
                        help="target length of one timed block")
    parser.add_argument("--no-vulkan", action="store_true", help="skip the Vulkan target")
    args = parser.parse_args()

    print(f"Sorting on {cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    header = (f"{'case':<12} {'variant':<12} {'compile s':>9} {'max|err|':>9} "
              f"{'median ms':>10} {'vs eager':>8}")
    print(header)
    print("-" * len(header))
    for name in args.cases.split(","):
        fn, make_inputs = CASES[name]
        torch.manual_seed(0)
        inputs = make_inputs()
        expected = fn(*inputs)
        variants = [Variant("eager", fn), Variant("kiln-cpu"), Variant("inductor")]
        if not args.no_vulkan:
            variants.append(Variant("kiln-vulkan"))
        kiln.reset()
        _compile(variants[1], _kiln(fn, "cpu"), inputs, expected)
        _compile(variants[2], _inductor(fn), inputs, expected)
        if not args.no_vulkan:
            _compile(variants[3], _kiln(fn, "vulkan"), inputs, expected)
        measure(variants, inputs, args.repeat, args.warmup, args.block_ms)
        eager_ms = variants[0].median_ms
        for i, v in enumerate(variants):
            ratio = eager_ms / v.median_ms if v.median_ms and eager_ms else None
            label = name if i == 0 else ""
            if v.error:
                print(f"{label:<12} {v.name:<12} error: {v.error}")
                continue
            print(f"{label:<12} {v.name:<12} {fmt(v.compile_s, '9.2f'):>9} "
                  f"{fmt(v.max_err, '9.1e'):>9} {fmt(v.median_ms, '10.3f'):>10} "
                  f"{fmt(ratio, '7.2f'):>7}x")
    print("(vs eager: >1 means faster than eager; kiln-vulkan runs on lavapipe, a CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
