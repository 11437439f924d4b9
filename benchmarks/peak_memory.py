"""Peak memory of one call, measured the same way for every backend.

Linux only: free heap memory is first handed back to the OS (glibc's
malloc_trim), the resident set's high-water mark is reset (writing 5 to
/proc/self/clear_refs), the call runs, and the peak is the high-water mark
(VmHWM) less the resident set before (VmRSS). That counts whatever the call
allocated and touched, whoever allocated it (ATen, Inductor's generated code,
Kiln's runtime and kernels), and frees nothing it keeps. Memory a backend
holds between calls is resident before the call and not counted; add it
(kiln.held_memory() for Kiln's arenas).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any, Callable

_libc = None


def _trim() -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    try:
        _libc.malloc_trim(0)
    except AttributeError:  # not glibc
        pass


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"{field} not in /proc/self/status")


def supported() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        _status_kb("VmHWM")
        return True
    except OSError:
        return False


def peak_call_bytes(fn: Callable[..., Any], inputs: tuple, calls: int = 3) -> int | None:
    """The least peak over `calls` calls (the others only add noise), or None
    where the kernel offers no way to measure it."""
    if not supported():
        return None
    best = None
    for _ in range(calls):
        _trim()
        before = _status_kb("VmRSS")
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        out = fn(*inputs)
        peak = _status_kb("VmHWM")
        del out
        grown = max(0, peak - before) * 1024
        best = grown if best is None else min(best, grown)
    return best
