"""The decomposition table Kiln gives aot_autograd.

Core ATen's table, plus Kiln's own decompositions of ops that are cheaper as
ops Kiln fuses (each costs nothing: it is what a hand-written kernel would
compute), minus the decompositions that are exact only without autograd.

aot_autograd applies decompositions *below* autograd: a decomposed forward op
still gets the backward formula of the op itself, which reads the op's extra
outputs. So a decomposition is safe in training graphs only if it returns
every output exactly as the op does; the others are used for inference
graphs only (no input requires grad, or grad mode is off).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import torch
import torch._decomp

aten = torch.ops.aten


def _split_with_sizes(x: torch.Tensor, split_sizes: Sequence[int], dim: int = 0) -> list:
    """Slices (views); the torch._decomp version goes through as_strided."""
    dim = dim % max(x.dim(), 1)
    pieces, start = [], 0
    for size in split_sizes:
        pieces.append(aten.slice.Tensor(x, dim, start, start + size))
        start += size
    return pieces


def _channel_view(t: torch.Tensor, rank: int) -> torch.Tensor:
    """A per-channel [C] tensor shaped to broadcast against [N, C, *spatial]."""
    return aten.view.default(t, [1, -1] + [1] * (rank - 2))


def _batch_norm_no_training(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Batch norm in eval mode: a per-channel scale and shift, which fuses into
    the producer's or consumer's kernel."""
    rank = x.dim()
    scale = aten.rsqrt.default(aten.add.Tensor(running_var, eps))
    if weight is not None:
        scale = aten.mul.Tensor(scale, weight)
    shift = aten.neg.default(aten.mul.Tensor(running_mean, scale))
    if bias is not None:
        shift = aten.add.Tensor(shift, bias)
    out = aten.add.Tensor(
        aten.mul.Tensor(x, _channel_view(scale, rank)), _channel_view(shift, rank)
    )
    empty = x.new_zeros((0,))
    return out, empty, empty


def _group_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    n: int,
    c: int,
    hxw: int,
    group: int,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """native_group_norm as per-group mean and variance (two passes, like
    ATen's), returning the op's mean and rstd exactly."""
    grouped = aten.view.default(x, [n, group, -1])
    mean = aten.mean.dim(grouped, [-1], True)
    centered = aten.sub.Tensor(grouped, mean)
    var = aten.mean.dim(aten.mul.Tensor(centered, centered), [-1], True)
    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))
    out = aten.view.default(aten.mul.Tensor(centered, rstd), [n, c, -1])
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, [1, c, 1]))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, [1, c, 1]))
    out = aten.view.default(out, list(x.shape))
    return out, aten.view.default(mean, [n, group]), aten.view.default(rstd, [n, group])


# Exact in every output: safe under autograd too.
_KILN_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    aten.split_with_sizes.default: _split_with_sizes,
    aten.native_group_norm.default: _group_norm,
}

# Inference graphs only.
_KILN_INFERENCE_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    # Returns empty saved statistics, which the op's backward would read.
    aten._native_batch_norm_legit_no_training.default: _batch_norm_no_training,
}

# Core ATen decompositions that are exact only for inference. The CPU
# flash-attention decomposition (meant for torch.export) returns the attention
# probabilities where the op returns logsumexp, and
# _scaled_dot_product_flash_attention_for_cpu_backward then computes NaN or
# wrong gradients from them. Inductor excludes it for the same reason.
INFERENCE_ONLY_CORE_DECOMPOSITIONS = (
    aten._scaled_dot_product_flash_attention_for_cpu.default,
)


@functools.cache
def decomposition_table(training: bool) -> dict[Any, Callable[..., Any]]:
    """The table for a graph that needs autograd (`training`) or not."""
    table = dict(torch._decomp.core_aten_decompositions())
    table.update(_KILN_DECOMPOSITIONS)
    if training:
        for op in INFERENCE_ONLY_CORE_DECOMPOSITIONS:
            table.pop(op, None)
    else:
        table.update(_KILN_INFERENCE_DECOMPOSITIONS)
    return table


def needs_autograd(gm: torch.nn.Module, example_inputs: Sequence[Any]) -> bool:
    """Will aot_autograd trace a joint forward/backward graph? It does when grad
    mode is on and an input or a parameter of the module requires grad."""
    if not torch.is_grad_enabled():
        return False
    if any(isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs):
        return True
    return any(p.requires_grad for p in gm.parameters())
