"""The model zoo (kiln.testing.zoo) under Kiln.

Every model, at both input sizes, compiles completely with fallback="error"
and matches eager. A model that a new zoo entry or a regression leaves
blocked goes into BLOCKED with the ops that stop it: it must then still match
eager with the default fallback="eager", and the test checks the list is
exact, so an entry must go the day its model compiles completely.
"""

from __future__ import annotations

import functools

import pytest
import torch

import kiln
from kiln.testing.zoo import SIZES, ZOO, ZooModel, build
from kiln_test_utils import compile_kiln, unwrap_backend_error

pytestmark = [
    pytest.mark.e2e,
    # transformers' is_fsdp_managed_module; harmless under Dynamo.
    pytest.mark.filterwarnings("ignore:Dynamo detected a call to a `functools.lru_cache`"),
]

RTOL, ATOL = 1e-4, 1e-5

# model -> the ATen ops Kiln cannot compile in it, with fallback="error".
# Models not listed compile completely.
BLOCKED: dict[str, tuple[str, ...]] = {}


@functools.cache
def zoo_model(name: str) -> ZooModel:
    return build(name)


def _compiled_and_eager(name: str, size: str, **options) -> tuple[torch.Tensor, torch.Tensor]:
    model, make_inputs = zoo_model(name)
    inputs = make_inputs(size)
    with torch.no_grad():
        expected = model(*inputs)
        actual = compile_kiln(model, **options)(*inputs)
    return actual, expected


def _check_partial_compile(name: str, size: str) -> None:
    """A blocked model: the parts Kiln compiles (the rest in eager) match
    eager, and a supported op that fails to compile is a compiler bug."""
    actual, expected = _compiled_and_eager(name, size)
    records = kiln.compile_records()  # before anything resets Dynamo
    torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL)
    assert records and sum(r.kernel_count for r in records) > 0, records
    errors = [e for r in records for e in r.errors]
    assert not errors, "\n".join(errors)


def _strict_params() -> list:
    params = []
    for name in ZOO:
        marks = []
        if name in BLOCKED:
            reason = "blocked by " + ", ".join(BLOCKED[name])
            marks.append(pytest.mark.xfail(strict=True, raises=kiln.UnsupportedOpError, reason=reason))
        # The small size gates; the large ones run nightly.
        params += [pytest.param(name, size, marks=marks + ([pytest.mark.slow] if size != "small" else []))
                   for size in SIZES]
    return params


@pytest.mark.parametrize("name, size", _strict_params())
def test_zoo_compiles_completely(name, size):
    if name in BLOCKED:
        _check_partial_compile(name, size)
    try:
        actual, expected = _compiled_and_eager(name, size, fallback="error")
    except Exception as wrapped:
        err = unwrap_backend_error(wrapped)
        if not isinstance(err, kiln.UnsupportedOpError):
            raise
    else:
        err = None
    if err is not None:
        blocking = sorted({u.op for u in err.unsupported})
        listed = sorted(BLOCKED.get(name, ()))
        # An AssertionError is not the exception the xfail expects: this fails.
        assert blocking == listed, (
            f"update BLOCKED[{name!r}]: Kiln is now blocked by {blocking}, the table says {listed}"
        )
        raise err
    records = kiln.compile_records()
    torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL)
    assert records and all(r.status == "compiled" for r in records), records
    assert sum(r.kernel_count for r in records) > 0
