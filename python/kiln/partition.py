"""Which FX nodes Kiln can compile, and splitting a graph into Kiln and eager parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, Iterable, Mapping

import sympy
import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner, Partition
from torch.fx.passes.operator_support import OperatorSupportBase

from kiln.errors import SerializeError
from kiln.layout import is_reproducible
from kiln.fx_serialize import (
    SourceLoc,
    computes_symint,
    encode_call,
    encode_ref,
    is_getitem,
    op_name,
    source_loc,
)
from kiln.symbolic import SymbolTable, dense_order, has_symbolic_shape

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                    torch.int32, torch.int8, torch.uint8, torch.bool)

# Ops that only re-describe memory. A partition made only of these is not
# worth a Kiln launch: eager runs them as free views.
VIEW_OPS = frozenset(
    {
        "aten.view",
        "aten._unsafe_view",
        "aten.reshape",
        "aten.permute",
        "aten.expand",
        "aten.squeeze",
        "aten.unsqueeze",
        "aten.slice",
        "aten.select",
        "aten.t",
        "aten.transpose",
        "aten.alias",
        "aten.detach",
    }
)

PARTITION_PREFIX = "kiln_partition_"

FORCED_REASON = "forced to run in eager by the force_eager option"

# Nodes that compute symbolic integers (sym_size, SymInt arithmetic) run in
# Python, outside Kiln partitions; they are not fallbacks of Kiln ops.
SIZE_COMPUTATION = "computes a symbolic integer (a size), which runs in Python"


@dataclass(frozen=True)
class Unsupported:
    """A node Kiln cannot compile, and why."""

    node: torch.fx.Node
    op: str
    reason: str
    loc: SourceLoc | None

    @property
    def forced(self) -> bool:
        """Did the force_eager option send it to eager (rather than a missing lowering)?"""
        return self.reason == FORCED_REASON

    def where(self) -> str:
        return str(self.loc) if self.loc else "<unknown source line>"

    def describe(self) -> str:
        text = f"{self.op} at {self.where()}"
        if self.loc and self.loc.code:
            text += f" (`{self.loc.code}`)"
        return f"{text}: {self.reason}"


class KilnSupport(OperatorSupportBase):
    """Per-node support: a known ATen overload, Kiln dtypes, static shapes or
    (for the ops in `symbolic_ops`) symbolic ones, the target device, and not
    forced to eager (the force_eager option)."""

    def __init__(
        self,
        supported_ops: Iterable[str],
        target: str = "cpu",
        force_eager: Collection[str] | Callable[[torch.fx.Node], bool] | None = None,
        failed: Mapping[str, str] | None = None,
        symbolic_ops: Iterable[str] = (),
        symint_scalar_ops: Iterable[str] = (),
    ):
        self.supported_ops = frozenset(supported_ops)
        self.symbolic_ops = frozenset(symbolic_ops)
        self.symint_scalar_ops = frozenset(symint_scalar_ops)
        self.target = target
        self.force_eager = force_eager
        self._forced = _forcing_predicate(force_eager)
        self._failed = dict(failed or {})  # node name -> why compiling it failed
        self._reasons: dict[torch.fx.Node, str | None] = {}

    def excluding(self, failed: Mapping[str, str]) -> "KilnSupport":
        """This support, with the named nodes unsupported for the given reasons
        (ops the compiler failed on)."""
        return KilnSupport(self.supported_ops, self.target, self.force_eager,
                           {**self._failed, **failed}, self.symbolic_ops,
                           self.symint_scalar_ops)

    def is_node_supported(
        self, submodules: Mapping[str, torch.nn.Module], node: torch.fx.Node
    ) -> bool:
        return self.reason(node) is None

    def reason(self, node: torch.fx.Node) -> str | None:
        """None when Kiln can compile the node, else why not."""
        if node not in self._reasons:
            self._reasons[node] = self._check(node)
        return self._reasons[node]

    def _check(self, node: torch.fx.Node) -> str | None:
        if node.op != "call_function":
            return f"{node.op} nodes are not compiled by Kiln"
        if computes_symint(node):
            return SIZE_COMPUTATION
        if is_getitem(node):
            source = node.args[0]
            if not isinstance(source, torch.fx.Node) or source.op != "call_function":
                return "getitem of a value that is not an op result"
            return self.reason(source)
        if not isinstance(node.target, torch._ops.OpOverload):
            return "not an ATen operator"
        if str(node.target) not in self.supported_ops:
            return "op not supported by Kiln"
        if str(node.target) == "_c10d_functional.wait_tensor.default":
            # Kiln's collectives complete where the plan runs them, so waiting
            # is the identity there; a wait for one that runs in eager (async)
            # must stay in eager, or a Kiln kernel reads its result too early.
            source = node.args[0] if node.args else None
            if (not isinstance(source, torch.fx.Node) or source.op != "call_function"
                    or not str(source.target).startswith("_c10d_functional.")
                    or self.reason(source) is not None):
                return "waits for a collective that runs in eager"
        if self._forced(node):
            return FORCED_REASON
        if node.name in self._failed:
            return self._failed[node.name]
        if node.target is torch.ops.aten.as_strided.default and (
            not isinstance(node.args[0], torch.fx.Node) or node.args[0].op != "call_function"
        ):
            # Kiln takes as_strided only as a reshape of a value it computes.
            return "as_strided of a graph input (it may view a larger storage)"
        if node.target in _ADVANCED_INDEXING and any(
            isinstance(i, torch.fx.Node) and i.meta.get("val") is not None
            and i.meta["val"].dtype in (torch.bool, torch.uint8) for i in node.args[1]
        ):
            return ("a bool mask index selects a data-dependent number of elements "
                    "(Kiln compiles integer indices, and x[mask] = scalar)")
        if "val" not in node.meta:
            return "no shape metadata (meta['val'])"
        values: list[tuple[str, Any]] = [("result", node.meta["val"])]
        for arg in node.all_input_nodes:
            values.append((f"input {arg.name}", arg.meta.get("val")))
        symbolic = str(node.target) in self.symbolic_ops
        operand = _symint_operand(node, str(node.target) in self.symint_scalar_ops)
        if operand:
            return (f"{operand} is a symbolic value Kiln cannot take here (it takes "
                    "symbolic integers as sizes and as scalar operands)")
        if (node.target is torch.ops.aten.embedding.default
                and type(node.args[0].meta["val"].shape[0]) is not int):
            return "the table's rows are a symbolic size (indices are checked against static ones)"
        symbolic_arg = _symbolic_int_args(node)
        if symbolic_arg:
            return symbolic_arg
        if (node.target is torch.ops.aten.select.int and isinstance(node.args[2], int)
                and node.args[2] < 0):
            shape = node.args[0].meta["val"].shape
            if type(shape[node.args[1]]) is not int:
                return ("a negative index into a symbolic dim (Kiln slices at constant "
                        "offsets from the start)")
        if node.target is torch.ops.aten.convolution.default:
            shapes = [a.meta["val"].shape for a in node.args[:2] if isinstance(a, torch.fx.Node)]
            if any(type(d) is not int for shape in shapes for d in shape[1:]) or (
                    len(shapes) > 1 and any(type(d) is not int for d in shapes[1])):
                return ("symbolic channels, image or kernel sizes (only the batch of a "
                        "convolution may be symbolic)")
        if node.target is torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default:
            problem = _attention_sizes_problem(node)
            if problem:
                return problem
        for what, value in values:
            problem = self._check_value(what, value, symbolic)
            if problem:
                return problem
        result = node.meta["val"]
        if (has_symbolic_shape(result) and dense_order(result) is None
                and self._leaves_kiln(node)):
            # Kiln returns symbolic results densely laid out; a view that is
            # not (a broadcast, an offset) and is read outside Kiln is a free
            # view in eager instead.
            return (f"result is a view with a symbolic, non-dense layout "
                    f"(stride={list(result.stride())}) read outside Kiln, which eager "
                    "makes for free")
        try:
            for arg in node.all_input_nodes:
                encode_ref(arg)
            encode_call(node)
        except SerializeError as err:
            return f"cannot encode its arguments: {err}"
        return None

    def _leaves_kiln(self, node: torch.fx.Node) -> bool:
        """Is the node's value read by the graph's output or an op Kiln does
        not compile (so that it would be a Kiln partition's output)?"""
        for user in node.users:
            if user.op == "output":
                return True
            if user.op == "call_function" and not computes_symint(user) and \
                    self.reason(user) is not None:
                return True
        return False

    def _check_value(self, what: str, value: Any, symbolic: bool) -> str | None:
        if isinstance(value, (tuple, list)):
            for item in value:
                problem = None if item is None else self._check_value(what, item, symbolic)
                if problem:
                    return problem
            return None
        if isinstance(value, torch.SymInt) and symbolic:
            return None  # a size argument: the op takes its sizes from its types
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return (f"{what} is a symbolic value (Kiln compiles this op with static shapes "
                    "only)")
        if not isinstance(value, torch.Tensor):
            return f"{what} is a {type(value).__name__}, not a tensor"
        if value.dtype not in SUPPORTED_DTYPES:
            names = ", ".join(str(d).removeprefix("torch.") for d in SUPPORTED_DTYPES)
            dtype = str(value.dtype).removeprefix("torch.")
            return f"{what} has dtype {dtype} (Kiln supports {names})"
        if has_symbolic_shape(value):
            if not symbolic:
                return (f"{what} has a symbolic shape {list(value.shape)}, and Kiln compiles "
                        "this op with static shapes only")
            try:
                for dim in value.shape:
                    SymbolTable().size(dim, what)
            except SerializeError as err:
                return str(err)

        # Inputs of any layout are read; a result must be laid out as eager's.
        stride = value.stride()
        if (what == "result" and all(type(s) is int for s in stride)
                and not is_reproducible(value.shape, stride)):
            return (f"{what} has a self-overlapping layout size={list(value.shape)} "
                    f"stride={list(value.stride())} that Kiln cannot reproduce")
        kind = self.target.split(":")[0]
        if value.device.type not in tensor_devices(kind):
            return f"{what} is on device {value.device}, but the Kiln target is {self.target!r}"
        return None


# The torch devices of the tensors each target kind takes besides the kiln
# device's: CPU tensors, which for Vulkan and CUDA the runtime bridge copies
# to the device and back; CUDA tensors, which CUDA kernels read in place.
_TENSOR_DEVICES = {"cpu": ("cpu",), "vulkan": ("cpu",), "cuda": ("cpu", "cuda")}


def kiln_device_driver() -> str | None:
    """The runtime driver the eager kiln device's memory is on ("cpu",
    "vulkan"), or None before `import kiln.device` registered it."""
    from kiln import _C  # the extension, loaded by `import kiln` already

    return _C.device.driver() if _C.device.is_registered() else None


def tensor_devices(kind: str) -> tuple[str, ...]:
    """The torch devices of the tensors a target kind takes: those above, and
    the eager kiln device's where its memory is on the target's driver."""
    devices = _TENSOR_DEVICES.get(kind, (kind,))
    return devices + ("kiln",) if kiln_device_driver() == kind else devices


# Integer arguments that Kiln's importer takes only as constants: pad widths,
# and the index of a select (a symbolic one moves the view's offset).
_CONSTANT_INT_ARGS = {
    torch.ops.aten.constant_pad_nd.default: ("pad",),
    torch.ops.aten.select.int: ("index",),
}


def _symbolic_int_args(node: torch.fx.Node) -> str | None:
    names = _CONSTANT_INT_ARGS.get(node.target)
    if not names:
        return None
    schema = node.target._schema
    for argument, value in zip(schema.arguments, node.args):
        if argument.name not in names:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, torch.fx.Node) or isinstance(v, torch.SymInt) for v in values):
            return (f"argument {argument.name} is a symbolic integer (Kiln takes it only as a "
                    "constant)")
    return None


def _same_size(a: Any, b: Any) -> bool:
    """Are two sizes (ints or SymInts) equal for every value of the symbols?"""
    if type(a) is int and type(b) is int:
        return a == b
    expr = lambda x: x.node.expr if isinstance(x, torch.SymInt) else x
    return sympy.expand(expr(a) - expr(b)) == 0


def _attention_sizes_problem(node: torch.fx.Node) -> str | None:
    """Why Kiln's fused attention cannot take this call's symbolic sizes:
    heads and head sizes must be static, and the sizes that must agree must be
    the same symbol (Dynamo does not prove that a key and a value marked
    dynamic separately have one length; eager checks it at run time)."""
    shapes = [arg.meta["val"].shape if isinstance(arg, torch.fx.Node) else ()
              for arg in node.args[:3]]
    if any(len(shape) != 4 for shape in shapes):
        return None  # the importer names the rank problem
    q, k, v = shapes
    if not all(type(shape[1]) is int and type(shape[3]) is int for shape in shapes):
        return ("symbolic head count or head size (only the batch and the sequence "
                "lengths of attention may be symbolic)")
    if not (_same_size(q[0], k[0]) and _same_size(q[0], v[0])):
        return (f"query, key and value batch sizes {q[0]}, {k[0]}, {v[0]} are symbols "
                "that Dynamo did not prove equal")
    if not _same_size(k[2], v[2]):
        return f"key and value lengths {k[2]} and {v[2]} are symbols that Dynamo did not prove equal"
    mask = node.kwargs.get("attn_mask")
    if isinstance(mask, torch.fx.Node):
        shape = list(mask.meta["val"].shape)
        shape = [1] * (4 - len(shape)) + shape
        for d, full in enumerate((q[0], q[1], q[2], k[2])):
            if not (type(shape[d]) is int and shape[d] == 1) and not _same_size(shape[d], full):
                return (f"attn_mask dim {d} has size {shape[d]}, which Dynamo did not prove "
                        f"equal to {full}")
    return None


def _symint_operand(node: torch.fx.Node, takes_symint_scalars: bool) -> str | None:
    """The name of an argument that holds a symbolic value Kiln cannot take:
    a SymFloat or SymBool anywhere but a size, a SymInt in a list of scalars,
    or a SymInt scalar of an op that takes scalars only as constants; None if
    there is none. A SymInt scalar operand of the ops that take one (`x * s0`,
    C.compiler.symint_scalar_ops()) is a value the graph computes from the
    size symbols (kiln_graph.size)."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return None
    def symbolic(value: Any, scalar_ok: bool) -> bool:
        if isinstance(value, (list, tuple)):
            return any(symbolic(v, False) for v in value)
        if isinstance(value, torch.fx.Node):
            value = value.meta.get("val")
        if isinstance(value, torch.SymInt):
            return not scalar_ok
        return isinstance(value, (torch.SymFloat, torch.SymBool))
    bound = list(zip(schema.arguments, node.args)) + [
        (a, node.kwargs[a.name]) for a in schema.arguments if a.name in node.kwargs]
    for argument, value in bound:
        # Integer arguments (SymInt, SymInt[], SymInt? in the schema, which
        # Python shows as int) are sizes, dims and bounds; Scalars and
        # Tensors are values. (arange's end is a Scalar, but Kiln takes the
        # length from the result's size, so a symbolic end is a size too.)
        size = "int" in str(argument.type) or (schema.name == "aten::arange"
                                                and argument.name == "end")
        scalar = takes_symint_scalars and str(argument.type) in ("number", "Tensor")
        if symbolic(value, scalar) and not size:
            return f"argument {argument.name}"
    return None


# Ops whose argument 1 is an advanced index: a list of optional tensors.
_ADVANCED_INDEXING = (torch.ops.aten.index.Tensor, torch.ops.aten.index_put.default)


def _forcing_predicate(
    force_eager: Collection[str] | Callable[[torch.fx.Node], bool] | None,
) -> Callable[[torch.fx.Node], bool]:
    if force_eager is None:
        return lambda node: False
    if callable(force_eager):
        return force_eager
    names = frozenset(force_eager)

    def forced(node: torch.fx.Node) -> bool:
        op = str(node.target)
        return op in names or op.rsplit(".", 1)[0] in names or node.name in names

    return forced


def find_unsupported(gm: torch.fx.GraphModule, support: KilnSupport) -> list[Unsupported]:
    """The call nodes Kiln cannot compile, in graph order (getitems of those are skipped)."""
    found = []
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        if is_getitem(node) and isinstance(node.args[0], torch.fx.Node):
            continue  # reported through its producer
        if computes_symint(node):
            continue  # size arithmetic, not an op Kiln could run
        reason = support.reason(node)
        if reason is not None:
            found.append(Unsupported(node, op_name(node), reason, source_loc(node)))
    return found


def has_compute(nodes: Collection[torch.fx.Node]) -> bool:
    """Does a set of nodes do any work beyond views and getitems?"""
    for node in nodes:
        if node.op != "call_function" or is_getitem(node):
            continue
        packet = op_name(node).rsplit(".", 1)[0]
        if packet not in VIEW_OPS:
            return True
    return False


def partition_graph(
    gm: torch.fx.GraphModule, support: KilnSupport
) -> tuple[torch.fx.GraphModule, list[str]]:
    """Fuse supported regions of gm into submodules (in place).

    Returns the graph module and the names of the submodules that Kiln should
    compile; everything else in the graph stays ATen calls that run eagerly.
    """
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    partitions: list[Partition] = [
        p for p in partitioner.propose_partitions() if has_compute(p.nodes)
    ]
    if not partitions:
        return gm, []
    split = partitioner.fuse_partitions(partitions, prefix=PARTITION_PREFIX)
    names = [
        node.target
        for node in split.graph.nodes
        if node.op == "call_module" and str(node.target).startswith(PARTITION_PREFIX)
    ]
    _pin_prim_outputs(split, names)
    return split, names


def _pin_prim_outputs(split: torch.fx.GraphModule, names: list[str]) -> None:
    """A partition's inputs computed in eager by a prim: converted to the
    dtype the partition was compiled for (`x.to(dtype)`, free when it is
    already that). Some prims' meta functions give the wrong dtype
    (prims.signbit, from torch.copysign's decomposition, says float32 and
    returns bool), and the partition's inputs are typed by them."""
    graph = split.graph
    pinned_any = False
    for node in list(graph.nodes):
        if node.op != "call_module" or node.target not in names:
            continue
        for arg in list(node.all_input_nodes):
            value = arg.meta.get("val")
            target = getattr(arg, "target", None)
            if (arg.op != "call_function" or not isinstance(value, torch.Tensor)
                    or getattr(target, "namespace", None) != "prims"):
                continue
            with graph.inserting_before(node):
                pinned = graph.call_method("to", (arg, value.dtype))
            pinned.meta["val"] = value
            node.replace_input_with(arg, pinned)
            pinned_any = True
    if pinned_any:
        split.recompile()
