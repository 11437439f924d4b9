"""Backend options: torch.compile(..., options={...}) over KILN_* environment variables."""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Union

# "cpu" is this machine's CPU; "cpu:<name>" an x86-64 level ("cpu:x86-64-v3"),
# a CPU ("cpu:znver4") or AArch64 ("cpu:aarch64:neoverse-n1") for artifacts
# that run elsewhere. The compiler's target registry is the one parser of
# these names (kiln._C.compiler.target_info); these are examples.
TARGETS = ("cpu", "cpu:x86-64-v2", "cpu:x86-64-v3", "cpu:x86-64-v4")
FALLBACKS = ("eager", "error")

# option name -> environment variable that sets it when the options dict does not.
ENV_VARS = {
    "target": "KILN_TARGET",
    "fallback": "KILN_FALLBACK",
    "dump_dir": "KILN_DUMP_DIR",
    "dump_inputs": "KILN_DUMP_INPUTS",
    "force_eager": "KILN_FORCE_EAGER",
    "cache": "KILN_CACHE",
    "cache_dir": "KILN_CACHE_DIR",
    "pack_weights": "KILN_PACK_WEIGHTS",
}

# force_eager: op names ("aten.mm" or "aten.mm.default"), FX node names, or a
# predicate on the ATen FX node.
ForceEager = Union[tuple[str, ...], Callable[[Any], bool], None]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class KilnOptions:
    """How Kiln compiles a graph.

    target:      what the kernels are compiled for: "cpu" (this machine's CPU,
                 every feature it has), an x86-64 level ("cpu:x86-64-v2",
                 "cpu:x86-64-v3" for AVX2, "cpu:x86-64-v4" for AVX-512) or a
                 CPU by LLVM's name ("cpu:skylake-avx512", "cpu:znver4"), for
                 artifacts and caches that must run on other machines.
    fallback:    "eager" runs ops Kiln cannot compile in PyTorch (with one warning
                 per graph, naming each op and source line once per process);
                 "error" raises kiln.UnsupportedOpError.
    dump_dir:    when set, every compiled graph writes its FX code, graph JSON,
                 MLIR stages, kernel IR, artifact and a summary under this folder.
    dump_inputs: also save each graph's inputs (inputs.npz) and eager outputs
                 (outputs.npz) in its dump folder on its first call, so it can be
                 replayed offline; needs dump_dir.
    force_eager: for testing partition boundaries: ops that run in PyTorch even
                 though Kiln supports them. Op names ("aten.mm" or
                 "aten.mm.default") or ATen FX node names, as a list (the
                 variable: comma-separated), or a predicate on the FX node.
                 Forced ops are not errors under fallback="error".
    cache:       keep compiled artifacts in an on-disk cache and load them
                 instead of compiling again (KILN_CACHE=0 turns it off). A
                 graph compiled with dump_dir set is always compiled (so the
                 dump has every stage), and stored.
    cache_dir:   the cache's folder; default $XDG_CACHE_HOME/kiln, else
                 ~/.cache/kiln. `kiln-cache` lists and clears it.
    pack_weights: matmuls whose right-hand side is a module's parameter read
                 it from a copy packed into the microkernel's panel layout,
                 made on the first call and again only when the parameter
                 changes: replaced, or updated in place (an optimizer step,
                 load_state_dict, any in-place op), which bumps its version
                 counter. Writes through `.data` bypass that counter (as they
                 bypass autograd's checks): after such a write, call
                 torch._dynamo.reset() or set this to False. The packed
                 copies take as much memory again as the packed weights.
                 Inference graphs only (no_grad, or no input requiring
                 grad): in training the parameters change every step.
    """

    target: str = "cpu"
    fallback: str = "eager"
    dump_dir: str | None = None
    dump_inputs: bool = False
    force_eager: ForceEager = None
    cache: bool = True
    cache_dir: str | None = None
    pack_weights: bool = True

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _check_field(f.name, getattr(self, f.name))
        for name in ("dump_dir", "cache_dir"):
            if getattr(self, name) is not None:
                # Normalise PathLike to str so options compare and print simply.
                object.__setattr__(self, name, os.fspath(getattr(self, name)) or None)
        if isinstance(self.force_eager, (list, tuple, set, frozenset)):
            object.__setattr__(self, "force_eager", tuple(sorted(self.force_eager)) or None)
        if self.dump_inputs and self.dump_dir is None:
            raise ValueError(
                "kiln option 'dump_inputs' needs 'dump_dir' (or KILN_DUMP_DIR): "
                "the inputs are saved in each graph's dump folder"
            )

    @classmethod
    def from_dict(
        cls,
        options: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> "KilnOptions":
        """Options from the torch.compile ``options`` dict, falling back to KILN_* variables."""
        env = os.environ if env is None else env
        if options is None:
            options = {}
        if not isinstance(options, Mapping):
            raise ValueError(f"kiln options must be a dict, got {type(options).__name__}")
        valid = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(str(k) for k in options if k not in valid)
        if unknown:
            raise ValueError(
                f"unknown kiln option(s) {', '.join(map(repr, unknown))}; "
                f"valid options are {', '.join(valid)}"
            )
        values: dict[str, Any] = {}
        for name in valid:
            if name in options:
                values[name] = options[name]
                continue
            raw = env.get(ENV_VARS[name])
            if raw is None or raw == "":
                continue
            try:  # check alone so the error names the variable
                values[name] = _parse_env(name, raw)
                _check_field(name, values[name])
            except ValueError as err:
                raise ValueError(f"environment variable {ENV_VARS[name]}: {err}") from None
        return cls(**values)


def _check_field(name: str, value: Any) -> None:
    if name == "target":
        _check_target_name(value)
    elif name == "fallback":
        _check_choice(name, value, FALLBACKS)
    elif name in ("dump_dir", "cache_dir"):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ValueError(f"kiln option {name!r} must be a path or None, got {value!r}")
    elif name in ("dump_inputs", "cache", "pack_weights"):
        if not isinstance(value, bool):
            raise ValueError(f"kiln option {name!r} must be True or False, got {value!r}")
    elif name == "force_eager":
        names_ok = isinstance(value, (list, tuple, set, frozenset)) and all(
            isinstance(v, str) for v in value)
        if not (value is None or callable(value) or names_ok):
            raise ValueError(
                "kiln option 'force_eager' must be a list of op or node names or a "
                f"predicate on FX nodes, got {value!r}")


def _check_target_name(value: Any) -> None:
    """Asks the compiler's target registry, the one parser of target names;
    its error lists the names it accepts."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"kiln option 'target' must be a target name such as 'cpu' or "
                         f"'cpu:x86-64-v3', got {value!r}")
    error = _registry_error(value)
    if error:
        raise ValueError(f"kiln option 'target': {error}")


@functools.lru_cache(maxsize=None)
def _registry_error(name: str) -> str | None:
    """The registry's verdict on a name, asked once per name per process
    (options are parsed for every graph Dynamo hands the backend)."""
    try:
        from . import _C
    except ImportError:
        return None  # compiling will say why the extension is missing
    try:
        _C.compiler.target_info(name)
    except ValueError as err:
        return str(err)
    return None


def _parse_env(name: str, raw: str) -> Any:
    if name == "force_eager":
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    if name not in ("dump_inputs", "cache", "pack_weights"):
        return raw
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ValueError(f"kiln option {name!r} got {raw!r}; use 1, true, yes, on, 0, false, no or off")


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(
            f"kiln option {name!r} got {value!r}; valid values are "
            + ", ".join(repr(c) for c in choices)
        )
