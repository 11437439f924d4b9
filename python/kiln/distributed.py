"""The "kiln" process group backend: torch.distributed on the kiln device.

    import kiln.device  # registers the device and this backend
    dist.init_process_group("kiln")                 # kiln and CPU tensors
    dist.init_process_group("cpu:gloo,kiln:kiln")   # the same, spelled out

Collectives go through gloo (made here, over the same store): on the CPU
driver gloo reads and writes the kiln tensors' memory directly (no copies);
on a GPU driver through host copies, the results uploaded when the
collective completes. DDP, FSDP2, DTensor and DeviceMesh("kiln", ...) use it
like any backend. The C++ half is python/src/device/EagerCollectives.cpp.
"""

from __future__ import annotations

import datetime
from typing import Any

import torch
import torch.distributed as dist

from kiln import _C

BACKEND = "kiln"


def _create_backend(store: Any, rank: int, world_size: int, timeout: datetime.timedelta) -> Any:
    """register_backend's creator: the kiln backend over a gloo group of the
    same ranks (gloo's own timeout, so a dead peer fails the others)."""
    gloo = dist.ProcessGroupGloo(store, rank, world_size, timeout)
    return _C.device.collective_backend(gloo)


def register() -> None:
    """Makes "kiln" a torch.distributed backend for kiln and CPU tensors
    (idempotent; kiln.device calls it)."""
    if not dist.is_available():
        return
    if BACKEND in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND, _create_backend, devices=["kiln", "cpu"])


def stats() -> dict[str, dict[str, int]]:
    """Per collective the kiln groups of this process ran: {"calls": n,
    "bytes": what this rank contributed (its inputs)}."""
    return {name: {"calls": calls, "bytes": nbytes}
            for name, (calls, nbytes) in _C.device.collective_counts().items()}


def reset_stats() -> None:
    _C.device.reset_collective_counts()


__all__ = ["BACKEND", "register", "reset_stats", "stats"]
