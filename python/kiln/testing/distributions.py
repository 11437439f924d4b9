"""Checks of Kiln's random ops by their distributions.

Kiln draws from its own counter-based stream (kiln/randomness.py), so its
samples cannot equal eager's: these cases check what must hold instead,
moments and supports within a few standard errors. The same cases run in
compiled graphs (python/tests/test_random.py) and as the kiln device's eager
kernels (python/eager_tests/test_kernels.py): `draw(x)` takes a float tensor
of SAMPLES zeros on the device under test.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch

SAMPLES = 1 << 15
# Six standard errors of a mean over SAMPLES draws, per unit of deviation.
_SE = 6 / math.sqrt(SAMPLES)


@dataclasses.dataclass(frozen=True)
class DistributionCase:
    name: str
    draw: Callable[[torch.Tensor], torch.Tensor]
    check: Callable[[torch.Tensor], None]
    kernel: str  # the eager device's op that must have run as a kernel


def _mean_and_std(sample: torch.Tensor, mean: float, std: float) -> None:
    sample = sample.double()
    assert abs(sample.mean().item() - mean) < _SE * std, (sample.mean().item(), mean)
    assert abs(sample.std().item() / std - 1) < 0.05, (sample.std().item(), std)


def _normal(mean: float, std: float) -> Callable[[torch.Tensor], None]:
    def check(sample: torch.Tensor) -> None:
        _mean_and_std(sample, mean, std)
        within = ((sample.double() - mean).abs() < std).double().mean().item()
        assert abs(within - 0.6827) < 0.015, within  # the normal's CDF, not only moments

    return check


def _integers(low: int, high: int, dtype: torch.dtype) -> Callable[[torch.Tensor], None]:
    def check(sample: torch.Tensor) -> None:
        assert sample.dtype == dtype
        assert low <= sample.min().item() and sample.max().item() < high
        span = high - low
        _mean_and_std(sample, low + (span - 1) / 2, math.sqrt((span * span - 1) / 12))
        if span <= 16:
            assert set(sample.unique().tolist()) == set(range(low, high))

    return check


def _exponential(sample: torch.Tensor) -> None:
    assert sample.min().item() >= 0
    _mean_and_std(sample, 0.5, 0.5)  # rate 2


def _log_normal(sample: torch.Tensor) -> None:
    assert sample.min().item() > 0
    _normal(0.5, 0.25)(sample.log())


def _cauchy(sample: torch.Tensor) -> None:
    # No moments: the median and the quartiles (median -+ sigma).
    within = ((sample - 1.0).abs() < 2.0).double().mean().item()
    assert abs(sample.median().item() - 1.0) < 0.1 and abs(within - 0.5) < 0.015, within


def _geometric(sample: torch.Tensor) -> None:
    assert sample.min().item() == 1 and torch.equal(sample, sample.round())
    _mean_and_std(sample, 4.0, math.sqrt(0.75) / 0.25)  # p = 0.25


def _weights(x: torch.Tensor) -> torch.Tensor:
    """[0, 1, 2, 0] computed on x's device: category 1 a third of the time,
    2 two thirds, 0 and 3 never."""
    i = torch.arange(4, device=x.device, dtype=x.dtype)
    return x[:4] + torch.where(i.remainder(3) == 0, 0.0, i)


def _draws_with_replacement(sample: torch.Tensor) -> None:
    assert sample.dtype == torch.int64 and set(sample.unique().tolist()) <= {1, 2}
    share = (sample == 2).double().mean().item()
    assert abs(share - 2 / 3) < _SE * math.sqrt(2 / 9), share


def _draws_without_replacement(sample: torch.Tensor) -> None:
    assert sample.shape == (SAMPLES // 4, 2) and sample.dtype == torch.int64
    assert torch.equal(sample.sort(-1).values, torch.tensor([1, 2]).expand_as(sample))
    first = (sample[:, 0] == 2).double().mean().item()  # drawn first: 2 with weight 2/3
    assert abs(first - 2 / 3) < 12 / math.sqrt(SAMPLES) * math.sqrt(2 / 9), first


CASES = [
    DistributionCase("normal_", lambda x: torch.empty_like(x).normal_(2.0, 3.0), _normal(2.0, 3.0),
                     "aten::normal_"),
    DistributionCase("normal_tensor_mean", lambda x: torch.normal(x + 5.0, 0.5), _normal(5.0, 0.5),
                     "aten::normal.Tensor_float"),
    DistributionCase("normal_tensor_std", lambda x: torch.normal(-1.0, x + 2.0), _normal(-1.0, 2.0),
                     "aten::normal.float_Tensor"),
    DistributionCase("normal_tensors", lambda x: torch.normal(x + 1.0, x + 0.25), _normal(1.0, 0.25),
                     "aten::normal.Tensor_Tensor"),
    DistributionCase("randint_like", lambda x: torch.randint_like(x, -3, 7), _integers(-3, 7, torch.float32),
                     "aten::random_.from"),
    DistributionCase("random_", lambda x: torch.empty_like(x, dtype=torch.int64).random_(11),
                     _integers(0, 11, torch.int64), "aten::random_.to"),
    DistributionCase("randint_wide", lambda x: torch.randint(-2**31, 2**31, (SAMPLES,), device=x.device),
                     _integers(-2**31, 2**31, torch.int64), "aten::random_.from"),
    DistributionCase("exponential_", lambda x: torch.empty_like(x).exponential_(2.0), _exponential,
                     "aten::exponential_"),
    DistributionCase("log_normal_", lambda x: torch.empty_like(x).log_normal_(0.5, 0.25), _log_normal,
                     "aten::log_normal_"),
    DistributionCase("cauchy_", lambda x: torch.empty_like(x).cauchy_(1.0, 2.0), _cauchy, "aten::cauchy_"),
    DistributionCase("geometric_", lambda x: torch.empty_like(x).geometric_(0.25), _geometric,
                     "aten::geometric_"),
    DistributionCase("multinomial_replacement",
                     lambda x: torch.multinomial(_weights(x), SAMPLES, replacement=True),
                     _draws_with_replacement, "aten::multinomial"),
    DistributionCase("multinomial",
                     lambda x: torch.multinomial(_weights(x).expand(SAMPLES // 4, 4), 2),
                     _draws_without_replacement, "aten::multinomial"),
]
