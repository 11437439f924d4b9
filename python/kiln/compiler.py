"""The compile service: one object that takes a graph to a loaded executable.

CompileService serializes an ATen graph, looks its artifact up in the on-disk
cache, compiles it on a miss (kiln._C.compiler), loads the executable
(kiln._C.runtime) and records what happened in a CompileRecord. backend.py
calls it for each graph and partition; kiln.explain for the kernels fusion
would form. `compile_json` is the whole path from a graph's JSON form alone,
the one entry a kernel registry (C++ or Python) needs: it never sees FX.

Errors: the compiler's CompileError (located at FX nodes where it can be),
SerializeError for a graph the JSON form cannot encode, and ArtifactLoadError
when the runtime refuses an artifact the compiler produced. Nothing else is
caught here: any other exception is a bug and propagates.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import sys
import time
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import torch
import torch.fx

from kiln.cache import ArtifactCache, build_id, cache_for
from kiln.errors import KilnError, SerializeError
from kiln.fx_serialize import SerializedGraph, serialize_graph
from kiln.logs import log
from kiln.options import KilnOptions
from kiln.partition import KilnSupport

if TYPE_CHECKING:
    from kiln.backend import CompileRecord
    from kiln.dumps import Dump

# How many times one graph may fail to compile at an op before Kiln stops
# isolating failing ops and runs the failing partition eagerly as a whole.
MAX_ISOLATED_FAILURES = 8

# The fallback reason of ops the compiler failed on starts with this.
COMPILE_FAILED = "Kiln failed to compile it"

# Every executable loaded and still alive, for held_memory().
_executables: "weakref.WeakSet[Any]" = weakref.WeakSet()


class ArtifactLoadError(KilnError):
    """The runtime refused an artifact the compiler produced (a kernel library
    that does not load, a CPU that lacks a feature the kernels use)."""


@functools.cache
def _point_at_cuda_wheels() -> None:
    """The CUDA toolkit of the pip wheels nvidia-cuda-nvcc and nvidia-nvvm
    (site-packages/nvidia/cu13), for the NVIDIA targets: the compiler looks
    there after the machine's own toolkit (KILN_CUDA_WHEELS). Once per
    process: load_extension runs on every compile."""
    if "KILN_CUDA_WHEELS" in os.environ:
        return
    for folder in sys.path:
        wheels = os.path.join(folder, "nvidia", "cu13")
        if os.path.exists(os.path.join(wheels, "bin", "ptxas")):
            os.environ["KILN_CUDA_WHEELS"] = wheels
            return


def load_extension() -> Any:
    """kiln._C, or an ImportError that says how to install it."""
    _point_at_cuda_wheels()
    try:
        from kiln import _C
    except ImportError as err:
        hint = ("Kiln needs the system's LLVM and MLIR 22 libraries (Debian: "
                "apt install libllvm22 libmlir-22 lld-22)"
                if "libMLIR" in str(err) or "libLLVM" in str(err) else
                "reinstall Kiln (pip install --no-build-isolation . in a checkout; "
                "bash .ci/setup for development)")
        raise ImportError(
            "kiln._C (Kiln's compiler and runtime extension) is not built or cannot be "
            f"loaded: {err}. {hint}; see docs/user-guide.md, Installing."
        ) from err
    return _C


def executables() -> list[Any]:
    """The executables loaded in this process and still alive."""
    return list(_executables)


def failing_nodes(err: Exception, gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The ops of gm that a compile error is located at (kiln._C.CompileError.nodes);
    empty when it names a node gm does not have (no isolation is possible)."""
    by_name = {n.name: n for n in gm.graph.nodes if n.op == "call_function"}
    names = getattr(err, "nodes", None) or []
    nodes = [by_name[name] for name in names if name in by_name]
    return nodes if len(nodes) == len(names) else []


# The words of the compiler's diagnostics for ops the target cannot run
# (float64 exp on Vulkan, say): a missing capability, not a compiler bug.
TARGET_UNSUPPORTED = "is not supported by the target"


def target_unsupported_reason(err: Exception) -> str | None:
    """The diagnostic, when a compile error is only the target refusing ops."""
    text = str(err.__cause__ or err)
    located = [line.strip() for line in text.splitlines() if line.startswith("loc(")]
    if located and all(TARGET_UNSUPPORTED in line for line in located):
        # Without the location (the record has the source line).
        return re.sub(r"^loc\((?:[^()]|\([^()]*\))*\): ", "", located[0])
    return None


def compile_failure_reason(err: Exception, node_names: Sequence[str]) -> str:
    """The fallback reason of ops a compile error is located at: the
    diagnostic at one of them (the error's first lines are a summary, and
    the reproducer's lines come last)."""
    text = str(err.__cause__ or err)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    at_node = [line for line in lines if any(f'"{name}"' in line for name in node_names)]
    return f"{COMPILE_FAILED}: {(at_node or lines or [type(err).__name__])[0]}"


def kernel_json(kernel: Any, partition: int | None) -> dict[str, Any]:
    """A compile record's entry for one kernel (a kiln._C.compiler.KernelSummary
    or the dict of a cache entry's metadata)."""
    info = kernel.to_dict() if hasattr(kernel, "to_dict") else kernel
    return {
        "name": str(info["name"]),
        "workgroups": int(info["workgroups"]),
        "ops": [str(op) for op in info["ops"]],
        "locations": [str(loc) for loc in info["locations"]],
        "nodes": [str(node) for node in info.get("nodes", ())],
        "partition": partition,
    }


@dataclass
class Loaded:
    """A graph's artifact, loaded: what CompileService.compile_json returns."""

    artifact: bytes
    executable: Any  # kiln._C.runtime.Executable
    kernels: list[dict[str, Any]]  # kernel_json(..., None) per kernel
    kernel_count: int
    stage_times_ms: dict[str, float]
    kernels_compiled: int = 0
    kernels_reused: int = 0
    cache_hit: bool = False
    compiled: Any = None  # the kiln._C.compiler.CompiledGraph of a miss


@dataclass
class Compiled:
    """One FX graph compiled and loaded, with its summary (a partition's dump)."""

    serialized: SerializedGraph
    executable: Any
    summary: dict[str, Any]


@functools.lru_cache(maxsize=None)
def _resolved_target(ext: Any, name: str) -> str:
    if name != "cuda" or not ext.compiler.available:
        return name
    return ext.compiler.target_info(name)["name"]


class CompileService:
    """Serializes, looks up the cache, compiles, loads and records, for one
    set of options (target, cache, dumps)."""

    def __init__(self, opts: KilnOptions, ext: Any = None):
        self.opts = opts
        self.ext = ext if ext is not None else load_extension()
        self.cache: ArtifactCache | None = cache_for(opts)

    @property
    def target(self) -> str:
        """The target compiled for: the option's, with "cuda" resolved to the
        chip of the GPU here ("cuda:sm_90a"), so that cache keys and records
        say which."""
        return _resolved_target(self.ext, self.opts.target)

    @property
    def compile_errors(self) -> tuple[type[BaseException], ...]:
        """What compile_graph raises for a graph Kiln cannot take (the caller
        falls back on these, and only these)."""
        return (self.ext.CompileError, SerializeError, ArtifactLoadError)

    def support(self) -> KilnSupport:
        """Which nodes this build of the compiler takes, under the options
        (target, force_eager)."""
        compiler = self.ext.compiler
        return KilnSupport(compiler.supported_ops(), self.opts.target, self.opts.force_eager,
                           symbolic_ops=compiler.symbolic_ops(),
                           symint_scalar_ops=compiler.symint_scalar_ops())

    def compile_json(self, graph: dict[str, Any], graph_json: str, name: str,
                     keep_stages: bool = False) -> Loaded:
        """A graph's JSON form (`graph`, and its text) to a loaded executable:
        from the cache when it holds the artifact (and keep_stages does not ask
        for every stage), else compiled and stored."""
        start = time.perf_counter()
        key = (self.cache.key(graph, self.target, build_id(self.ext))
               if self.cache else None)
        hit = self.cache.load(key, self.ext, name) if key and not keep_stages else None
        if hit:
            _executables.add(hit.executable)
            return Loaded(hit.artifact, hit.executable,
                          [kernel_json(k, None) for k in hit.kernels],
                          int(hit.executable.num_kernels),
                          {"cache": (time.perf_counter() - start) * 1e3}, cache_hit=True)
        compiled = self.ext.compiler.compile(graph_json, self.target, keep_stages)
        artifact = compiled.artifact
        try:
            exe = self.ext.runtime.Executable(artifact)
        except ValueError as err:  # the runtime's refusal, with its reason
            raise ArtifactLoadError(f"the runtime refused {name}'s artifact: {err}") from err
        _executables.add(exe)
        if key:
            self.cache.store(key, artifact)
        return Loaded(artifact, exe, [kernel_json(k, None) for k in compiled.kernels],
                      compiled.kernel_count,
                      {str(k): float(v) for k, v in compiled.stage_times_ms},
                      compiled.kernels_compiled, compiled.kernels_reused, compiled=compiled)

    def compile_graph(self, gm: torch.fx.GraphModule, name: str, record: "CompileRecord",
                      dump: "Dump | None", partition: int | None = None) -> Compiled:
        """gm compiled and loaded, with what happened added to `record`."""
        from torch.utils._python_dispatch import _disable_current_modes

        from kiln.dumps import write_reproducer

        start = time.perf_counter()
        serialized = serialize_graph(gm, name)
        graph_json = serialized.to_json()
        if dump:
            dump.write_text("graph.json", serialized.to_json(indent=1))
        # aot_autograd calls compilers inside its FakeTensorMode; anything the
        # extension allocates through ATen must be real.
        with _disable_current_modes():
            try:
                # A dump needs every stage, so it always compiles (and still stores).
                loaded = self.compile_json(serialized.graph, graph_json, name,
                                           keep_stages=dump is not None)
            except self.ext.CompileError as err:
                if dump:
                    # How far it got: the stages that finished, the last
                    # being what the failing stage was given.
                    dump.write_stages(getattr(err, "stages", []), [])
                extended = self.ext.CompileError(
                    write_reproducer(name, graph_json, self.opts, dump, err))
                extended.nodes = getattr(err, "nodes", [])
                raise extended from err
            if dump:
                if loaded.compiled is not None:
                    dump.write_stages(loaded.compiled.stages, loaded.compiled.kernel_files)
                dump.write_bytes("artifact.kiln", loaded.artifact)
        elapsed_ms = (time.perf_counter() - start) * 1e3
        if loaded.cache_hit:
            record.cache_hits += 1
        elif self.cache:
            record.cache_misses += 1
        kernels = [dict(k, partition=partition) for k in loaded.kernels]
        self._record(record, serialized, loaded, kernels, elapsed_ms)
        summary = {
            "name": name,
            "partition": partition,
            "target": self.opts.target,
            "ops": dict(Counter(n["target"] for n in serialized.graph["nodes"])),
            "kernel_count": loaded.kernel_count,
            "kernels": kernels,
            "compile_time_ms": elapsed_ms,
            "stage_times_ms": loaded.stage_times_ms,
            "artifact_bytes": len(loaded.artifact),
            "errors": [],
            "output_checksums": None,
        }
        if partition is not None:
            log.debug("%s: %d ops -> %d kernels in %.1f ms", name, len(serialized.graph["nodes"]),
                      loaded.kernel_count, elapsed_ms)
        return Compiled(serialized, loaded.executable, summary)

    def form_kernels(self, gm: torch.fx.GraphModule, name: str) -> tuple[SerializedGraph, list[Any]]:
        """The kernels fusion forms for gm (kiln._C.compiler.KernelSummary), without
        generating code; raises what compile_graph raises."""
        serialized = serialize_graph(gm, name)
        formed = self.ext.compiler.form_kernels(serialized.to_json(), self.target)
        return serialized, list(formed.kernels)

    @staticmethod
    def _record(record: "CompileRecord", serialized: SerializedGraph, loaded: Loaded,
                kernels: list[dict[str, Any]], elapsed_ms: float) -> None:
        exe = loaded.executable
        record.kernel_count += loaded.kernel_count
        # Each functional collective is a collective of the plan (wait_tensor
        # is the identity there).
        record.collectives += sum(1 for node in serialized.graph["nodes"]
                                  if node["target"].startswith("_c10d_functional.")
                                  and node["target"] != "_c10d_functional.wait_tensor.default")
        record.overlapped_launches += int(exe.overlapped_launches)
        for symbol in serialized.graph.get("symbols", ()):
            if all(known["name"] != symbol["name"] for known in record.symbols):
                record.symbols.append(dict(symbol))
        record.kernels += kernels
        record.kernels_compiled += loaded.kernels_compiled
        record.kernels_reused += loaded.kernels_reused
        record.compile_time_ms += elapsed_ms
        record.artifact_bytes += len(loaded.artifact)
        record.packed_weight_bytes += int(exe.persistent_bytes)
        in_inputs = exe.outputs_in_inputs
        returned = list(itertools.accumulate(serialized.output_is_ref, initial=0))  # literals are not
        record.inputs_written_in_place += sum(
            1 for w in serialized.graph.get("input_writes", ())
            if in_inputs.get(returned[w["output"]]) == w["input"])
        for stage, ms in loaded.stage_times_ms.items():
            record.stage_times_ms[stage] = record.stage_times_ms.get(stage, 0.0) + ms
