"""Tests of the eager "kiln" device (torch.device("kiln")).

They run in their own pytest process (.ci/run runs this folder apart from
python/tests): importing kiln.device makes "kiln" the process's accelerator,
which the compiler's tests must not inherit. Tiers as in python/tests
(unit, e2e, slow; pyproject.toml registers the markers).
"""

from __future__ import annotations

import pytest
import torch

import kiln.device
from kiln.testing import training


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not (item.get_closest_marker("unit") or item.get_closest_marker("e2e")):
            raise pytest.UsageError(f"{item.nodeid}: no tier; mark its module unit or e2e")


@pytest.fixture(autouse=True)
def _fresh_state():
    """Each test starts on kiln:0 with a fixed seed, counted from zero and
    with the fallback allowed."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    kiln.device.set_device(0)
    kiln.device.set_fallback_policy("allow")
    kiln.device.reset_stats()
    yield
    kiln.device.set_fallback_policy("allow")


@pytest.fixture
def assert_trains_like_cpu():
    """A check of a training case's eager loop on kiln against the same loop
    on the CPU: at least `kernel_share` of the last step's op calls ran Kiln
    kernels (the earlier steps compiled them), and the losses and the trained
    parameters match."""
    def check(case: training.TrainingCase, steps: int, kernel_share: float) -> None:
        cpu_losses, cpu_model = training.train_on(case, "cpu", steps)
        kiln_losses, kiln_model = training.train_on(case, "kiln", steps,
                                                    before_last_step=kiln.device.reset_stats)
        stats = kiln.device.stats()
        assert stats["kernel_calls"] >= kernel_share * (stats["kernel_calls"] + stats["fallback_calls"]), \
            stats["fallback"]
        assert kiln_losses == pytest.approx(cpu_losses, rel=1e-4, abs=1e-5)
        for (key, on_cpu), on_kiln in zip(cpu_model.state_dict().items(), kiln_model.state_dict().values()):
            assert on_kiln.device.type == "kiln", key
            assert torch.allclose(on_kiln.cpu(), on_cpu, rtol=1e-3, atol=1e-4), key

    return check
