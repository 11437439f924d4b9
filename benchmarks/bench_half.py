#!/usr/bin/env python
"""float32, bfloat16 and float16 inference side by side: eager, Inductor and
Kiln on the repository's MLP and transformer block, medians of interleaved
rounds in one process (bench_models.measure). Kiln compiles with
fallback="error", so every op runs in its kernels.

    python benchmarks/bench_half.py
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kiln  # noqa: E402
from bench_models import Variant, compile_variant, measure, trace_once  # noqa: E402
from kiln.testing.machine import cpu_name  # noqa: E402
from kiln.testing.models import MLP, TransformerBlock  # noqa: E402

CASES = {
    "MLP 256-512-512-10 (batch 16)": (lambda: MLP(256, 512, 10), dict(batch=16)),
    "TransformerBlock w256 h4 (4x128)": (lambda: TransformerBlock(width=256, heads=4, mlp_ratio=4),
                                         dict(batch=4, seq=128)),
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-inductor", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("kiln").setLevel(logging.ERROR)
    print(f"<!-- {cpu_name()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, medians of {args.rounds} rounds -->")
    print("| model | dtype | eager ms | Inductor ms | Kiln ms | Kiln vs eager | Kiln vs Inductor |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for label, (make, sizes) in CASES.items():
        for dtype_name, dtype in DTYPES.items():
            model = make().to(dtype).eval()
            inputs = tuple(t.to(dtype) for t in model.make_inputs(**sizes))
            with torch.no_grad():
                expected = model(*inputs)
                eager = Variant("eager", fn=model)
                trace_once(model, inputs)
                kiln.reset()
                kiln_v = Variant("kiln")
                compile_variant(kiln_v, lambda: torch.compile(
                    model, backend="kiln", options={"fallback": "error"}, dynamic=False),
                    inputs, expected)
                variants = [eager, kiln_v]
                inductor = Variant("inductor")
                if not args.no_inductor:
                    torch._dynamo.reset()
                    compile_variant(inductor, lambda: torch.compile(model, dynamic=False),
                                    inputs, expected)
                    variants.append(inductor)
                measure(variants, inputs, args.rounds, 3, 10.0)

            def ms(v: Variant) -> str:
                return f"{v.median_ms:.3f}" if v.fn is not None else "-"

            def ratio(a: Variant, b: Variant) -> str:
                return f"{b.median_ms / a.median_ms:.2f}x" if a.fn is not None and b.fn is not None else "-"

            print(f"| {label} | {dtype_name} | {ms(eager)} | {ms(inductor)} | {ms(kiln_v)} "
                  f"| {ratio(kiln_v, eager)} | {ratio(kiln_v, inductor)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
