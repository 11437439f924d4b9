"""Shared fixtures and the test tiers.

Markers (registered in pyproject.toml, --strict-markers):
  unit          fast: no model compiled, or only tiny graphs
  e2e           compiles and runs models end to end
  slow          long sweeps; .ci/run deselects them (-m "not slow"),
                .ci/nightly runs them
  device(name)  needs device `name`: skipped, with the reason, unless the
                device is available (see available_devices)

Every test module says its tier with a module-level `pytestmark`.
"""

from __future__ import annotations

import os

import pytest
import torch

# The tests read Kiln's records through pytest's caplog, which a KILN_LOG
# handler of Kiln's own would bypass; test_logging.py sets it per process.
os.environ.pop("KILN_LOG", None)

import kiln  # noqa: E402

# Tests compile for real, so that their compile records say what the compiler
# did; test_cache.py turns the on-disk cache on, in temporary folders.
os.environ["KILN_CACHE"] = "0"

DEVICES_ENV = "KILN_DEVICES"


def available_devices() -> frozenset[str]:
    """The devices tests may use: "cpu" always, and those that $KILN_DEVICES
    names (comma-separated), which CI sets where a machine has them."""
    named = {d.strip() for d in os.environ.get(DEVICES_ENV, "").split(",")}
    return frozenset({"cpu"} | (named - {""}))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    devices = available_devices()
    for item in items:
        if not (item.get_closest_marker("unit") or item.get_closest_marker("e2e")):
            raise pytest.UsageError(f"{item.nodeid}: no tier; mark its module unit or e2e")
        for mark in item.iter_markers("device"):
            if len(mark.args) != 1 or not isinstance(mark.args[0], str):
                raise pytest.UsageError(f"{item.nodeid}: use @pytest.mark.device(\"name\")")
            name = mark.args[0]
            if name not in devices:
                item.add_marker(pytest.mark.skip(
                    reason=f"needs device {name!r}; available: {', '.join(sorted(devices))} "
                           f"(add it to {DEVICES_ENV} where the machine has one)"))


@pytest.fixture(autouse=True)
def _fresh_state():
    """Each test starts with empty Dynamo caches, no Kiln records and a fixed seed."""
    torch._dynamo.reset()
    kiln.reset()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()
