"""Short soak and leak runs (benchmarks/soak.py runs the long ones): calls
of one compiled model and graphs compiled and discarded leave resident
memory, open file descriptors and mapped kernel libraries flat."""

from __future__ import annotations

import pytest

from kiln.testing.soak import soak_calls, soak_compiles

# Kernel libraries in memfds: the CPU device.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.device("cpu")]

MB = 1 << 20


def test_many_calls_keep_memory_descriptors_and_libraries_flat():
    result = soak_calls(5000, checkpoints=5)
    assert result.rss_growth_bytes() < 8 * MB, result.summary()
    assert result.last.open_fds <= result.first.open_fds, result.summary()
    assert result.last.kernel_libraries == result.first.kernel_libraries == 1, result.summary()


def test_discarded_graphs_unload_their_kernel_libraries():
    result = soak_compiles(30, checkpoints=3)
    # Every compiled graph was dropped: none of their libraries stays mapped,
    # no descriptor stays open (a memfd per library).
    assert result.last.kernel_libraries <= result.first.kernel_libraries, result.summary()
    assert result.last.open_fds <= result.first.open_fds, result.summary()
    assert result.rss_growth_bytes() < 48 * MB, result.summary()
