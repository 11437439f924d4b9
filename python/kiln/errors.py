"""Exceptions raised by the kiln package."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from kiln.partition import Unsupported


class KilnError(Exception):
    """Base class of errors raised by the kiln Python package."""


class SerializeError(KilnError):
    """An FX graph holds something the graph JSON cannot express."""


class UnsupportedOpError(KilnError):
    """fallback="error" and the graph holds ops Kiln cannot compile.

    The first offender is exposed as ``op``, ``file``, ``line``, ``code`` and
    ``reason``; all of them are in ``unsupported``.

    Dynamo wraps every exception a backend raises in
    ``torch._dynamo.exc.BackendCompilerFailed``; the original is its
    ``inner_exception``.
    """

    def __init__(self, unsupported: Sequence["Unsupported"]):
        if not unsupported:
            raise ValueError("UnsupportedOpError needs at least one unsupported node")
        self.unsupported = list(unsupported)
        first = self.unsupported[0]
        self.op = first.op
        self.reason = first.reason
        self.file = first.loc.file if first.loc else None
        self.line = first.loc.line if first.loc else None
        self.code = first.loc.code if first.loc else None
        lines = [f"Kiln cannot compile {first.describe()}"]
        for other in self.unsupported[1:]:
            lines.append(f"  also: {other.describe()}")
        lines.append(
            "(fallback='error'; use fallback='eager' to run unsupported ops in PyTorch)"
        )
        super().__init__("\n".join(lines))
