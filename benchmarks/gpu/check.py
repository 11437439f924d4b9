"""The GPU check: Kiln's NVIDIA kernels run on a GPU, against references
made here.

Here (no GPU), `prepare` dumps every zoo model's inference graphs with their
inputs and eager outputs (the references), compiles each for cuda:sm_90,
and puts them, this script and a torch-free `kiln-run` in one folder:

    python benchmarks/gpu/check.py prepare /tmp/gpu-check [--models bert,cnn] [--chip sm_90]

There (Python with numpy; no Kiln, no torch needed), `run` checks every
output against its reference and times each graph (kiln-run's median):

    python3 /tmp/gpu-check/check.py run /tmp/gpu-check

`--dry-run` (CI, here) prepares, checks that every artifact is a valid
artifact for the chip (the CPU device refuses it naming both formats), and
stops where a CUDA driver is required.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def prepare(out: Path, models: list[str], chip: str) -> None:
    import torch

    from kiln.compiler import load_extension
    from kiln.testing import zoo

    compiler = load_extension().compiler
    out.mkdir(parents=True, exist_ok=True)
    (out / "bin").mkdir(exist_ok=True)
    kiln_run = Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build")) / "bin" / "kiln-run"
    shutil.copy2(kiln_run, out / "bin" / "kiln-run")
    shutil.copy2(__file__, out / "check.py")
    graphs = []
    for name in models:
        torch._dynamo.reset()
        model = zoo.build(name)
        dump = out / "dumps" / name
        compiled = torch.compile(model.model, backend="kiln",
                                 options={"fallback": "error", "dump_dir": str(dump), "dump_inputs": True})
        with torch.no_grad():
            compiled(*model.make_inputs("small"))
        for graph in sorted(dump.glob("graph_*")):
            result = compiler.compile((graph / "graph.json").read_text(), f"cuda:{chip}")
            (graph / f"cuda-{chip}.kiln").write_bytes(result.artifact)
            graphs.append({"model": name, "graph": str(graph.relative_to(out)), "kernels": result.kernel_count,
                           "artifact": f"cuda-{chip}.kiln"})
            print(f"{name}/{graph.name}: {result.kernel_count} kernels for cuda:{chip}", flush=True)
    (out / "manifest.json").write_text(json.dumps({"chip": chip, "graphs": graphs}, indent=1))


def _kiln_run(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(out / "bin" / "kiln-run"), *args], capture_output=True, text=True)


def run(out: Path, dry_run: bool) -> int:
    manifest = json.loads((out / "manifest.json").read_text())
    devices = _kiln_run(out, "--devices").stdout
    has_gpu = re.search(r"^cuda: (?!unavailable)", devices, re.M) is not None
    if dry_run or not has_gpu:
        # Every artifact loads as far as a machine without the GPU goes.
        for entry in manifest["graphs"]:
            artifact = out / entry["graph"] / entry["artifact"]
            refused = _kiln_run(out, str(artifact), "--random")
            if f"compiled for target 'cuda-{manifest['chip']}'" not in refused.stderr:
                print(f"FAIL {entry['graph']}: {refused.stderr.strip()}")
                return 1
        cuda_line = next((line for line in devices.splitlines() if line.startswith("cuda:")), "cuda: not built")
        print(f"dry run: {len(manifest['graphs'])} artifacts for cuda:{manifest['chip']} are valid; "
              f"stopping where a driver is required ({cuda_line})")
        return 0 if dry_run else 1

    import numpy as np

    print(devices)
    print("| graph | kernels | outputs match | max abs error | Kiln (ms) |")
    print("|---|--:|---|--:|--:|")
    failures = 0
    for entry in manifest["graphs"]:
        graph = out / entry["graph"]
        got = graph / "cuda-outputs.npz"
        result = _kiln_run(out, "--device", "cuda", str(graph / entry["artifact"]), "--inputs",
                           str(graph / "inputs.npz"), "--save-outputs", str(got), "--repeat", "20",
                           "--warmup", "3", "--quiet")
        if result.returncode != 0:
            failures += 1
            print(f"| {entry['graph']} | {entry['kernels']} | error: {result.stderr.strip()} | | |")
            continue
        expected, actual = np.load(graph / "outputs.npz"), np.load(got)
        worst, ok = 0.0, True
        for key, (name, want) in zip(actual.files, expected.items()):
            have = actual[key].astype(np.float64)
            want = want.astype(np.float64)
            if have.size:
                worst = max(worst, float(np.max(np.abs(have - want))))
            ok &= have.shape == want.shape and bool(np.allclose(have, want, rtol=1e-3, atol=1e-3))
        failures += not ok
        median = re.search(r"median ([0-9.e-]+) ms", result.stdout)
        print(f"| {entry['graph']} | {entry['kernels']} | {'yes' if ok else 'NO'} | {worst:.2e} | "
              f"{median.group(1) if median else '?'} |", flush=True)
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=["prepare", "run"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--models", default="", help="zoo models, comma-separated (default: all)")
    parser.add_argument("--chip", default="sm_90")
    parser.add_argument("--dry-run", action="store_true", help="with prepare: then run up to the driver")
    args = parser.parse_args()
    if args.step == "prepare":
        from kiln.testing import zoo

        prepare(args.folder, args.models.split(",") if args.models else list(zoo.ZOO), args.chip)
        return run(args.folder, dry_run=True) if args.dry_run else 0
    return run(args.folder, dry_run=False)


if __name__ == "__main__":
    sys.exit(main())
