#!/usr/bin/env python
"""Kiln's performance in one command: a Markdown report and a PNG chart.

Eager, Inductor (default settings) and Kiln run side by side in this process
(interleaved rounds, medians), on:

  1. GEMM: `a @ b` and nn.Linear (`x @ w.t()`, w a parameter: packed once)
     over the issue's 20 shapes (bench_gemm.py),
     in GFLOP/s, Kiln against torch.mm;
  2. the repository's models (MLP, transformer block; bench_models.py) at
     batch 1 and 16: latency and peak memory per call;
  3. the model zoo (kiln.testing.zoo; bench_zoo.py): latency, peak memory,
     cold compile next to Inductor's, and warm start from Kiln's cache;

then checks the targets and writes OUT/report.md and OUT/report.png, which
the README shows.

    python benchmarks/bench_report.py                  # everything (~30 min on 2 cores)
    python benchmarks/bench_report.py --quick          # a few shapes and models, fewer rounds
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field

import torch

import kiln
from kiln.testing.machine import cpu_name
from kiln.testing.zoo import ZOO

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gemm  # noqa: E402
import bench_models  # noqa: E402
import bench_zoo  # noqa: E402

QUICK_SHAPES = [(1, 768, 3072), (8, 3072, 3072), (128, 768, 3072), (1024, 768, 3072), (512, 512, 512)]
QUICK_ZOO = ["bert", "gpt2", "resnet"]


@dataclass
class ModelRow:
    """One model at one input size: what the report tables and the chart show."""

    name: str
    eager_ms: float | None
    inductor_ms: float | None
    kiln_ms: float | None
    peaks_mb: tuple[float | None, float | None, float | None]  # eager, Inductor, Kiln
    kiln_compile_s: float | None = None
    inductor_compile_s: float | None = None
    warm_graph_ms: float | None = None
    notes: list[str] = field(default_factory=list)

    def speedup(self, baseline_ms: float | None) -> float | None:
        return baseline_ms / self.kiln_ms if baseline_ms and self.kiln_ms else None


def geomean(values: list[float | None]) -> float | None:
    return bench_zoo.geomean([v for v in values if v])


def fmt(value: float | None, spec: str = ".2f", missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# The three runs


def run_gemm(args: argparse.Namespace) -> dict[str, list[dict]]:
    shapes = QUICK_SHAPES if args.quick else bench_gemm.default_shapes()
    rows: dict[str, list[dict]] = {}
    for linear in (False, True):
        mode = "nn.Linear" if linear else "a @ b"
        ns = argparse.Namespace(linear=linear, no_inductor=args.no_inductor,
                                repeat=args.rounds, warmup=3, block_ms=args.block_ms)
        rows[mode] = []
        for m, k, n in shapes:
            progress(f"GEMM {mode} {m}x{k}x{n} ...")
            rows[mode].append(bench_gemm.bench_shape(m, k, n, ns))
    return rows


def model_row(name: str, variants: list[bench_models.Variant]) -> ModelRow:
    by_name = {v.name: v for v in variants}
    eager, ind, kv = by_name["eager"], by_name.get("inductor"), by_name["kiln"]
    mb = bench_models.megabytes
    row = ModelRow(name, eager.median_ms, ind.median_ms if ind else None, kv.median_ms,
                   (mb(eager.peak_bytes), mb(ind.peak_bytes) if ind else None, mb(kv.peak_bytes)),
                   kiln_compile_s=kv.compile_s, inductor_compile_s=ind.compile_s if ind else None)
    row.notes = [f"{v.name} failed: {v.error}" for v in variants if v.error]
    return row


def run_models(args: argparse.Namespace) -> list[ModelRow]:
    rows = []
    for batch in (1, 16):
        ns = argparse.Namespace(models={"mlp", "transformer"}, batch=batch, seq=128,
                                rounds=args.rounds, warmup=5, block_ms=args.block_ms,
                                no_inductor=args.no_inductor)
        for name, model, inputs in bench_models.build_models(ns):
            progress(f"{name} ...")
            rows.append(model_row(name, bench_models.bench_model(name, model, inputs, ns)))
    return rows


def run_zoo(args: argparse.Namespace, cache_root: str) -> list[ModelRow]:
    names = QUICK_ZOO if args.quick else list(ZOO)
    ns = argparse.Namespace(size="large", repeat=args.rounds, warmup=3, block_ms=args.block_ms,
                            no_inductor=args.no_inductor, cache_dir=os.path.join(cache_root, "kiln"))
    rows = []
    for name in names:
        progress(f"zoo {name} ...")
        r = bench_zoo.bench_model(name, ns)
        row = model_row(f"{name} ({r.shapes})", [v for v in (r.eager, r.inductor, r.kiln) if v])
        row.warm_graph_ms = r.warm_graph_ms
        if r.fallback_ops:
            row.notes.append(f"{r.fallback_ops} ops in eager")
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------
# Report


def gemm_ratios(rows: list[dict]) -> list[tuple[str, float | None, float]]:
    """(shape, Kiln / torch.mm, MFLOP) per shape."""
    out = []
    for row in rows:
        mm, k = row.get("torch.mm"), row.get("kiln")
        out.append((row["shape"], k / mm if mm and k else None, row["mflop"]))
    return out


def targets(gemm: dict[str, list[dict]], models: list[ModelRow]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met) for the issue's bars."""
    checks: list[tuple[str, str, bool | None]] = []
    ratios = [r for rows in gemm.values() for r in gemm_ratios(rows)]
    big = [x for _, x, mflop in ratios if x and mflop >= 50]
    if big:
        checks.append(("GEMM: >= 0.9 of torch.mm on every shape of 50+ MFLOP",
                       f"lowest {min(big):.2f}", min(big) >= 0.9))
    every = [x for _, x, _ in ratios if x]
    if every:
        g = geomean(every)
        checks.append(("GEMM: >= 1.0 of torch.mm, geometric mean", f"{g:.2f}", g >= 1.0))
    vs_eager = geomean([m.speedup(m.eager_ms) for m in models])
    vs_ind = geomean([m.speedup(m.inductor_ms) for m in models])
    if vs_eager:
        checks.append(("Models: >= 1.2x eager, geometric mean", f"{vs_eager:.2f}x", vs_eager >= 1.2))
    if vs_ind:
        checks.append(("Models: >= 1.0x Inductor, geometric mean", f"{vs_ind:.2f}x", vs_ind >= 1.0))
    worse = [m.name for m in models if m.peaks_mb[0] is not None and m.peaks_mb[2] is not None
             and m.peaks_mb[2] > m.peaks_mb[0] + 0.05]  # page-level noise
    if any(m.peaks_mb[2] is not None for m in models):
        checks.append(("Peak memory per call: no worse than eager's on any model",
                       "worse on " + ", ".join(worse) if worse else "never worse", not worse))
    warm = [m.warm_graph_ms for m in models if m.warm_graph_ms is not None]
    if warm:
        checks.append(("Warm start: <= 50 ms per graph", f"slowest graph {max(warm):.1f} ms",
                       max(warm) <= 50))
    cold = [m.kiln_compile_s / m.inductor_compile_s for m in models
            if m.warm_graph_ms is not None and m.kiln_compile_s and m.inductor_compile_s]
    if cold:
        checks.append(("Cold compile: <= half of Inductor's per model",
                       f"highest {max(cold):.0%} of Inductor's", max(cold) <= 0.5))
    return checks


def markdown(header: str, command: str, gemm: dict[str, list[dict]], models: list[ModelRow],
             zoo: list[ModelRow]) -> str:
    lines = ["# Kiln performance report", "", f"{header}", "", f"`{command}`", ""]
    lines += ["| target | measured | met |", "|---|---|:-:|"]
    for target, measured, met in targets(gemm, models + zoo):
        lines.append(f"| {target} | {measured} | {'yes' if met else 'no'} |")
    lines += ["", "![Kiln against torch.mm, eager and Inductor](report.png)", ""]
    if gemm:
        modes = list(gemm)
        lines += ["## GEMM (GFLOP/s)", ""]
        head = "| shape (MxKxN) | MFLOP |" + "".join(
            f" {mode}: torch.mm | Kiln | Inductor | Kiln / mm |" for mode in modes)
        lines += [head, "|---|--:|" + "--:|--:|--:|--:|" * len(modes)]
        for i, first in enumerate(gemm[modes[0]]):
            cells = [first["shape"], fmt(first["mflop"], ".1f")]
            for mode in modes:
                row = gemm[mode][i]
                mm, k = row.get("torch.mm"), row.get("kiln")
                cells += [fmt(mm, ".1f"), fmt(k, ".1f"), fmt(row.get("inductor"), ".1f"),
                          fmt(k / mm if mm and k else None)]
            lines.append("| " + " | ".join(cells) + " |")
        for mode in modes:
            ratios = gemm_ratios(gemm[mode])
            big = [x for _, x, mflop in ratios if x and mflop >= 50]
            lines.append(f"\n{mode}: Kiln / torch.mm geometric mean "
                         f"{fmt(geomean([x for _, x, _ in ratios if x]))}, lowest on shapes of 50+ "
                         f"MFLOP {fmt(min(big) if big else None)}.")
        lines.append("")
    for title, rows in (("Models (batch 1 and 16, sequence 128)", models), ("Model zoo", zoo)):
        if not rows:
            continue
        lines += [f"## {title}", "",
                  "| model | eager ms | Inductor ms | Kiln ms | Kiln vs eager | Kiln vs Inductor "
                  "| peak MB: eager / Inductor / Kiln | Kiln compile s | Inductor compile s "
                  "| warm start, slowest graph ms |",
                  "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for m in rows:
            peaks = " / ".join(fmt(p) for p in m.peaks_mb)
            lines.append(
                f"| {m.name} | {fmt(m.eager_ms, '.3f')} | {fmt(m.inductor_ms, '.3f')} "
                f"| {fmt(m.kiln_ms, '.3f')} | {bench_zoo.speedup_text(m.speedup(m.eager_ms))} "
                f"| {bench_zoo.speedup_text(m.speedup(m.inductor_ms))} | {peaks} | {fmt(m.kiln_compile_s)} "
                f"| {fmt(m.inductor_compile_s)} | {fmt(m.warm_graph_ms, '.1f')} |")
        lines.append(f"| **geomean** | | | | **{bench_zoo.speedup_text(geomean([m.speedup(m.eager_ms) for m in rows]))}** "
                     f"| **{bench_zoo.speedup_text(geomean([m.speedup(m.inductor_ms) for m in rows]))}** | | | | |")
        notes = [f"{m.name}: {n}" for m in rows for n in m.notes]
        lines += [""] + [f"- {n}" for n in notes] + ([""] if notes else [])
    return "\n".join(lines) + "\n"


def chart(path: str, header: str, gemm: dict[str, list[dict]], models: list[ModelRow]) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        progress("matplotlib is not installed: no chart (pip install matplotlib)")
        return False
    fig, axes = plt.subplots(3, 1, figsize=(12, 13))
    ax = axes[0]
    modes = list(gemm)
    if modes:
        shapes = [r["shape"] for r in gemm[modes[0]]]
        width = 0.8 / len(modes)
        for i, mode in enumerate(modes):
            values = [x or 0 for _, x, _ in gemm_ratios(gemm[mode])]
            ax.bar([s + i * width for s in range(len(shapes))], values, width, label=mode)
        ax.set_xticks([s + width * (len(modes) - 1) / 2 for s in range(len(shapes))], shapes,
                      rotation=60, fontsize=8)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(0.9, color="gray", linewidth=0.8, linestyle="--")
        ax.set_ylabel("Kiln / torch.mm throughput")
        ax.set_title("GEMM")
        ax.legend()
    names = [m.name for m in models]
    x = range(len(names))
    ax = axes[1]
    ax.bar([i - 0.2 for i in x], [m.speedup(m.eager_ms) or 0 for m in models], 0.4, label="vs eager")
    ax.bar([i + 0.2 for i in x], [m.speedup(m.inductor_ms) or 0 for m in models], 0.4,
           label="vs Inductor")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(list(x), names, rotation=60, fontsize=8)
    ax.set_ylabel("Kiln speedup")
    ax.set_title("Models")
    ax.legend()
    ax = axes[2]
    for offset, index, label in ((-0.27, 0, "eager"), (0.0, 1, "Inductor"), (0.27, 2, "Kiln")):
        ax.bar([i + offset for i in x], [m.peaks_mb[index] or 0 for m in models], 0.27, label=label)
    ax.set_yscale("symlog", linthresh=0.1)
    ax.set_xticks(list(x), names, rotation=60, fontsize=8)
    ax.set_ylabel("peak MB per call")
    ax.set_title("Peak memory of one call")
    ax.legend()
    fig.suptitle(textwrap.fill(header, 140), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "report"),
                        help="folder for report.md and report.png (default: benchmarks/report)")
    parser.add_argument("--quick", action="store_true", help="five GEMM shapes, three zoo models, fewer rounds")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads, and Kiln's KILN_NUM_THREADS unless set")
    parser.add_argument("--no-gemm", action="store_true")
    parser.add_argument("--no-models", action="store_true")
    parser.add_argument("--no-zoo", action="store_true")
    parser.add_argument("--no-inductor", action="store_true", help="skip the Inductor comparison")
    args = parser.parse_args(argv)
    args.rounds = 5 if args.quick else 9
    args.block_ms = 10.0 if args.quick else 20.0
    # Cold compiles: empty cache folders for Kiln and Inductor (before
    # Inductor first reads its variable), removed at exit.
    scratch = tempfile.TemporaryDirectory(prefix="kiln-report-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(scratch.name, "inductor")
    if args.threads:
        torch.set_num_threads(args.threads)
        os.environ.setdefault("KILN_NUM_THREADS", str(args.threads))
    logging.getLogger("kiln").setLevel(logging.ERROR)

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = (f"{cpu_name()}, {os.cpu_count()} CPUs, threads: torch {torch.get_num_threads()}, "
              f"Kiln {os.environ.get('KILN_NUM_THREADS', 'the same')} | {now} | kiln {kiln.__version__} "
              f"| torch {torch.__version__} | medians of {args.rounds} interleaved rounds")
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load > 0.5 * cpus:
        header += f" | machine busy (load {load:.1f} on {cpus} CPUs): timings unreliable"
    command = "python benchmarks/bench_report.py " + " ".join(argv if argv is not None else sys.argv[1:])
    progress(header)

    with torch.no_grad():
        gemm = {} if args.no_gemm else run_gemm(args)
        models = [] if args.no_models else run_models(args)
        zoo = [] if args.no_zoo else run_zoo(args, scratch.name)

    os.makedirs(args.out, exist_ok=True)
    report = markdown(header, command.strip(), gemm, models, zoo)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(report)
    drew = chart(os.path.join(args.out, "report.png"), header, gemm, models + zoo)
    print(report)
    print(f"wrote {os.path.join(args.out, 'report.md')}"
          + (f" and {os.path.join(args.out, 'report.png')}" if drew else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
