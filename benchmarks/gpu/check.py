"""The GPU check: Kiln's NVIDIA kernels run on a GPU, against references.

Here (no GPU), `prepare` dumps every zoo model's inference graphs with their
inputs and eager outputs (the references), and a kernel set at real sizes
(elementwise, softmax, layer norm, float32 and bfloat16 matmuls, causal
attention; traced on fake tensors, so nothing that size runs here), compiles
each for cuda:sm_90, and puts them, this script and a torch-free `kiln-run`
in one folder:

    python benchmarks/gpu/check.py prepare /tmp/gpu-check [--models bert,cnn] [--chip sm_90]

There (Python with numpy), `run` checks every zoo graph's outputs against
the references made here and times each (kiln-run's median). With torch
there (with CUDA), it also runs the kernel set: kiln-run's seeded random
inputs, float64 references computed from them by torch, Kiln's time beside
torch eager's and torch.compile's on the same inputs, and the copy bandwidth
and cuBLAS bfloat16 GEMM rate measured in the same run (the ceilings):

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
    kernels = _prepare_kernels(out, compiler, chip)
    (out / "manifest.json").write_text(json.dumps({"chip": chip, "graphs": graphs, "kernels": kernels},
                                                  indent=1))


def kernel_set() -> dict:
    """name: (function, input shapes, dtype, what its time is measured
    against: "copy" (bytes moved per second, against the copy bandwidth),
    "gemm" (FLOP/s against cuBLAS's bfloat16 GEMM) or "attention"). Also
    read there, to time torch on the same functions."""
    import torch
    import torch.nn.functional as F

    f32, bf16 = torch.float32, torch.bfloat16
    rows, width = 8192, 4096
    kernels = {
        "add": (lambda x, y: x + y, [(1 << 26,), (1 << 26,)], f32, "copy"),
        "softmax": (lambda x: torch.softmax(x, -1), [(rows, width)], f32, "copy"),
        "layer_norm": (lambda x, w, b: F.layer_norm(x, (width,), w, b),
                       [(rows, width), (width,), (width,)], f32, "copy"),
        "attention_bf16": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                           [(4, 16, 2048, 128)] * 3, bf16, "attention"),
    }
    for n in (1024, 4096, 8192):
        kernels[f"matmul_f32_{n}"] = (lambda a, b: a @ b, [(n, n), (n, n)], f32, "gemm")
        kernels[f"matmul_bf16_{n}"] = (lambda a, b: a @ b, [(n, n), (n, n)], bf16, "gemm")
    return kernels


def _prepare_kernels(out: Path, compiler, chip: str) -> list[dict]:
    """The kernel set's graphs, traced on fake tensors (the backend writes
    graph.json as it compiles; running them then fails, as it must), each
    compiled for the chip."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    entries = []
    for name, (fn, shapes, dtype, ceiling) in kernel_set().items():
        torch._dynamo.reset()
        dump = out / "kernels" / name
        with FakeTensorMode():
            args = [torch.empty(shape, dtype=dtype) for shape in shapes]
        compiled = torch.compile(fn, backend="kiln", dynamic=False,
                                 options={"fallback": "error", "dump_dir": str(dump), "cache": False})
        try:
            compiled(*args)
        except RuntimeError as err:  # fake tensors have no data to run on
            if "null data pointer" not in str(err):
                raise
        (graph,) = sorted(dump.glob("graph_*"))
        result = compiler.compile((graph / "graph.json").read_text(), f"cuda:{chip}")
        (graph / f"cuda-{chip}.kiln").write_bytes(result.artifact)
        entries.append({"name": name, "graph": str(graph.relative_to(out)), "kernels": result.kernel_count,
                        "artifact": f"cuda-{chip}.kiln", "shapes": shapes, "dtype": str(dtype).split(".")[1],
                        "ceiling": ceiling})
        print(f"kernels/{name}: {result.kernel_count} kernels for cuda:{chip}", flush=True)
    torch._dynamo.reset()
    return entries


def _kiln_run(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(out / "bin" / "kiln-run"), *args], capture_output=True, text=True)


def run(out: Path, dry_run: bool) -> int:
    manifest = json.loads((out / "manifest.json").read_text())
    devices = _kiln_run(out, "--devices").stdout
    has_gpu = re.search(r"^cuda: (?!unavailable)", devices, re.M) is not None
    if dry_run or not has_gpu:
        # Every artifact loads as far as a machine without the GPU goes.
        for entry in manifest["graphs"] + manifest.get("kernels", []):
            artifact = out / entry["graph"] / entry["artifact"]
            refused = _kiln_run(out, str(artifact), "--random")
            if f"compiled for target 'cuda-{manifest['chip']}'" not in refused.stderr:
                print(f"FAIL {entry['graph']}: {refused.stderr.strip()}")
                return 1
        cuda_line = next((line for line in devices.splitlines() if line.startswith("cuda:")), "cuda: not built")
        count = len(manifest["graphs"]) + len(manifest.get("kernels", []))
        print(f"dry run: {count} artifacts for cuda:{manifest['chip']} are valid; "
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
    failures += run_kernels(out, manifest)
    return 1 if failures else 0


def _median_ms(fn, repeat: int = 20, warmup: int = 3) -> float:
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def _ceilings() -> tuple[float, float]:
    """The copy bandwidth (GB/s, a 1 GiB device-to-device copy: bytes read
    and written) and cuBLAS's bfloat16 GEMM rate (TFLOP/s at 8192^3)."""
    import torch

    x = torch.empty(1 << 28, device="cuda")
    y = torch.empty_like(x)
    copy_ms = _median_ms(lambda: y.copy_(x))
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    gemm_ms = _median_ms(lambda: a @ b)
    return 2 * x.numel() * 4 / copy_ms / 1e6, 2 * 8192 ** 3 / gemm_ms / 1e9


def _work(entry: dict, inputs: list) -> tuple[float, str]:
    """What the kernel moves or computes: bytes (read + written) for "copy",
    FLOPs for "gemm" and "attention" (causal: half the score matrix)."""
    shapes = entry["shapes"]
    if entry["ceiling"] == "copy":
        out = max(inputs, key=lambda t: t.numel())
        return float(sum(t.numel() * t.element_size() for t in inputs) + out.numel() * out.element_size()), "GB/s"
    if entry["ceiling"] == "gemm":
        (m, k), (_, n) = shapes
        return 2.0 * m * n * k, "TFLOP/s"
    b, h, length, d = shapes[0]
    return 4.0 * b * h * length * length * d / 2, "TFLOP/s"


def run_kernels(out: Path, manifest: dict) -> int:
    """The kernel set, where torch with CUDA is: returns the failures."""
    try:
        import torch
    except ImportError:
        print("kernel set skipped: no torch here (it needs torch with CUDA for references and timings)")
        return 0
    if not torch.cuda.is_available():
        print("kernel set skipped: torch has no CUDA here")
        return 0
    import numpy as np

    copy_gbs, gemm_tflops = _ceilings()
    print(f"\nceilings: copy {copy_gbs:.0f} GB/s, cuBLAS bf16 GEMM {gemm_tflops:.0f} TFLOP/s")
    print("| kernel | matches float64 | max abs error | Kiln (ms) | eager (ms) | torch.compile (ms) "
          "| Kiln rate | of ceiling |")
    print("|---|---|--:|--:|--:|--:|--:|--:|")
    functions = kernel_set()
    failures = 0
    for entry in manifest.get("kernels", []):
        graph = out / entry["graph"]
        saved_in, saved_out = graph / "random-inputs.npz", graph / "cuda-outputs.npz"
        result = _kiln_run(out, "--device", "cuda", str(graph / entry["artifact"]), "--random", "--seed", "1",
                           "--save-inputs", str(saved_in), "--save-outputs", str(saved_out),
                           "--repeat", "20", "--warmup", "3", "--quiet")
        if result.returncode != 0:
            failures += 1
            print(f"| {entry['name']} | error: {result.stderr.strip()} | | | | | | |")
            continue
        kiln_ms = float(re.search(r"median ([0-9.e-]+) ms", result.stdout).group(1))
        dtype = getattr(torch, entry["dtype"])
        loaded = np.load(saved_in)
        inputs = [torch.from_numpy(loaded[key]).cuda().to(dtype) for key in loaded.files]
        fn = functions[entry["name"]][0]
        want = fn(*[t.double() for t in inputs]).cpu()
        got = torch.from_numpy(np.load(saved_out)["output_0"]).double()
        worst = float((got - want).abs().max())
        # bfloat16 results: 2^-8 of the magnitude; float32: reordered sums.
        tolerance = (2 ** -7 if dtype == torch.bfloat16 else 1e-4) * max(1.0, float(want.abs().max()))
        ok = got.shape == want.shape and worst <= tolerance
        failures += not ok
        eager_ms = _median_ms(lambda: fn(*inputs))
        compiled = torch.compile(fn)
        compiled_ms = _median_ms(lambda: compiled(*inputs))
        work, unit = _work(entry, inputs)
        rate = work / kiln_ms / (1e6 if unit == "GB/s" else 1e9)
        ceiling = copy_gbs if unit == "GB/s" else gemm_tflops
        print(f"| {entry['name']} | {'yes' if ok else 'NO'} | {worst:.2e} | {kiln_ms:.3f} | {eager_ms:.3f} | "
              f"{compiled_ms:.3f} | {rate:.0f} {unit} | {100 * rate / ceiling:.0f}% |", flush=True)
    return failures


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
