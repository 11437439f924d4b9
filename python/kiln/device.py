"""torch.device("kiln"): eager PyTorch on Kiln's runtime.

    import kiln.device

    model = model.to("kiln")        # was: model.to("cuda")
    x = torch.randn(8, 16, device="kiln")

Importing this module registers the device with PyTorch (PrivateUse1, renamed
"kiln"), makes `torch.kiln` this module, and adds `Tensor.kiln()`,
`Module.kiln()` and the like. From then on `torch.accelerator` is "kiln".
Only this import does it: `backend="kiln"` alone, or `import kiln`, leaves the
process's accelerator alone.

Devices kiln:0..N-1 are virtual devices on one runtime driver: the CPU
driver, or the one $KILN_DEVICE names ("vulkan"; `driver()` tells which). N
is $KILN_NUM_DEVICES, else torchrun's $LOCAL_WORLD_SIZE, else 1. Their memory
is the driver's, counted per device (`memory_allocated`,
`max_memory_allocated`, `reset_peak_memory_stats`, and torch.accelerator's
memory functions), and their kernels are compiled for it.

Ops the device has no Kiln kernel for run ATen's CPU kernel on the kiln
tensors' memory: without copies on the CPU driver, through host copies on a
GPU driver. Each such call is counted, per op, in `stats()`;
$KILN_EAGER_FALLBACK=warn warns once per op, =error raises naming the op (or
call `set_fallback_policy`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import torch

from kiln import _C

__all__ = [
    "Event",
    "Stream",
    "current_device",
    "current_stream",
    "device",
    "device_count",
    "driver",
    "fallback_policy",
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "memory_allocated",
    "memory_stats",
    "reset_peak_memory_stats",
    "reset_stats",
    "seed",
    "set_device",
    "set_fallback_policy",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stats",
    "stream",
    "synchronize",
]

_NAME = "kiln"


def _device_count_from_environment() -> int:
    for variable in ("KILN_NUM_DEVICES", "LOCAL_WORLD_SIZE"):
        text = os.environ.get(variable)
        if text is None:
            continue
        try:
            count = int(text)
        except ValueError:
            raise ValueError(f"${variable} must be a whole number of kiln devices; got {text!r}") from None
        if not 1 <= count <= _C.device.max_devices:
            raise ValueError(f"${variable} must be in [1, {_C.device.max_devices}]; got {count}")
        return count
    return 1


# The runtime drivers the kiln device's memory and kernels may live on.
_DRIVERS = ("cpu", "vulkan", "cuda")


def _driver_from_environment() -> str:
    name = os.environ.get("KILN_DEVICE", "").strip().lower() or "cpu"
    if name not in _DRIVERS:
        raise ValueError(f"$KILN_DEVICE must be one of {', '.join(_DRIVERS)}; got {name!r}")
    return name


def _index(device: Any = None) -> int:
    """The device index `device` (None, an int, "kiln", "kiln:1" or a
    torch.device) names; None and "kiln" name the current device."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != _NAME:
        raise ValueError(f"expected a kiln device, got {device}")
    return current_device() if device.index is None else device.index


# --- Devices ---------------------------------------------------------------


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return _C.device.is_registered()


def driver() -> str:
    """The runtime driver the kiln devices' memory and kernels are on:
    "cpu" or "vulkan" ($KILN_DEVICE)."""
    return _C.device.driver()


def _lazy_init() -> None:
    """Nothing to do: the device is ready once this module is imported."""


# Read by torch.utils.checkpoint (as torch.cuda._initialized): only then does it
# save and restore the device's generator around a recomputed forward, which
# must draw the same dropout masks.
_initialized = True


def _is_in_bad_fork() -> bool:
    # The CPU driver keeps no state a forked child cannot use.
    return False


def device_count() -> int:
    return _C.device.device_count()


def current_device() -> int:
    return _C.device.current_device()


def set_device(device: Any) -> None:
    _C.device.set_device(_index(device))


def synchronize(device: Any = None) -> None:
    """Waits for the work issued to the device (the CPU driver runs it as
    it is issued, so this only reports a failure it saw)."""
    _index(device)
    _C.device.synchronize()


class device:  # noqa: N801 - the name torch's device modules use
    """Context manager that makes `index` the current kiln device."""

    def __init__(self, index: Any) -> None:
        self.index = _index(index)
        self.previous = -1

    def __enter__(self) -> None:
        self.previous = current_device()
        set_device(self.index)

    def __exit__(self, *exc: object) -> None:
        set_device(self.previous)


# --- Streams and events (one in-order queue per device) ----------------------


class Stream(torch.Stream):
    """A kiln stream. The CPU driver runs work as it is issued, so streams
    order nothing yet; they exist so that code written for CUDA streams
    (FSDP2, DataLoader pinning) runs unchanged."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> "Stream":
        if kwargs:
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=torch.device(_NAME, _index(device)), priority=priority)


def Event(enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> torch.Event:  # noqa: N802
    """An event on the current kiln device (a torch.Event: PyTorch's event
    methods accept only that exact type, so this is a factory, not a
    subclass). Complete when recorded; elapsed_time measures host time."""
    return torch.Event(
        device=torch.device(_NAME, current_device()), enable_timing=enable_timing, blocking=blocking,
        interprocess=interprocess,
    )


def current_stream(device: Any = None) -> torch.Stream:
    return torch.accelerator.current_stream(torch.device(_NAME, _index(device)))


def set_stream(stream: torch.Stream) -> None:
    torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(stream: torch.Stream | None):
    if stream is None:
        yield
        return
    previous = current_stream(stream.device)
    set_stream(stream)
    try:
        yield
    finally:
        set_stream(previous)


# --- Random numbers ----------------------------------------------------------


def default_generator(device: Any = None) -> torch.Generator:
    """The device's default generator: a counter-based (seed, offset) pair,
    16 bytes of state."""
    return _C.device.default_generator(_index(device))


def manual_seed(seed: int) -> None:
    default_generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for index in range(device_count()):
        default_generator(index).manual_seed(int(seed))


def seed() -> int:
    return default_generator().seed()


def seed_all() -> None:
    seed_value = default_generator(0).seed()
    for index in range(1, device_count()):
        default_generator(index).manual_seed(seed_value)


def initial_seed() -> int:
    return default_generator().initial_seed()


def get_rng_state(device: Any = _NAME) -> torch.Tensor:
    return default_generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = _NAME) -> None:
    default_generator(device).set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(index) for index in range(device_count())]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


# --- Memory --------------------------------------------------------------------


def memory_stats(device: Any = None) -> dict[str, Any]:
    return torch.accelerator.memory_stats(torch.device(_NAME, _index(device)))


def memory_allocated(device: Any = None) -> int:
    return torch.accelerator.memory_allocated(torch.device(_NAME, _index(device)))


def max_memory_allocated(device: Any = None) -> int:
    return torch.accelerator.max_memory_allocated(torch.device(_NAME, _index(device)))


def memory_reserved(device: Any = None) -> int:
    return torch.accelerator.memory_reserved(torch.device(_NAME, _index(device)))


def max_memory_reserved(device: Any = None) -> int:
    return torch.accelerator.max_memory_reserved(torch.device(_NAME, _index(device)))


def reset_peak_memory_stats(device: Any = None) -> None:
    torch.accelerator.reset_peak_memory_stats(torch.device(_NAME, _index(device)))


def empty_cache() -> None:
    """Frees the memory a GPU driver's kiln device keeps for reuse (on the
    CPU driver freed memory goes back at once)."""
    torch.accelerator.empty_cache()


# --- Autocast ------------------------------------------------------------------


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


# --- What ran where --------------------------------------------------------------


def stats() -> dict[str, Any]:
    """Op calls on kiln tensors since the last reset_stats(): `kernel`
    maps each op that ran a Kiln kernel to its calls, `fallback` each op that
    ran ATen's CPU kernel, `native` each of the device's own ops (allocation,
    views, copies); `*_calls` are the totals. `kernels_loaded` counts the
    Kiln kernels compiled or loaded so far, `refusals` the calls Kiln could
    not compile a kernel for (key: why), `declined` per op with a kernel the
    last reason a call of it ran ATen's kernel instead."""
    kernel = _C.device.kernel_calls()
    fallback = _C.device.fallback_calls()
    native = _C.device.native_calls()
    return {
        "kernel": kernel,
        "fallback": fallback,
        "native": native,
        "kernel_calls": sum(kernel.values()),
        "fallback_calls": sum(fallback.values()),
        "native_calls": sum(native.values()),
        "kernels_loaded": _C.device.kernels_loaded(),
        "refusals": _C.device.kernel_refusals(),
        "declined": _C.device.declined_calls(),
    }


def reset_stats() -> None:
    _C.device.reset_op_stats()


def set_fallback_policy(policy: str) -> None:
    """"allow" (the default: count), "warn" (warn once per op) or "error"
    (raise naming the op) for ops without a Kiln kernel."""
    _C.device.set_fallback_policy(policy)


def fallback_policy() -> str:
    return _C.device.fallback_policy()


# --- Inductor ----------------------------------------------------------------------

_INDUCTOR_NAMES = {
    "Scheduling": "Scheduling",
    "PythonWrapperCodegen": "KilnPythonWrapperCodegen",
    "CppWrapperCodegen": "CppWrapperCodegen",
    "WrapperFxCodegen": "WrapperFxCodegen",
}


def __getattr__(name: str) -> Any:
    # Inductor asks the device module for its code generation classes the
    # first time it compiles (torch.utils.backend_registration): resolved
    # lazily so that importing this module does not import Inductor.
    if name in _INDUCTOR_NAMES:
        if driver() != "cpu":
            # Not a RuntimeError: Inductor takes that for "no code generation
            # registered" and fails later with a bare KeyError.
            from kiln.errors import KilnError

            raise KilnError(
                f"Inductor compiles for the kiln device only on the CPU driver, whose memory is host "
                f"memory; this process's kiln device is on the {driver()} driver "
                f"(KILN_DEVICE={driver()}): use torch.compile(model, backend=\"kiln\")")
        from kiln import inductor_codegen

        return getattr(inductor_codegen, _INDUCTOR_NAMES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- Registration ----------------------------------------------------------------


def _register() -> None:
    name = torch._C._get_privateuse1_backend_name()
    if name not in ("privateuseone", _NAME):
        raise RuntimeError(
            f"cannot register the kiln device: this process already has a PrivateUse1 device named {name!r} "
            "(PyTorch allows one)"
        )
    _C.device.register(_device_count_from_environment(), _driver_from_environment())
    # Module.to("kiln") must keep parameters the same objects, or it unties
    # shared weights (GPT-2's embedding and head) and strands optimizers. It
    # assigns `param.data` only between "dense" backends, a list PrivateUse1
    # is not on, and otherwise makes new Parameters; with PyTorch's future
    # behaviour it swaps the tensors in place instead.
    torch.__future__.set_swap_module_params_on_conversion(True)
    # Eager kernels are compiled on first use: a build without the compiler
    # (KILN_ENABLE_COMPILER=OFF) runs every op through its fallbacks.
    if _C.compiler.available and os.environ.get("KILN_EAGER_KERNELS", "1").lower() not in (
            "0", "false", "no", "off"):
        from kiln.eager_kernels import compile_kernel_outside_dynamo, kernel_ops

        _C.device.register_kernels(kernel_ops(_C.compiler), compile_kernel_outside_dynamo)
    if name != _NAME:
        torch.utils.rename_privateuse1_backend(_NAME)
        torch._register_device_module(_NAME, sys.modules[__name__])
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )
    from kiln import distributed

    distributed.register()


_register()
