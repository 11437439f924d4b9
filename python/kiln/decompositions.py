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
    if not x.is_contiguous():
        x = aten.clone.default(x, memory_format=torch.contiguous_format)
    grouped = aten.view.default(x, [n, group, (c // group) * hxw])  # no -1: n may be 0
    mean = aten.mean.dim(grouped, [-1], True)
    centered = aten.sub.Tensor(grouped, mean)
    var = aten.mean.dim(aten.mul.Tensor(centered, centered), [-1], True)
    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))
    out = aten.view.default(aten.mul.Tensor(centered, rstd), [n, c, hxw])
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, [1, c, 1]))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, [1, c, 1]))
    out = aten.view.default(out, list(x.shape))
    return out, aten.view.default(mean, [n, group]), aten.view.default(rstd, [n, group])


def _along(values: torch.Tensor, dim: int, rank: int) -> torch.Tensor:
    """A 1-D tensor viewed as rank-`rank`, its elements along `dim`."""
    shape = [1] * rank
    shape[dim] = values.shape[0]
    return aten.view.default(values, shape)


def _iota(count: int, device: torch.device) -> torch.Tensor:
    return aten.arange.default(count, dtype=torch.int64, device=device)


def _spatial_list(values: Sequence[int], n: int) -> list[int]:
    values = list(values)
    return values * n if len(values) == 1 else values


def _convolution(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Any:
    """1-, 2- and 3-D convolution as im2col and a matrix product.

    One gather (kiln_graph.index) reads the padded input straight into the
    [N, out..., C, kernel...] layout, so the rows of the product are output
    positions and its columns the C*kernel reduction, and the product is
    Kiln's vectorized matmul with the weight read transposed in place (as for
    nn.Linear). 1x1 stride-1 convolutions skip the gather. Depthwise
    convolutions multiply and sum instead (one channel per group leaves
    nothing to multiply as a matrix), other groups use a batched product.
    Transposed convolutions are not decomposed (NotImplemented keeps the op).
    """
    n = weight.dim() - 2
    if transposed or n < 1 or x.dim() != n + 2:
        return NotImplemented
    stride, padding, dilation = (_spatial_list(v, n) for v in (stride, padding, dilation))
    batch, channels = x.shape[0], x.shape[1]
    out_channels, kernel = weight.shape[0], list(weight.shape[2:])
    group_channels, group_out = channels // groups, out_channels // groups
    if any(padding):
        pad: list[int] = []
        for p in reversed(padding):
            pad += [p, p]
        x = aten.constant_pad_nd.default(x, pad, 0.0)
    size = list(x.shape[2:])
    out = [(size[d] - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1 for d in range(n)]
    positions = 1
    for o in out:
        positions *= o
    taps = 1
    for k in kernel:
        taps *= k

    # cols[b, o_1..o_n, c, k_1..k_n] = x[b, c, o_d * stride_d + k_d * dilation_d ...]
    rank = 2 + 2 * n

    def along(values: torch.Tensor, dim: int) -> torch.Tensor:
        return _along(values, dim, rank)

    def iota(count: int) -> torch.Tensor:
        return _iota(count, x.device)

    if all(k == 1 for k in kernel) and all(s == 1 for s in stride):
        cols = aten.clone.default(aten.permute.default(x, [0, *range(2, 2 + n), 1]),
                                  memory_format=torch.contiguous_format)  # [N, out..., C]
    else:
        indices = [along(iota(batch), 0), along(iota(channels), 1 + n)]
        for d in range(n):
            start = aten.mul.Tensor(along(iota(out[d]), 1 + d), stride[d])
            offset = aten.mul.Tensor(along(iota(kernel[d]), 2 + n + d), dilation[d])
            indices.append(aten.add.Tensor(start, offset))
        cols = aten.index.Tensor(x, indices)  # [N, out..., C, kernel...]
    rows = batch * positions

    if groups == 1:
        matrix = aten.view.default(cols, [rows, channels * taps])
        w = aten.view.default(weight, [out_channels, channels * taps])
        result = aten.mm.default(matrix, aten.t.default(w))  # [rows, O]
    elif group_channels == 1 and group_out == 1:  # depthwise
        grouped = aten.view.default(cols, [rows, channels, taps])
        w = aten.view.default(weight, [channels, taps])
        result = aten.sum.dim_IntList(aten.mul.Tensor(grouped, w), [2])
    else:
        grouped = aten.view.default(cols, [rows, groups, group_channels * taps])
        grouped = aten.clone.default(aten.permute.default(grouped, [1, 0, 2]),
                                     memory_format=torch.contiguous_format)
        w = aten.view.default(weight, [groups, group_out, group_channels * taps])
        result = aten.bmm.default(grouped, aten.permute.default(w, [0, 2, 1]))  # [G, rows, Og]
        result = aten.clone.default(aten.permute.default(result, [1, 0, 2]),
                                    memory_format=torch.contiguous_format)
    result = aten.view.default(result, [batch, *out, out_channels])
    if bias is not None:
        result = aten.add.Tensor(result, bias)
    # Contiguous, as ATen's result is: later views and autograd rely on it.
    return aten.clone.default(aten.permute.default(result, [0, 1 + n, *range(1, 1 + n)]),
                              memory_format=torch.contiguous_format)


def _pool_output_size(size: int, kernel: int, stride: int, pad: int, dilation: int,
                      ceil_mode: bool) -> int:
    """ATen's pooling_output_shape: with ceil_mode, the last window must start
    inside the input or its left padding."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = span // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _pool_windows(x: torch.Tensor, kernel, stride, padding, dilation, ceil_mode, pad_value):
    """The pooling windows of x [N, C, *spatial] as [N, C, *out, *kernel],
    padded with pad_value (one gather), with the output sizes and, per
    spatial dim, the window starts (unpadded coordinates, int64 [out])."""
    n = x.dim() - 2
    kernel = _spatial_list(kernel, n)
    stride = _spatial_list(stride, n) if len(stride) else kernel
    padding, dilation = _spatial_list(padding, n), _spatial_list(dilation, n)
    size = list(x.shape[2:])
    out = [_pool_output_size(size[d], kernel[d], stride[d], padding[d], dilation[d], ceil_mode)
           for d in range(n)]
    # Taps past the right padding only ever read padding (e.g. a 320-wide
    # average pool over 4 pixels, as in EfficientNet): gather no more than
    # reach it. Divisors still use the kernel as given.
    taps = [min(kernel[d], (size[d] + 2 * padding[d] - 1) // dilation[d] + 1) for d in range(n)]
    # Pad enough on the right for the last window (ceil_mode may reach past).
    right = [max(padding[d], (out[d] - 1) * stride[d] - padding[d] + (taps[d] - 1) * dilation[d]
                 - (size[d] - 1)) for d in range(n)]
    pad: list[int] = []
    for d in reversed(range(n)):
        pad += [padding[d], right[d]]
    padded = aten.constant_pad_nd.default(x, pad, pad_value) if any(pad) else x
    rank = 2 * n  # index tensors cover the spatial dims: [out..., kernel...]

    def along(values: torch.Tensor, dim: int) -> torch.Tensor:
        return _along(values, dim, rank)

    def iota(count: int) -> torch.Tensor:
        return _iota(count, x.device)

    indices: list[Any] = [None, None]
    starts = []
    for d in range(n):
        start = aten.mul.Tensor(iota(out[d]), stride[d])  # padded coordinates
        starts.append(aten.sub.Tensor(start, padding[d]))
        offset = aten.mul.Tensor(along(iota(taps[d]), n + d), dilation[d])
        indices.append(aten.add.Tensor(along(start, d), offset))
    windows = aten.index.Tensor(padded, indices)  # [N, C, out..., taps...]
    return windows, out, kernel, taps, stride, padding, starts


def _max_pool2d_with_indices(x, kernel_size, stride=(), padding=(0,), dilation=(1,),
                             ceil_mode=False):
    """Max over each window (padding never wins: it is -inf), and the index of
    the first maximum (or first NaN, which max propagates) in the input's
    flattened spatial plane, as ATen returns it."""
    if not x.dtype.is_floating_point or x.dim() != 4:
        return NotImplemented
    windows, out, _, kernel, stride, padding, starts = _pool_windows(
        x, kernel_size, stride, padding, dilation, ceil_mode, float("-inf"))
    taps = [2 + 2, 2 + 3]
    values = aten.amax.default(windows, taps, True)
    hit = aten.logical_or.default(aten.eq.Tensor(windows, values), aten.ne.Tensor(windows, windows))
    dil = _spatial_list(dilation, 2)
    width = x.shape[3]
    # Unpadded input row and column of every window element, [1, 1, out..., taps...].
    rows = aten.add.Tensor(_along(starts[0], 2, 6),
                           aten.mul.Tensor(_along(_iota(kernel[0], x.device), 4, 6), dil[0]))
    cols = aten.add.Tensor(_along(starts[1], 3, 6),
                           aten.mul.Tensor(_along(_iota(kernel[1], x.device), 5, 6), dil[1]))
    flat = aten.add.Tensor(aten.mul.Tensor(rows, width), cols)
    never = x.shape[2] * width  # larger than any index
    candidates = aten.where.self(hit, flat, aten.scalar_tensor.default(never, dtype=torch.int64))
    index = aten.amin.default(candidates, taps)
    return aten.view.default(values, list(index.shape)), index


def _avg_pool2d(x, kernel_size, stride=(), padding=(0,), ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    """Sum over each window (zero padded) divided by ATen's divisor: the window
    clipped to the padded input, or to the input itself without
    count_include_pad, or divisor_override."""
    if not x.dtype.is_floating_point or x.dim() != 4:
        return NotImplemented
    windows, out, kernel, _, stride, padding, starts = _pool_windows(
        x, kernel_size, stride, padding, (1,), ceil_mode, 0.0)
    total = aten.sum.dim_IntList(windows, [4, 5])
    if divisor_override:
        return aten.div.Tensor(total, divisor_override)
    counts = []
    for d in range(2):
        size = x.shape[2 + d]
        start = starts[d]
        end = aten.clamp_max.default(aten.add.Tensor(start, kernel[d]), size + padding[d])
        if not count_include_pad:
            start = aten.clamp_min.default(start, 0)
            end = aten.clamp_max.default(end, size)
        counts.append(aten.sub.Tensor(end, start))
    divisor = aten.mul.Tensor(aten.view.default(counts[0], [out[0], 1]),
                              aten.view.default(counts[1], [1, out[1]]))
    return aten.div.Tensor(total, aten._to_copy.default(divisor, dtype=x.dtype))


# Exact in every output: safe under autograd too.
_KILN_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    aten.split_with_sizes.default: _split_with_sizes,
    aten.native_group_norm.default: _group_norm,
    aten.convolution.default: _convolution,
    aten.max_pool2d_with_indices.default: _max_pool2d_with_indices,
    aten.avg_pool2d.default: _avg_pool2d,
    # PyTorch's reference: abs, pow and sum reductions (e.g. weight_norm).
    aten.linalg_vector_norm.default:
        torch._decomp.decomposition_table[aten.linalg_vector_norm.default],
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
