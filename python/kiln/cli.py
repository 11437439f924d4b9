"""What Kiln's Python commands (kiln-inspect, kiln-cache, kiln-import) share."""

from __future__ import annotations

import signal


def as_command() -> None:
    """Behave like a Unix command when writing into a closed pipe
    (`kiln-cache list | head`): end quietly, not with a BrokenPipeError
    traceback. Only for a real command line: a test calling main() keeps
    Python's handling."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
