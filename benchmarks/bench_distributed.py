"""Distributed training on 2 ranks: `kiln + kiln` against `cpu + gloo`.

For DDP and FSDP2 (fully_shard per block), and for tensor parallelism
(`tp`: the Llama-style model, Megatron column/row splits, every rank on the
same batch), each configuration trains the same model on the same global
batch on two spawned ranks on this machine (loopback), one thread each:

    cpu + gloo, eager          PyTorch's baseline
    cpu + gloo, Inductor       torch.compile's default backend
    kiln + kiln, eager         the kiln device, its process group (gloo on kiln memory)
    kiln + kiln, compiled      the same with torch.compile(backend="kiln")

Prints the CPU, the median step time (rank 0, after the warm-up steps) and
the bytes each rank contributed to collectives per step (the kiln group's
count; gloo's runs carry the same collectives: DDP buckets and FSDP2's
all-gathers and reduce-scatters do not depend on the backend). Every
configuration's losses are checked against the eager baseline's. For
`tp`, the compiled graphs' collectives run inside them; the table adds the
kernel launches that run while one is in flight (forward + backward).

    python benchmarks/bench_distributed.py
    python benchmarks/bench_distributed.py --models gpt2 --size large --steps 12
    python benchmarks/bench_distributed.py --strategies tp --batch 2
"""

from __future__ import annotations

import argparse
import statistics

import pytest

from kiln.testing import distributed
from kiln.testing.machine import cpu_name

CONFIGS = [
    ("cpu + gloo, eager", "cpu", "gloo", False),
    ("cpu + gloo, Inductor", "cpu", "gloo", "inductor"),
    ("kiln + kiln, eager", "kiln", "kiln", False),
    ("kiln + kiln, compiled", "kiln", "kiln", True),
]


def run(strategy: str, model: str, device: str, backend: str, compiled: bool | str, steps: int,
        size: str, batch: int) -> dict:
    kiln_device = backend == "kiln"
    if strategy == "ddp":
        worker, args = distributed.train_ddp, (model, device, backend, steps, compiled, 1, size, batch)
    elif strategy == "tp":
        worker, args = distributed.train_tensor_parallel, (device, steps, compiled, batch, False, size)
    else:
        worker, args = distributed.train_fsdp, (model, device, steps, compiled, True, False, size, batch)
    return distributed.run_ranks(worker, 2, *args, backend=backend, kiln_device=kiln_device,
                                 timeout_s=1800)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp,gpt2")
    parser.add_argument("--strategies", default="ddp,fsdp2")
    parser.add_argument("--size", default="large", choices=["small", "large"])
    parser.add_argument("--batch", type=int, default=8, help="samples per rank")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    print(f"CPU: {cpu_name()}; 2 ranks on loopback, 1 thread each; {args.size} models, "
          f"{args.batch} samples per rank, median of steps {args.warmup + 1}..{args.steps}")
    for strategy in args.strategies.split(","):
        for model in args.models.split(",") if strategy != "tp" else ["llama"]:
            print(f"\n### {strategy.upper()}, {model}\n")
            print("| configuration | step (ms) | vs cpu + gloo eager | collective bytes per step |"
                  " launches in flight |")
            print("|---|--:|--:|--:|--:|")
            baseline = None
            for name, device, backend, compiled in CONFIGS:
                result = run(strategy, model, device, backend, compiled, args.steps, args.size, args.batch)
                step_ms = statistics.median(result["seconds"][args.warmup:]) * 1e3
                if baseline is None:
                    baseline = result
                    baseline_ms = step_ms
                tolerance = 1e-3 if compiled == "inductor" or compiled is True else 1e-4
                assert result["losses"] == pytest.approx(baseline["losses"], rel=tolerance, abs=1e-4), (
                    name, result["losses"], baseline["losses"])
                collectives = result.get("collectives") or {}
                per_step = sum(c["bytes"] for c in collectives.values()) / args.steps
                shown = f"{per_step / 1e6:.2f} MB" if collectives else "(not counted)"
                overlapped = sum(result.get("overlapped_launches") or [])
                in_flight = str(overlapped) if compiled is True else ""
                print(f"| {name} | {step_ms:.1f} | {baseline_ms / step_ms:.2f}x | {shown} | {in_flight} |",
                      flush=True)


if __name__ == "__main__":
    main()
