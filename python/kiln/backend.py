"""The torch.compile backend: ``torch.compile(model, backend="kiln")``.

Dynamo hands kiln_backend a torch-level FX graph. aot_autograd functionalizes
it, decomposes it to Core ATen and splits forward from backward; each ATen
graph then reaches _compile_graph, which either compiles the whole graph with
kiln._C or, with fallback="eager", compiles the supported regions and leaves
the rest as PyTorch calls.

Calling compiled code lives in kiln.runner, dump folders in kiln.dumps.
"""

from __future__ import annotations

import copy
import itertools
import logging
import os
from collections import Counter
import dataclasses
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch._decomp
import torch.fx

from kiln.compiler import (
    COMPILE_FAILED,
    MAX_ISOLATED_FAILURES,
    CompileService,
    compile_failure_reason,
    executables,
    failing_nodes,
    load_extension,
    target_unsupported_reason,
)
from kiln.errors import KilnError, SerializeError, UnsupportedOpError
from kiln.fx_serialize import (
    PARAMETER_META,
    computes_symint,
    constant_tensors,
    is_getitem,
    op_name,
    serialize_graph,
    source_loc,
)
from kiln.decompositions import decomposition_table, needs_autograd
from kiln.mutation import lift_input_writes, with_input_writes
from kiln.randomness import lift_random_seeds, with_random_seeds
from kiln.dumps import Dump, save_first_call, summary_updater
from kiln.logs import configure_from_env, log
from kiln.options import ENV_VARS, KilnOptions
from kiln.partition import (KilnSupport, Unsupported, find_unsupported, kiln_device_driver,
                            partition_graph)
from kiln.runner import KilnModule, boxed, boxed_runner, returns_tuple

__all__ = ["CompileRecord", "aten_graphs", "compile_records", "compute_nodes", "held_memory",
           "kiln_backend", "load_extension", "plural", "reset"]

configure_from_env()

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
    kernel_count: int = 0
    # One per kernel: name, workgroups, ops (fused, in order), locations
    # ("file:line" of the user's code) and partition (its index, or None).
    kernels: list[dict[str, Any]] = field(default_factory=list)
    partitions: int = 0  # Kiln-compiled partitions when split
    # Collectives (tensor parallelism's _c10d_functional ops) that run inside
    # Kiln's compiled graphs, between their kernels, and the kernel launches
    # that run while one of them is in flight (summed over the collectives).
    collectives: int = 0
    overlapped_launches: int = 0
    fallbacks: list[dict[str, Any]] = field(default_factory=list)
    # Size symbols of a graph compiled with dynamic shapes: name ("s77", as
    # Dynamo named it), min and max (the range the artifact accepts).
    symbols: list[dict[str, Any]] = field(default_factory=list)
    compile_time_ms: float = 0.0
    # Artifacts (the whole graph, or its partitions) loaded from the on-disk
    # cache instead of compiled.
    cache_hits: int = 0
    # Artifacts compiled and stored in the cache (0 with the cache off; a
    # graph compiled with a dump always compiles, and stores, so it counts).
    cache_misses: int = 0
    # Kernels natively compiled, and kernels that took the code of an
    # identical kernel (a repeated layer) compiled earlier in this process.
    kernels_compiled: int = 0
    kernels_reused: int = 0
    # Graph inputs the graph overwrites (in-place ops on them), and how many
    # of those its kernels write in the inputs' own memory; the others are
    # computed into new buffers and copied back.
    input_writes: int = 0
    inputs_written_in_place: int = 0
    stage_times_ms: dict[str, float] = field(default_factory=dict)
    artifact_bytes: int = 0
    # Bytes of matmul weights (parameters) the executables keep packed into
    # panels (KilnOptions.pack_weights), made on the first call.
    packed_weight_bytes: int = 0
    errors: list[str] = field(default_factory=list)
    dump_path: str | None = None
    # With dump_inputs: t.double().sum().item() per tensor output of the
    # eager graph on the first call's inputs (outputs.npz holds the tensors).
    output_checksums: list[float] | None = None


def held_memory(packed_weights: bool = True) -> int:
    """Bytes Kiln's loaded executables hold between calls: the arenas their
    intermediates live in (one per call that ran at once, reused by later
    calls) and, unless packed_weights=False, the copies of weights they keep
    packed (KilnOptions.pack_weights), which scale with the model rather than
    with a call. Outputs and kernel scratch are allocated per call."""
    return sum(getattr(exe, "arena_bytes", 0)
               + (getattr(exe, "persistent_bytes", 0) if packed_weights else 0)
               for exe in executables())


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
    opts = _target_for_kiln_memory(KilnOptions.from_dict(options), options, example_inputs)
    if mode is not None:
        log.debug("kiln ignores torch.compile mode=%r", mode)

    def compile_graph(graph: torch.fx.GraphModule, kind: str) -> Callable[..., Any]:
        # Inference graphs only: a training forward's parameters change at
        # every optimizer step, and a pack per call cost the MLP's training
        # step more than its faster matmuls saved (forward 1.17 against
        # 0.73 ms at batch 64).
        if opts.pack_weights and kind == "inference":
            mark_parameters(graph)
        return _compile_graph(graph, opts, kind)

    return aten_graphs(gm, example_inputs, compile_graph)


def _target_for_kiln_memory(opts: KilnOptions, options: dict[str, Any] | None,
                            example_inputs: Sequence[Any]) -> KilnOptions:
    """Kernels for the driver the kiln device's memory is on (KILN_DEVICE),
    where the graph takes kiln tensors and no target was asked for: a
    model on a Vulkan-backed kiln device compiles for Vulkan."""
    if (options or {}).get("target") or os.environ.get(ENV_VARS["target"]):
        return opts
    driver = kiln_device_driver()
    if driver in (None, "cpu"):
        return opts
    if not any(isinstance(t, torch.Tensor) and t.device.type == "kiln" for t in example_inputs):
        return opts
    return dataclasses.replace(opts, target=driver)


def aten_graphs(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    compile_graph: Callable[[torch.fx.GraphModule, str], Callable[..., Any]],
) -> Callable[..., Any]:
    """Dynamo's graph through aot_autograd as Kiln sets it up: each ATen graph
    (kind "forward", "backward" or "inference") goes to compile_graph, which
    returns its boxed callable. kiln.explain analyzes the same graphs."""
    from torch._dynamo.backends.common import aot_autograd

    def compiler(kind: str) -> Callable[..., Any]:
        def compile_fn(graph: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable[..., Any]:
            return compile_graph(graph, kind)

        return compile_fn

    backend = aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        partition_fn=_partition_saving_seeds,
        # In-place ops on graph inputs stay in the graph as copy_ nodes (in
        # training too, where autograd does not see them: batch norm's
        # running statistics), so that Kiln can write them in place.
        keep_inference_input_mutations=True,
        decompositions=decomposition_table(training=needs_autograd(gm, example_inputs)),
    )
    return backend(gm, example_inputs)


kiln_backend.reset = reset  # type: ignore[attr-defined]


def _partition_saving_seeds(joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any) -> Any:
    """aot_autograd's default partition, with every random seed computed in
    the forward only: inside an activation-checkpointed region the
    partitioner would otherwise recompute the seed op in the backward, which
    (lifted to an input) would draw a new seed, and dropout there would
    recompute a different mask than the forward used."""
    from torch._functorch.partitioners import default_partition
    from torch.utils.checkpoint import CheckpointPolicy

    for node in joint.graph.nodes:
        if node.op == "call_function" and node.target is torch.ops.kiln.random_seed.default:
            node.meta["recompute"] = CheckpointPolicy.MUST_SAVE
    return default_partition(joint, joint_inputs, **kwargs)


def mark_parameters(gm: torch.fx.GraphModule) -> None:
    """Mark the placeholders of a forward or inference graph that are the
    module's parameters and buffers (aot_autograd's static inputs, the same
    tensors every call), so the compiler may pack them once."""
    context = torch._guards.TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None) if context else None
    static = getattr(metadata, "static_input_indices", None) or ()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    # A parameter the graph itself overwrites (an optimizer step's) changes
    # at every call: computations cached on it would be redone every call,
    # and would keep it from being updated in place.
    written = {n.args[0] for n in gm.graph.nodes
               if n.op == "call_function" and n.target is torch.ops.aten.copy_.default}
    for index in static:
        if 0 <= index < len(placeholders) and placeholders[index] not in written:
            placeholders[index].meta[PARAMETER_META] = True


# ---------------------------------------------------------------------------
# Compiling one ATen graph


def _compile_graph(gm: torch.fx.GraphModule, opts: KilnOptions, kind: str) -> Callable[..., Any]:
    service = CompileService(opts)
    seeds = lift_random_seeds(gm)  # graph inputs now; with_random_seeds supplies them
    if seeds and kind == "backward":
        raise KilnError(f"a backward graph draws {seeds} random seed(s): its dropout masks "
                        "would differ from the forward's (the partition should have saved them)")
    writes = lift_input_writes(gm)  # extra outputs now; with_input_writes stores them
    support = service.support()
    unsupported = find_unsupported(gm, support)
    if opts.fallback == "error" and any(not u.forced for u in unsupported):
        raise UnsupportedOpError([u for u in unsupported if not u.forced])

    dump = Dump.create(Path(opts.dump_dir)) if opts.dump_dir else None
    name = dump.path.name if dump else f"graph_{next(_graph_ids)}"
    record = CompileRecord(name=name, kind=kind, target=opts.target)
    record.ops = dict(Counter(op_name(n) for n in compute_nodes(gm)))
    record.fallbacks = [_fallback_json(u) for u in unsupported]
    record.input_writes = len(writes.inputs) if writes else 0
    record.dump_path = str(dump.path) if dump else None
    replay_inputs = bool(dump and opts.dump_inputs and record.ops)
    # partition_graph rewrites gm in place; the replay reference must stay eager.
    reference = copy_graph_module(gm) if replay_inputs and unsupported else gm
    constants = constant_tensors(gm) if replay_inputs else []
    if dump:
        dump.write_text("fx_graph.py", gm.code)
        if unsupported or not record.ops:  # _GraphCompile.whole writes its own
            _write_graph_json(dump, gm, name, record)

    compile_one = _GraphCompile(service, record, dump)
    try:
        if not record.ops:
            fn = boxed(gm.forward)  # nothing to compute
        elif not unsupported and not returns_symint(gm) and not takes_objects(gm):
            fn = compile_one.whole(gm, support)
        else:
            _warn_fallbacks(record, [u for u in unsupported if not u.forced])
            fn = compile_one.partitioned(gm, support)
    finally:
        if dump:
            dump.write_json("summary.json", asdict(record))
    _records.append(record)
    _log_compiled(record, opts)
    if dump and replay_inputs:
        def saved(checksums: list[float] | None, error: str | None) -> None:
            record.output_checksums = checksums
            if error:
                record.errors.append(error)
            dump.write_json("summary.json", asdict(record))

        fn = save_first_call(fn, reference, constants, dump, saved)
    return with_random_seeds(with_input_writes(fn, writes), seeds)


def compute_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The graph's ops as the records count them: calls, without getitems
    and size arithmetic."""
    return [n for n in gm.graph.nodes
            if n.op == "call_function" and not is_getitem(n) and not computes_symint(n)]


def takes_objects(gm: torch.fx.GraphModule) -> bool:
    """Does the graph take an object that is no tensor or number (DTensor's
    graphs take their DeviceMesh, and the forward returns it for the
    backward)? Kiln graphs take tensors, so such a graph is split: the object
    passes between the partitions in Python."""
    return any(n.op == "placeholder" and not isinstance(
        n.meta.get("val"), (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool))
        and n.meta.get("val") is not None for n in gm.graph.nodes)


def returns_symint(gm: torch.fx.GraphModule) -> bool:
    """Does the graph return a symbolic integer (a size aot_autograd saves for
    the backward)? Kiln graphs return tensors, so such a graph is split: the
    size stays a Python value, the tensor ops compile."""
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    return any(isinstance(r, torch.fx.Node) and isinstance(r.meta.get("val"), torch.SymInt)
               for r in results)


@dataclass
class _GraphCompile:
    """Compiling one ATen graph: whole, or split into Kiln partitions and
    eager ops, with the ops the compiler fails on isolated in eager. Only the
    service's compile errors fall back; anything else propagates."""

    service: CompileService
    record: CompileRecord
    dump: "Dump | None"
    numbers: "itertools.count[int]" = field(default_factory=itertools.count)

    def whole(self, gm: torch.fx.GraphModule, support: KilnSupport) -> Callable[..., Any]:
        record = self.record
        try:
            compiled = self.service.compile_graph(gm, record.name, record, self.dump)
        except self.service.compile_errors as err:
            if self.service.opts.fallback == "error":
                refused = target_unsupported_reason(err)
                failing = failing_nodes(err, gm)
                if refused and failing:
                    # Ops the target cannot run are unsupported ops, not a failed compile.
                    raise UnsupportedOpError([
                        Unsupported(node, op_name(node), f"target {record.target!r}: {refused}",
                                    source_loc(node)) for node in failing]) from err
                raise
            failing = failing_nodes(err, gm)
            _warn_compile_error(record, f"{record.name} ({record.kind})", err, failing)
            if not failing:
                return boxed(gm.forward)
            # Only the ops the compiler failed on run eagerly; the rest still compiles.
            return self.partitioned(gm, self._excluding(support, failing, err))
        record.status = "compiled"
        return boxed_runner(compiled.executable, compiled.serialized)

    def partitioned(self, gm: torch.fx.GraphModule, support: KilnSupport) -> Callable[..., Any]:
        split = self._split_and_compile(gm, support)
        self.record.status = "partitioned" if self.record.partitions else "eager"
        if self.dump:
            self.dump.write_text("fx_graph_split.py", split.code)
        return boxed(split.forward)

    def _split_and_compile(self, gm: torch.fx.GraphModule,
                           support: KilnSupport) -> torch.fx.GraphModule:
        """gm split into Kiln partitions and eager ops; a partition the compiler
        fails on at some ops is split again with just those ops in eager."""
        record, opts = self.record, self.service.opts
        split, names = partition_graph(gm, support)
        for sub_name in names:
            sub = getattr(split, sub_name)
            k = next(self.numbers)
            part = f"{record.name}_partition_{k}"
            sub_dump = self.dump.child(f"partition_{k}") if self.dump else None
            if sub_dump:
                sub_dump.write_text("fx_graph.py", sub.code)
            try:
                compiled = self.service.compile_graph(sub, part, record, sub_dump, partition=k)
            except self.service.compile_errors as err:
                failing = failing_nodes(err, sub)
                isolated = sum(1 for f in record.fallbacks if f["reason"].startswith(COMPILE_FAILED))
                if isolated >= MAX_ISOLATED_FAILURES:
                    failing = []
                _warn_compile_error(record, f"{part} ({record.kind})", err, failing)
                if failing:
                    inner = self._excluding(support, failing, err)
                    setattr(split, sub_name, self._split_and_compile(sub, inner))
                continue
            run = boxed_runner(compiled.executable, compiled.serialized)
            if sub_dump:
                sub_dump.write_json("summary.json", compiled.summary)
                if opts.dump_inputs:
                    run = save_first_call(run, sub, compiled.serialized.constants, sub_dump,
                                          summary_updater(sub_dump, compiled.summary))
            setattr(split, sub_name, KilnModule(compiled.executable, run, returns_tuple(sub)))
            record.partitions += 1
        return split

    def _excluding(self, support: KilnSupport, nodes: list[torch.fx.Node],
                   err: Exception) -> KilnSupport:
        """support, with nodes marked as failed to compile (and recorded as fallbacks)."""
        reason = compile_failure_reason(err, [n.name for n in nodes])
        for node in nodes:
            self.record.fallbacks.append(_fallback_json(Unsupported(node, op_name(node), reason,
                                                                    source_loc(node))))
        return support.excluding({node.name: reason for node in nodes})


# ---------------------------------------------------------------------------
# Logging and dumps


def _fallback_json(u: Unsupported) -> dict[str, Any]:
    return {
        "op": u.op,
        "node": u.node.name,
        "file": u.loc.file if u.loc else None,
        "line": u.loc.line if u.loc else None,
        "code": u.loc.code if u.loc else None,
        "reason": u.reason,
    }


def _warn_fallbacks(record: CompileRecord, unsupported: Sequence[Unsupported]) -> None:
    """One warning per graph for its ops that run in eager, each op at each
    source line named once per process (the same line captured again, in a
    recompile or a backward, is not repeated)."""
    new = []
    for u in unsupported:
        key = (u.op, u.loc.file if u.loc else None, u.loc.line if u.loc else None)
        if key not in _warned:
            _warned.add(key)
            new.append(u)
    if new:
        log.warning("kiln: %s (%s): %d op%s running in PyTorch eager:\n%s", record.name,
                    record.kind, len(new), "" if len(new) == 1 else "s",
                    "\n".join(f"  {u.describe()}" for u in new))


_logged_pipelines: set[str] = set()


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """"1 kernel", "2 kernels" ("1 miss", "2 misses" with nouns="misses")."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def _log_compiled(record: CompileRecord, opts: KilnOptions) -> None:
    """info: one line per graph; debug: the pass pipeline (once per target)
    and the graph's stage times."""
    if not log.isEnabledFor(logging.INFO):
        return
    ops = sum(record.ops.values())
    fallbacks = Counter(f["op"] for f in record.fallbacks)
    text = (f"{record.name} ({record.kind}) {record.status}: {plural(ops, 'op')}, "
            f"{plural(record.kernel_count, 'kernel')}")
    if record.partitions:
        text += f" in {plural(record.partitions, 'partition')}"
    text += f", {sum(fallbacks.values())} in eager"
    if fallbacks:
        text += " (" + ", ".join(f"{op} x{n}" if n > 1 else op for op, n in fallbacks.items()) + ")"
    text += f", {record.compile_time_ms:.1f} ms"
    if record.cache_hits or record.cache_misses:
        text += (f", cache {plural(record.cache_hits, 'hit')} "
                 f"{plural(record.cache_misses, 'miss', 'misses')}")
    elif record.kernel_count:
        text += ", cache off"
    log.info("%s", text)
    if not log.isEnabledFor(logging.DEBUG):
        return
    if opts.target not in _logged_pipelines:
        _logged_pipelines.add(opts.target)
        stages = load_extension().compiler.pipeline(opts.target)
        log.debug("pass pipeline for target %s:\n%s", opts.target,
                  "\n".join(f"  {stage}: {passes}" for stage, passes in stages))
    if record.stage_times_ms:
        log.debug("%s stage times: %s", record.name,
                  ", ".join(f"{k} {v:.1f} ms" for k, v in record.stage_times_ms.items()))


def _write_graph_json(dump: "Dump", gm: torch.fx.GraphModule, name: str, record: CompileRecord) -> None:
    """graph.json of a graph Kiln does not compile whole, when it can be encoded at all."""
    try:
        dump.write_text("graph.json", serialize_graph(gm, name).to_json(indent=1))
    except SerializeError as err:
        record.errors.append(f"graph.json not written: {err}")


def copy_graph_module(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A GraphModule sharing gm's tensors but not its graph (node meta is copied shallowly)."""
    return torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))


def _warn_compile_error(
    record: CompileRecord, what: str, err: Exception, failing: Sequence[torch.fx.Node] = ()
) -> None:
    record.errors.append(f"{what}: {err}")
    if failing:
        ops = ", ".join(f"{op_name(n)} ({n.name})" for n in failing)
        log.warning("kiln: compiling %s failed at %s; running those ops in PyTorch eager, "
                    "the rest in Kiln:\n%s", what, ops, err)
    else:
        log.warning("kiln: compiling %s failed; running it in PyTorch eager instead:\n%s",
                    what, err)
