"""Helpers shared by the kiln tests (importable because pytest puts this folder on sys.path)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

import kiln


def capture_aten(fn: Callable[..., Any], *inputs: Any, dynamic: bool = False) -> list[torch.fx.GraphModule]:
    """The ATen graphs aot_autograd gives a backend for fn(*inputs), as kiln_backend sees them."""
    graphs: list[torch.fx.GraphModule] = []

    def compiler(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    backend = aot_autograd(
        fw_compiler=compiler, decompositions=torch._decomp.core_aten_decompositions()
    )
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(fn, backend=backend, dynamic=dynamic, fullgraph=True)(*inputs)
    return graphs


def line_of(marker: str, path: str) -> int:
    """The 1-based line of the only line of path that contains marker."""
    hits = [i for i, text in enumerate(Path(path).read_text().splitlines(), 1) if marker in text]
    assert len(hits) == 1, f"marker {marker!r} found on lines {hits} of {path}"
    return hits[0]


def unwrap_backend_error(err: BaseException) -> BaseException:
    """The exception the backend raised, from Dynamo's BackendCompilerFailed wrapper."""
    while True:
        inner = getattr(err, "inner_exception", None)
        if inner is None:
            return err
        err = inner


def compile_kiln(fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
    return torch.compile(fn, backend="kiln", options=options, dynamic=False)


def assert_kiln_matches_eager(
    fn: Callable[..., Any], *inputs: Any, rtol: float = 1e-4, atol: float = 1e-5
) -> None:
    """fn compiled by Kiln with fallback="error" gives eager's result, and Kiln compiled it."""
    expected = fn(*inputs)
    before = len(kiln.compile_records())
    actual = compile_kiln(fn, fallback="error")(*inputs)
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)
    records = kiln.compile_records()[before:]
    assert records, "Kiln compiled no graph"
    assert all(r.status == "compiled" for r in records), records


def assert_kiln_ran(since: int = 0, *, strict: bool = False) -> list[kiln.CompileRecord]:
    """Kiln kernels ran, from the compile records after the first `since`: a
    graph compiled whole or partitioned has kernels, so the results a test
    compares did not all come from eager fallbacks. strict (for
    fallback="error"): every graph compiled whole. Call it after the compiled
    calls, and after any torch._dynamo.reset() (which clears the records)."""
    records = kiln.compile_records()[since:]
    assert records, "Kiln compiled no graph"
    if strict:
        assert all(r.status == "compiled" for r in records), records
    assert any(r.status in ("compiled", "partitioned") and r.kernel_count > 0
               for r in records), records
    return records


def assert_ran_on_vulkan(since: int = 0, target: str = "vulkan") -> list[kiln.CompileRecord]:
    """Every graph since record `since` was compiled for the Vulkan target
    (`target`: "vulkan" or a variant), with kernels, and an executable ran on
    the Vulkan device (its outputs were downloaded from it)."""
    import kiln.compiler

    records = kiln.compile_records()[since:]
    assert records and all(r.target == target and r.status == "compiled" for r in records), records
    assert sum(r.kernel_count for r in records) > 0
    executables = kiln.compiler.executables()
    assert any(e.device.startswith("vulkan") and e.bytes_downloaded > 0 for e in executables), \
        [e.device for e in executables]
    return records


SPIRV_TOOLS = ("mlir-translate-22", "spirv-val")


def spirv_tools_missing() -> str | None:
    """Why the dumped SPIR-V kernels cannot be validated here, or None."""
    missing = [t for t in SPIRV_TOOLS if shutil.which(t) is None]
    return f"needs {', '.join(missing)} (spirv-tools, mlir-22-tools)" if missing else None


def validate_spirv_kernels(dump_dir: Path) -> int:
    """Serializes every SPIR-V kernel of a Kiln dump (kernels/*.spirv.mlir)
    and checks it with spirv-val for Vulkan 1.2; returns how many."""
    modules = sorted(Path(dump_dir).rglob("*.spirv.mlir"))
    assert modules, f"no SPIR-V kernels under {dump_dir}"
    for module in modules:
        binary = module.with_suffix(".spv")
        subprocess.run([SPIRV_TOOLS[0], "--no-implicit-module", "--serialize-spirv",
                        str(module), "-o", str(binary)], check=True)
        result = subprocess.run([SPIRV_TOOLS[1], "--target-env", "vulkan1.2", str(binary)],
                                capture_output=True, text=True)
        assert result.returncode == 0, f"{module}: {result.stdout}{result.stderr}"
    return len(modules)


def resized_inputs(inputs: tuple[torch.Tensor, ...], batch: int, seq: int | None) -> tuple[torch.Tensor, ...]:
    """The zoo inputs with `batch` rows (repeated as needed) and, for token
    inputs, the first `seq` positions."""
    out = []
    for t in inputs:
        t = t.repeat(-(-batch // t.shape[0]), *[1] * (t.dim() - 1))[:batch]
        if seq is not None and t.dim() == 2 and not t.is_floating_point():
            t = t.repeat(1, -(-seq // t.shape[1]))[:, :seq]
        out.append(t.contiguous())
    return tuple(out)
