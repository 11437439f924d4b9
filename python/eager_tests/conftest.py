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
