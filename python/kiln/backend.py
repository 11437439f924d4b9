"""The torch.compile backend: ``torch.compile(model, backend="kiln")``.

Dynamo hands kiln_backend a torch-level FX graph. aot_autograd functionalizes
it, decomposes it to Core ATen and splits forward from backward; each ATen
graph then reaches _compile_graph, which either compiles the whole graph with
kiln._C or, with fallback="eager", compiles the supported regions and leaves
the rest as PyTorch calls.

dump_dir layout, one folder per ATen graph:

    graph_<n>/fx_graph.py      the ATen FX graph as Python
             /graph.json       what the C++ importer received
             /NN-<stage>.mlir  the IR after each pipeline stage
             /kernels/<kernel>.ll
             /artifact.kiln
             /summary.json     ops, kernels, fallbacks, stage times, sizes
             /partition_<k>/   when the graph was split: the files above per
                               Kiln-compiled partition
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch._decomp
import torch.fx

from kiln.errors import KilnError, SerializeError, UnsupportedOpError
from kiln.fx_serialize import SerializedGraph, is_getitem, op_name, serialize_graph
from kiln.options import KilnOptions
from kiln.partition import KilnSupport, Unsupported, find_unsupported, partition_graph

log = logging.getLogger("kiln")

_graph_ids = itertools.count()
_warned: set[tuple[str, str | None, int | None]] = set()
_records: list["CompileRecord"] = []


@dataclass
class CompileRecord:
    """What happened to one ATen graph; see compile_records()."""

    name: str
    kind: str  # "forward", "backward" or "inference"
    target: str
    status: str = "eager"  # "compiled", "partitioned" or "eager"
    ops: dict[str, int] = field(default_factory=dict)
    kernels: int = 0
    partitions: int = 0  # Kiln-compiled partitions when split
    fallbacks: list[dict[str, Any]] = field(default_factory=list)
    compile_time_ms: float = 0.0
    stage_times_ms: dict[str, float] = field(default_factory=dict)
    artifact_bytes: int = 0
    errors: list[str] = field(default_factory=list)
    dump_path: str | None = None


def compile_records() -> list[CompileRecord]:
    """Records of the graphs compiled in this process since the last reset()."""
    return list(_records)


def reset() -> None:
    """Forget compile records and which fallbacks were already logged.

    torch._dynamo.reset() calls this through kiln_backend.reset.
    """
    _warned.clear()
    _records.clear()


def kiln_backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: dict[str, Any] | None = None,
    mode: str | None = None,
) -> Callable[..., Any]:
    """torch.compile backend entry point (registered as "kiln")."""
    from torch._dynamo.backends.common import aot_autograd

    opts = KilnOptions.from_dict(options)
    if mode is not None:
        log.debug("kiln ignores torch.compile mode=%r", mode)

    def compiler(kind: str) -> Callable[..., Any]:
        def compile_fn(graph: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable[..., Any]:
            return _compile_graph(graph, opts, kind)

        return compile_fn

    backend = aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        decompositions=_decompositions(),
    )
    return backend(gm, example_inputs)


kiln_backend.reset = reset  # type: ignore[attr-defined]


@functools.cache
def _decompositions() -> dict[Any, Callable[..., Any]]:
    return torch._decomp.core_aten_decompositions()


def _ext() -> Any:
    try:
        from kiln import _C
    except ImportError as err:
        raise ImportError(
            "kiln._C (Kiln's compiler and runtime extension) is not built or cannot be "
            f"loaded: {err}. Build it with `bash .ci/setup`."
        ) from err
    return _C


# ---------------------------------------------------------------------------
# Compiling one ATen graph


def _compile_graph(gm: torch.fx.GraphModule, opts: KilnOptions, kind: str) -> Callable[..., Any]:
    ext = _ext()
    support = KilnSupport(ext.compiler.supported_ops(), opts.target)
    unsupported = find_unsupported(gm, support)
    if unsupported and opts.fallback == "error":
        raise UnsupportedOpError(unsupported)

    dump = _Dump.create(Path(opts.dump_dir)) if opts.dump_dir else None
    name = dump.path.name if dump else f"graph_{next(_graph_ids)}"
    record = CompileRecord(name=name, kind=kind, target=opts.target)
    record.ops = dict(
        Counter(op_name(n) for n in gm.graph.nodes if n.op == "call_function" and not is_getitem(n))
    )
    record.fallbacks = [_fallback_json(u) for u in unsupported]
    record.dump_path = str(dump.path) if dump else None
    if dump:
        dump.write_text("fx_graph.py", gm.code)

    try:
        if not record.ops:
            fn = _boxed(gm.forward)  # nothing to compute
        elif not unsupported:
            fn = _compile_whole(gm, ext, opts, record, dump)
        else:
            for u in unsupported:
                _warn_fallback(u)
            fn = _compile_partitioned(gm, support, ext, opts, record, dump)
    finally:
        if dump:
            dump.write_json("summary.json", asdict(record))
    _records.append(record)
    return fn


def _compile_whole(
    gm: torch.fx.GraphModule, ext: Any, opts: KilnOptions, record: CompileRecord, dump: "_Dump | None"
) -> Callable[..., Any]:
    try:
        serialized, exe = _compile_to_executable(gm, record.name, ext, opts, record, dump)
    except (ext.CompileError, SerializeError, ValueError) as err:  # ValueError: artifact not loadable
        if opts.fallback == "error":
            raise
        _warn_compile_error(record, f"{record.name} ({record.kind})", err)
        return _boxed(gm.forward)
    record.status = "compiled"
    return _boxed_runner(exe, serialized)


def _compile_partitioned(
    gm: torch.fx.GraphModule,
    support: KilnSupport,
    ext: Any,
    opts: KilnOptions,
    record: CompileRecord,
    dump: "_Dump | None",
) -> Callable[..., Any]:
    split, names = partition_graph(gm, support)
    for k, sub_name in enumerate(names):
        sub = getattr(split, sub_name)
        part = f"{record.name}_partition_{k}"
        sub_dump = dump.child(f"partition_{k}") if dump else None
        if sub_dump:
            sub_dump.write_text("fx_graph.py", sub.code)
        try:
            serialized, exe = _compile_to_executable(sub, part, ext, opts, record, sub_dump)
        except (ext.CompileError, SerializeError, ValueError) as err:  # ValueError: artifact not loadable
            _warn_compile_error(record, f"{part} ({record.kind})", err)
            continue
        setattr(split, sub_name, _KilnModule(exe, serialized, _returns_tuple(sub)))
        record.partitions += 1
    record.status = "partitioned" if record.partitions else "eager"
    if dump:
        dump.write_text("fx_graph_split.py", split.code)
    return _boxed(split.forward)


def _compile_to_executable(
    gm: torch.fx.GraphModule,
    name: str,
    ext: Any,
    opts: KilnOptions,
    record: CompileRecord,
    dump: "_Dump | None",
) -> tuple[SerializedGraph, Any]:
    from torch.utils._python_dispatch import _disable_current_modes

    start = time.perf_counter()
    serialized = serialize_graph(gm, name)
    graph_json = serialized.to_json()
    if dump:
        dump.write_text("graph.json", serialized.to_json(indent=1))
    # aot_autograd calls compilers inside its FakeTensorMode; anything the
    # extension allocates through ATen must be real.
    with _disable_current_modes():
        result = ext.compiler.compile(graph_json, opts.target, dump is not None)
        artifact = result["artifact"]
        if dump:
            dump.write_stages(result.get("stages", ()), result.get("kernel_asm", ()))
            dump.write_bytes("artifact.kiln", artifact)
        exe = ext.runtime.Executable(artifact)
    elapsed_ms = (time.perf_counter() - start) * 1e3

    kernels = int(result.get("kernels", getattr(exe, "num_kernels", 0)))
    stage_times = {str(k): float(v) for k, v in result.get("stage_times_ms", ())}
    record.kernels += kernels
    record.compile_time_ms += elapsed_ms
    record.artifact_bytes += len(artifact)
    for stage, ms in stage_times.items():
        record.stage_times_ms[stage] = record.stage_times_ms.get(stage, 0.0) + ms
    if dump:
        nodes = serialized.graph["nodes"]
        dump.write_json(
            "summary.json",
            {
                "name": name,
                "target": opts.target,
                "ops": dict(Counter(n["target"] for n in nodes)),
                "kernels": kernels,
                "compile_time_ms": elapsed_ms,
                "stage_times_ms": stage_times,
                "artifact_bytes": len(artifact),
                "kernel_info": result.get("kernel_info", []),
            },
        )
    log.info(
        "kiln compiled %s: %d ops -> %d kernels in %.1f ms",
        name, len(serialized.graph["nodes"]), kernels, elapsed_ms,
    )
    return serialized, exe


# ---------------------------------------------------------------------------
# Calling compiled code


def _boxed(fn: Callable[..., Any]) -> Callable[[list[Any]], Any]:
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(fn)


def _output_filler(exe: Any, serialized: SerializedGraph) -> Callable[[list[Any]], list[Any]] | None:
    """Re-insert literal (None) graph outputs if the runtime returns only tensor outputs."""
    is_ref = serialized.output_is_ref
    if all(is_ref) or exe.num_outputs == len(is_ref):
        return None
    if exe.num_outputs != sum(is_ref):
        raise KilnError(
            f"{serialized.graph['name']}: the executable has {exe.num_outputs} outputs, "
            f"the graph {len(is_ref)} ({sum(is_ref)} tensors)"
        )
    literals = serialized.graph["outputs"]

    def fill(outs: list[Any]) -> list[Any]:
        produced = iter(outs)
        return [next(produced) if ref else lit for ref, lit in zip(is_ref, literals)]

    return fill


def _boxed_runner(exe: Any, serialized: SerializedGraph) -> Callable[[list[Any]], Any]:
    """A boxed callable running exe; its per-call path is one run() call where possible."""
    run = exe.run
    constants = serialized.constants
    fill = _output_filler(exe, serialized)
    if fill is None and not constants:
        def kiln_graph(args: list[Any]) -> Any:
            return run(args)
    elif fill is None:
        def kiln_graph(args: list[Any]) -> Any:
            return run([*args, *constants])
    else:
        def kiln_graph(args: list[Any]) -> Any:
            return fill(run([*args, *constants]))
    kiln_graph._boxed_call = True  # type: ignore[attr-defined]
    kiln_graph.executable = exe  # type: ignore[attr-defined]
    return kiln_graph


class _KilnModule(torch.nn.Module):
    """Stands in for a fused partition submodule of a split graph."""

    def __init__(self, exe: Any, serialized: SerializedGraph, returns_tuple: bool):
        super().__init__()
        self.executable = exe
        self._run = _boxed_runner(exe, serialized)
        self._returns_tuple = returns_tuple

    def forward(self, *args: Any) -> Any:
        outs = self._run(list(args))
        return tuple(outs) if self._returns_tuple else outs[0]


def _returns_tuple(gm: torch.fx.GraphModule) -> bool:
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    return isinstance(output.args[0], (tuple, list))


# ---------------------------------------------------------------------------
# Logging and dumps


def _fallback_json(u: Unsupported) -> dict[str, Any]:
    return {
        "op": u.op,
        "file": u.loc.file if u.loc else None,
        "line": u.loc.line if u.loc else None,
        "code": u.loc.code if u.loc else None,
        "reason": u.reason,
    }


def _warn_fallback(u: Unsupported) -> None:
    key = (u.op, u.loc.file if u.loc else None, u.loc.line if u.loc else None)
    if key in _warned:
        return
    _warned.add(key)
    log.warning("kiln: running in PyTorch eager: %s", u.describe())


def _warn_compile_error(record: CompileRecord, what: str, err: Exception) -> None:
    record.errors.append(f"{what}: {err}")
    log.warning("kiln: compiling %s failed; running it in PyTorch eager instead:\n%s", what, err)


_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
_next_dump_index: dict[Path, int] = {}


class _Dump:
    """One graph's folder under dump_dir."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, root: Path) -> "_Dump":
        root.mkdir(parents=True, exist_ok=True)
        n = _next_dump_index.get(root, 0)
        while True:
            path = root / f"graph_{n}"
            try:
                path.mkdir()
                break
            except FileExistsError:
                n += 1
        _next_dump_index[root] = n + 1
        return cls(path)

    def child(self, name: str) -> "_Dump":
        path = self.path / name
        path.mkdir(parents=True, exist_ok=True)
        return _Dump(path)

    def write_text(self, name: str, text: str) -> None:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def write_bytes(self, name: str, data: bytes) -> None:
        (self.path / name).write_bytes(data)

    def write_json(self, name: str, value: Any) -> None:
        self.write_text(name, json.dumps(value, indent=1, default=str) + "\n")

    def write_stages(self, stages: Sequence[tuple[str, str]], kernel_ir: Sequence[tuple[str, str]]) -> None:
        for i, (stage, text) in enumerate(stages):
            self.write_text(f"{i:02d}-{_SAFE_NAME.sub('_', stage)}.mlir", text)
        for kernel, text in kernel_ir:
            name = _SAFE_NAME.sub("_", kernel)
            if not name.endswith((".ll", ".s", ".ptx")):
                name += ".ll"
            self.write_text(f"kernels/{name}", text)
