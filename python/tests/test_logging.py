"""The kiln logger's levels, as KILN_LOG sets them, in fresh processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SCRIPT = textwrap.dedent("""
    import torch

    def supported(x):
        return torch.relu(x @ x.t()) + 1

    def with_fallbacks(x):
        y = torch.special.bessel_j0(x) * 2
        z = torch.special.bessel_j1(y)
        return torch.relu(z) + y

    with torch.no_grad():
        torch.compile(supported, backend="kiln")(torch.randn(8, 8))
        torch.compile(with_fallbacks, backend="kiln")(torch.randn(8, 8))
    print("ok")
""")

INFO_LINE = re.compile(
    r"^\[kiln\] INFO (graph_\d+) \((\w+)\) (compiled|partitioned|eager): (\d+) ops?, "
    r"(\d+) kernels?(?: in \d+ partitions?)?, (\d+) in eager(?: \(([^)]*)\))?, "
    r"[\d.]+ ms, (cache \d+ hits? \d+ miss(?:es)?|cache off)$")


def run(tmp_path: Path, level: str | None, cache_dir: Path | None = None) -> str:
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    env = dict(os.environ)
    env.pop("KILN_LOG", None)
    if level is not None:
        env["KILN_LOG"] = level
    env["KILN_CACHE"] = "1"  # conftest turns it off for the tests themselves
    env["KILN_CACHE_DIR"] = str(cache_dir or tmp_path / "cache")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    return result.stderr


def kiln_lines(stderr: str, level: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(f"[kiln] {level} ")]


def test_info_prints_one_line_per_graph(tmp_path):
    stderr = run(tmp_path, "info")
    lines = kiln_lines(stderr, "INFO")
    assert len(lines) == 2, stderr
    first, second = (INFO_LINE.match(line) for line in lines)
    assert first and second, lines
    assert first.group(3) == "compiled" and first.group(6) == "0"
    assert first.group(8) == "cache 0 hits 1 miss"
    assert second.group(3) == "partitioned" and second.group(6) == "2"
    assert "aten.special_bessel_j0.default" in second.group(7)
    assert "aten.special_bessel_j1.default" in second.group(7)
    assert not kiln_lines(stderr, "DEBUG")


def test_a_second_process_logs_cache_hits(tmp_path):
    cache = tmp_path / "shared-cache"
    run(tmp_path, "info", cache)
    lines = kiln_lines(run(tmp_path, "info", cache), "INFO")
    assert "cache 1 hit 0 misses" in lines[0], lines


def test_debug_adds_the_pipeline_and_stage_times(tmp_path):
    stderr = run(tmp_path, "debug")
    debug = "\n".join(kiln_lines(stderr, "DEBUG"))
    assert "pass pipeline for target cpu:" in debug
    assert debug.count("pass pipeline for target") == 1  # once per target
    # The stages and their passes follow on the record's next lines.
    assert re.search(r"\n  kernels: .*kiln-form-kernels", stderr), stderr
    assert re.search(r"\n  llvm: ", stderr), stderr
    assert re.search(r"graph_0 stage times: import [\d.]+ ms, .*native [\d.]+ ms", debug), debug
    assert len(kiln_lines(stderr, "INFO")) == 2


def test_fallback_warnings_are_grouped_per_graph(tmp_path):
    stderr = run(tmp_path, None)
    warnings = [line for line in stderr.splitlines() if "running in PyTorch eager" in line]
    assert len(warnings) == 1, stderr
    assert "2 ops running in PyTorch eager" in warnings[0]
    body = stderr[stderr.index(warnings[0]):]
    assert "aten.special_bessel_j0.default at" in body
    assert "aten.special_bessel_j1.default at" in body
    assert "model.py:8" in body and "model.py:9" in body
    assert "INFO" not in stderr


def test_error_level_silences_fallback_warnings(tmp_path):
    stderr = run(tmp_path, "error")
    assert "running in PyTorch eager" not in stderr


def test_an_unknown_level_is_reported_and_ignored(tmp_path):
    stderr = run(tmp_path, "loud")
    assert "KILN_LOG='loud' is not a level; use one of debug, info, warning, error" in stderr


def test_an_application_s_handlers_keep_kiln_s_records(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent("""
        import logging, torch
        records = []
        class Keep(logging.Handler):
            def emit(self, record):
                records.append(record.getMessage())
        logging.basicConfig(level=logging.WARNING, handlers=[Keep()])
        import kiln  # KILN_LOG=info: the level, but the application's handler
        with torch.no_grad():
            torch.compile(lambda x: torch.relu(x) + 1, backend="kiln")(torch.randn(4))
        assert any("compiled: 2 ops" in r for r in records), records
        print("kept", len(records))
    """))
    env = {**os.environ, "KILN_LOG": "info", "KILN_CACHE": "0"}
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("kept")
    assert "[kiln]" not in result.stderr


def test_configure_from_env_sets_the_level_and_one_handler(monkeypatch):
    import logging

    from kiln import logs

    logger = logging.getLogger("kiln")
    saved = (logger.level, logger.propagate, list(logger.handlers), logs._handler)
    # As in a process whose application configured no logging.
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    try:
        assert logs.configure_from_env("") is None
        assert logs.configure_from_env("DEBUG") == logging.DEBUG
        assert logs.configure_from_env("info") == logging.INFO
        assert logger.level == logging.INFO
        assert sum(1 for h in logger.handlers if h is logs._handler) == 1
        assert logger.propagate is False
    finally:
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
        logger.handlers[:] = saved[2]
        logs._handler = saved[3]
