"""Shared fixtures.

Tests that need the compiled extension declare it once per module:

    pytestmark = pytest.mark.usefixtures("kiln_ext")

`pytest --kiln-fake-ext` (or KILN_TEST_FAKE_EXT=1) runs those tests against
tests/fake_ext.py, a reference interpreter of the graph JSON, instead of
kiln._C.
"""

from __future__ import annotations

import os
import sys

import pytest
import torch

# The tests read Kiln's records through pytest's caplog, which a KILN_LOG
# handler of Kiln's own would bypass; test_logging.py sets it per process.
os.environ.pop("KILN_LOG", None)

import kiln  # noqa: E402

# Tests compile for real, so that their compile records say what the compiler
# did; test_cache.py turns the on-disk cache on, in temporary folders.
os.environ["KILN_CACHE"] = "0"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kiln-fake-ext",
        action="store_true",
        default=os.environ.get("KILN_TEST_FAKE_EXT") == "1",
        help="run end-to-end tests against tests/fake_ext.py instead of kiln._C",
    )


@pytest.fixture(scope="module")
def kiln_ext(request: pytest.FixtureRequest):
    """kiln._C, or the fake extension under --kiln-fake-ext."""
    if request.config.getoption("--kiln-fake-ext"):
        import fake_ext

        fake = fake_ext.as_module()
        with pytest.MonkeyPatch.context() as mp:
            mp.setitem(sys.modules, "kiln._C", fake)
            mp.setattr(kiln, "_C", fake, raising=False)
            yield fake
        return
    from kiln import _C

    yield _C


@pytest.fixture
def uses_fake_ext(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--kiln-fake-ext"))


@pytest.fixture(autouse=True)
def _fresh_state():
    """Each test starts with empty Dynamo caches, no Kiln records and a fixed seed."""
    torch._dynamo.reset()
    kiln.reset()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()
