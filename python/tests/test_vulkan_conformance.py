"""OpInfo conformance on the Vulkan target, the CI subset: CI_OPS in float32,
up to 3 samples each, in a worker compiling with target="vulkan". No sample
may mismatch or crash, and a pair the CPU target compiles must compile here
too unless the Vulkan target refuses it by name ("not supported by the
target"). The full run and its report (python/tests/conformance/report-vulkan.md):

    python -m kiln.testing.conformance --dtypes float32 --target vulkan --jobs 2 \\
        --max-samples 200 --report python/tests/conformance/report-vulkan.md
"""

from __future__ import annotations

import os

import pytest

from kiln.compiler import TARGET_UNSUPPORTED
from kiln.testing import conformance

pytestmark = [pytest.mark.e2e, pytest.mark.device("vulkan")]

PAIRS = [op for op in conformance.select(conformance.CI_OPS, ["float32"])[0]
         if "float32" in op.dtypes]


@pytest.fixture(scope="module")
def vulkan_worker():
    """One worker for the module; its processes inherit the target."""
    before = os.environ.get(conformance.TARGET_ENV)
    os.environ[conformance.TARGET_ENV] = "vulkan"
    w = conformance.Worker()
    yield w
    w.close()
    if before is None:
        os.environ.pop(conformance.TARGET_ENV, None)
    else:
        os.environ[conformance.TARGET_ENV] = before


@pytest.fixture(scope="module")
def known():
    return conformance.load_known()


@pytest.mark.parametrize("op", PAIRS, ids=lambda op: op.name)
def test_opinfo_on_vulkan(vulkan_worker, known, op):
    result = vulkan_worker.run(op.name, "float32", conformance.CI_MAX_SAMPLES, op.compare, op.core)
    detail = f"sample {result.sample} ({result.desc}): {result.reason}"
    assert result.category not in ("mismatch", "crash"), detail
    if result.category == "fallback" and result.key not in known:
        assert TARGET_UNSUPPORTED in result.reason, "the CPU target compiles it: " + detail
