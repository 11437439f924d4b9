"""Failures while a compiled graph runs surface as Python exceptions with
context, and leave the process able to go on."""

from __future__ import annotations

import pytest
import torch

import kiln

pytestmark = pytest.mark.e2e


def test_an_allocation_that_fails_is_a_memory_error_naming_the_size():
    """A 4 TiB output cannot be allocated: MemoryError with the bytes asked
    for, not an abort, and the next call of another graph still works."""
    def huge(x):
        return x.expand(1 << 20, 1 << 20) * 2

    compiled = torch.compile(huge, backend="kiln", dynamic=False, options={"fallback": "error"})
    with pytest.raises(MemoryError, match=r"4398046511104 bytes"):
        compiled(torch.ones(1, 1 << 20))
    assert kiln.compile_records()[0].status == "compiled"
    small = torch.compile(lambda x: x * 3, backend="kiln", options={"fallback": "error"})
    assert torch.equal(small(torch.ones(3)), torch.full((3,), 3.0))
