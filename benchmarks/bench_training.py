"""One full training step (forward, backward, AdamW step) per model: eager,
Inductor and Kiln side by side in one process, interleaved.

For each model of kiln.testing.training (the training tests' models, at the
"large" size): eager runs the loop as written; Inductor and Kiln compile the
loss function (model and loss: forward and backward graphs) and `opt.step`
(the optimizer's graph) with torch.compile. Kiln uses fallback="error", so
every op of every graph runs in Kiln kernels. Reported: the median step time
over interleaved rounds, and each compiler's cold compile time (the wall time
of the first step, Dynamo included). Prints the CPU it ran on and a markdown
table for the README.

    python benchmarks/bench_training.py
    python benchmarks/bench_training.py --models mlp,cnn --rounds 5
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

import kiln
from kiln.testing.machine import cpu_name
from kiln.testing.training import MODELS, OPTIMIZERS

BATCH = {"mlp": 64, "cnn": 8, "gpt2": 4, "bert": 4}


@dataclass
class Variant:
    name: str
    step: Callable[[], torch.Tensor] | None = None
    compile_s: float | None = None
    times_ms: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms else None


def make_step(name: str, backend: str | None, optimizer: str) -> Callable[[], torch.Tensor]:
    """A closure that runs one training step of a fresh copy of the model."""
    case = MODELS[name](BATCH[name], "large")
    model = copy.deepcopy(case.model).train()
    opt = OPTIMIZERS[optimizer](model.parameters())

    def loss_of(*batch):
        return case.loss(model, *batch)

    step = opt.step
    if backend is not None:
        options = {"fallback": "error"} if backend == "kiln" else None
        loss_of = torch.compile(loss_of, backend=backend, options=options, dynamic=False)
        step = torch.compile(opt.step, backend=backend, options=options, dynamic=False)

    def train_step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = loss_of(*case.inputs)
        loss.backward()
        step()
        return loss.detach()

    return train_step


def bench(name: str, args: argparse.Namespace) -> list[Variant]:
    variants = [Variant("eager"), Variant("inductor"), Variant("kiln")]
    for v in variants:
        torch._dynamo.reset()
        try:
            train_step = make_step(name, None if v.name == "eager" else v.name, args.optimizer)
            start = time.perf_counter()
            train_step()
            v.compile_s = time.perf_counter() - start if v.name != "eager" else None
            for _ in range(args.warmup):
                train_step()
            v.step = train_step
        except Exception as err:  # report and keep benchmarking the rest
            v.error = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    if not any(r.kind == "backward" and r.kernel_count for r in kiln.compile_records()):
        print(f"  note: no Kiln backward graph recorded for {name}", file=sys.stderr)
    ready = [v for v in variants if v.step is not None]
    for r in range(args.rounds):
        for v in ready[r % len(ready):] + ready[:r % len(ready)]:
            start = time.perf_counter()
            for _ in range(args.steps):
                v.step()
            v.times_ms.append((time.perf_counter() - start) * 1e3 / args.steps)
    return variants


def fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated: "
                        + ", ".join(MODELS))
    parser.add_argument("--optimizer", default="adamw", choices=sorted(OPTIMIZERS))
    parser.add_argument("--rounds", type=int, default=7, help="interleaved timed rounds")
    parser.add_argument("--steps", type=int, default=5, help="training steps per round")
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)
    # Cold compiles: an empty cache folder for Inductor, none for Kiln.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="kiln-train-inductor-")
    os.environ["KILN_CACHE"] = "0"
    header = (f"{cpu_name()}, {os.cpu_count()} CPUs, torch threads "
              f"{torch.get_num_threads()} | kiln {kiln.__version__} | torch {torch.__version__} | "
              f"{args.optimizer}, median of {args.rounds} interleaved rounds x {args.steps} steps")
    print(header, flush=True)
    rows = []
    for name in args.models.split(","):
        print(f"{name} ...", flush=True)
        variants = {v.name: v for v in bench(name, args)}
        rows.append((name, variants))
        for v in variants.values():
            if v.error:
                print(f"  {v.name} failed: {v.error}", flush=True)

    print()
    print(f"<!-- {header} -->")
    print("| model (batch) | eager ms | Inductor ms | Kiln ms | Kiln vs eager | Kiln vs Inductor "
          "| Inductor compile s | Kiln compile s |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for name, v in rows:
        eager, ind, kv = (v[k].median_ms for k in ("eager", "inductor", "kiln"))
        vs_eager = eager / kv if eager and kv else None
        vs_ind = ind / kv if ind and kv else None
        print(f"| {name} ({BATCH[name]}) | {fmt(eager)} | {fmt(ind)} | {fmt(kv)} "
              f"| {fmt(vs_eager)}x | {fmt(vs_ind)}x | {fmt(v['inductor'].compile_s)} "
              f"| {fmt(v['kiln'].compile_s)} |")


if __name__ == "__main__":
    main()
