"""kiln.explain: what Kiln would do with a model, before switching it over.

    report = kiln.explain(model, x)            # prints a summary, returns it
    report.graphs[0].eager_ops                 # the ops that would run in PyTorch

It captures the model the way ``torch.compile(model, backend="kiln")``
does (Dynamo, then aot_autograd with Kiln's decompositions), runs the model
in eager, and for each ATen graph reports which ops Kiln compiles and which
run in eager (with the reason and the user's source line), and the kernels
fusion forms: the compiler imports the graph and runs its graph stages only,
so nothing is code-generated, cached or timed (and a failure in code
generation, rare, shows only when compiling). From Dynamo's guards it lists
what makes the graphs recompile, and when the capture had static sizes it
captures again with dynamic ones, running the model a second time, to say
which ops would then leave Kiln.

Like torch._dynamo.explain, it resets Dynamo's caches before and after.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import torch
import torch.fx

from kiln.backend import aten_graphs, compute_nodes, copy_graph_module, plural, returns_symint
from kiln.compiler import (
    MAX_ISOLATED_FAILURES,
    CompileService,
    compile_failure_reason,
    failing_nodes,
)
from kiln.fx_serialize import op_name, source_loc
from kiln.mutation import lift_input_writes
from kiln.options import KilnOptions
from kiln.partition import VIEW_OPS, KilnSupport, find_unsupported, partition_graph
from kiln.randomness import lift_random_seeds
from kiln.runner import boxed

VIEW_REASON = "a view between eager ops: eager runs it as a free view, not worth a Kiln launch"


@dataclass
class OpPlacement:
    """One ATen op of a graph: where it runs, and why not in Kiln."""

    op: str  # "aten.mm.default"
    node: str  # the FX node's name
    runs_in: str  # "kiln" or "eager"
    reason: str | None = None  # why eager
    where: str | None = None  # "model.py:12", the user's line
    code: str | None = None  # that line's code


@dataclass
class KernelPlan:
    """A kernel fusion would form: the ATen-level ops it fuses, in order."""

    name: str
    ops: list[str]
    locations: list[str]
    nodes: list[str]


@dataclass
class GraphExplanation:
    """One ATen graph, as aot_autograd hands it to Kiln."""

    name: str  # "graph 0 forward"
    dynamo_graph: int  # which of Dynamo's graphs it came from
    kind: str  # "forward", "backward" or "inference"
    ops: list[OpPlacement] = field(default_factory=list)
    kernels: list[KernelPlan] = field(default_factory=list)
    partitions: int = 0  # Kiln-compiled pieces (1: the whole graph)
    symbols: list[str] = field(default_factory=list)  # symbolic sizes ("s77")
    errors: list[str] = field(default_factory=list)  # compiler errors while forming kernels

    @property
    def kiln_ops(self) -> list[OpPlacement]:
        return [o for o in self.ops if o.runs_in == "kiln"]

    @property
    def eager_ops(self) -> list[OpPlacement]:
        return [o for o in self.ops if o.runs_in == "eager"]


@dataclass
class GraphBreak:
    """Where Dynamo split the model into several graphs, and why."""

    reason: str
    where: str | None = None
    code: str | None = None


@dataclass
class Explanation:
    """kiln.explain's result; str() (and print) gives the readable summary."""

    target: str
    dynamo_graphs: int
    graph_breaks: list[GraphBreak]
    graphs: list[GraphExplanation]
    # What makes Dynamo capture (and Kiln compile) again.
    recompiles: list[str]
    # With static sizes: the ops that would run in eager once a size changes
    # and Dynamo recompiles with symbolic sizes (None: not checked).
    dynamic_eager_ops: list[OpPlacement] | None = None

    @property
    def kiln_ops(self) -> int:
        return sum(len(g.kiln_ops) for g in self.graphs)

    @property
    def eager_ops(self) -> int:
        return sum(len(g.eager_ops) for g in self.graphs)

    @property
    def kernels(self) -> int:
        return sum(len(g.kernels) for g in self.graphs)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return summarize(self)


def explain(
    model: Callable[..., Any],
    *inputs: Any,
    kwargs: dict[str, Any] | None = None,
    dynamic: bool | None = None,
    backward: bool | None = None,
    check_dynamic: bool = True,
    print_summary: bool = True,
    **options: Any,
) -> Explanation:
    """Report what torch.compile(model, backend="kiln", options=options)
    would do on these inputs, without compiling code or timing anything.

    kwargs:        keyword arguments for the model (model(*inputs, **kwargs)).
    dynamic:       as torch.compile's (None: Dynamo's default, static sizes
                   first).
    backward:      also capture the backward graphs, by differentiating the
                   outputs with torch.autograd.grad (no .grad is written).
                   None: when an output requires grad. With True, a model
                   whose parameters cannot be found (a function closing over
                   a module: pass the module) raises ValueError.
    check_dynamic: when the capture has static sizes, capture again with
                   dynamic=True to find the ops that symbolic sizes send
                   to eager. The model then runs a second time (module
                   state it updates, such as batch norm statistics, is
                   updated twice).
    options:       Kiln's options (target, force_eager, ...).

    Like torch._dynamo.explain, it resets Dynamo (compiled functions compile
    again at their next call) and so clears kiln.compile_records().
    """
    opts = KilnOptions.from_dict(options)  # the target name is checked there
    kwargs = dict(kwargs or {})
    capture = _capture(model, inputs, kwargs, opts, dynamic, backward)
    dynamic_eager = None
    check_failed = None
    already_dynamic = any(sym for described in capture.inputs for *_, sym in described)
    if check_dynamic and dynamic is None and not already_dynamic and capture.graphs:
        try:
            again = _capture(model, inputs, kwargs, opts, True, backward)
        except Exception as err:  # noqa: BLE001 - an optional check must not lose the report
            check_failed = f"{type(err).__name__}: {_first_line(err)}"
        else:
            static_eager = {(o.op, o.where) for g in capture.graphs for o in g.eager_ops}
            dynamic_eager = [o for g in again.graphs for o in g.eager_ops
                             if (o.op, o.where) not in static_eager]
    notes = _recompile_notes(capture, dynamic, already_dynamic, dynamic_eager)
    if check_failed:
        notes.append(f"the check with symbolic sizes (dynamic=True) failed: {check_failed}")
    result = Explanation(
        target=opts.target,
        dynamo_graphs=capture.dynamo_graphs,
        graph_breaks=capture.breaks,
        graphs=capture.graphs,
        recompiles=notes,
        dynamic_eager_ops=dynamic_eager,
    )
    if print_summary:
        print(result)
    return result


# ---------------------------------------------------------------------------
# Capturing


@dataclass
class _Capture:
    dynamo_graphs: int = 0
    breaks: list[GraphBreak] = field(default_factory=list)
    graphs: list[GraphExplanation] = field(default_factory=list)
    guards: list[Any] = field(default_factory=list)
    # Per Dynamo graph: (input name, shape, dtype, symbolic dims).
    inputs: list[list[tuple[str, list[Any], str, bool]]] = field(default_factory=list)


def _capture(model: Callable[..., Any], inputs: Sequence[Any], kwargs: dict[str, Any],
             opts: KilnOptions, dynamic: bool | None, backward: bool | None) -> _Capture:
    import torch._dynamo

    capture = _Capture()
    service = CompileService(opts)
    support = service.support()
    counter = itertools.count()

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        index = capture.dynamo_graphs
        capture.dynamo_graphs += 1
        reason = getattr(gm, "compile_subgraph_reason", None)
        if reason is not None and getattr(reason, "graph_break", False):
            frame = reason.user_stack[-1] if reason.user_stack else None
            capture.breaks.append(GraphBreak(
                reason=str(reason.reason),
                where=f"{frame.filename}:{frame.lineno}" if frame else None,
                code=(frame.line or "").strip() or None if frame else None))
        capture.inputs.append(_dynamo_inputs(gm))

        def analyze(graph: torch.fx.GraphModule, kind: str) -> Callable[..., Any]:
            capture.graphs.append(
                _analyze(graph, kind, f"graph {next(counter)} {kind}", index, support, service))
            return boxed(graph.forward)

        return aten_graphs(gm, example_inputs, analyze)

    torch._dynamo.reset()
    try:
        compiled = torch._dynamo.optimize(backend, nopython=False, dynamic=dynamic,
                                          guard_export_fn=capture.guards.extend)(model)
        outputs = compiled(*inputs, **kwargs)
        if backward is not False:
            _differentiate(model, [inputs, kwargs], outputs, required=bool(backward))
    finally:
        torch._dynamo.reset()
    return capture


def _differentiate(model: Any, inputs: Any, outputs: Any, required: bool) -> None:
    """Run the backward graphs (aot_autograd compiles them at the first
    backward) without accumulating into any .grad."""
    flat = [t for t in torch.utils._pytree.tree_leaves(outputs)
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()]
    if not flat:
        if required:
            raise ValueError("kiln.explain(backward=True): no output requires grad")
        return
    leaves = [t for t in torch.utils._pytree.tree_leaves(inputs)
              if isinstance(t, torch.Tensor) and t.requires_grad]
    owner = model if isinstance(model, torch.nn.Module) else getattr(model, "__self__", None)
    if isinstance(owner, torch.nn.Module):  # a module, or a bound method of one
        leaves += [p for p in owner.parameters() if p.requires_grad]
    if not leaves:
        if required:
            raise ValueError("kiln.explain(backward=True): no input or parameter of the model "
                             "requires grad (pass the module itself, not a function using it)")
        return
    torch.autograd.grad(flat, leaves, [torch.ones_like(t) for t in flat], allow_unused=True)


def _dynamo_inputs(gm: torch.fx.GraphModule) -> list[tuple[str, list[Any], str, bool]]:
    found = []
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if node.op == "placeholder" and isinstance(value, torch.Tensor):
            shape = [int(s) if isinstance(s, int) else str(s) for s in value.shape]
            found.append((_source_name(node), shape, str(value.dtype).replace("torch.", ""),
                          any(not isinstance(s, int) for s in value.shape)))
    return found


def _source_name(node: torch.fx.Node) -> str:
    source = node.meta.get("grapharg")
    name = getattr(getattr(source, "source", None), "name", None)
    text = name() if callable(name) else name
    return str(text or node.name)


# ---------------------------------------------------------------------------
# One ATen graph


def _analyze(graph: torch.fx.GraphModule, kind: str, name: str, dynamo_graph: int,
             support: KilnSupport, service: CompileService) -> GraphExplanation:
    """What _compile_graph would do with `graph`, on a copy, up to forming kernels."""
    gm = copy_graph_module(graph)
    lift_random_seeds(gm)
    lift_input_writes(gm)
    result = GraphExplanation(name=name, dynamo_graph=dynamo_graph, kind=kind)
    calls = compute_nodes(gm)
    if not calls:
        return result
    eager = {u.node.name: u.reason for u in find_unsupported(gm, support)}
    if not eager and not returns_symint(gm):
        pieces = [gm]
    else:
        split, names = partition_graph(gm, support)
        pieces = [getattr(split, n) for n in names]
    in_kiln: set[str] = set()
    # As the backend does: a piece the compiler fails on at some ops is split
    # again with just those ops in eager, up to MAX_ISOLATED_FAILURES times.
    work = [(piece, support) for piece in pieces]
    failures = 0
    for k in itertools.count():
        if not work:
            break
        piece, piece_support = work.pop(0)
        nodes = {n.name for n in piece.graph.nodes if n.op == "call_function"}
        try:
            serialized, formed = service.form_kernels(piece, f"{name.replace(' ', '_')}_{k}")
        except service.compile_errors as err:
            result.errors.append(f"{name}, piece {k}: {err}")
            failures += 1
            failing = [n.name for n in failing_nodes(err, piece)]
            if failing and failures <= MAX_ISOLATED_FAILURES:
                reason = compile_failure_reason(err, failing)
                eager.update({n: reason for n in failing})
                narrower = piece_support.excluding({n: reason for n in failing})
                split, names = partition_graph(piece, narrower)
                work += [(getattr(split, n), narrower) for n in names]
            else:
                reason = compile_failure_reason(err, ())
                eager.update({n: reason for n in nodes if n not in eager})
            continue
        in_kiln |= nodes
        result.partitions += 1
        result.symbols += [s["name"] for s in serialized.graph.get("symbols", ())
                           if s["name"] not in result.symbols]
        result.kernels += [KernelPlan(k.name, list(k.ops), list(k.locations), list(k.nodes))
                           for k in formed]
    for node in calls:
        loc = source_loc(node)
        runs_in = "kiln" if node.name in in_kiln and node.name not in eager else "eager"
        reason = None
        if runs_in == "eager":
            reason = eager.get(node.name)
            if reason is None:
                reason = (VIEW_REASON if op_name(node).rsplit(".", 1)[0] in VIEW_OPS
                          else "outside every Kiln partition")
        result.ops.append(OpPlacement(op=op_name(node), node=node.name, runs_in=runs_in,
                                      reason=reason, where=str(loc) if loc else None,
                                      code=loc.code if loc else None))
    return result


def _first_line(err: Exception) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


# ---------------------------------------------------------------------------
# Recompiles


def _recompile_notes(capture: _Capture, dynamic: bool | None, already_dynamic: bool,
                     dynamic_eager: list[OpPlacement] | None) -> list[str]:
    """What Dynamo's guards say makes it capture again, in words."""
    notes = []
    by_kind = Counter(g.create_fn_name() for g in capture.guards)
    tensors = sorted({str(g.name) for g in capture.guards if g.create_fn_name() == "TENSOR_MATCH"})
    tensors = [t for t in tensors if not _module_state(t)]
    for index, described in enumerate(capture.inputs):
        inputs = [d for d in described if not _module_state(d[0])]
        static = [f"{n} {list(s)}" for n, s, _, sym in inputs if not sym]
        symbolic = [f"{n} {list(s)}" for n, s, _, sym in inputs if sym]
        if static:
            notes.append(f"Dynamo graph {index}: static sizes for {', '.join(static)}")
        if symbolic:
            notes.append(f"Dynamo graph {index}: symbolic sizes for {', '.join(symbolic)}: "
                         "other sizes in the range Kiln compiled for run without recompiling")
    if dynamic is False:
        notes.append("dynamic=False: every new input size compiles again, up to "
                     "torch._dynamo.config.recompile_limit times per function")
    elif dynamic is None and not already_dynamic and capture.inputs:
        notes.append("a new input size recompiles once: Dynamo then makes the sizes that "
                     "changed symbolic (automatic dynamic shapes), and later sizes reuse "
                     "that graph; pass dynamic=True to torch.compile to start symbolic")
        if dynamic_eager:
            ops = Counter(o.op for o in dynamic_eager)
            notes.append("with symbolic sizes, these ops would run in eager: "
                         + ", ".join(f"{op} x{n}" if n > 1 else op for op, n in ops.items()))
        elif dynamic_eager is not None:
            notes.append("with symbolic sizes, every op Kiln compiles now still compiles")
    if tensors:
        notes.append(f"a different dtype, device, rank, stride order or requires_grad of "
                     f"{', '.join(tensors)} recompiles")
    if by_kind.get("GRAD_MODE") or by_kind.get("GLOBAL_STATE"):
        notes.append("switching torch.no_grad() / torch.enable_grad() or autocast recompiles "
                     "(inference and training graphs differ)")
    values = sorted({str(g.name) for g in capture.guards
                     if g.create_fn_name() in ("EQUALS_MATCH", "CONSTANT_MATCH")})
    if values:
        shown = ", ".join(values[:6]) + (f" and {len(values) - 6} more" if len(values) > 6 else "")
        notes.append(f"a change of these Python values recompiles: {shown}")
    return notes


def _module_state(source: str) -> bool:
    """A module's parameter or buffer (Dynamo guards them like inputs, but a
    model's own weights are not what a user varies between calls)."""
    return "._parameters[" in source or "._buffers[" in source


# ---------------------------------------------------------------------------
# The summary


def summarize(e: Explanation) -> str:
    lines = [f"kiln.explain (target {e.target}): {plural(e.dynamo_graphs, 'Dynamo graph')}, "
             f"{plural(len(e.graph_breaks), 'graph break')}, {plural(len(e.graphs), 'ATen graph')}: "
             f"{plural(e.kiln_ops, 'op')} in Kiln ({plural(e.kernels, 'kernel')}), "
             f"{e.eager_ops} in eager"]
    for b in e.graph_breaks:
        at = f" at {b.where}" + (f" `{b.code}`" if b.code else "") if b.where else ""
        lines.append(f"  graph break{at}: {_brief(b.reason)}")
    for g in e.graphs:
        lines.append("")
        head = f"{g.name} (Dynamo graph {g.dynamo_graph}): {plural(len(g.kiln_ops), 'op')} in Kiln"
        head += f" as {plural(len(g.kernels), 'kernel')}"
        if g.partitions > 1:
            head += f" in {g.partitions} partitions"
        head += f", {len(g.eager_ops)} in eager"
        if g.symbols:
            head += f"; symbolic sizes {', '.join(g.symbols)}"
        lines.append(head)
        for o in g.eager_ops:
            at = f" at {o.where}" + (f" `{o.code}`" if o.code else "") if o.where else ""
            lines.append(f"  eager: {o.op}{at}: {o.reason}")
        for k in g.kernels:
            where = f"  ({', '.join(k.locations)})" if k.locations else ""
            lines.append(f"  kernel {k.name}: {' + '.join(k.ops)}{where}")
    if e.recompiles:
        lines.append("")
        lines.append("Recompiles:")
        lines += [f"  {note}" for note in e.recompiles]
    return "\n".join(lines)


def _brief(reason: str) -> str:
    """Dynamo's break reasons run to hints and links: the first line, and its
    "Explanation:" line when there is one."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    explanation = [line for line in lines[1:] if line.startswith("Explanation:")]
    return " ".join(lines[:1] + explanation[:1])
