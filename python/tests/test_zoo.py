"""The model zoo (kiln.testing.zoo) under Kiln.

Every model, at both input sizes, matches eager with the default
fallback="eager" and runs some of its work in Kiln kernels. With
fallback="error" a model compiles only when Kiln supports every op it
needs; BLOCKED lists the ops that stop each model today, and the test checks
the list is exact, so it shrinks as Kiln grows and an entry must go the day
its model compiles completely.
"""

from __future__ import annotations

import functools

import pytest
import torch

import kiln
from kiln.testing.zoo import SIZES, ZOO, ZooModel, build
from kiln_test_utils import compile_kiln, unwrap_backend_error

pytestmark = [
    pytest.mark.usefixtures("kiln_ext"),
    # transformers' is_fsdp_managed_module; harmless under Dynamo.
    pytest.mark.filterwarnings("ignore:Dynamo detected a call to a `functools.lru_cache`"),
]

RTOL, ATOL = 1e-4, 1e-5

POOLS = ("aten.avg_pool2d.default", "aten.max_pool2d_with_indices.default")

# model -> the ATen ops Kiln cannot compile in it, with fallback="error".
# Models not listed compile completely.
BLOCKED: dict[str, tuple[str, ...]] = {
    "swin": ("aten.as_strided.default",),  # AdaptiveAvgPool1d(1) in the pooler
    "resnet": ("aten.max_pool2d_with_indices.default",),
    "efficientnet": ("aten.avg_pool2d.default",),
    "cnn": ("aten.max_pool2d_with_indices.default",),
    "unet": POOLS,
}


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


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", sorted(BLOCKED))
def test_zoo_matches_eager(name, size):
    """Models that do not compile completely yet: the parts Kiln compiles
    (with the rest in eager) still match eager. The others are checked with
    fallback="error" below."""
    actual, expected = _compiled_and_eager(name, size)
    records = kiln.compile_records()  # before anything resets Dynamo
    torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL)
    assert records, "Kiln compiled no graph"
    assert sum(r.kernel_count for r in records) > 0, records
    # Unsupported ops fall back by design; a supported op that fails to
    # compile is a compiler bug.
    errors = [e for r in records for e in r.errors]
    assert not errors, "\n".join(errors)


def _strict_params() -> list:
    params = []
    for name in ZOO:
        marks = []
        if name in BLOCKED:
            reason = "blocked by " + ", ".join(BLOCKED[name])
            marks.append(pytest.mark.xfail(strict=True, raises=kiln.UnsupportedOpError, reason=reason))
        params += [pytest.param(name, size, marks=marks) for size in SIZES]
    return params


@pytest.mark.parametrize("name, size", _strict_params())
def test_zoo_compiles_completely(name, size):
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
