"""The FX -> graph JSON serializer (no kiln._C needed)."""

from __future__ import annotations

import json
import operator
import os

import pytest
import torch
import torch.fx
import torch.nn.functional as F

from kiln.errors import SerializeError
from kiln.fx_serialize import FORMAT_VERSION, serialize_graph, source_loc
from kiln_test_utils import capture_aten, line_of

pytestmark = pytest.mark.unit

THIS_FILE = os.path.abspath(__file__)


def serialize(fn, *inputs, dynamic=False):
    (gm,) = capture_aten(fn, *inputs, dynamic=dynamic)
    serialized = serialize_graph(gm, "graph_7")
    # The JSON must survive a strict round trip (no NaN/Infinity literals).
    assert json.loads(serialized.to_json()) == serialized.graph
    return serialized


def nodes_by_target(graph, target):
    return [n for n in graph["nodes"] if n["target"] == target]


def test_linear_relu_structure():
    weight, bias = torch.randn(4, 8), torch.randn(4)
    s = serialize(lambda x: torch.relu(F.linear(x, weight, bias)), torch.randn(2, 8))
    g = s.graph
    assert g["version"] == FORMAT_VERSION == 1
    assert g["name"] == "graph_7"
    assert set(g) == {"version", "name", "inputs", "nodes", "outputs"}
    # The captured weight and bias are graph inputs (Dynamo lifts them), then x.
    shapes = sorted((tuple(i["shape"]), i["dtype"]) for i in g["inputs"])
    assert shapes == [((2, 8), "float32"), ((4,), "float32"), ((4, 8), "float32")]
    targets = [n["target"] for n in g["nodes"]]
    assert targets == ["aten.permute.default", "aten.addmm.default", "aten.relu.default"]
    addmm = g["nodes"][1]
    assert addmm["args"][2] == {"ref": g["nodes"][0]["name"], "index": 0}
    assert addmm["outputs"] == [{"shape": [2, 4], "dtype": "float32"}]
    assert g["outputs"] == [{"ref": g["nodes"][2]["name"], "index": 0}]
    assert set(addmm) == {"name", "target", "args", "kwargs", "outputs", "loc"}
    assert s.constants == []


def test_getitem_folds_into_ref_index():
    def fn(x, w, b):
        y = F.layer_norm(x, (8,), w, b)
        return y * 2

    s = serialize(fn, torch.randn(3, 8), torch.randn(8), torch.randn(8))
    g = s.graph
    assert not any("getitem" in n["target"] or "getitem" in n["name"] for n in g["nodes"])
    (ln,) = nodes_by_target(g, "aten.native_layer_norm.default")
    assert ln["outputs"] == [
        {"shape": [3, 8], "dtype": "float32"},
        {"shape": [3, 1], "dtype": "float32"},
        {"shape": [3, 1], "dtype": "float32"},
    ]
    assert ln["args"][1] == [8]
    assert ln["args"][4] == pytest.approx(1e-5)
    (mul,) = nodes_by_target(g, "aten.mul.Tensor")
    assert mul["args"] == [{"ref": ln["name"], "index": 0}, 2]


def test_getitem_index_other_than_zero():
    s = serialize(lambda x: torch.max(x, 1).indices + 1, torch.randn(3, 5))
    g = s.graph
    (mx,) = nodes_by_target(g, "aten.max.dim")
    assert mx["outputs"] == [{"shape": [3], "dtype": "float32"}, {"shape": [3], "dtype": "int64"}]
    (add,) = nodes_by_target(g, "aten.add.Tensor")
    assert add["args"][0] == {"ref": mx["name"], "index": 1}


def test_loc_points_at_user_line():
    def fn(x):
        y = torch.tanh(x) * 3  # kiln-test: loc line
        return y

    line = line_of("# " + "kiln-test: loc line", THIS_FILE)
    g = serialize(fn, torch.randn(4)).graph
    for node in g["nodes"]:
        code = "y = torch.tanh(x) * 3  # " + "kiln-test: loc line"
        assert node["loc"] == {"file": THIS_FILE, "line": line, "code": code}


def test_loc_of_nested_module_is_innermost_user_frame():
    class Inner(torch.nn.Module):
        def forward(self, x):
            return torch.sigmoid(x)  # kiln-test: inner line

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x) + 1

    line = line_of("# " + "kiln-test: inner line", THIS_FILE)
    g = serialize(Outer(), torch.randn(4)).graph
    (sig,) = nodes_by_target(g, "aten.sigmoid.default")
    assert (sig["loc"]["file"], sig["loc"]["line"]) == (THIS_FILE, line)


def test_dtype_kwargs_and_dropped_kwargs():
    def fn(x):
        return x.to(torch.int64) + torch.full((2, 3), 4, dtype=torch.int64)

    g = serialize(fn, torch.randn(2, 3) * 10).graph
    (to,) = nodes_by_target(g, "aten._to_copy.default")
    assert to["kwargs"] == {"dtype": {"dtype": "int64"}}
    (full,) = nodes_by_target(g, "aten.full.default")
    assert full["args"] == [[2, 3], 4]
    assert full["kwargs"] == {"dtype": {"dtype": "int64"}}
    assert full["outputs"] == [{"shape": [2, 3], "dtype": "int64"}]
    for node in g["nodes"]:
        assert not {"device", "layout", "memory_format", "pin_memory"} & set(node["kwargs"])


@pytest.mark.parametrize(
    "dtype, name",
    [
        (torch.float32, "float32"),
        (torch.float64, "float64"),
        (torch.float16, "float16"),
        (torch.bfloat16, "bfloat16"),
        (torch.int64, "int64"),
        (torch.int32, "int32"),
        (torch.int16, "int16"),
        (torch.int8, "int8"),
        (torch.uint8, "uint8"),
        (torch.bool, "bool"),
    ],
)
def test_input_dtype_names(dtype, name):
    x = torch.ones(2, 3, dtype=dtype)
    g = serialize(lambda t: t.clone(), x).graph
    assert g["inputs"] == [{"name": g["inputs"][0]["name"], "shape": [2, 3], "dtype": name}]
    assert g["nodes"][0]["outputs"][0]["dtype"] == name


def test_non_finite_floats():
    def fn(x):
        return torch.where(x > 0, x, float("-inf")), torch.full((2,), float("nan")), x + float("inf")

    g = serialize(fn, torch.randn(3)).graph
    (st,) = nodes_by_target(g, "aten.scalar_tensor.default")
    assert st["args"] == [{"float": "-inf"}]
    assert st["kwargs"] == {"dtype": {"dtype": "float32"}}
    (full,) = nodes_by_target(g, "aten.full.default")
    assert full["args"] == [[2], {"float": "nan"}]
    (add,) = nodes_by_target(g, "aten.add.Tensor")
    assert add["args"][1] == {"float": "inf"}


def test_tensor_constants_become_trailing_inputs():
    def fn(x):
        return x * torch.tensor([1.0, 2.0, 3.0])

    s = serialize(fn, torch.randn(2, 3))
    g = s.graph
    assert len(g["inputs"]) == 2
    assert g["inputs"][0]["shape"] == [2, 3]
    const = g["inputs"][1]
    assert const["shape"] == [3] and const["dtype"] == "float32"
    assert len(s.constants) == 1
    torch.testing.assert_close(s.constants[0], torch.tensor([1.0, 2.0, 3.0]))
    refs = json.dumps(g["nodes"])
    assert json.dumps({"ref": const["name"], "index": 0}) in refs


def test_slice_end_int64_max():
    g = serialize(lambda x: x[:, 1:] * 2, torch.randn(3, 4)).graph
    (sl,) = nodes_by_target(g, "aten.slice.Tensor")
    assert sl["args"][1:] == [1, 1, 2**63 - 1]


def test_list_args_of_refs():
    g = serialize(lambda x, y: torch.cat([x, y], 1), torch.randn(2, 2), torch.randn(2, 3)).graph
    (cat,) = nodes_by_target(g, "aten.cat.default")
    names = [i["name"] for i in g["inputs"]]
    assert cat["args"] == [[{"ref": names[0], "index": 0}, {"ref": names[1], "index": 0}], 1]


def test_string_and_bool_args():
    g = serialize(lambda x: (F.gelu(x, approximate="tanh"), torch.softmax(x, -1)), torch.randn(2, 3)).graph
    (gelu,) = nodes_by_target(g, "aten.gelu.default")
    assert gelu["kwargs"] == {"approximate": "tanh"}
    (sm,) = nodes_by_target(g, "aten._softmax.default")
    assert sm["args"][1:] == [-1, False]


def _handmade_graph(build):
    """A GraphModule from an FX graph built by hand, with meta['val'] from real tensors."""
    graph = torch.fx.Graph()
    build(graph)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def test_none_outputs_are_null():
    def build(graph):
        x = graph.placeholder("x")
        x.meta["val"] = torch.empty(2, 3)
        y = graph.call_function(torch.ops.aten.relu.default, (x,))
        y.meta["val"] = torch.empty(2, 3)
        graph.output((None, y, None))

    g = serialize_graph(_handmade_graph(build)).graph
    assert g["outputs"] == [None, {"ref": g["nodes"][0]["name"], "index": 0}, None]
    assert g["nodes"][0]["loc"] is None


def test_symbolic_shapes_become_size_expressions():
    """Dynamo's symbols are numbered in order of use with their ranges; SymInt
    placeholders are sizes, not graph inputs; shapes are size expressions."""
    (gm,) = capture_aten(lambda x, y: torch.cat([x, y]).view(-1) * 2,
                         torch.randn(4, 3), torch.randn(5, 3), dynamic=True)
    serialized = serialize_graph(gm)
    graph = serialized.graph
    # dynamic=True: x [s0, s1], y [s2, s1] (the shared column count is one symbol).
    symbols = graph["symbols"]
    assert len(symbols) == 3 and all(s["min"] == 2 for s in symbols), symbols
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert serialized.symint_inputs and [placeholders[i].name for i in serialized.symint_inputs] == [
        n.name for n in placeholders if isinstance(n.meta["val"], torch.SymInt)]
    assert [i["shape"] for i in graph["inputs"]] == [[["s", 0], ["s", 1]], [["s", 2], ["s", 1]]]
    cat, view, mul = graph["nodes"]
    assert cat["outputs"][0]["shape"] == [["+", ["s", 2], ["s", 0]], ["s", 1]]
    assert mul["outputs"][0]["shape"] == [["+", ["*", ["s", 2], ["s", 1]], ["*", ["s", 1], ["s", 0]]]]


def test_sizes_outside_the_affine_grammar_are_rejected():
    from kiln.symbolic import SymbolTable
    import sympy
    from torch.utils._sympy.functions import FloorDiv

    class Node:  # a SymInt stand-in with the fields SymbolTable reads
        def __init__(self, expr):
            self.expr, self.shape_env = expr, None

    class Dim(torch.SymInt):
        def __init__(self, expr):
            self.node = Node(expr)

    s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
    table = SymbolTable()
    # (sympy reduces 6 * s0 // 4 to 3 * s0 // 2)
    assert table.size(Dim(FloorDiv(s0 * 6, 4)), "x") == ["//", ["*", 3, ["s", 0]], 2]
    with pytest.raises(SerializeError, match="not a positive constant"):
        table.size(Dim(FloorDiv(s0, s1)), "x")


def test_non_aten_target_is_rejected():
    def build(graph):
        x = graph.placeholder("x")
        x.meta["val"] = torch.empty(2)
        y = graph.call_function(operator.add, (x, x))
        y.meta["val"] = torch.empty(2)
        graph.output((y,))

    with pytest.raises(SerializeError, match="not an ATen op"):
        serialize_graph(_handmade_graph(build))


def test_unencodable_argument_is_rejected():
    def build(graph):
        x = graph.placeholder("x")
        x.meta["val"] = torch.empty(2)
        y = graph.call_function(torch.ops.aten.mul.Tensor, (x, torch.contiguous_format))
        y.meta["val"] = torch.empty(2)
        graph.output((y,))

    with pytest.raises(SerializeError, match="cannot encode argument"):
        serialize_graph(_handmade_graph(build))


def test_missing_metadata_is_rejected():
    def build(graph):
        x = graph.placeholder("x")
        graph.output((x,))

    with pytest.raises(SerializeError, match="meta"):
        serialize_graph(_handmade_graph(build))


class _Node:
    """Just enough of an FX node for source_loc."""

    def __init__(self, stack_trace):
        self.meta = {"stack_trace": stack_trace}


def test_source_loc_takes_last_frame_and_skips_carets():
    trace = (
        '  File "/src/model.py", line 40, in forward\n'
        "    x = self.block(x)\n"
        '  File "/src/block.py", line 12, in forward\n'
        "    return self.fc(x).relu()\n"
        "           ^^^^^^^^^^\n"
    )
    loc = source_loc(_Node(trace))
    assert (loc.file, loc.line, loc.code) == ("/src/block.py", 12, "return self.fc(x).relu()")
    assert str(loc) == "/src/block.py:12"


def test_source_loc_edge_cases():
    assert source_loc(_Node(None)) is None
    assert source_loc(_Node("no frames here")) is None
    loc = source_loc(_Node('  File "rel/model.py", line 3, in f\n'))
    assert loc.file == os.path.abspath("rel/model.py") and loc.line == 3 and loc.code == ""
    loc = source_loc(_Node('  File "<string>", line 1, in <module>\n    ^^^\n'))
    assert (loc.file, loc.line, loc.code) == ("<string>", 1, "")
