"""ATen-level FX GraphModule -> Kiln graph JSON (version 1).

The JSON is the contract with the C++ importer (kiln._C.compiler.compile):

    {"version": 1, "name": str,
     "symbols": [{"name", "min", "max"}],       size symbols (graphs with dynamic shapes)
     "inputs":  [{"name", "shape", "dtype", "parameter"?}],
                                                placeholders, then get_attr constants
     "nodes":   [{"name", "target", "args", "kwargs", "outputs", "loc"}],
     "outputs": [ARG or null],
     "deterministic"?: true,                    torch.use_deterministic_algorithms(True)
                                                was on: float scatter sums add in order
     "float32_matmul_precision"?: "high" | "medium"}
                                                torch.get_float32_matmul_precision():
                                                float32 matmuls may round to TF32

ARG is a ref {"ref": name, "index": i}, a JSON scalar, a list of ARGs,
{"dtype": name}, {"float": "inf" | "-inf" | "nan"} or {"size": SIZE}, a
symbolic integer. A shape is a list of SIZEs (kiln.symbolic). getitem nodes
are not emitted: they become refs with an index into a multi-result node.
Nodes that compute symbolic integers (sym_size, SymInt arithmetic) are not
emitted either: their values are size expressions where they are used, and
SymInt placeholders are not graph inputs (their values are input sizes).
Device, layout, memory_format and pin_memory keyword arguments are dropped.
"parameter": true marks an input that is a module's parameter or buffer, or a
constant: the same tensor every call, changed only in place (PARAMETER_META on
the placeholder says so).
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
from dataclasses import dataclass, field
from typing import Any, Collection, Sequence

import sympy
import torch
import torch.fx

from kiln.errors import SerializeError
from kiln.layout import OutputLayout, output_layouts
from kiln.symbolic import SymbolTable, is_symbolic

FORMAT_VERSION = 1

# Placeholder meta key: the input is a parameter, buffer or constant
# (backend.mark_parameters), which Kiln may pack once (KilnOptions.pack_weights).
PARAMETER_META = "kiln_parameter"

DTYPE_NAMES: dict[torch.dtype, str] = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
}

# Placement and storage details the compiler decides itself.
DROPPED_KWARGS = frozenset({"device", "layout", "memory_format", "pin_memory"})

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')


@dataclass(frozen=True)
class SourceLoc:
    """The user's source line an FX node came from."""

    file: str
    line: int
    code: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "code": self.code}


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def source_loc(node: torch.fx.Node) -> SourceLoc | None:
    """The innermost frame of node.meta["stack_trace"] outside torch itself
    (the user's line: torch.export traces into nn.Linear and friends, whose
    frames come last), else the innermost frame; None without a trace."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    lines = trace.splitlines()
    frames = [i for i, line in enumerate(lines) if _FRAME_RE.match(line)]
    user = [i for i in frames
            if not os.path.abspath(_FRAME_RE.match(lines[i])["file"]).startswith(_TORCH_DIR)]
    for i in reversed(user or frames):
        match = _FRAME_RE.match(lines[i])
        code = ""
        if i + 1 < len(lines) and not _FRAME_RE.match(lines[i + 1]):
            code = lines[i + 1].strip()
            if code and set(code) <= set("^~ "):  # a caret marker, not source text
                code = ""
        file = match["file"]
        if not file.startswith("<") and not os.path.isabs(file):
            file = os.path.abspath(file)
        return SourceLoc(file, int(match["line"]), code)
    return None


def op_name(node: torch.fx.Node) -> str:
    """A printable name of what the node calls, e.g. "aten.addmm.default"."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    if isinstance(target, str):
        return target
    return getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))


def is_getitem(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is operator.getitem


def dtype_name(dtype: torch.dtype) -> str:
    try:
        return DTYPE_NAMES[dtype]
    except KeyError:
        raise SerializeError(f"dtype {dtype} has no Kiln encoding") from None


def tensor_spec(value: Any, what: str, symbols: SymbolTable | None = None) -> dict[str, Any]:
    """{"shape", "dtype"} of a (fake) tensor; symbolic sizes become size
    expressions numbered by `symbols` (a throwaway table when None)."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise SerializeError(f"{what} is a symbolic scalar, not a tensor")
    if not isinstance(value, torch.Tensor):
        raise SerializeError(f"{what} is a {type(value).__name__}, not a tensor")
    table = symbols if symbols is not None else SymbolTable()
    shape = [table.size(dim, what) for dim in value.shape]
    return {"shape": shape, "dtype": dtype_name(value.dtype)}


def node_value(node: torch.fx.Node) -> Any:
    if "val" not in node.meta:
        raise SerializeError(f"node {node.name} has no meta['val'] (shape metadata)")
    return node.meta["val"]


def result_specs(node: torch.fx.Node,
                 symbols: SymbolTable | None = None) -> list[dict[str, Any] | None]:
    """One {"shape", "dtype"} per result of the node; None for a None result."""
    value = node_value(node)
    if isinstance(value, (tuple, list)):
        return [
            None if v is None else tensor_spec(v, f"result {i} of {node.name}", symbols)
            for i, v in enumerate(value)
        ]
    return [tensor_spec(value, f"result of {node.name}", symbols)]


def computes_symint(node: torch.fx.Node) -> bool:
    """Does the node produce a symbolic integer (a size computation) rather than a tensor?"""
    return is_symbolic(node.meta.get("val"))


def encode_ref(node: torch.fx.Node) -> dict[str, Any]:
    """A ref to a node's value, folding getitem into an index."""
    if is_getitem(node):
        source, index = node.args
        if not isinstance(source, torch.fx.Node) or type(index) is not int:
            raise SerializeError(f"cannot encode getitem {node.name}{tuple(node.args)}")
        if source.op != "call_function" or is_getitem(source):
            raise SerializeError(f"getitem {node.name} indexes {source.op} {source.name}")
        return {"ref": source.name, "index": index}
    value = node.meta.get("val")
    if isinstance(value, (tuple, list)):
        raise SerializeError(f"{node.name} is a multi-result node used without getitem")
    return {"ref": node.name, "index": 0}


def encode_arg(value: Any, symbols: SymbolTable | None = None) -> Any:
    """One FX argument as ARG JSON."""
    if isinstance(value, torch.fx.Node):
        if computes_symint(value):
            return encode_arg(value.meta["val"], symbols)
        return encode_ref(value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise SerializeError(f"integer {value} does not fit in int64")
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return {"float": "nan"}
        if math.isinf(value):
            return {"float": "inf" if value > 0 else "-inf"}
        return value
    if isinstance(value, (list, tuple)):
        return [encode_arg(v, symbols) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": dtype_name(value)}
    if isinstance(value, torch.SymInt):
        table = symbols if symbols is not None else SymbolTable()
        return {"size": table.size(value, f"argument {value}")}
    if isinstance(value, (torch.SymFloat, torch.SymBool)):
        raise SerializeError(f"symbolic value {value} (Kiln computes symbolic integers only)")
    raise SerializeError(f"cannot encode argument {value!r} of type {type(value).__name__}")


def encode_call(node: torch.fx.Node,
                symbols: SymbolTable | None = None) -> tuple[list[Any], dict[str, Any]]:
    """The args and kwargs of a call_function node as ARG JSON."""
    args = [encode_arg(a, symbols) for a in node.args]
    kwargs = {k: encode_arg(v, symbols) for k, v in node.kwargs.items()
              if k not in DROPPED_KWARGS}
    return args, kwargs


@dataclass
class SerializedGraph:
    """The graph JSON, plus the constant tensors to pass after the real inputs."""

    graph: dict[str, Any]
    constants: list[torch.Tensor]
    # Per entry of graph["outputs"]: the layout eager gives it (None for a
    # literal). Kiln computes dense outputs in storage order (see kiln.layout).
    layouts: list[OutputLayout | None]
    # Positions of the graph's SymInt placeholders: the caller passes them,
    # the executable does not take them (their values are input sizes).
    symint_inputs: list[int] = field(default_factory=list)
    # Positions of SymInt placeholders whose symbol is no tensor input's size:
    # the executable takes their values as 0-d int64 tensors.
    symint_values: list[int] = field(default_factory=list)

    @property
    def is_symbolic(self) -> bool:
        return bool(self.graph.get("symbols"))

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.graph, allow_nan=False, indent=indent)

    @property
    def output_is_ref(self) -> list[bool]:
        """Per graph output: does the compiled graph produce it (True) or is it a literal?"""
        return [isinstance(o, dict) and "ref" in o for o in self.graph["outputs"]]


def symint_placeholder_roles(gm: torch.fx.GraphModule) -> tuple[frozenset[int], frozenset[int]]:
    """Positions of the graph's SymInt placeholders: those that are sizes of
    tensor inputs (the executable reads those shapes and does not take them),
    and those whose symbol is no tensor input's size (taken as 0-d int64s)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    in_shapes = {d.node.expr for n in placeholders if isinstance(n.meta.get("val"), torch.Tensor)
                 for d in n.meta["val"].shape if isinstance(d, torch.SymInt)}
    dropped, values = set(), set()
    for i, node in enumerate(placeholders):
        value = node.meta.get("val")
        if isinstance(value, torch.SymInt):
            expr = value.node.expr
            (values if isinstance(expr, sympy.Symbol) and expr not in in_shapes
             else dropped).add(i)
    return frozenset(dropped), frozenset(values)


def executable_args(args: Sequence[Any], dropped: Collection[int],
                    values: Collection[int]) -> list[Any]:
    """A call's arguments as the executable takes them (see
    symint_placeholder_roles)."""
    return [torch.tensor(int(a)) if i in values else a
            for i, a in enumerate(args) if i not in dropped]


def serialize_graph(gm: torch.fx.GraphModule, name: str = "graph_0") -> SerializedGraph:
    """Encode an ATen-level FX graph; raises SerializeError for anything not encodable."""
    inputs: list[dict[str, Any]] = []
    constants: list[dict[str, Any]] = []
    constant_values: list[torch.Tensor] = []
    nodes: list[dict[str, Any]] = []
    outputs: list[Any] | None = None
    layouts: list[OutputLayout | None] = []
    symbols = SymbolTable()
    dropped, values = symint_placeholder_roles(gm)
    placeholders = 0
    input_of: dict[int, int] = {}  # placeholder index -> input index
    # Symbols that are a dim of a tensor input: the runtime reads them there.
    input_dims = [d for n in gm.graph.nodes if n.op == "placeholder"
                  and isinstance(n.meta.get("val"), torch.Tensor)
                  for d in n.meta["val"].shape if isinstance(d, torch.SymInt)]
    in_shapes = {d.node.expr for d in input_dims}
    if input_dims:
        symint_placeholders = {n.meta["val"].node.expr for n in gm.graph.nodes
                               if n.op == "placeholder"
                               and isinstance(n.meta.get("val"), torch.SymInt)}
        symbols.bind_offsets(in_shapes, symint_placeholders, input_dims[0].node.shape_env)

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            placeholders += 1
            value = node.meta.get("val")
            if isinstance(value, torch.SymInt):
                if placeholders - 1 in values:
                    # No tensor input has this size: its value travels as a 0-d int64.
                    inputs.append({"name": node.name, "shape": [], "dtype": "int64",
                                   "symbol": symbols.index(value.node.expr,
                                                           value.node.shape_env)})
                continue
            spec = tensor_spec(node_value(node), f"input {node.name}", symbols)
            input_of[placeholders - 1] = len(inputs)
            inputs.append({"name": node.name, **spec})
            if node.meta.get(PARAMETER_META):
                inputs[-1]["parameter"] = True
        elif node.op == "get_attr":
            value = fetch_attr(gm, node.target)
            if not isinstance(value, torch.Tensor):
                raise SerializeError(f"get_attr {node.target} is not a tensor")
            constants.append({"name": node.name,
                              **tensor_spec(value, f"constant {node.target}", symbols),
                              "parameter": True})
            constant_values.append(value)  # no tensor ops here: a FakeTensorMode may be active
        elif node.op == "call_function":
            if is_getitem(node):
                encode_ref(node)  # validates; users refer to the producer directly
                continue
            if computes_symint(node):
                continue  # a size computation: its uses encode its expression
            if not isinstance(node.target, torch._ops.OpOverload):
                raise SerializeError(
                    f"node {node.name} calls {op_name(node)}, which is not an ATen op overload"
                )
            args, kwargs = encode_call(node, symbols)
            loc = source_loc(node)
            nodes.append(
                {
                    "name": node.name,
                    "target": str(node.target),
                    "args": args,
                    "kwargs": kwargs,
                    "outputs": result_specs(node, symbols),
                    "loc": loc.to_json() if loc else None,
                }
            )
        elif node.op == "output":
            result = node.args[0]
            results = result if isinstance(result, (tuple, list)) else [result]
            layouts = output_layouts(gm)
            if any(isinstance(r, torch.fx.Node) and isinstance(r.meta.get("val"), torch.SymInt)
                   for r in results):
                raise SerializeError("the graph returns a symbolic integer (Kiln graphs "
                                     "return tensors)")
            outputs = [encode_arg(r, symbols) for r in results]
            outputs = _in_storage_order(outputs, results, layouts, nodes, gm, symbols)
        else:
            raise SerializeError(f"node {node.name} is a {node.op}, which Kiln cannot encode")

    if outputs is None:
        raise SerializeError("graph has no output node")
    graph = {
        "version": FORMAT_VERSION,
        "name": name,
        "inputs": inputs + constants,
        "nodes": nodes,
        "outputs": outputs,
    }
    if symbols.names:
        graph["symbols"] = symbols.to_json()
    if torch.get_float32_matmul_precision() != "highest":
        # TF32 allowed for float32 matmuls (GPU targets' tensor cores), as
        # PyTorch allows it to cuBLAS; Dynamo recompiles when it changes.
        graph["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    if torch.are_deterministic_algorithms_enabled():
        # Float scatter sums add in order (Dynamo recompiles when this changes).
        graph["deterministic"] = True
    writes = _input_writes(gm, outputs, layouts, input_of)
    if writes:
        graph["input_writes"] = writes
    return SerializedGraph(graph, constant_values, layouts, sorted(dropped), sorted(values))


def _input_writes(gm: torch.fx.GraphModule, outputs: list[Any],
                  layouts: list[OutputLayout | None],
                  input_of: dict[int, int]) -> list[dict[str, int]]:
    """The graph's input writes (kiln.mutation) whose new value is returned as
    the plain row-major buffer the input's own is, so that the compiler may
    compute it there; by graph input (placeholders that are sizes are not
    inputs of the serialized graph: input_of maps placeholder to input)."""
    from kiln.mutation import INPUT_WRITES_META

    writes = gm.meta.get(INPUT_WRITES_META)
    kept = []
    for output, input in (writes.pairs() if writes else []):
        layout = layouts[output]
        plain = layout is None or (not layout.symbolic and layout.is_row_major
                                   and layout.storage_offset == 0
                                   and layout.alias_input is None
                                   and layout.alias_output is None)
        if plain and isinstance(outputs[output], dict) and input in input_of:
            kept.append({"output": output, "input": input_of[input]})
    return kept


def _in_storage_order(
    outputs: list[Any],
    results: list[Any],
    layouts: list[OutputLayout | None],
    nodes: list[dict[str, Any]],
    gm: torch.fx.GraphModule,
    symbols: SymbolTable,
) -> list[Any]:
    """Each output whose eager layout is a dense non-row-major one becomes a
    permute into storage order, appended to nodes; the runtime views it back
    with eager's strides."""
    taken = {n.name for n in gm.graph.nodes}
    permuted: dict[tuple[str, int, tuple[int, ...]], dict[str, Any]] = {}
    encoded = []
    for out, value, layout in zip(outputs, results, layouts):
        if layout is None or layout.physical_order is None or layout.is_row_major:
            encoded.append(out)
            continue
        key = (out["ref"], out["index"], layout.physical_order)
        if key not in permuted:
            name = f"{out['ref']}_storage_order"
            while name in taken:
                name += "_"
            taken.add(name)
            loc = source_loc(value) if isinstance(value, torch.fx.Node) else None
            nodes.append({
                "name": name,
                "target": "aten.permute.default",
                "args": [out, list(layout.physical_order)],
                "kwargs": {},
                "outputs": [{"shape": [symbols.size(d, name) for d in layout.physical_shape],
                             "dtype": dtype_name(node_value(value).dtype)}],
                "loc": loc.to_json() if loc else None,
            })
            permuted[key] = {"ref": name, "index": 0}
        encoded.append(permuted[key])
    return encoded


def constant_tensors(gm: torch.fx.GraphModule) -> list[Any]:
    """The values of gm's get_attr nodes: the inputs serialize_graph appends after the placeholders."""
    return [fetch_attr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr"]


def fetch_attr(gm: torch.nn.Module, target: str) -> Any:
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value
