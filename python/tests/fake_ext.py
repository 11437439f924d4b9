"""A reference stand-in for kiln._C, used with `pytest --kiln-fake-ext`.

It "compiles" graph JSON by validating it against the contract and
"runs" it by interpreting every node with the ATen op it names. Running the
end-to-end tests on it checks the Python side (serializer, partitioner,
backend wiring) before the real extension exists, and it is an executable
reading of the JSON contract: if the fake computes the right answer from the
JSON alone, the JSON carries everything the C++ importer needs.
"""

from __future__ import annotations

import json
import math
import sys
import types
from typing import Any

import torch

from kiln.layout import OutputLayout, apply_layout, physical_order

# The Core ATen overloads the tests and models produce (after
# core_aten_decompositions, torch 2.13). The real extension must support at
# least these for the fallback="error" tests to pass.
SUPPORTED_OPS = sorted(
    {
        "aten._log_softmax.default",
        "aten._softmax.default",
        "aten._to_copy.default",
        "aten.add.Tensor",
        "aten.addmm.default",
        "aten.alias.default",  # saved activations in training forward graphs
        "aten.amax.default",
        "aten.bmm.default",
        "aten.cat.default",
        "aten.clone.default",
        "aten.div.Tensor",
        "aten.embedding.default",
        "aten.eq.Scalar",
        "aten.eq.Tensor",
        "aten.exp.default",
        "aten.expand.default",
        "aten.full.default",
        "aten.full_like.default",
        "aten.ge.Scalar",
        "aten.ge.Tensor",
        "aten.gelu.default",
        "aten.gt.Scalar",
        "aten.gt.Tensor",
        "aten.le.Scalar",
        "aten.le.Tensor",
        "aten.lift_fresh_copy.default",
        "aten.log.default",
        "aten.lt.Scalar",
        "aten.lt.Tensor",
        "aten.mean.default",
        "aten.mean.dim",
        "aten.mm.default",
        "aten.mul.Tensor",
        "aten.native_layer_norm.default",
        "aten.ne.Scalar",
        "aten.ne.Tensor",
        "aten.neg.default",
        "aten.permute.default",
        "aten.pow.Tensor_Scalar",
        "aten.reciprocal.default",
        "aten.relu.default",
        "aten.rsqrt.default",
        "aten.scalar_tensor.default",
        "aten.select.int",
        "aten.sigmoid.default",
        "aten.slice.Tensor",
        "aten.sqrt.default",
        "aten.squeeze.dims",
        "aten.sub.Tensor",
        "aten.sum.dim_IntList",
        "aten.tanh.default",
        "aten.unsqueeze.default",
        "aten.view.default",
        "aten.where.self",
    }
)

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
# Every target compile() was asked for (to see which ops the tests exercise).
COMPILED_OPS: set[str] = set()
_VIEW_PACKETS = {"view", "_unsafe_view", "permute", "expand", "squeeze", "unsqueeze", "slice", "select"}


class CompileError(RuntimeError):
    pass


class ContractError(AssertionError):
    """The graph JSON breaks the contract (a serializer bug, not a user error)."""


# ---------------------------------------------------------------------------
# compiler


def compile(graph_json: str, target: str, keep_stages: bool) -> dict[str, Any]:
    if not isinstance(graph_json, str):
        raise TypeError("graph_json must be str")
    if target != "cpu":
        raise CompileError(f"target {target!r} is not supported")
    graph = json.loads(graph_json)
    validate(graph)
    for node in graph["nodes"]:
        COMPILED_OPS.add(node["target"])
        if node["target"] not in SUPPORTED_OPS:
            loc = node["loc"]
            where = f"{loc['file']}:{loc['line']}" if loc else "<unknown>"
            raise CompileError(f"{where}: error: {node['target']} is not supported")
    computing = [n for n in graph["nodes"] if n["target"].split(".")[1] not in _VIEW_PACKETS]
    kernels = [n["name"] for n in computing]
    kernel_info = [  # one kernel per computing node, as an unfused compiler would
        {
            "name": f"kernel_{i}_{n['target'].split('.')[1]}",
            "workgroups": 1,
            "ops": [n["target"].split(".")[1]],
            "locations": [f"{n['loc']['file']}:{n['loc']['line']}"] if n["loc"] else [],
            "nodes": [n["name"]],
        }
        for i, n in enumerate(computing)
    ]
    return {
        "artifact": graph_json.encode(),
        "kernels": len(kernels),
        "kernel_info": kernel_info,
        "stages": [("import", f"// {graph['name']}\n"), ("fused", "// fused\n")] if keep_stages else [],
        "stage_times_ms": [("import", 0.01), ("fused", 0.01)],
        "kernel_asm": [(k, f"; kernel {k}\n") for k in kernels] if keep_stages else [],
    }


def supported_ops() -> list[str]:
    return list(SUPPORTED_OPS)


def validate(graph: Any) -> None:
    """Check graph JSON against the version-1 contract; raises ContractError."""

    def need(cond: bool, msg: str) -> None:
        if not cond:
            raise ContractError(msg)

    need(isinstance(graph, dict), "graph is not an object")
    need(set(graph) == {"version", "name", "inputs", "nodes", "outputs"}, f"graph keys {sorted(graph)}")
    need(graph["version"] == 1, "version != 1")
    need(isinstance(graph["name"], str) and graph["name"], "bad name")
    results: dict[str, list[Any]] = {}
    for inp in graph["inputs"]:
        need(set(inp) == {"name", "shape", "dtype"}, f"input keys {sorted(inp)}")
        _check_spec(inp, need)
        need(inp["name"] not in results, f"duplicate name {inp['name']}")
        results[inp["name"]] = [inp]

    def check_arg(arg: Any, where: str) -> None:
        if arg is None or isinstance(arg, (bool, int, str)):
            return
        if isinstance(arg, float):
            need(math.isfinite(arg), f"{where}: non-finite float literal")
            return
        if isinstance(arg, list):
            for a in arg:
                check_arg(a, where)
            return
        need(isinstance(arg, dict), f"{where}: bad arg {arg!r}")
        if "ref" in arg:
            need(set(arg) == {"ref", "index"}, f"{where}: ref keys {sorted(arg)}")
            need(arg["ref"] in results, f"{where}: ref to undefined {arg['ref']}")
            outs = results[arg["ref"]]
            need(isinstance(arg["index"], int) and 0 <= arg["index"] < len(outs), f"{where}: bad index {arg}")
            need(outs[arg["index"]] is not None, f"{where}: ref to a None result")
        elif "dtype" in arg:
            need(set(arg) == {"dtype"} and arg["dtype"] in DTYPES, f"{where}: bad dtype {arg}")
        elif "float" in arg:
            need(set(arg) == {"float"} and arg["float"] in ("inf", "-inf", "nan"), f"{where}: bad float {arg}")
        else:
            need(False, f"{where}: bad arg {arg!r}")

    for node in graph["nodes"]:
        need(set(node) == {"name", "target", "args", "kwargs", "outputs", "loc"}, f"node keys {sorted(node)}")
        name = node["name"]
        need(name not in results, f"duplicate name {name}")
        need(isinstance(node["target"], str) and node["target"].startswith("aten."), f"{name}: target")
        need(isinstance(node["args"], list) and isinstance(node["kwargs"], dict), f"{name}: args")
        for arg in node["args"]:
            check_arg(arg, name)
        for key, arg in node["kwargs"].items():
            need(key not in ("device", "layout", "memory_format", "pin_memory"), f"{name}: kwarg {key}")
            check_arg(arg, name)
        need(isinstance(node["outputs"], list) and node["outputs"], f"{name}: outputs")
        for out in node["outputs"]:
            if out is not None:
                need(set(out) == {"shape", "dtype"}, f"{name}: output keys")
                _check_spec(out, need)
        loc = node["loc"]
        if loc is not None:
            need(set(loc) == {"file", "line", "code"}, f"{name}: loc keys")
            need(isinstance(loc["file"], str) and isinstance(loc["line"], int), f"{name}: loc")
            need(isinstance(loc["code"], str), f"{name}: loc code")
        results[name] = node["outputs"]
    need(isinstance(graph["outputs"], list), "outputs")
    for out in graph["outputs"]:
        check_arg(out, "graph output")


def _check_spec(spec: dict[str, Any], need: Any) -> None:
    need(isinstance(spec["shape"], list), "shape is not a list")
    need(all(type(d) is int and d >= 0 for d in spec["shape"]), f"bad shape {spec['shape']}")
    need(spec["dtype"] in DTYPES, f"bad dtype {spec['dtype']}")


# ---------------------------------------------------------------------------
# runtime


class Executable:
    def __init__(self, artifact: bytes):
        try:
            self._graph = json.loads(bytes(artifact))
            validate(self._graph)
        except (ValueError, ContractError) as err:
            raise ValueError(f"corrupt artifact: {err}") from None
        g = self._graph
        self.num_inputs = len(g["inputs"])
        self.num_outputs = sum(isinstance(o, dict) and "ref" in o for o in g["outputs"])
        self.num_kernels = sum(n["target"].split(".")[1] not in _VIEW_PACKETS for n in g["nodes"])
        self._layouts: list[OutputLayout | None] = [None] * self.num_outputs

    def run(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        g = self._graph
        if len(inputs) != self.num_inputs:
            raise RuntimeError(f"{g['name']}: expected {self.num_inputs} inputs, got {len(inputs)}")
        env: dict[str, list[Any]] = {}
        for spec, tensor in zip(g["inputs"], inputs):
            if not isinstance(tensor, torch.Tensor):
                raise RuntimeError(f"input {spec['name']} is a {type(tensor).__name__}")
            if tensor.dtype != DTYPES[spec["dtype"]] or list(tensor.shape) != spec["shape"]:
                raise RuntimeError(
                    f"input {spec['name']}: expected {spec['dtype']}{spec['shape']}, "
                    f"got {tensor.dtype}{list(tensor.shape)}"
                )
            env[spec["name"]] = [tensor.detach().contiguous()]
        for node in g["nodes"]:
            _, packet, overload = node["target"].split(".")
            op = getattr(getattr(torch.ops.aten, packet), overload)
            args = [_decode(a, env) for a in node["args"]]
            kwargs = {k: _decode(v, env) for k, v in node["kwargs"].items()}
            out = op(*args, **kwargs)
            # Kiln tensors are values in row-major order; strides never leak between ops.
            outs = [
                o.contiguous() if isinstance(o, torch.Tensor) else o
                for o in (out if isinstance(out, (tuple, list)) else [out])
            ]
            if len(outs) != len(node["outputs"]):
                raise ContractError(f"{node['name']}: {len(outs)} results, JSON lists {len(node['outputs'])}")
            for value, spec in zip(outs, node["outputs"]):
                if spec is None:
                    continue
                if value.dtype != DTYPES[spec["dtype"]] or list(value.shape) != spec["shape"]:
                    raise ContractError(
                        f"{node['name']}: computed {value.dtype}{list(value.shape)}, "
                        f"JSON says {spec['dtype']}{spec['shape']}"
                    )
            env[node["name"]] = outs
        results = [
            _decode(o, env).contiguous().clone()
            for o in g["outputs"]
            if isinstance(o, dict) and "ref" in o
        ]
        outputs: list[torch.Tensor] = []
        for r, layout in zip(results, self._layouts):
            outputs.append(apply_layout(r, layout, inputs, outputs))
        return outputs

    def set_output_layouts(self, layouts: list[dict[str, Any] | None]) -> None:
        if len(layouts) != self.num_outputs:
            raise ValueError(f"{self.num_outputs} outputs, got {len(layouts)} layouts")
        self._layouts = [None if d is None else _layout_from_dict(d) for d in layouts]


def _layout_from_dict(d: dict[str, Any]) -> OutputLayout:
    alias = d["alias_input"]
    return OutputLayout(
        tuple(d["size"]), tuple(d["stride"]), d["storage_offset"],
        physical_order(d["size"], d["stride"]) if d["dense"] else None,
        None if alias < 0 else alias, tuple(d["alias_input_stride"]), d["alias_input_offset"],
        None if d.get("alias_output", -1) < 0 else d["alias_output"],
        d.get("alias_output_offset", 0),
    )


def _decode(arg: Any, env: dict[str, list[Any]]) -> Any:
    if isinstance(arg, list):
        return [_decode(a, env) for a in arg]
    if isinstance(arg, dict):
        if "ref" in arg:
            return env[arg["ref"]][arg["index"]]
        if "dtype" in arg:
            return DTYPES[arg["dtype"]]
        if "float" in arg:
            return float(arg["float"])
    return arg


def as_module() -> types.ModuleType:
    """This file shaped like kiln._C: CompileError, compiler.*, runtime.*."""
    mod = types.ModuleType("kiln._C")
    mod.CompileError = CompileError
    mod.compiler = types.SimpleNamespace(compile=compile, supported_ops=supported_ops)
    mod.runtime = types.SimpleNamespace(Executable=Executable)
    mod.__file__ = __file__
    mod.IS_FAKE = True
    return mod


if __name__ == "__main__":
    sys.exit("import this module from the tests; run `pytest --kiln-fake-ext`")
