"""The eager device's `_foreach_` kernels: an optimizer's multi-tensor ops
(`_foreach_mul_`, `_foreach_addcdiv_`...) as one Kiln kernel each over all the
tensors of their lists, as CUDA runs them as one launch.

Which overloads: the functional and in-place forms of every `_foreach_` op
whose per-tensor op (`mul` for `_foreach_mul_`) is pointwise and compiled by
Kiln. How: kiln.eager_kernels traces `per_tensor(op)`, the per-tensor op at
every position of the lists, into one graph; the C++ side writes the results
into the written list's tensors.
"""

from __future__ import annotations

from typing import Any

import torch

_FOREACH = "_foreach_"


def base_op(name: str) -> Any:
    """The per-tensor op packet of a `_foreach_` op (`aten.mul` for
    `_foreach_mul_`), or None."""
    if not name.startswith(_FOREACH):
        return None
    return getattr(torch.ops.aten, unprefixed(name).rstrip("_"), None)


def unprefixed(name: str) -> str:
    """`mul_` for aten::_foreach_mul_ (or aten::mul_)."""
    name = name.split("::")[-1]
    return name[len(_FOREACH):] if name.startswith(_FOREACH) else name


def _per_tensor_overload(packet: Any, overload: str) -> Any:
    """The per-tensor overload a `_foreach_` overload is named after
    (`mul.Scalar` for `_foreach_mul_.Scalar`), else its Tensor or default one."""
    for name in (overload, "Tensor", "default"):
        if name in packet.overloads():
            return getattr(packet, name)
    return getattr(packet, packet.overloads()[0])


def kernel_ops(candidates: set[str]) -> list[tuple[str, str, str, str, bool]]:
    """The `_foreach_` forms of the pointwise ops Kiln compiles: the
    functional (`_foreach_mul.Scalar`) and in-place (`_foreach_mul_.Scalar`)
    overloads, each one kernel over all the lists' tensors, compiled from the
    per-tensor op (per_tensor). An optimizer step is then a few
    launches instead of a few per parameter."""
    ops = []
    for schema in torch._C._jit_get_all_schemas():
        name = schema.name.split("::")[-1]
        base = base_op(name)
        overload = schema.overload_name or "default"
        if (not schema.name.startswith("aten::") or base is None or name.rstrip("_")[len(_FOREACH):]
                not in candidates or torch.Tag.pointwise not in _per_tensor_overload(base, overload).tags
                or any(a.is_out for a in schema.arguments)
                # `Tensor scalars` holds one number per tensor: not a tensor operand.
                or any(a.name == "scalars" and str(a.type) == "Tensor" for a in schema.arguments)):
            continue
        functional = f"aten::{name.rstrip('_')}"
        if not hasattr(getattr(torch.ops.aten, name.rstrip("_")), overload):
            continue
        ops.append((f"aten::{name}", overload, functional, overload, True))
    return ops


def per_tensor(op: Any) -> Any:
    """The function a `_foreach_` op computes, by its per-tensor op: element
    i of every list argument (tensors, or numbers), the other arguments as
    they are. An argument goes to the per-tensor op's argument at its
    position, by name where that one is keyword-only (`addcdiv`'s value)."""
    packet = base_op(op._schema.name.split("::")[-1])
    base_args = _per_tensor_overload(packet, op._overloadname)._schema.arguments

    def apply(values: list[Any]) -> list[torch.Tensor]:
        count = next(len(v) for v in values if isinstance(v, (list, tuple)))
        results = []
        for i in range(count):
            positional, keywords = [], {}
            for k, (argument, value) in enumerate(zip(op._schema.arguments, values)):
                value = value[i] if isinstance(value, (list, tuple)) else value
                if argument.kwarg_only:
                    keywords[argument.name] = value
                elif k < len(base_args) and base_args[k].kwarg_only:
                    keywords[base_args[k].name] = value
                else:
                    positional.append(value)
            results.append(packet(*positional, **keywords))
        return results

    return apply
