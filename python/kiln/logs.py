"""The ``kiln`` logger and KILN_LOG.

Kiln logs through ``logging.getLogger("kiln")``, like PyTorch's own
components (``torch._dynamo``, ``torch._inductor``) log through theirs, so
an application's logging configuration applies to it. KILN_LOG sets the
logger's level from the environment, as TORCH_LOGS does for PyTorch:

    KILN_LOG=info    one line per compiled graph: ops, kernels, fallbacks,
                     compile time, cache hit or miss
    KILN_LOG=debug   also the pass pipeline and each graph's stage times
    KILN_LOG=warning the default: fallbacks (one warning per graph) and
                     compile failures
    KILN_LOG=error   silent: Kiln logs nothing at error (a compile that
                     cannot go on raises instead)

Where the application has configured no handler when Kiln is imported,
records go to stderr, prefixed "[kiln]"; otherwise they go to the
application's handlers.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("kiln")

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

_handler: logging.Handler | None = None


def configure_from_env(value: str | None = None) -> int | None:
    """Apply KILN_LOG (or `value`): the kiln logger's level and a stderr
    handler. Returns the level set, or None when KILN_LOG is unset or empty,
    which leaves the logger to the application. An unknown value is reported
    once, as a warning naming the accepted ones, and otherwise ignored: a
    typo in an environment variable must not stop a training run."""
    global _handler
    value = os.environ.get("KILN_LOG", "") if value is None else value
    name = value.strip().lower()
    if not name:
        return None
    level = LEVELS.get(name)
    if level is None:
        log.warning("KILN_LOG=%r is not a level; use one of %s", value, ", ".join(LEVELS))
        return None
    log.setLevel(level)
    if _handler is None and not logging.getLogger().handlers:
        _handler = logging.StreamHandler()
        _handler.setFormatter(logging.Formatter("[kiln] %(levelname)s %(message)s"))
        log.addHandler(_handler)
        # A root handler added later would print each record a second time.
        log.propagate = False
    return level
