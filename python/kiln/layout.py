"""Output layouts: Kiln's results look in memory exactly as eager's would.

Kiln computes values; where they live is a separate contract. Eager ops,
autograd and aot_autograd's runtime wrappers read more than values from a
graph output: ``as_strided`` (and the alias regeneration that falls back to
it) uses its strides and storage offset, and backward kernels such as the
CPU flash-attention backward assume the layouts their forward produced for
the tensors it saved. An output whose values are right but whose strides are
not is therefore a wrong answer one op later; this is how training with an
eager op between two Kiln partitions gave NaN gradients.

So every graph output carries the layout its FX ``meta["val"]`` promises:

* A dense layout that is a permutation of row-major (a transposed view, the
  heads of an attention split) is computed by Kiln directly in storage order:
  the serializer appends ``permute(value, physical_order)`` to the graph, and
  the runtime returns that buffer viewed with eager's strides, no copy. When
  the permute undoes the view that made the value (the usual case), the
  compiler folds both away and the output is a view of the producer's buffer.
* An output that views a graph input's storage is that input, viewed with
  eager's strides and offset, whenever the real input is laid out as traced.
* An output that shares storage with an earlier output (``y`` and ``y[1]``
  both returned) is a view of that output when the earlier one's elements
  cover its own, so that a write through one shows in the other as in eager.
* Anything else (gaps, broadcast strides, a storage offset that Kiln's buffer
  does not have) is copied into storage laid out exactly as eager's.

The runtime bridge (python/src/RuntimeBindings.cpp) applies these per call in
C++; apply_layout below is the same rule in Python, the reference for tests
and for the fake extension.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import torch
import torch.fx
from torch.multiprocessing.reductions import StorageWeakRef

from kiln.errors import SerializeError


@dataclass(frozen=True)
class OutputLayout:
    """Where eager puts one graph output, from its FX meta value."""

    size: tuple[int, ...]
    stride: tuple[int, ...]
    storage_offset: int
    # Dims from outermost to innermost in memory when the layout is dense (no
    # gaps, no overlap); None otherwise.
    physical_order: tuple[int, ...] | None
    # The graph input whose storage the output views, with that input's
    # traced strides and offset; None when it views no input.
    alias_input: int | None = None
    alias_input_stride: tuple[int, ...] = ()
    alias_input_offset: int = 0
    # An earlier output of the graph whose storage this one shares in eager
    # (y and y[1] both returned) and whose elements cover this one's, with
    # that output's traced offset: this output is a view of it.
    alias_output: int | None = None
    alias_output_offset: int = 0
    # Sizes and strides are SymInts (dynamic shapes): only a dense layout is
    # kept, by its order; the runtime derives strides from each run's sizes.
    symbolic: bool = False

    @property
    def is_row_major(self) -> bool:
        return self.physical_order == tuple(range(len(self.size)))

    @property
    def physical_shape(self) -> list[int]:
        """The shape Kiln computes the output in: storage order when dense."""
        if self.physical_order is None:
            return list(self.size)
        return [self.size[d] for d in self.physical_order]

    def to_dict(self) -> dict[str, Any]:
        """The form kiln._C.runtime.Executable.set_output_layouts takes."""
        if self.symbolic:
            return {"size": [], "stride": [], "storage_offset": 0, "dense": True,
                    "alias_input": -1, "alias_input_stride": [], "alias_input_offset": 0,
                    "order": list(self.physical_order or ())}
        return {
            "size": list(self.size),
            "stride": list(self.stride),
            "storage_offset": self.storage_offset,
            "dense": self.physical_order is not None,
            "alias_input": -1 if self.alias_input is None else self.alias_input,
            "alias_input_stride": list(self.alias_input_stride),
            "alias_input_offset": self.alias_input_offset,
            "alias_output": -1 if self.alias_output is None else self.alias_output,
            "alias_output_offset": self.alias_output_offset,
        }


def physical_order(size: Sequence[int], stride: Sequence[int]) -> tuple[int, ...] | None:
    """The dims from outer to inner in memory when (size, stride) is dense, else None.

    Size-1 dims may have any stride; they keep their place relative to the
    dims around them in the order (stable sort), which leaves a row-major
    layout's order the identity.
    """
    rank = len(size)
    if any(s == 0 for s in size):
        return tuple(range(rank))  # nothing in memory: any order is dense
    big = sorted((d for d in range(rank) if size[d] != 1), key=lambda d: -stride[d])
    expected = 1
    for d in reversed(big):
        if stride[d] != expected:
            return None
        expected *= size[d]
    order: list[int] = []
    remaining = iter(big)
    for d in range(rank):
        order.append(d if size[d] == 1 else next(remaining))
    return tuple(order)


def storage_extent(size: Sequence[int], stride: Sequence[int]) -> int:
    """Elements a view needs past its storage offset."""
    if any(s == 0 for s in size):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(size, stride))


def _collapsible_overlap_only(size: Sequence[int], stride: Sequence[int]) -> bool:
    """Does the layout overlap itself only through broadcast (stride 0) dims?

    Such a layout can be filled by one copy once those dims are narrowed to
    one element; any other self-overlap (unfold-like windows) cannot.
    """
    dims = sorted((d for d in range(len(size)) if size[d] > 1 and stride[d] != 0),
                  key=lambda d: stride[d])
    span = 1
    for d in dims:
        if stride[d] < span:
            return False
        span = stride[d] * (size[d] - 1) + span
    return True


def is_reproducible(size: Sequence[int], stride: Sequence[int]) -> bool:
    """Can Kiln return a tensor of this layout? Not when distinct indices
    share memory other than by broadcasting (e.g. empty_strided((5, 5), (2, 1)))."""
    return physical_order(size, stride) is not None or _collapsible_overlap_only(size, stride)


def output_layouts(gm: torch.fx.GraphModule) -> list[OutputLayout | None]:
    """One layout per output of gm's output node (None for a non-tensor output).

    Raises SerializeError for a layout Kiln cannot reproduce.
    """
    inputs: dict[StorageWeakRef, tuple[int, torch.Tensor]] = {}
    output_node = None
    index = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value = node.meta.get("val")
            if isinstance(value, torch.Tensor):
                inputs.setdefault(StorageWeakRef(value.untyped_storage()), (index, value))
            index += 1
        elif node.op == "output":
            output_node = node
    if output_node is None:
        raise SerializeError("graph has no output node")
    result = output_node.args[0]
    results = result if isinstance(result, (tuple, list)) else [result]
    layouts: list[OutputLayout | None] = []
    earlier: dict[StorageWeakRef, list[tuple[int, torch.Tensor]]] = {}
    for i, arg in enumerate(results):
        value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
        if not isinstance(value, torch.Tensor):
            layouts.append(None)
            continue
        layout = _layout_of(value, inputs, f"output {i} ({arg})")
        if layout is not None and not layout.symbolic and layout.alias_input is None:
            key = StorageWeakRef(value.untyped_storage())
            base = next((k for k, v in earlier.get(key, []) if _covers(v, value)), None)
            if base is not None:
                layout = dataclasses.replace(layout, alias_output=base,
                                             alias_output_offset=int(layouts[base].storage_offset))
            elif layout.physical_order is not None and value.numel() > 0:
                # Only a dense output can be a base: its storage holds every
                # element in its span (a copied layout with gaps does not).
                earlier.setdefault(key, []).append((i, value))
        layouts.append(layout)
    return layouts


def _covers(base: torch.Tensor, view: torch.Tensor) -> bool:
    """Does the dense output base hold every storage element of view (the
    same dtype, view's span within base's)?"""
    if view.numel() == 0 or view.dtype != base.dtype:
        return False
    start, extent = base.storage_offset(), storage_extent(base.shape, base.stride())
    first, last = view.storage_offset(), view.storage_offset() + storage_extent(
        view.shape, view.stride())
    return start <= first and last <= start + extent


def _layout_of(value: torch.Tensor, inputs: dict[StorageWeakRef, tuple[int, torch.Tensor]],
               what: str) -> OutputLayout | None:
    size, stride = tuple(value.shape), tuple(value.stride())
    if any(type(v) is not int for v in (*size, *stride, value.storage_offset())):
        # Symbolic sizes: Kiln returns row-major buffers of the run's sizes,
        # in storage order when the layout is a dense permutation.
        from kiln.symbolic import dense_order

        order = dense_order(value)
        if order is None:
            raise SerializeError(f"{what} has a symbolic layout that is not dense "
                                 f"(size={list(size)}, stride={list(stride)}, offset "
                                 f"{value.storage_offset()}); Kiln returns symbolic outputs "
                                 "densely laid out")
        if order == tuple(range(len(size))):
            return None  # row-major: the buffer as it is
        return OutputLayout(size, stride, 0, order, symbolic=True)
    offset = int(value.storage_offset())
    order = physical_order(size, stride)
    if not is_reproducible(size, stride):
        raise SerializeError(
            f"{what} has a self-overlapping layout size={list(size)} stride={list(stride)} "
            "that Kiln cannot reproduce")
    layout = OutputLayout(size, stride, offset, order)
    alias = inputs.get(StorageWeakRef(value.untyped_storage()))
    if alias is not None:
        input_index, input_value = alias
        layout = OutputLayout(size, stride, offset, order, input_index,
                              tuple(input_value.stride()), int(input_value.storage_offset()))
    return layout


def apply_layout(result: torch.Tensor, layout: OutputLayout | None,
                 args: Sequence[Any], earlier: Sequence[Any] = ()) -> torch.Tensor:
    """Reference for the runtime bridge: Kiln's result (in physical_shape,
    row-major) as the tensor eager would have returned; `earlier` holds the
    outputs before it, as returned."""
    if layout is None:
        return result
    if layout.alias_output is not None:
        base = earlier[layout.alias_output]
        return base.as_strided(layout.size, layout.stride, base.storage_offset()
                               + layout.storage_offset - layout.alias_output_offset)
    if layout.symbolic:  # dense, in storage order: strides from this run's sizes
        order = layout.physical_order or ()
        physical = list(result.shape)
        row_major = [1] * len(physical)
        for i in range(len(physical) - 2, -1, -1):
            row_major[i] = row_major[i + 1] * max(physical[i + 1], 1)
        sizes, strides = [0] * len(order), [0] * len(order)
        for i, d in enumerate(order):
            sizes[d], strides[d] = physical[i], row_major[i]
        return result.as_strided(sizes, strides, result.storage_offset())
    size, stride, offset = layout.size, layout.stride, layout.storage_offset
    if layout.alias_input is not None:
        base = args[layout.alias_input]
        if tuple(base.stride()) == layout.alias_input_stride:
            return base.as_strided(size, stride, base.storage_offset() + offset
                                   - layout.alias_input_offset)
    if layout.physical_order is not None:
        if result.storage_offset() == offset:
            return result.as_strided(size, stride, offset)
        result = result.as_strided(size, stride, result.storage_offset())
    storage = torch.empty(offset + storage_extent(size, stride), dtype=result.dtype)
    target = storage.as_strided(size, stride, offset)
    source = result
    for d in range(len(size)):
        if stride[d] == 0 and size[d] > 1:  # broadcast: one write per element in memory
            target, source = target.narrow(d, 0, 1), source.narrow(d, 0, 1)
    target.copy_(source)
    return storage.as_strided(size, stride, offset)
