"""Calling compiled code: the boxed callables aot_autograd runs, a Kiln
partition standing in for a submodule of a split graph, and the output
layouts (kiln.layout) handed to the executable."""

from __future__ import annotations

import dataclasses

from typing import Any, Callable

import torch
import torch.fx

from kiln.errors import KilnError
from kiln.fx_serialize import SerializedGraph, executable_args


def boxed(fn: Callable[..., Any]) -> Callable[[list[Any]], Any]:
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(fn)


def output_filler(exe: Any, serialized: SerializedGraph) -> Callable[[list[Any]], list[Any]] | None:
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


def executable_layouts(exe: Any, serialized: SerializedGraph) -> list[dict[str, Any] | None]:
    """Eager's layout of each output the executable returns (literals it does not return)."""
    layouts = serialized.layouts
    if exe.num_outputs != len(layouts):
        # Literal outputs are not returned: renumber the earlier outputs that
        # aliased outputs refer to.
        returned = [i for i, ref in enumerate(serialized.output_is_ref) if ref]
        index = {graph_index: i for i, graph_index in enumerate(returned)}
        layouts = [layouts[i] for i in returned]
        layouts = [layout if layout is None or layout.alias_output is None
                   else dataclasses.replace(layout, alias_output=index[layout.alias_output])
                   for layout in layouts]
    return [None if layout is None else layout.to_dict() for layout in layouts]


def boxed_runner(exe: Any, serialized: SerializedGraph) -> Callable[[list[Any]], Any]:
    """A boxed callable running exe; its per-call path is one run() call where possible."""
    run = exe.run
    if serialized.symint_inputs or serialized.symint_values:
        # SymInt arguments that are sizes of tensor arguments are dropped (the
        # executable reads those shapes); the others are passed as 0-d int64s.
        dropped = frozenset(serialized.symint_inputs)
        values = frozenset(serialized.symint_values)
        run_all = run

        def run(args: list[Any]) -> Any:
            return run_all(executable_args(args, dropped, values))
    constants = serialized.constants
    fill = output_filler(exe, serialized)
    exe.set_output_layouts(executable_layouts(exe, serialized))
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


class KilnModule(torch.nn.Module):
    """Stands in for a fused partition submodule of a split graph."""

    def __init__(self, exe: Any, run: Callable[[list[Any]], Any], returns_tuple: bool):
        super().__init__()
        self.executable = exe
        self._run = run
        self.returns_tuple = returns_tuple

    def forward(self, *args: Any) -> Any:
        outs = self._run(list(args))
        return tuple(outs) if self.returns_tuple else outs[0]


def returns_tuple(gm: torch.fx.GraphModule) -> bool:
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    return isinstance(output.args[0], (tuple, list))
