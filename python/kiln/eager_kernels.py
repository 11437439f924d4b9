"""Eager ops of the kiln device as Kiln kernels: which ops, and how a kernel
is compiled when the device's C++ kernel cache misses.

The device registers its kernel for the `out=` overload of every ATen op
whose functional form the compiler takes with symbolic sizes (`add.out` for
`add.Tensor`): the functional and in-place forms of structured ops call it.
On a call the C++ side keys the call by op, dtypes, which dims are 1 and which
sizes are equal (as Dynamo's duck sizing), scalar arguments and the output's
dtype; a miss lands here with example arguments of the call's sizes. The op
is traced with symbolic sizes (make_fx), serialized like any Dynamo graph and
compiled through the compile service, with its on-disk cache, so that one
kernel serves every size with that pattern. A call the tracer or the
compiler refuses is remembered by its key and runs ATen's CPU kernel.
"""

from __future__ import annotations

import functools
import re
import sys
import time
from typing import Any

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from kiln import eager_foreach
from kiln.logs import log
from kiln.randomness import lift_random_seeds


def _functional_args(schema: torch.FunctionSchema) -> list[tuple[str, str]]:
    return [(a.name, str(a.type)) for a in schema.arguments]


def _computes_a_new_tensor(schema: torch.FunctionSchema) -> bool:
    """Whether the device may run the op as a kernel: it reads tensors and
    returns one new tensor. Factories (`empty`), views (`as_strided`), ops
    that mutate or move between devices (`_to_copy`) are the device's own or
    ATen's."""
    if schema.is_mutable or not schema.returns or any(
            str(r.type) != "Tensor" or r.alias_info is not None for r in schema.returns):
        return False
    types = [str(a.type) for a in schema.arguments]
    # "Tensor", "Optional[Tensor]", "List[Tensor]" (cat's operands).
    return any("Tensor" in t for t in types) and not any("Device" in t for t in types)


def _out_arguments(schema: torch.FunctionSchema) -> list[torch.Argument]:
    return [a for a in schema.arguments if a.is_out]


# Ops whose result is a view in all but name, or that only move memory: the
# device's native ops and ATen handle them.
_NOT_KERNELS = {"_unsafe_view", "lift_fresh_copy", "alias", "_to_copy", "clone", "detach", "copy"}


# Ops that reach a device's kernel whole but that Dynamo's graphs never hold
# (aot_autograd has turned them into others first): torch's decompositions.
_EAGER_ONLY = ("native_batch_norm",)


@functools.lru_cache(maxsize=1)
def _decompositions() -> dict[Any, Any]:
    """Kiln's training table (what aot_autograd gets), and torch's for the
    ops only eager calls reach."""
    import torch._decomp

    from kiln.decompositions import decomposition_table

    table = dict(decomposition_table(training=True))
    table.update(torch._decomp.get_decompositions([getattr(torch.ops.aten, n) for n in _EAGER_ONLY]))
    return table


def _random_decompositions() -> set[Any]:
    """The random ops Kiln decomposes into seeded hashes."""
    from kiln.decompositions import RANDOM_DECOMPOSITIONS

    return set(RANDOM_DECOMPOSITIONS)


def _candidates(compiler: Any) -> list[tuple[str, str]]:
    """(name, overload) of the functional ATen ops Kiln can compile: those
    the compiler takes with symbolic sizes, and those the decompositions
    break into such ops."""
    names = {tuple(t.split(".")[1:]) for t in compiler.symbolic_ops() if t.startswith("aten.")}
    for op in _decompositions():
        if isinstance(op, torch._ops.OpOverload) and op.namespace == "aten":
            names.add((op._schema.name.split("::")[1], op._overloadname))
    return sorted(n for n in names if n[0] not in _NOT_KERNELS)


def storage_order(tensor: torch.Tensor) -> list[int]:
    """The dims from the outermost in memory to the innermost, ties in their
    order (the device's C++ side uses the same rule)."""
    return sorted(range(tensor.dim()), key=lambda d: -tensor.stride(d))


def _memory_layout(example: torch.Tensor) -> tuple[torch.Tensor, Any]:
    """The dense placeholder of an example's memory, and how the kernel
    views it as the example."""
    if example.is_contiguous():
        return example, lambda p: p
    size = list(example.shape)
    broadcast = [d for d in range(example.dim()) if example.stride(d) == 0 and size[d] > 1]
    base = example.as_strided([1 if d in broadcast else s for d, s in enumerate(size)], example.stride())
    order = list(range(example.dim())) if base.is_contiguous() else storage_order(base)
    inverse = [order.index(d) for d in range(example.dim())]

    def view(placeholder: torch.Tensor) -> torch.Tensor:
        restored = placeholder if order == sorted(order) else placeholder.permute(inverse)
        return restored.expand(size) if broadcast else restored

    return base.permute(order).contiguous(), view


# In-place ops whose functional form is not named by dropping the `_`.
_IN_PLACE_NAMES = {"normal_functional": "normal_"}


def kernel_ops(compiler: Any) -> list[tuple[str, str, str, str, bool]]:
    """(op, overload, functional op, functional overload, pointwise) for each
    overload the device runs as a Kiln kernel of the functional op: the
    functional overload itself (unless it is a composite, whose autograd a
    device kernel would hide), its out= overload (one output, the functional
    overload's arguments besides), which structured in-place forms call, and
    its in-place overload (`fill_` for `fill`)."""
    ops = []
    for name, overload in _candidates(compiler):
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        functional = getattr(packet, overload, None)
        if (functional is None or not _computes_a_new_tensor(functional._schema)
                # A random op is a kernel where Kiln's decomposition draws its
                # numbers from seeds (kiln.randomness), which the device's
                # generator supplies; the others run ATen's kernels on it.
                or (torch.Tag.nondeterministic_seeded in functional.tags
                    and functional not in _random_decompositions())
                or name.startswith(("cudnn_", "miopen_", "mkldnn_"))):
            continue
        one_result = len(functional._schema.returns) == 1
        pointwise = torch.Tag.pointwise in functional.tags
        wanted = _functional_args(functional._schema)
        qualified = f"aten::{name}"
        if not torch._C._dispatch_has_kernel_for_dispatch_key(functional.name(), "CompositeImplicitAutograd"):
            ops.append((qualified, overload, qualified, overload, pointwise))
        in_place_name = _IN_PLACE_NAMES.get(name, name + "_")
        in_place = getattr(getattr(torch.ops.aten, in_place_name, None), overload, None)
        if (in_place is not None and one_result and _functional_args(in_place._schema) == wanted
                and not torch._C._dispatch_has_kernel_for_dispatch_key(in_place.name(),
                                                                       "CompositeImplicitAutograd")):
            ops.append((f"aten::{in_place_name}", overload, qualified, overload, pointwise))
        for candidate in packet.overloads():
            schema = getattr(packet, candidate)._schema
            outs = _out_arguments(schema)
            if len(outs) != 1 or not one_result:
                continue
            others = [(a.name, str(a.type)) for a in schema.arguments if not a.is_out]
            if others == wanted:
                ops.append((qualified, candidate, qualified, overload, pointwise))
                break
    return ops + eager_foreach.kernel_ops({name for name, _ in _candidates(compiler)})


@functools.lru_cache(maxsize=1)
def _service() -> Any:
    from kiln.compiler import CompileService
    from kiln.options import KilnOptions

    from kiln import _C

    opts = KilnOptions.from_dict({})
    # Kernels for the driver the device's memory is on: on the CPU driver
    # for the CPU level KILN_TARGET names if it names one.
    driver = _C.device.driver()
    if driver == "cpu":
        target = opts.target if opts.target.startswith("cpu") else "cpu"
    else:
        target = opts.target if opts.target.split(":")[0] == driver else driver
    return CompileService(KilnOptions.from_dict({"target": target}))


# Ops whose float argument picks how the kernel computes: read at run time,
# it would cost every call the general algorithm.
_VALUE_SPECIALIZED = {
    "pow": "its exponent picks the algorithm (x * x * x for 3, a square root for 0.5)",
}


def _base_name(name: str) -> str:
    """`pow` for aten::pow, aten::pow_ and aten::_foreach_pow_."""
    name = name.split("::")[-1]
    return eager_foreach.unprefixed(name).rstrip("_")


class LiftedScalar:
    """A float argument the kernel reads at run time: a 0-dim float64 input
    after the tensors (the C++ side passes the call's value there)."""

    def __init__(self, value: float):
        self.value = value


def _sentinels(count: int) -> tuple[list[float], list[float]]:
    """Stand-ins for `count` lifted floats, two sets: of both signs, below
    and above 0.5 and 1, and unlike any constant an op's decomposition uses."""
    return ([0.3183098861837907 * (k + 1.0123) for k in range(count)],
            [-2.718281828459045 * (k + 1.0371) for k in range(count)])


def _code_with_tokens(gm: torch.fx.GraphModule, values: list[float]) -> str:
    # Each trace draws new salts for its random seeds (kiln.randomness).
    code = re.sub(r"random_seed\.default\(\d+\)", "random_seed.default(<salt>)", gm.code)
    # Longest first: one value's text may begin another's.
    for k, value in sorted(enumerate(values), key=lambda kv: -len(repr(kv[1]))):
        code = code.replace(repr(value), f"<scalar {k}>")
    return code


def _lift_scalars(gm: torch.fx.GraphModule, values: list[float]) -> bool:
    """Makes each stand-in value in gm's nodes a use of a new 0-dim float64
    placeholder (after the others, in order); False if one is not used."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if not placeholders:
        return False
    fake_mode = placeholders[0].meta["val"].fake_mode
    lifted, anchor = [], placeholders[-1]
    for k in range(len(values)):
        with gm.graph.inserting_after(anchor):
            anchor = gm.graph.placeholder(f"scalar_{k}")
        with fake_mode:
            anchor.meta["val"] = torch.empty((), dtype=torch.float64)
        lifted.append(anchor)
    used = set()

    def replace(value: Any) -> Any:
        if type(value) is float and value in values:
            used.add(values.index(value))
            return lifted[values.index(value)]
        return value

    for node in list(gm.graph.nodes):
        if node.op == "call_function":
            node.args = torch.fx.node.map_aggregate(node.args, replace)
            node.kwargs = torch.fx.node.map_aggregate(node.kwargs, replace)
            _operands_for_scalars(gm, node, lifted)
    gm.recompile()
    return len(used) == len(values)


_aten = torch.ops.aten


def _operands_for_scalars(gm: torch.fx.GraphModule, node: torch.fx.Node, lifted: list[torch.fx.Node]) -> None:
    """Rewrites the uses of a lifted float that Kiln's importer takes only as
    numbers into uses as an operand: add/sub's alpha scales the other
    operand; full's fill value is the value converted and expanded."""
    if node.target in (_aten.add.Tensor, _aten.sub.Tensor) and node.kwargs.get("alpha") in lifted:
        with gm.graph.inserting_before(node):
            scaled = gm.graph.call_function(_aten.mul.Tensor, (node.args[1], node.kwargs["alpha"]))
        scaled.meta["val"] = node.args[1].meta["val"] * 1.0 if isinstance(node.args[1], torch.fx.Node) else None
        node.args = (node.args[0], scaled)
        node.kwargs = {k: v for k, v in node.kwargs.items() if k != "alpha"}
    elif node.target is _aten.full.default and len(node.args) > 1 and node.args[1] in lifted:
        dtype = node.kwargs.get("dtype") or torch.get_default_dtype()
        with gm.graph.inserting_before(node):
            value = gm.graph.call_function(torch.ops.prims.convert_element_type.default, (node.args[1], dtype))
            expanded = gm.graph.call_function(_aten.expand.default, (value, node.args[0]))
        value.meta["val"] = node.args[1].meta["val"].to(dtype)
        expanded.meta["val"] = node.meta["val"]
        node.replace_all_uses_with(expanded)
        gm.graph.erase_node(node)


def compile_kernel_outside_dynamo(name: str, overload: str, args: list[Any],
                                  symbolic: bool = True) -> tuple[str, Any]:
    """compile_kernel, as the device calls it on a cache miss: an eager op
    can miss while torch.compile'd code runs (a hook between compiled
    regions, FSDP2's), and Dynamo must not trace the compiler's own frames."""
    if "torch._dynamo" not in sys.modules:
        return compile_kernel(name, overload, args, symbolic)
    return torch._dynamo.disable(compile_kernel, recursive=True)(name, overload, args, symbolic)


def compile_kernel(name: str, overload: str, args: list[Any], symbolic: bool = True) -> tuple[str, Any]:
    """The kernel of `aten::name.overload` applied to `args` (tensors are
    examples: their sizes and dtypes matter, not their values), compiled with
    symbolic sizes or, with symbolic=False, for the examples' sizes:
    ("artifact", bytes, positions of the results that are None, which the
    kernel does not return, the inputs it writes, how many seeds it takes);
    or why Kiln cannot take the call: ("refused", why),
    or ("static", why) when only its symbolic sizes were refused (the
    compiler wants some sizes static: an embedding table's rows), or
    ("bake", why) when the LiftedScalar arguments cannot be read at run time
    (the C++ side then keys the call by their values)."""
    from kiln.fx_serialize import serialize_graph

    op = getattr(getattr(torch.ops.aten, name.split("::")[-1]), overload)
    compute = eager_foreach.per_tensor(op) if eager_foreach.base_op(name.split("::")[-1]) else None
    # The tensors in argument order, lists flattened: the order the C++ side
    # passes their memory in.
    slots = [(i, None) if isinstance(a, torch.Tensor) else (i, j)
             for i, a in enumerate(args)
             for j in (range(len(a)) if isinstance(a, (list, tuple)) else [None])
             if (a[j] if j is not None else a) is not None
             and isinstance(a[j] if j is not None else a, torch.Tensor)]
    examples = [args[i] if j is None else args[i][j] for i, j in slots]
    # A strided example is dense memory read with broadcast (stride 0) dims
    # and in another order: the kernel takes the memory (a contiguous
    # placeholder), permutes it back and expands it, as the C++ side keys it.
    layouts = [_memory_layout(t) for t in examples]
    nones: list[int] = []
    flat = [placeholder for placeholder, _ in layouts]

    def call(*placeholders: torch.Tensor) -> Any:
        rebuilt = [list(a) if isinstance(a, (list, tuple)) else a for a in args]
        for (i, j), placeholder, (_, view) in zip(slots, placeholders, layouts):
            if j is None:
                rebuilt[i] = view(placeholder)
            else:
                rebuilt[i][j] = view(placeholder)
        if compute is not None:
            return tuple(r.contiguous() for r in compute(rebuilt))
        positional = [v for a, v in zip(op._schema.arguments, rebuilt) if not a.kwarg_only]
        keywords = {a.name: v for a, v in zip(op._schema.arguments, rebuilt) if a.kwarg_only}
        result = op(*positional, **keywords)
        # The device's kernels return row-major results (a strided result
        # would need its layout carried to the C++ side).
        if isinstance(result, tuple):
            # A result the arguments ask not to compute (convolution_backward's
            # output_mask) is None: the kernel returns the others.
            nones[:] = [i for i, r in enumerate(result) if r is None]
            return tuple(r.contiguous() for r in result if r is not None)
        return result.contiguous()

    # The floats read at run time, in argument order (a list's in its order).
    if any(isinstance(a, LiftedScalar) or (isinstance(a, list) and any(isinstance(v, LiftedScalar) for v in a))
           for a in args) and _base_name(name) in _VALUE_SPECIALIZED:
        return "bake", f"{op}: {_VALUE_SPECIALIZED[_base_name(name)]}"
    lifted = [(i, None) if isinstance(a, LiftedScalar) else (i, j)
              for i, a in enumerate(args)
              for j in (range(len(a)) if isinstance(a, list) else [None])
              if isinstance(a[j] if j is not None else a, LiftedScalar)]
    # A lifted float's failure anywhere is answered by compiling its value in.
    refused = "bake" if lifted else "refused"

    def trace(values: list[float]) -> torch.fx.GraphModule:
        for (i, j), value in zip(lifted, values):
            if j is None:
                args[i] = value
            else:
                args[i][j] = value
        return make_fx(call, decomposition_table=_decompositions(),
                       tracing_mode="symbolic" if symbolic else "fake")(*flat)

    start = time.perf_counter()
    try:
        if not lifted:
            gm = trace([])
        else:
            # Traced with two sets of stand-in values: the same graph but for
            # them means the op does not branch on the values, and the values
            # become graph inputs (after the tensors) where they stand.
            first, second = _sentinels(len(lifted))
            other = trace(second)
            gm = trace(first)
            if _code_with_tokens(gm, first) != _code_with_tokens(other, second):
                return "bake", f"{op}'s graph depends on the values of its float arguments"
            if not _lift_scalars(gm, first):
                return "bake", f"{op} does not use its float arguments as operands"
    except Exception as err:  # ATen's own meta function refused: not a Kiln error
        return refused, f"tracing {op} failed: {type(err).__name__}: {err}"
    writes = _writes_as_results(gm)
    if writes is None:
        return "refused", f"{op} writes its inputs other than by copying a new value in"
    # Random numbers come from seeds: inputs after the others, which the C++
    # side draws from the device's generator on every call.
    seeds = lift_random_seeds(gm)
    service = _service()
    try:
        serialized = serialize_graph(gm, f"eager_{name.split('::')[-1]}_{overload}")
        if serialized.constants or serialized.symint_inputs or serialized.symint_values:
            return "refused", f"{op} traced into a graph with constants or size inputs"
        # None: a symbolic row-major buffer, as it is.
        if not all(layout is None or (layout.is_row_major and layout.alias_input is None
                                      and layout.alias_output is None)
                   for layout in serialized.layouts):
            return "refused", f"{op}'s result is not a row-major tensor of its own"
        loaded = service.compile_json(serialized.graph, serialized.to_json(), serialized.graph["name"])
    except service.compile_errors as err:
        why = " ".join(str(err).split()) or type(err).__name__
        return (refused if lifted else "static" if symbolic else "refused"), f"Kiln cannot compile {op} here: {why}"
    log.debug("kiln device: compiled %s%s for %s in %.0f ms%s", op, "" if symbolic else " (static sizes)",
              ", ".join(f"{list(t.shape)} {t.dtype}" for t in flat), (time.perf_counter() - start) * 1e3,
              " (cached)" if loaded.cache_hit else "")
    return "artifact", loaded.artifact, nones, writes, seeds


def _writes_as_results(gm: torch.fx.GraphModule) -> list[int] | None:
    """Turns the graph's writes into its inputs into results: an op can
    update an argument its schema does not mark as written
    (`native_batch_norm`'s running statistics, by `copy_` in its
    decomposition). Each `copy_(input, value)` goes, and `value` is returned
    after the op's results, which the C++ side copies into the argument.
    The inputs written, by placeholder index; None if the graph writes an
    input some other way."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    writes, values = [], []
    for node in list(gm.graph.nodes):
        target = getattr(node.target, "_schema", None)
        if node.op != "call_function" or target is None or not target.is_mutable:
            continue
        written, value = node.args[0], node.args[1] if len(node.args) > 1 else None
        if (node.target is not _aten.copy_.default or written not in placeholders
                or placeholders.index(written) in writes or not isinstance(value, torch.fx.Node)
                or str(value.meta["val"].shape) != str(written.meta["val"].shape)
                or value.meta["val"].dtype != written.meta["val"].dtype):
            return None
        # Reads after the write read the value written.
        written.replace_all_uses_with(value, delete_user_cb=lambda user, at=order[node]: order[user] > at)
        node.replace_all_uses_with(value)
        gm.graph.erase_node(node)
        writes.append(placeholders.index(written))
        values.append(value)
    if writes:
        output = next(n for n in gm.graph.nodes if n.op == "output")
        results = output.args[0]
        results = tuple(results) if isinstance(results, (tuple, list)) else (results,)
        output.args = (results + tuple(values),)
        gm.recompile()
    return writes
