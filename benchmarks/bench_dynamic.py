#!/usr/bin/env python
"""Dynamic shapes: one symbolic Kiln artifact against static ones, size by size.

For each model, one function compiled with dynamic=True (one artifact for
every size) runs side by side with a function compiled with dynamic=False at
each measured size (one artifact per size) and with eager, interleaved in one
process (bench_models.measure). The issue's bar: dynamic within 10% of static
at every size. Also prints what each dynamic graph left to eager, which is
where a gap usually comes from.

    python benchmarks/bench_dynamic.py
    python benchmarks/bench_dynamic.py --models transformer_block --rounds 5
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import sys
from typing import Any, Callable

import torch

import kiln
from kiln.testing.machine import cpu_name
from kiln.testing.models import TransformerBlock
from kiln.testing.zoo import VOCAB, build

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import Variant, fmt, measure  # noqa: E402

Inputs = Callable[[int, int], tuple[torch.Tensor, ...]]


def transformer_block() -> tuple[torch.nn.Module, Inputs, list[tuple[int, int]]]:
    model = TransformerBlock(width=256, heads=4, mlp_ratio=4).eval()
    return (model, lambda b, s: model.make_inputs(batch=b, seq=s),
            [(2, 32), (4, 64), (8, 128), (3, 97)])


def _text(name: str, with_mask: bool) -> Callable[[], tuple[torch.nn.Module, Inputs, list]]:
    def make() -> tuple[torch.nn.Module, Inputs, list[tuple[int, int]]]:
        model, _ = build(name)

        def inputs(batch: int, seq: int) -> tuple[torch.Tensor, ...]:
            g = torch.Generator().manual_seed(batch * 1000 + seq)
            ids = torch.randint(0, VOCAB, (batch, seq), generator=g)
            return (ids, torch.ones(batch, seq, dtype=torch.int64)) if with_mask else (ids,)

        return model, inputs, [(2, 8), (2, 24), (4, 48), (3, 61)]

    return make


MODELS = {
    "transformer_block": transformer_block,
    "bert": _text("bert", with_mask=True),
    "gpt2": _text("gpt2", with_mask=False),
}


def fallback_ops() -> dict[str, int]:
    ops: dict[str, int] = {}
    for record in kiln.compile_records():
        if record.symbols:
            for f in record.fallbacks:
                ops[f["op"]] = ops.get(f["op"], 0) + 1
    return ops


def bench(name: str, args: argparse.Namespace) -> list[tuple[str, Variant, Variant, Variant]]:
    model, make_inputs, sizes = MODELS[name]()
    torch._dynamo.reset()
    kiln.reset()
    rows = []
    with torch.no_grad():
        dynamic_fn = torch.compile(model, backend="kiln", dynamic=True)
        dynamic_fn(*make_inputs(*sizes[0]))  # the one symbolic compile
        left_to_eager = fallback_ops()
        for batch, seq in sizes:
            inputs = make_inputs(batch, seq)
            expected = model(*inputs)
            static_fn = torch.compile(model, backend="kiln", dynamic=False)
            torch.testing.assert_close(static_fn(*inputs), expected, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(dynamic_fn(*inputs), expected, rtol=1e-4, atol=1e-5)
            eager, static, dynamic = (Variant("eager", fn=model), Variant("static", fn=static_fn),
                                      Variant("dynamic", fn=dynamic_fn))
            measure([eager, static, dynamic], inputs, args.rounds, args.warmup, args.block_ms)
            rows.append((f"{name} {batch}x{seq}", eager, static, dynamic))
            print(f"  {name} batch {batch} seq {seq}: eager {fmt(eager.median_ms, '.3f')} ms, "
                  f"static {fmt(static.median_ms, '.3f')} ms, dynamic "
                  f"{fmt(dynamic.median_ms, '.3f')} ms", flush=True)
    if left_to_eager:
        print(f"  {name}: the dynamic graph leaves to eager: "
              + ", ".join(f"{op} x{n}" for op, n in sorted(left_to_eager.items())))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated: "
                        + ", ".join(MODELS))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--block-ms", type=float, default=50.0)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
        os.environ["KILN_NUM_THREADS"] = str(args.threads)
    logging.getLogger("kiln").setLevel(logging.ERROR)
    print(f"# bench_dynamic on {cpu_name()}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}, {datetime.date.today()}")
    rows = []
    for name in args.models.split(","):
        rows += bench(name, args)
    print("\n| model and size | eager ms | static Kiln ms | dynamic Kiln ms | dynamic / static |")
    print("|---|---|---|---|---|")
    for label, eager, static, dynamic in rows:
        ratio = dynamic.median_ms / static.median_ms if static.median_ms else None
        print(f"| {label} | {fmt(eager.median_ms, '.3f')} | {fmt(static.median_ms, '.3f')} | "
              f"{fmt(dynamic.median_ms, '.3f')} | {fmt(ratio, '.2f')}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
