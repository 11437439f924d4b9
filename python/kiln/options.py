"""Backend options: torch.compile(..., options={...}) over KILN_* environment variables."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Mapping

TARGETS = ("cpu",)
FALLBACKS = ("eager", "error")

# option name -> environment variable that sets it when the options dict does not.
ENV_VARS = {
    "target": "KILN_TARGET",
    "fallback": "KILN_FALLBACK",
    "dump_dir": "KILN_DUMP_DIR",
}


@dataclass(frozen=True)
class KilnOptions:
    """How Kiln compiles a graph.

    target:   device the kernels are compiled for; one of TARGETS.
    fallback: "eager" runs ops Kiln cannot compile in PyTorch (with one warning
              per op and source line); "error" raises kiln.UnsupportedOpError.
    dump_dir: when set, every compiled graph writes its FX code, graph JSON,
              MLIR stages, kernel IR, artifact and a summary under this folder.
    """

    target: str = "cpu"
    fallback: str = "eager"
    dump_dir: str | None = None

    def __post_init__(self) -> None:
        _check_choice("target", self.target, TARGETS)
        _check_choice("fallback", self.fallback, FALLBACKS)
        if self.dump_dir is not None:
            if not isinstance(self.dump_dir, (str, os.PathLike)):
                raise ValueError(
                    f"kiln option 'dump_dir' must be a path or None, got {self.dump_dir!r}"
                )
            # Normalise PathLike to str so options compare and print simply.
            object.__setattr__(self, "dump_dir", os.fspath(self.dump_dir) or None)

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
            try:
                values[name] = raw
                cls(**{name: raw})  # validate alone so the error names the variable
            except ValueError as err:
                raise ValueError(f"environment variable {ENV_VARS[name]}: {err}") from None
        return cls(**values)


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(
            f"kiln option {name!r} got {value!r}; valid values are "
            + ", ".join(repr(c) for c in choices)
        )
