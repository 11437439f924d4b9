"""Small reference models for Kiln's tests and benchmarks.

Parameters and inputs are deterministic: they come from seeded generators,
never from the global RNG, so eager, Kiln and other backends see the same
numbers in any order of construction.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def _generator(seed: int) -> torch.Generator:
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen


@torch.no_grad()
def init_deterministic(module: nn.Module, seed: int = 0) -> nn.Module:
    """Re-initialise every parameter from a seeded generator.

    Linear weights and biases are uniform in +-1/sqrt(fan_in) (PyTorch's
    default scale); LayerNorm weights are near 1 and biases near 0, perturbed
    so the affine part of the op is exercised.
    """
    gen = _generator(seed)
    for sub in module.modules():
        if isinstance(sub, nn.Linear):
            bound = 1.0 / math.sqrt(sub.in_features)
            sub.weight.copy_(torch.rand(sub.weight.shape, generator=gen) * 2 * bound - bound)
            if sub.bias is not None:
                sub.bias.copy_(torch.rand(sub.bias.shape, generator=gen) * 2 * bound - bound)
        elif isinstance(sub, nn.LayerNorm):
            sub.weight.copy_(1 + 0.1 * torch.randn(sub.weight.shape, generator=gen))
            sub.bias.copy_(0.1 * torch.randn(sub.bias.shape, generator=gen))
    return module


class MLP(nn.Module):
    """Linear -> ReLU -> Linear -> ReLU -> Linear -> LogSoftmax."""

    def __init__(
        self,
        in_features: int = 256,
        hidden: int = 512,
        out_features: int = 10,
        seed: int = 0,
    ):
        super().__init__()
        self.in_features = in_features
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out_features)
        init_deterministic(self, seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return F.log_softmax(self.fc3(x), dim=-1)

    def make_inputs(self, batch: int = 8, seed: int = 1) -> tuple[torch.Tensor]:
        return (torch.randn(batch, self.in_features, generator=_generator(seed)),)


class TransformerBlock(nn.Module):
    """A pre-LN transformer block written from matmul, softmax and layer_norm.

    x + proj(attention(LN(x))), then + fc2(gelu(fc1(LN(x)))). Attention is
    plain softmax(q @ k^T / sqrt(d)) @ v over all positions (no mask).
    """

    def __init__(self, width: int = 256, heads: int = 4, mlp_ratio: int = 4, seed: int = 0):
        super().__init__()
        if width % heads:
            raise ValueError(f"width {width} is not divisible by heads {heads}")
        self.width = width
        self.heads = heads
        self.head_dim = width // heads
        self.ln1 = nn.LayerNorm(width)
        self.q = nn.Linear(width, width)
        self.k = nn.Linear(width, width)
        self.v = nn.Linear(width, width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, mlp_ratio * width)
        self.fc2 = nn.Linear(mlp_ratio * width, width)
        init_deterministic(self, seed)

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = t.shape
        return t.reshape(batch, seq, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def attention(self, h: torch.Tensor) -> torch.Tensor:
        batch, seq, width = h.shape
        q = self._split_heads(self.q(h))
        k = self._split_heads(self.k(h))
        v = self._split_heads(self.v(h))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, v)
        return out.permute(0, 2, 1, 3).reshape(batch, seq, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.proj(self.attention(self.ln1(x)))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x

    def make_inputs(self, batch: int = 8, seq: int = 128, seed: int = 1) -> tuple[torch.Tensor]:
        return (torch.randn(batch, seq, self.width, generator=_generator(seed)),)
