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
import math
from typing import Any, Callable, Sequence

import torch
import torch._decomp
from torch._inductor import inductor_prims  # registers prims.fma, which Dynamo emits

from kiln import randomness

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


# Kiln's direct convolution vectorizes along output rows: narrower rows
# would leave most vector lanes idle, and they keep im2col and the matmul,
# whose vectors run along output channels.
_DIRECT_CONVOLUTION_MIN_WIDTH = 8


# Grouped convolutions run directly when depthwise (one input channel per
# group: nothing for a matmul to reduce) or with kernels of at least this many
# taps (the im2col buffer would hold every input element that many times, as
# wav2vec2's 128-tap positional convolution). Other groups (a UNet's 3x3
# convolutions in 4 groups) are faster as one batched matmul over the groups:
# 1.98 against 2.34 ms for the zoo's UNet block.
_DIRECT_GROUPED_MIN_TAPS = 16


def _direct_convolution(x, weight, stride, padding, dilation, groups) -> bool:
    """Is this (non-transposed) convolution left to kiln_graph.conv2d? 1-D
    and 2-D, floating point, output rows of at least 8; one group, depthwise,
    or grouped with a long kernel."""
    n = weight.dim() - 2
    if n not in (1, 2) or x.dtype not in (torch.float32, torch.float64):
        return False
    taps = math.prod(weight.shape[2:])
    if groups != 1 and weight.shape[1] != 1 and taps < _DIRECT_GROUPED_MIN_TAPS:
        return False
    if x.numel() == 0 or weight.numel() == 0:
        return False
    width = x.shape[-1] + 2 * padding[-1] - dilation[-1] * (weight.shape[-1] - 1) - 1
    return width >= 0 and width // stride[-1] + 1 >= _DIRECT_CONVOLUTION_MIN_WIDTH


def _im2col(x: torch.Tensor, kernel: list[int], stride: list[int], padding: list[int],
            dilation: list[int]) -> tuple[torch.Tensor, list[int]]:
    """The columns of a convolution's matrix product and its output size:
    cols[b, o_1..o_n, c, k_1..k_n] = padded x[b, c, o_d * stride_d + k_d * dilation_d ...],
    read by one gather (kiln_graph.index); 1x1 stride-1 kernels need only a
    permute."""
    n = len(kernel)
    batch, channels = x.shape[0], x.shape[1]
    if any(padding):
        pad: list[int] = []
        for p in reversed(padding):
            pad += [p, p]
        x = aten.constant_pad_nd.default(x, pad, 0.0)
    size = list(x.shape[2:])
    out = [(size[d] - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1 for d in range(n)]
    if all(k == 1 for k in kernel) and all(s == 1 for s in stride):
        cols = aten.clone.default(aten.permute.default(x, [0, *range(2, 2 + n), 1]),
                                  memory_format=torch.contiguous_format)  # [N, out..., C]
        return cols, out
    rank = 2 + 2 * n
    indices = [_along(_iota(batch, x.device), 0, rank), _along(_iota(channels, x.device), 1 + n, rank)]
    for d in range(n):
        start = aten.mul.Tensor(_along(_iota(out[d], x.device), 1 + d, rank), stride[d])
        offset = aten.mul.Tensor(_along(_iota(kernel[d], x.device), 2 + n + d, rank), dilation[d])
        indices.append(aten.add.Tensor(start, offset))
    return aten.index.Tensor(x, indices), out


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
    """1-, 2- and 3-D convolution as im2col and a matrix product, except the
    ones Kiln computes directly (_direct_convolution).

    One gather (kiln_graph.index) reads the padded input straight into the
    [N, out..., C, kernel...] layout, so the rows of the product are output
    positions and its columns the C*kernel reduction, and the product is
    Kiln's vectorized matmul with the weight read transposed in place (as for
    nn.Linear). 1x1 stride-1 convolutions skip the gather. Depthwise
    convolutions multiply and sum instead (one channel per group leaves
    nothing to multiply as a matrix), other groups use a batched product.
    (Grouped 1-D and 2-D convolutions with wide enough outputs are direct.)
    Transposed convolutions become one of these (_transposed_convolution).
    """
    n = weight.dim() - 2
    if n < 1 or x.dim() != n + 2:
        return NotImplemented
    if transposed:
        return _transposed_convolution(x, weight, bias, stride, padding, dilation,
                                       output_padding, groups)
    stride, padding, dilation = (_spatial_list(v, n) for v in (stride, padding, dilation))
    if _direct_convolution(x, weight, stride, padding, dilation, groups):
        return NotImplemented  # the importer's kiln_graph.conv2d
    batch, channels = x.shape[0], x.shape[1]
    out_channels, kernel = weight.shape[0], list(weight.shape[2:])
    group_channels, group_out = channels // groups, out_channels // groups
    cols, out = _im2col(x, kernel, stride, padding, dilation)  # [N, out..., C, kernel...]
    positions, taps = math.prod(out), math.prod(kernel)
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


def _transposed_convolution(x, weight, bias, stride, padding, dilation, output_padding, groups):
    """The gradient of a convolution as a convolution: the input with
    stride - 1 zeros between its elements, padded by dilation * (k - 1) -
    padding (plus output_padding on the right; negative pads crop), convolved
    at stride 1 with the kernel flipped and its in/out channels swapped per
    group."""
    n = weight.dim() - 2
    stride, padding, dilation, output_padding = (
        _spatial_list(v, n) for v in (stride, padding, dilation, output_padding))
    kernel = list(weight.shape[2:])
    for d in range(n):
        dim = 2 + d
        if stride[d] > 1:  # [.., L, ..] -> [.., L, s, ..] zero-padded -> [.., L * s, ..]
            size = x.shape[dim]
            spread = aten.unsqueeze.default(x, dim + 1)
            pad = [0, 0] * (x.dim() - dim - 1) + [0, stride[d] - 1]
            spread = aten.constant_pad_nd.default(spread, pad, 0.0)
            shape = list(x.shape)
            shape[dim] = size * stride[d]
            x = aten.slice.Tensor(aten.view.default(spread, shape), dim, 0,
                                  (size - 1) * stride[d] + 1)
        before = dilation[d] * (kernel[d] - 1) - padding[d]
        after = before + output_padding[d]
        if before < 0 or after < 0:  # crop first, then pad what remains positive
            x = aten.slice.Tensor(x, dim, max(-before, 0), x.shape[dim] - max(-after, 0))
        if before > 0 or after > 0:
            pad = [0, 0] * (x.dim() - dim - 1) + [max(before, 0), max(after, 0)]
            x = aten.constant_pad_nd.default(x, pad, 0.0)
    in_channels, group_out = weight.shape[0], weight.shape[1]
    grouped = aten.view.default(weight, [groups, in_channels // groups, group_out, *kernel])
    swapped = aten.permute.default(grouped, [0, 2, 1, *range(3, 3 + n)])
    flipped = aten.flip.default(swapped, list(range(3, 3 + n)))
    flipped = aten.clone.default(flipped, memory_format=torch.contiguous_format)
    w = aten.view.default(flipped, [groups * group_out, in_channels // groups, *kernel])
    args = (x, w, bias, [1] * n, [0] * n, dilation, False, [0] * n, groups)
    result = _convolution(*args)
    # A convolution Kiln computes directly stays an op, for the importer.
    return aten.convolution.default(*args) if result is NotImplemented else result


def _convolution_backward(grad, x, weight, bias_sizes, stride, padding, dilation, transposed,
                          output_padding, groups, output_mask):
    """A convolution's gradients as Kiln's own ops: the input's is the
    transposed convolution of grad with the same weight (itself a
    convolution: _transposed_convolution), the weight's one matrix product of
    grad with the forward's im2col columns over the batch and every output
    position (per group), the bias's a sum."""
    n = weight.dim() - 2
    if transposed or n < 1 or x.dim() != n + 2:
        return NotImplemented
    stride, padding, dilation = (_spatial_list(v, n) for v in (stride, padding, dilation))
    kernel = list(weight.shape[2:])
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        # The output padding that restores x's size: the rows at the end
        # that the forward's stride stepped over.
        restored = [x.shape[2 + d] - ((grad.shape[2 + d] - 1) * stride[d] - 2 * padding[d]
                                      + dilation[d] * (kernel[d] - 1) + 1) for d in range(n)]
        grad_input = _transposed_convolution(grad, weight, None, stride, padding, dilation,
                                             restored, groups)
    if output_mask[1]:
        grad_weight = _convolution_weight_gradient(grad, x, weight, stride, padding, dilation,
                                                   groups)
    if output_mask[2]:
        grad_bias = aten.sum.dim_IntList(grad, [0, *range(2, 2 + n)])
    return grad_input, grad_weight, grad_bias


def _convolution_weight_gradient(grad, x, weight, stride, padding, dilation, groups):
    """grad_w[o, c, k...] = sum over batch and output positions of
    grad[b, o, p...] * cols[b, p..., c, k...]: one matrix product whose
    reduction runs over every row of the forward's im2col."""
    n = weight.dim() - 2
    out_channels, kernel = weight.shape[0], list(weight.shape[2:])
    channels = x.shape[1]
    group_channels, group_out = channels // groups, out_channels // groups
    cols, out = _im2col(x, kernel, stride, padding, dilation)  # [N, out..., C, kernel...]
    rows, taps = x.shape[0] * math.prod(out), math.prod(kernel)
    g = aten.clone.default(aten.permute.default(grad, [0, *range(2, 2 + n), 1]),
                           memory_format=torch.contiguous_format)
    g = aten.view.default(g, [rows, out_channels])  # [rows, O]
    if groups == 1:
        matrix = aten.view.default(cols, [rows, channels * taps])
        result = aten.mm.default(aten.t.default(g), matrix)  # [O, C * taps]
    elif group_channels == 1 and group_out == 1:  # depthwise: nothing to multiply as matrices
        grouped = aten.view.default(cols, [rows, channels, taps])
        result = aten.sum.dim_IntList(
            aten.mul.Tensor(grouped, aten.view.default(g, [rows, channels, 1])), [0])
    else:
        grouped = aten.view.default(cols, [rows, groups, group_channels * taps])
        grouped = aten.clone.default(aten.permute.default(grouped, [1, 0, 2]),
                                     memory_format=torch.contiguous_format)  # [G, rows, Cg*taps]
        gg = aten.view.default(g, [rows, groups, group_out])
        gg = aten.clone.default(aten.permute.default(gg, [1, 2, 0]),
                                memory_format=torch.contiguous_format)  # [G, Og, rows]
        result = aten.bmm.default(gg, grouped)  # [G, Og, Cg * taps]
    return aten.view.default(result, list(weight.shape))


def _attention_backward(grad_out, q, k, v, out, logsumexp, dropout_p, is_causal, attn_mask=None,
                        scale=None):
    """The gradients of _scaled_dot_product_flash_attention_for_cpu, from the
    probabilities recomputed with the forward's logsumexp (as the flash
    backward does, but a [L, S] block at a time is all of it here):
    P = exp(q kᵀ s + mask - lse), dv = Pᵀ dO, dS = P (dO vᵀ - rowsum(dO o)),
    dq = dS k s, dk = dSᵀ q s. With grouped-query heads (k and v have
    Hq / G heads, query head h reads key head h // G) k and v are repeated
    per query head and their gradients summed back over each group. No
    dropout."""
    if dropout_p != 0.0 or q.dim() != 4 or k.shape[1] != v.shape[1]:
        return NotImplemented
    if q.dtype in (torch.float16, torch.bfloat16):
        # As ATen's CPU kernel: float32 throughout (the forward's logsumexp
        # already is), the gradients rounded once to the inputs' dtype.
        def wide(t):
            return t if t is None or t.dtype != q.dtype else aten._to_copy.default(
                t, dtype=torch.float32)
        mask = attn_mask if attn_mask is None or attn_mask.dtype == torch.bool else wide(attn_mask)
        grads = _attention_backward(wide(grad_out), wide(q), wide(k), wide(v), wide(out),
                                    logsumexp, dropout_p, is_causal, mask, scale)
        if grads is NotImplemented:
            return NotImplemented
        return tuple(aten._to_copy.default(g, dtype=q.dtype) for g in grads)
    if q.dtype not in (torch.float32, torch.float64):
        return NotImplemented
    batch, heads, kv_heads = q.shape[0], q.shape[1], k.shape[1]
    if kv_heads == 0 or heads % kv_heads != 0:
        return NotImplemented
    group = heads // kv_heads

    def repeat_heads(t):
        if group == 1:
            return t
        expanded = aten.expand.default(aten.unsqueeze.default(t, 2),
                                       [batch, kv_heads, group, *t.shape[2:]])
        return aten.reshape.default(expanded, [batch, heads, *t.shape[2:]])

    def sum_groups(t):
        if group == 1:
            return t
        grouped = aten.view.default(t, [batch, kv_heads, group, *t.shape[2:]])
        return aten.sum.dim_IntList(grouped, [2])

    k, v = repeat_heads(k), repeat_heads(v)
    length, source = q.shape[2], k.shape[2]
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = aten.mul.Tensor(aten.matmul.default(q, aten.transpose.int(k, -2, -1)), s)
    minus_inf = aten.scalar_tensor.default(float("-inf"), dtype=scores.dtype)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = aten.where.self(attn_mask, scores, minus_inf)
        else:
            scores = aten.add.Tensor(scores, attn_mask)
    if is_causal:  # top-left aligned, as PyTorch's: key j > query i is masked
        later = aten.gt.Tensor(_along(_iota(source, q.device), 1, 2),
                               _along(_iota(length, q.device), 0, 2))
        scores = aten.where.self(later, minus_inf, scores)
    p = aten.exp.default(aten.sub.Tensor(scores, aten.unsqueeze.default(logsumexp, -1)))
    grad_v = aten.matmul.default(aten.transpose.int(p, -2, -1), grad_out)
    grad_p = aten.matmul.default(grad_out, aten.transpose.int(v, -2, -1))
    row = aten.sum.dim_IntList(aten.mul.Tensor(grad_out, out), [-1], True)
    grad_scores = aten.mul.Tensor(aten.mul.Tensor(p, aten.sub.Tensor(grad_p, row)), s)
    grad_q = aten.matmul.default(grad_scores, k)
    grad_k = aten.matmul.default(aten.transpose.int(grad_scores, -2, -1), q)
    return grad_q, sum_groups(grad_k), sum_groups(grad_v)


def _fma(a, b, c):
    """Dynamo's spelling of addcmul_ and friends (inductor_prims.fma):
    a * b + c, which LLVM contracts into one FMA where the target has it."""
    return aten.add.Tensor(aten.mul.Tensor(a, b), c)


def _copy(x, src, non_blocking=False):
    """The functional copy_: src broadcast to x's shape in x's dtype."""
    if src.dtype != x.dtype:
        src = aten._to_copy.default(src, dtype=x.dtype)
    return aten.clone.default(aten.expand.default(src, list(x.shape)))


def _empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, pin_memory=None):
    """empty_like with a dtype (a tensor of sizes `size`, dims laid out
    outermost first as `physical_layout` says): a permuted empty."""
    physical = aten.empty.memory_format([size[d] for d in physical_layout], dtype=dtype, device=device)
    inverse = [list(physical_layout).index(d) for d in range(len(size))]
    return aten.permute.default(physical, inverse)


def _pow_scalar(base, exponent):
    """A Python number to a tensor's power (Adam's beta ** step): the number
    as a 0-d tensor of the result's dtype."""
    dtype = torch.result_type(base, exponent)
    if exponent.dtype != dtype:
        exponent = aten._to_copy.default(exponent, dtype=dtype)
    return aten.pow.Tensor_Tensor(aten.scalar_tensor.default(base, dtype=dtype), exponent)


def _random_dtype(dtype: torch.dtype | None) -> torch.dtype | None:
    """The dtype of a random factory's result, or None where Kiln leaves it
    to eager (integers and complex numbers)."""
    dtype = dtype or torch.get_default_dtype()
    return dtype if dtype in (torch.float32, torch.float64) else None


def _rand(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """Uniform in [0, 1) from Kiln's stream (kiln/randomness.py)."""
    dtype = _random_dtype(dtype)
    if dtype is None:
        return NotImplemented
    return randomness.uniform(list(size), randomness.new_seed(), dtype, device or "cpu")


def _randn(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """Standard normal (_standard_normal)."""
    dtype = _random_dtype(dtype)
    if dtype is None:
        return NotImplemented
    return _standard_normal(size, dtype, device or "cpu")


def _like(factory):
    """The _like form of a factory (rand_like, randint_like): `factory(*args,
    x's shape)` in x's dtype and device unless given."""
    def like(x, *args, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        # Contiguous results only: eager keeps a channels-last x's layout.
        if memory_format not in (None, torch.contiguous_format, torch.preserve_format) or (
                memory_format != torch.contiguous_format and not x.is_contiguous()):
            return NotImplemented
        return factory(*args, list(x.shape), dtype=dtype or x.dtype, device=device or x.device)
    return like


def _uniform(x, low=0.0, high=1.0, *, generator=None):
    """Uniform in [low, high), in x's shape and dtype: u * high + (1 - u) * low,
    so that low and high stay operands (the eager device reads them at run
    time)."""
    if generator is not None or _random_dtype(x.dtype) is None:
        return NotImplemented
    u = randomness.uniform(list(x.shape), randomness.new_seed(), x.dtype, x.device)
    return aten.add.Tensor(aten.mul.Tensor(u, high), aten.mul.Tensor(aten.rsub.Scalar(u, 1.0), low))


def _bernoulli_p(x, p, *, generator=None):
    """1 with probability p, in x's shape and dtype."""
    if generator is not None or _random_dtype(x.dtype) is None:
        return NotImplemented  # a private generator's stream is eager's alone
    draws = randomness.uniform(list(x.shape), randomness.new_seed(), torch.float32, x.device)
    return aten._to_copy.default(aten.lt.Scalar(draws, p), dtype=x.dtype)


def _bernoulli(x, *, generator=None):
    """1 with probability x (elementwise)."""
    if generator is not None or _random_dtype(x.dtype) is None:
        return NotImplemented
    draws = randomness.uniform(list(x.shape), randomness.new_seed(), x.dtype, x.device)
    return aten._to_copy.default(aten.lt.Tensor(draws, x), dtype=x.dtype)


def _standard_normal(shape, dtype, device):
    """Standard normal by Box-Muller from two uniform draws: sqrt(-2 ln(1 - u))
    cos(2 pi v) (1 - u > 0, so the logarithm is finite)."""
    u = randomness.uniform(list(shape), randomness.new_seed(), dtype, device)
    v = randomness.uniform(list(shape), randomness.new_seed(), dtype, device)
    radius = aten.sqrt.default(aten.mul.Tensor(aten.log.default(aten.rsub.Scalar(u, 1.0)), -2.0))
    return aten.mul.Tensor(radius, aten.cos.default(aten.mul.Tensor(v, 2 * math.pi)))


def _normal_functional(x, mean=0.0, std=1.0, *, generator=None):
    """normal_ (torch.randn on a device, nn.init.normal_): mean + std * z in
    x's shape; mean and std stay operands (read at run time on the device)."""
    if generator is not None or _random_dtype(x.dtype) is None:
        return NotImplemented
    z = _standard_normal(x.shape, x.dtype, x.device)
    return aten.add.Tensor(aten.mul.Tensor(z, std), mean)


def _normal_tensors(mean, std, *, generator=None):
    """normal with a tensor mean or std (or both): broadcast, one draw each."""
    like = mean if isinstance(mean, torch.Tensor) else std
    if generator is not None or _random_dtype(like.dtype) is None:
        return NotImplemented
    shape = torch.broadcast_shapes(*[t.shape for t in (mean, std) if isinstance(t, torch.Tensor)])
    z = _standard_normal(shape, like.dtype, like.device)
    return aten.add.Tensor(aten.mul.Tensor(z, std), mean)


def _random_from(x, low, high=None, *, generator=None):
    """random_(low, high) (torch.randint on a device): integers uniform in
    [low, high) in x's dtype. An open range (high=None, the dtype's limit)
    or one beyond 2**32 stays with eager, as do ranges eager rejects."""
    if (generator is not None or high is None or x.dtype in (torch.bool, torch.complex64, torch.complex128)
            or not 0 < high - low <= 2**32 or not _fits(x.dtype, low, high - 1)):
        return NotImplemented
    return randomness.integers(list(x.shape), low, high - low, x.dtype, x.device)


def _fits(dtype: torch.dtype, low: int, high: int) -> bool:
    """Whether [low, high] is in an integer dtype's range (eager raises
    otherwise, so such calls stay eager's)."""
    if dtype.is_floating_point:
        return True
    info = torch.iinfo(dtype)
    return info.min <= low and high <= info.max


def _random_to(x, high, *, generator=None):
    return _random_from(x, 0, high, generator=generator)


def _randint_low(low, high, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    """torch.randint: the factory form of random_(low, high)."""
    dtype = torch.int64 if dtype is None else dtype
    if (dtype in (torch.bool, torch.complex64, torch.complex128) or not 0 < high - low <= 2**32
            or not _fits(dtype, low, high - 1)):
        return NotImplemented
    return randomness.integers(list(size), low, high - low, dtype, device or "cpu")


def _randint(high, size, **kwargs):
    return _randint_low(0, high, size, **kwargs)


def _exponential(x, lambd=1.0, *, generator=None):
    """-ln(1 - u) / lambd (1 - u > 0)."""
    if generator is not None or _random_dtype(x.dtype) is None:
        return NotImplemented
    u = randomness.uniform(list(x.shape), randomness.new_seed(), x.dtype, x.device)
    return aten.div.Tensor(aten.neg.default(aten.log1p.default(aten.neg.default(u))), lambd)


def _log_normal(x, mean=1.0, std=2.0, *, generator=None):
    normal = _normal_functional(x, mean, std, generator=generator)
    return NotImplemented if normal is NotImplemented else aten.exp.default(normal)


def _cauchy(x, median=0.0, sigma=1.0, *, generator=None):
    """median + sigma tan(pi (u - 1/2))."""
    if generator is not None or _random_dtype(x.dtype) is None:
        return NotImplemented
    u = randomness.uniform(list(x.shape), randomness.new_seed(), x.dtype, x.device)
    angle = aten.mul.Tensor(aten.sub.Tensor(u, 0.5), math.pi)
    return aten.add.Tensor(aten.mul.Tensor(aten.tan.default(angle), sigma), median)


def _geometric(x, p, *, generator=None):
    """Trials up to the first success: ceil(ln(v) / ln(1 - p)) with v = 1 - u
    in (0, 1], at least 1."""
    if (generator is not None or _random_dtype(x.dtype) is None
            or (not isinstance(p, torch.Tensor) and not 0 < p < 1)):
        return NotImplemented  # eager raises for p outside (0, 1)
    v = aten.rsub.Scalar(randomness.uniform(list(x.shape), randomness.new_seed(), x.dtype, x.device), 1.0)
    failures = aten.div.Tensor(aten.log.default(v), math.log1p(-p)) if not isinstance(p, torch.Tensor) \
        else aten.div.Tensor(aten.log.default(v), aten.log1p.default(aten.neg.default(p)))
    return aten.clamp_min.default(aten.ceil.default(failures), 1.0)


def _multinomial(x, num_samples, replacement=False, *, generator=None):
    """Categories drawn with probability proportional to x's rows, by the
    Gumbel-max trick: the largest of ln(x) + g (g = -ln(-ln u)) is a draw;
    the `num_samples` largest, a draw without replacement in order. Zero
    weights have ln 0 = -inf and are never drawn. Eager's checks of its input
    (negative or non-finite weights, too few categories) stay eager's: such
    input is left to it only where the check needs no data."""
    if (generator is not None or _random_dtype(x.dtype) is None or x.dim() not in (1, 2)
            or (not replacement and num_samples > x.shape[-1])):
        return NotImplemented
    rows = list(x.shape[:-1])
    shape = [*rows, num_samples, x.shape[-1]] if replacement else list(x.shape)
    u = randomness.uniform(shape, randomness.new_seed(), x.dtype, x.device)
    gumbel = aten.neg.default(aten.log.default(aten.neg.default(aten.log.default(u))))
    logits = aten.log.default(x)
    if replacement:
        keys = aten.add.Tensor(aten.unsqueeze.default(logits, -2), gumbel)
        return aten.squeeze.dim(aten.topk.default(keys, 1, -1)[1], -1)
    return aten.topk.default(aten.add.Tensor(logits, gumbel), num_samples, -1)[1]


def _native_dropout(x, p, train):
    """Dropout that drops nothing (eval mode, or p = 0) is the identity.
    Otherwise an element is kept where a uniform number (Kiln's own stream,
    seeded per call from torch's generator: kiln/randomness.py) is at least
    p, and scaled by 1 / (1 - p); the mask is the op's second output, which
    its backward reads."""
    if train is False or p == 0.0:  # train=None means training, as in ATen
        return aten.clone.default(x), aten.ones_like.default(x, dtype=torch.bool)
    if p >= 1.0:
        return aten.mul.Tensor(x, 0.0), aten.zeros_like.default(x, dtype=torch.bool)
    if not x.dtype.is_floating_point:
        return NotImplemented
    keep = aten.ge.Scalar(randomness.uniform(list(x.shape), randomness.new_seed(), torch.float32,
                                             x.device), p)
    scaled = aten.mul.Tensor(aten.mul.Tensor(x, keep), 1.0 / (1.0 - p))
    return scaled, keep


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


def _avg_pool(n: int, x, kernel_size, stride=(), padding=(0,), ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    """avg_pool2d and avg_pool3d (n spatial dims): the sum over each window (zero padded)
    divided by ATen's divisor: the window clipped to the padded input, or to
    the input itself without count_include_pad, or divisor_override. Integer
    sums are divided as ATen divides them, truncating."""
    batched = x.dim() == n + 2
    if not batched:
        x = aten.unsqueeze.default(x, 0)
    windows, out, kernel, _, stride, padding, starts = _pool_windows(
        x, kernel_size, stride, padding, (1,), ceil_mode, 0)
    total = aten.sum.dim_IntList(windows, list(range(2 + n, 2 + 2 * n)))
    if divisor_override:
        divisor = aten.scalar_tensor.default(divisor_override, dtype=torch.int64)
    else:
        divisor = None
        for d in range(n):
            size = x.shape[2 + d]
            start = starts[d]
            end = aten.clamp_max.default(aten.add.Tensor(start, kernel[d]), size + padding[d])
            if not count_include_pad:
                start = aten.clamp_min.default(start, 0)
                end = aten.clamp_max.default(end, size)
            count = _along(aten.sub.Tensor(end, start), d, n)
            divisor = count if divisor is None else aten.mul.Tensor(divisor, count)
    if x.dtype.is_floating_point:
        result = aten.div.Tensor(total, aten._to_copy.default(divisor, dtype=x.dtype))
    else:
        result = aten._to_copy.default(aten.div.Tensor_mode(total, divisor, rounding_mode="trunc"),
                                       dtype=x.dtype)
    return result if batched else aten.squeeze.dims(result, [0])


def _embedding_renorm(weight: torch.Tensor, indices: torch.Tensor, max_norm: float,
                      norm_type: float) -> torch.Tensor:
    """The rows `indices` names, scaled by max_norm / (norm + 1e-7) where
    their norm exceeds max_norm (ATen's); a row named twice is written twice
    with the same value."""
    flat = aten.reshape.default(indices, [-1])
    rows = aten.index_select.default(weight, 0, flat)
    norm = aten.linalg_vector_norm.default(rows, norm_type, [1], True)
    scale = aten.where.self(aten.gt.Scalar(norm, max_norm),
                            aten.div.Tensor(aten.reciprocal.default(aten.add.Tensor(norm, 1e-7)),
                                            1.0 / max_norm),
                            aten.scalar_tensor.default(1.0, dtype=weight.dtype))
    return aten.index_put.default(weight, [flat], aten.mul.Tensor(rows, scale))


def _max_pool2d_with_indices_backward(grad, x, kernel_size, stride, padding, dilation,
                                      ceil_mode, indices):
    """Each output's gradient added at its max's index in the input plane."""
    planes = list(x.shape[:-2]) + [x.shape[-2] * x.shape[-1]]
    outputs = list(grad.shape[:-2]) + [grad.shape[-2] * grad.shape[-1]]
    grad_input = aten.scatter_add.default(
        aten.zeros.default(planes, dtype=grad.dtype, device=grad.device), -1,
        aten.reshape.default(indices, outputs), aten.reshape.default(grad, outputs))
    return aten.view.default(grad_input, list(x.shape))


def _reduced_count(x: torch.Tensor, dims: Sequence[int] | None) -> tuple[list[int], int]:
    """The normalized reduced dims (None or [] is every dim) and their element count."""
    rank = max(x.dim(), 1)
    dims = list(range(x.dim())) if not dims else sorted(d % rank for d in dims)
    count = 1
    for d in dims:
        count *= x.shape[d] if x.dim() else 1
    return dims, count


def _var_mean(x, dim=None, *, correction=None, keepdim=False):
    """Two passes like ATen: the mean, then the sum of squared deviations over
    max(count - correction, 0) (0 gives inf or NaN, as in ATen)."""
    if not x.dtype.is_floating_point:
        return NotImplemented
    dims, count = _reduced_count(x, dim)
    correction = 1 if correction is None else correction
    mean = aten.mean.dim(x, dims, True)
    deviation = aten.sub.Tensor(x, mean)
    squares = aten.sum.dim_IntList(aten.mul.Tensor(deviation, deviation), dims, keepdim)
    var = aten.div.Tensor(squares, max(count - correction, 0))
    if not keepdim:
        mean = aten.squeeze.dims(mean, dims) if x.dim() else mean
    return var, mean


def _var(x, dim=None, *, correction=None, keepdim=False):
    result = _var_mean(x, dim, correction=correction, keepdim=keepdim)
    return result if result is NotImplemented else result[0]


def _std(x, dim=None, *, correction=None, keepdim=False):
    result = _var_mean(x, dim, correction=correction, keepdim=keepdim)
    return result if result is NotImplemented else aten.sqrt.default(result[0])


def _round_decimals(x: torch.Tensor, decimals: int = 0) -> torch.Tensor:
    """ATen's: round(x * 10^d) / 10^d, or round(x / 10^-d) * 10^-d for d <= 0
    (halves to even)."""
    if decimals > 0:
        scale = 10.0 ** decimals
        return aten.div.Tensor(aten.round.default(aten.mul.Tensor(x, scale)), scale)
    scale = 10.0 ** -decimals
    return aten.mul.Tensor(aten.round.default(aten.div.Tensor(x, scale)), scale)


def _with_layout_of(result: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """result laid out in memory as `like` (dense, dims in any order), as ATen's
    ops that allocate with empty_like return it: a permute, a copy and the
    inverse permute, which Kiln fuses into the producing kernel."""
    if like.dim() < 2 or like.is_contiguous() or result.stride() == like.stride():
        return result
    order = sorted(range(like.dim()), key=lambda d: (-like.stride(d), d))
    inverse = sorted(range(like.dim()), key=lambda d: order[d])
    moved = aten.clone.default(aten.permute.default(result, order),
                               memory_format=torch.contiguous_format)
    return aten.permute.default(moved, inverse)


def _reversed_iota(count: int, device: torch.device) -> torch.Tensor:
    return aten.add.Tensor(aten.neg.default(_iota(count, device)), count - 1)


def _flip(x: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    """One gather per flipped dim, reading index n - 1 - i."""
    rank = max(x.dim(), 1)
    out = x
    for d in sorted({d % rank for d in dims}):
        if x.dim() and x.shape[d] > 1:
            out = aten.index.Tensor(out, [None] * d + [_reversed_iota(x.shape[d], x.device)])
    return _with_layout_of(out, x) if out is not x else aten.clone.default(x)


def _repeat(x: torch.Tensor, repeats: Sequence[int]) -> torch.Tensor:
    """Each dim of size s repeated r times is an expanded [r, s] pair of dims,
    materialized by one copy."""
    repeats = list(repeats)
    shape = [1] * (len(repeats) - x.dim()) + list(x.shape)
    interleaved, expanded, final = [], [], []
    for r, size in zip(repeats, shape):
        interleaved += [1, size]
        expanded += [r, size]
        final.append(r * size)
    viewed = aten.view.default(x, interleaved)
    copy = aten.clone.default(aten.expand.default(viewed, expanded))
    return aten.view.default(copy, final)


def _diagonal(x: torch.Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> torch.Tensor:
    """The other dims first, then one gather of (i, i + offset) pairs, as the
    last dim (ATen's order)."""
    rank = x.dim()
    dim1, dim2 = dim1 % rank, dim2 % rank
    rest = [d for d in range(rank) if d not in (dim1, dim2)]
    moved = aten.permute.default(x, rest + [dim1, dim2])
    rows, cols = x.shape[dim1], x.shape[dim2]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    i = aten.add.Tensor(_iota(length, x.device), max(-offset, 0))
    j = aten.add.Tensor(_iota(length, x.device), max(offset, 0))
    return aten.index.Tensor(moved, [None] * len(rest) + [i, j])


def _slice_scatter(x: torch.Tensor, src: torch.Tensor, dim: int = 0, start=None, end=None,
                   step: int = 1) -> torch.Tensor:
    """x with src written over x[start:end:step] along dim: a concatenation for
    step 1, else a select between x and src gathered to x's shape."""
    dim = dim % max(x.dim(), 1)
    size = x.shape[dim] if x.dim() else 1
    start, end, _ = slice(start, end, 1).indices(size)
    end = max(end, start)
    if step == 1:
        pieces = []
        if start > 0:
            pieces.append(aten.slice.Tensor(x, dim, 0, start))
        pieces.append(src)
        if end < size:
            pieces.append(aten.slice.Tensor(x, dim, end, size))
        out = aten.cat.default(pieces, dim) if len(pieces) > 1 else aten.clone.default(src)
        return _with_layout_of(out, x)
    rank = x.dim()
    offset = aten.sub.Tensor(_iota(size, x.device), start)
    inside = aten.logical_and.default(
        aten.logical_and.default(aten.ge.Scalar(offset, 0), aten.lt.Scalar(offset, end - start)),
        aten.eq.Scalar(aten.remainder.Scalar(offset, step), 0))
    count = src.shape[dim]
    if count == 0:
        return aten.clone.default(x)  # preserves x's layout
    source = aten.clamp.default(aten.floor_divide.default(offset, step), 0, count - 1)
    gathered = aten.index_select.default(src, dim, source)
    return _with_layout_of(aten.where.self(_along(inside, dim, rank), gathered, x), x)


def _adaptive_avg_pool2d(x: torch.Tensor, output_size: Sequence[int]) -> torch.Tensor:
    """ATen's windows [floor(i * in / out), ceil((i + 1) * in / out)): a mean
    over a reshape when out divides in, else a masked sum over gathered
    windows of the largest window's size."""
    if not x.dtype.is_floating_point:
        return NotImplemented
    batched = x.dim() == 4
    if not batched:
        x = aten.unsqueeze.default(x, 0)
    n, c, h, w = x.shape
    oh, ow = output_size
    if oh and ow and h % oh == 0 and w % ow == 0:
        out = aten.mean.dim(aten.view.default(x, [n, c, oh, h // oh, ow, w // ow]), [3, 5])
        return out if batched else aten.squeeze.dims(out, [0])
    out = x
    masks, counts = [], []
    for d, (size, osize) in enumerate(((h, oh), (w, ow))):
        starts = [(i * size) // osize for i in range(osize)]
        ends = [-((-(i + 1) * size) // osize) for i in range(osize)]
        taps = max((e - s for s, e in zip(starts, ends)), default=1)
        first = aten.floor_divide.default(aten.mul.Tensor(_iota(osize, x.device), size), osize)
        last = aten.floor_divide.default(
            aten.add.Tensor(aten.mul.Tensor(_iota(osize, x.device), size), size + osize - 1),
            osize)
        positions = aten.add.Tensor(aten.view.default(first, [osize, 1]),
                                    aten.view.default(_iota(taps, x.device), [1, taps]))
        masks.append(aten.lt.Tensor(positions, aten.view.default(last, [osize, 1])))
        counts.append(aten.sub.Tensor(last, first))
        dim = 2 + 2 * d  # [N, C, H, W] -> [N, C, oh, kh, W] -> [N, C, oh, kh, ow, kw]
        out = aten.index.Tensor(out, [None] * dim + [aten.clamp_max.default(positions, size - 1)])
    mask = aten.logical_and.default(aten.view.default(masks[0], [oh, -1, 1, 1]),
                                    aten.view.default(masks[1], [1, 1, ow, -1]))
    zero = aten.scalar_tensor.default(0.0, dtype=x.dtype)
    total = aten.sum.dim_IntList(aten.where.self(mask, out, zero), [3, 5])
    divisor = aten.mul.Tensor(aten.view.default(counts[0], [oh, 1]),
                              aten.view.default(counts[1], [1, ow]))
    out = aten.div.Tensor(total, aten._to_copy.default(divisor, dtype=x.dtype))
    return out if batched else aten.squeeze.dims(out, [0])


def _index_put(x: torch.Tensor, indices, values: torch.Tensor, accumulate: bool = False):
    """x[mask] = values with one bool mask whose values do not span the masked
    positions (the usual `x[x > t] = 0`): a select, so no data-dependent
    shape. Integer indices go to Kiln's index_put."""
    masks = [i for i in indices if i is not None and i.dtype in (torch.bool, torch.uint8)]
    if not masks:
        return NotImplemented
    if len(masks) != 1 or any(i is not None for i in indices if i is not masks[0]):
        return NotImplemented
    mask = masks[0]
    start = next(k for k, i in enumerate(indices) if i is mask)
    rank, block = x.dim(), mask.dim()
    selected_rank = rank - block + 1  # x[mask]: [*x[:start], count, *x[start + block:]]
    if values.dim() > selected_rank:
        return NotImplemented
    count_dim = start - (selected_rank - values.dim())  # values' dim aligned with count
    if 0 <= count_dim < values.dim() and values.shape[count_dim] != 1:
        return NotImplemented  # one value per masked position: data-dependent
    if 0 <= count_dim < values.dim():  # a size-1 count dim stands for the mask's dims
        values = aten.squeeze.dims(values, [count_dim])
        values = aten.view.default(values, list(values.shape[:count_dim]) + [1] * block
                                   + list(values.shape[count_dim:]))
    values = aten._to_copy.default(values, dtype=x.dtype)
    where = aten.view.default(aten._to_copy.default(mask, dtype=torch.bool),
                              [1] * start + list(mask.shape) + [1] * (rank - start - block))
    if accumulate:
        zero = aten.scalar_tensor.default(0, dtype=x.dtype)
        return aten.add.Tensor(x, aten.where.self(where, values, zero))
    return aten.where.self(where, values, x)


def _masked_scatter(x: torch.Tensor, mask: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """The k-th masked position takes source's k-th element: a running count
    of the mask picks it (an index_select, whose range check raises when
    source is too short)."""
    shape = list(torch.broadcast_shapes(x.shape, mask.shape))  # the result's
    if source.numel() == 0:  # nothing to pick (eager raises if anything is masked)
        return aten.clone.default(aten.expand.default(x, shape))
    flat_mask = aten.reshape.default(aten.expand.default(mask, shape), [-1])
    position = aten.sub.Tensor(aten.cumsum.default(flat_mask, 0, dtype=torch.int64), 1)
    position = aten.where.self(flat_mask, position, aten.scalar_tensor.default(0, dtype=torch.int64))
    picked = aten.index_select.default(aten.reshape.default(source, [-1]), 0, position)
    return aten.where.self(aten.view.default(flat_mask, shape), aten.view.default(picked, shape), x)


# Random ops as counter-based hashes of kiln::random_seed values (see
# kiln/randomness.py): the eager device supplies those seeds from its
# generator too.
RANDOM_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    aten.native_dropout.default: _native_dropout,
    aten.rand.default: _rand,
    aten.randn.default: _randn,
    aten.rand_like.default: _like(_rand),
    aten.randn_like.default: _like(_randn),
    aten.bernoulli.p: _bernoulli_p,
    aten.bernoulli.default: _bernoulli,
    aten.uniform.default: _uniform,
    aten.normal_functional.default: _normal_functional,
    aten.normal.Tensor_float: _normal_tensors,
    aten.normal.float_Tensor: _normal_tensors,
    aten.normal.Tensor_Tensor: _normal_tensors,
    getattr(aten.random, "from"): _random_from,  # `from` is a keyword
    aten.random.to: _random_to,
    aten.exponential.default: _exponential,
    aten.log_normal.default: _log_normal,
    aten.cauchy.default: _cauchy,
    aten.geometric.default: _geometric,
    aten.multinomial.default: _multinomial,
    aten.randint.default: _randint,
    aten.randint.low: _randint_low,
    aten.randint_like.default: _like(_randint),
    aten.randint_like.low_dtype: _like(_randint_low),
}

# Exact in every output: safe under autograd too.
_KILN_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    **RANDOM_DECOMPOSITIONS,
    aten.split_with_sizes.default: _split_with_sizes,
    aten.empty_permuted.default: _empty_permuted,
    aten.native_group_norm.default: _group_norm,
    aten.convolution.default: _convolution,
    aten.convolution_backward.default: _convolution_backward,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: _attention_backward,
    inductor_prims.fma: _fma,
    aten.copy.default: _copy,
    aten.pow.Scalar: _pow_scalar,
    aten.max_pool2d_with_indices.default: _max_pool2d_with_indices,
    aten.avg_pool2d.default: functools.partial(_avg_pool, 2),
    aten.avg_pool3d.default: functools.partial(_avg_pool, 3),
    aten.max_pool2d_with_indices_backward.default: _max_pool2d_with_indices_backward,
    aten.embedding_renorm.default: _embedding_renorm,
    aten._adaptive_avg_pool2d.default: _adaptive_avg_pool2d,
    aten.var.correction: _var,
    aten.var_mean.correction: _var_mean,
    aten.std.correction: _std,
    aten.round.decimals: _round_decimals,
    aten.flip.default: _flip,
    aten.repeat.default: _repeat,
    aten.diagonal.default: _diagonal,
    aten.slice_scatter.default: _slice_scatter,
    aten.index_put.default: _index_put,
    aten.masked_scatter.default: _masked_scatter,
    # PyTorch's reference: abs, pow and sum reductions (e.g. weight_norm).
    aten.linalg_vector_norm.default:
        torch._decomp.decomposition_table[aten.linalg_vector_norm.default],
}

# PyTorch's own decompositions (outside the Core ATen table) of ops whose
# parts Kiln compiles and fuses: each costs what the op's own kernel would.
_UPSTREAM_DECOMPOSITIONS = (
    aten.elu.default, aten.leaky_relu.default, aten.celu.default, aten.selu.default,
    aten.hardshrink.default, aten.softshrink.default, aten.threshold.default,
    aten.isinf.default, aten.copysign.Tensor, aten.hypot.default,
    aten.upsample_nearest2d.default, aten.upsample_bilinear2d.default,
    aten.grid_sampler_2d.default, aten.adaptive_max_pool2d.default, aten.index_add.default,
    aten.index_copy.default, aten.index_fill.int_Scalar, aten.logaddexp.default,
    aten.sinc.default, aten.deg2rad.default, aten.nansum.default, aten.take.default,
    aten.reflection_pad1d.default, aten.reflection_pad2d.default,
    aten.replication_pad1d.default, aten.replication_pad2d.default,
    aten.aminmax.default,
    aten._native_batch_norm_legit.default, aten._native_batch_norm_legit_functional.default,
    aten._native_batch_norm_legit.no_stats,
)
_KILN_DECOMPOSITIONS.update(
    {op: torch._decomp.decomposition_table[op] for op in _UPSTREAM_DECOMPOSITIONS})

# Inference graphs only.
_KILN_INFERENCE_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    # Returns empty saved statistics, which the op's backward would read.
    aten._native_batch_norm_legit_no_training.default: _batch_norm_no_training,
}

# Ops the Core ATen table decomposes while Kiln's importer lowers them
# directly: into prims Kiln does not import, or worse than Kiln's own kernel.
KILN_NATIVE_OPS = (
    aten.floor_divide.default,
    # One fused kernel (online softmax over key tiles) instead of matmul,
    # softmax and matmul with the [L, S] scores in memory. The decomposition
    # (meant for torch.export) is also exact only for inference: it returns
    # the attention probabilities where the op returns logsumexp, from which
    # _scaled_dot_product_flash_attention_for_cpu_backward computes NaN or
    # wrong gradients (Inductor excludes it for the same reason).
    aten._scaled_dot_product_flash_attention_for_cpu.default,
)


@functools.cache
def decomposition_table(training: bool) -> dict[Any, Callable[..., Any]]:
    """The table for a graph that needs autograd (`training`) or not."""
    table = dict(torch._decomp.core_aten_decompositions())
    for op in KILN_NATIVE_OPS:
        table.pop(op, None)
    table.update(_KILN_DECOMPOSITIONS)
    if not training:
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
