"""The model zoo (kiln.testing.zoo) on the Vulkan target, on lavapipe in CI.

Every model at both input sizes (the large ones in the slow tier), and under
dynamic=True across three sizes,
compiles with fallback="error", matches eager within the CPU target's
tolerances, and runs its kernels on the Vulkan device (asserted from the
compile records and the executables); every kernel it produces passes
spirv-val.
"""

from __future__ import annotations

import functools

import pytest
import torch

import kiln
from kiln.testing.zoo import SIZES, ZOO, ZooModel, build
from kiln_test_utils import (assert_ran_on_vulkan, resized_inputs, spirv_tools_missing,
                             validate_spirv_kernels)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.device("vulkan"),
    pytest.mark.filterwarnings("ignore:Dynamo detected a call to a `functools.lru_cache`"),
]

# test_zoo.py's, the CPU target's.
RTOL, ATOL = 1e-4, 1e-5


@functools.cache
def zoo_model(name: str) -> ZooModel:
    return build(name)


def _compiled(model: torch.nn.Module, **kwargs):
    options = {"target": "vulkan", "fallback": "error", **kwargs.pop("options", {})}
    return torch.compile(model, backend="kiln", options=options, **kwargs)


# The large inputs in the slow tier: the dynamic-size test below runs every
# model at three sizes on Vulkan in the gating tier, test_zoo.py both sizes on
# the CPU.
_SIZES = [pytest.param(size, marks=pytest.mark.slow) if size == "large" else size for size in SIZES]


@pytest.mark.parametrize("size", _SIZES)
@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_model_on_vulkan(name, size, tmp_path):
    model, make_inputs = zoo_model(name)
    inputs = make_inputs(size)
    kiln.reset()
    with torch.no_grad():
        expected = model(*inputs)
        actual = _compiled(model, dynamic=False, options={"dump_dir": str(tmp_path)})(*inputs)
    torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL)
    assert_ran_on_vulkan()
    if spirv_tools_missing() is None:
        validate_spirv_kernels(tmp_path)


def _is_tokens(t: torch.Tensor) -> bool:
    return t.dim() == 2 and not t.is_floating_point()


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_model_on_vulkan_with_dynamic_sizes(name):
    """One compile with a symbolic batch (and sequence length, for token
    inputs) serves three input sizes. Only those are marked dynamic: the
    convolutions want their image sizes static."""
    model, make_inputs = zoo_model(name)
    template = make_inputs("large")
    calls = [resized_inputs(template, batch, seq) for batch, seq in ((2, 16), (3, 16), (2, 11))]
    kiln.reset()
    torch._dynamo.reset()
    compiled = _compiled(model)
    with torch.no_grad():
        for inputs in calls:
            for t in inputs:
                torch._dynamo.mark_dynamic(t, 0)
                if _is_tokens(t):
                    torch._dynamo.mark_dynamic(t, 1)
            torch.testing.assert_close(compiled(*inputs), model(*inputs), rtol=RTOL, atol=ATOL,
                                       msg=lambda m: f"{m}\nshapes {[t.shape for t in inputs]}")
    records = assert_ran_on_vulkan()
    assert len(records) == 1 and records[0].symbols, records
