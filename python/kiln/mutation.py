"""Graph inputs that a graph overwrites.

With keep_inference_input_mutations, aot_autograd leaves a functionalized
in-place op on a graph input (``x.add_(1)``, an optimizer's parameter
update, batch norm's running statistics) in the graph as a trailing
``aten.copy_(input, new_value)``, and expects the compiled graph to perform
it. Kiln lifts each such copy into an extra graph output, the input's new
value, recorded as an input write ("input_writes" in the graph JSON). The
compiler then computes that value directly in the input's own buffer where
its kernels allow it (kiln-write-inputs-in-place); the caller copies only
the values that were not (with_input_writes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.fx

INPUT_WRITES_META = "kiln_input_writes"


@dataclass(frozen=True)
class InputWrites:
    """Graph outputs from `first_output` on are the new values of `inputs`."""

    inputs: tuple[int, ...]
    first_output: int

    def pairs(self) -> list[tuple[int, int]]:
        """(output, input) per write."""
        return [(self.first_output + k, i) for k, i in enumerate(self.inputs)]


def lift_input_writes(gm: torch.fx.GraphModule) -> InputWrites | None:
    """Turn gm's `copy_(placeholder, value)` nodes into extra outputs (see the
    module docstring); returns what they write, or None if there are none.

    Only copies whose result is unused or returned, and whose value has the
    input's shape and dtype, are lifted (what functionalization emits); any
    other copy_ stays an op of the graph."""
    placeholders = {n: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    lifted: list[tuple[int, torch.fx.Node]] = []
    for node in list(gm.graph.nodes):
        if not (node.op == "call_function" and node.target is torch.ops.aten.copy_.default
                and len(node.args) == 2 and not node.kwargs
                and all(user is output for user in node.users)):
            continue
        target, value = node.args
        if target not in placeholders or not isinstance(value, torch.fx.Node):
            continue
        old, new = target.meta.get("val"), value.meta.get("val")
        if not (isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor)
                and old.dtype == new.dtype and old.shape == new.shape):
            continue
        if any(i == placeholders[target] for i, _ in lifted):
            continue  # written twice: the later copy stays an op
        lifted.append((placeholders[target], value))
        # An output that is the copy's result (the mutated input, returned)
        # is the input itself, which holds the new value once it is stored.
        node.replace_all_uses_with(target)
        gm.graph.erase_node(node)
    if not lifted:
        return None
    results = output.args[0]
    as_list = isinstance(results, list)
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    writes = InputWrites(tuple(i for i, _ in lifted), len(results))
    values = [value for _, value in lifted]
    output.args = ((results + values) if as_list else tuple(results + values),)
    gm.graph.lint()
    gm.recompile()
    gm.meta[INPUT_WRITES_META] = writes
    return writes


def with_input_writes(fn: Callable[[list[Any]], Any], writes: InputWrites | None
                      ) -> Callable[[list[Any]], Any]:
    """fn (boxed, compiled from a graph lift_input_writes rewrote) writing
    the new values into the caller's inputs and returning the graph's own
    outputs. A value the kernels computed in the input's storage needs no
    copy."""
    if writes is None:
        return fn
    inputs, first = writes.inputs, writes.first_output

    def run(args: list[Any]) -> Any:
        targets = [args[i] for i in inputs]  # fn may clear args (boxed calls)
        outs = fn(args)
        for target, value in zip(targets, outs[first:]):
            if value.data_ptr() != target.data_ptr() or value.numel() != target.numel():
                with torch.no_grad():  # only values not written in place cost a copy
                    target.copy_(value)
        return outs[:first]

    run._boxed_call = True  # type: ignore[attr-defined]
    return run
