#!/usr/bin/env python
"""Kiln's Vulkan target against its CPU target on the model zoo, as a sanity
figure: on a machine without a GPU the Vulkan device is Mesa's lavapipe, a
CPU implementation of Vulkan, so this measures nothing about GPUs. It shows
that every zoo model runs on the Vulkan path (fallback="error", checked
against eager) and what the upload, the generic kernels and the download
cost there.

For each model: eager, Kiln on the CPU target and Kiln on the Vulkan target,
median latency (interleaved rounds after a warm-up, as bench_models.py
measures), each Kiln variant's kernel count and largest error against eager,
and the bytes the Vulkan executables moved per call.

    python benchmarks/bench_vulkan.py                   # every model, small inputs
    python benchmarks/bench_vulkan.py --models bert,cnn --size large --repeat 5
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

import kiln
import kiln.compiler
from kiln.testing.machine import cpu_name
from kiln.testing.zoo import SIZES, ZOO, build

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import Variant, compile_variant, fmt, measure, trace_once  # noqa: E402


def _kiln(model: torch.nn.Module, target: str):
    def make():
        torch._dynamo.reset()
        return torch.compile(model, backend="kiln", dynamic=False,
                             options={"target": target, "fallback": "error"})
    return make


def _bytes_moved(fn, inputs: tuple) -> tuple[int, int]:
    """Bytes the Vulkan executables uploaded and downloaded in one call."""
    live = [e for e in kiln.compiler.executables() if e.device.startswith("vulkan")]
    before = [(e.bytes_uploaded, e.bytes_downloaded) for e in live]
    fn(*inputs)
    up = sum(e.bytes_uploaded - b[0] for e, b in zip(live, before))
    down = sum(e.bytes_downloaded - b[1] for e, b in zip(live, before))
    return up, down


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(ZOO), help=f"comma-separated, from: {', '.join(ZOO)}")
    parser.add_argument("--size", default="small", choices=SIZES, help="input size of every model")
    parser.add_argument("--repeat", type=int, default=7, help="timed rounds per variant")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per variant first")
    parser.add_argument("--block-ms", type=float, default=20.0, help="target length of one timed block")
    args = parser.parse_args()

    print(f"Kiln CPU target vs Vulkan target (lavapipe: a CPU, not a GPU) on {cpu_name()}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, size {args.size}")
    rows = []
    for name in args.models.split(","):
        model, make_inputs = build(name)
        inputs = make_inputs(args.size)
        with torch.no_grad():
            expected = model(*inputs)
            trace_once(model, inputs)
            variants = [Variant("eager", model), Variant("kiln-cpu"), Variant("kiln-vulkan")]
            for variant, target in ((variants[1], "cpu"), (variants[2], "vulkan")):
                kiln.reset()
                compile_variant(variant, _kiln(model, target), inputs, expected)
                variant.kernels = sum(r.kernel_count for r in kiln.compile_records())
            measure(variants, inputs, args.repeat, args.warmup, args.block_ms)
            moved = _bytes_moved(variants[2].fn, inputs) if variants[2].fn is not None else (0, 0)
        rows.append((name, variants, moved))
        cpu, vulkan = variants[1], variants[2]
        print(f"  {name}: eager {fmt(variants[0].median_ms, '.2f')} ms, kiln cpu "
              f"{fmt(cpu.median_ms, '.2f')} ms, kiln vulkan {fmt(vulkan.median_ms, '.2f')} ms"
              + (f" ({vulkan.error})" if vulkan.error else ""), flush=True)

    print()
    print("| model | eager ms | Kiln CPU ms | Kiln Vulkan (lavapipe) ms | Vulkan / CPU | "
          "Vulkan kernels | max abs err | uploaded / downloaded per call (inputs unchanged stay on the device) |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for name, (eager, cpu, vulkan), (up, down) in rows:
        ratio = (vulkan.median_ms / cpu.median_ms
                 if vulkan.median_ms and cpu.median_ms else None)
        print(f"| {name} | {fmt(eager.median_ms, '.2f')} | {fmt(cpu.median_ms, '.2f')} | "
              f"{fmt(vulkan.median_ms, '.2f')} | {fmt(ratio, '.1f')}x | {fmt(vulkan.kernels, 'd')} | "
              f"{fmt(vulkan.max_err, '.1e')} | {up:,} B / {down:,} B |")
    return 0 if all(v.error is None for _, vs, _ in rows for v in vs) else 1


if __name__ == "__main__":
    sys.exit(main())
