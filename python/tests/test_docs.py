"""The user guide's examples run, and its supported-op table is the compiler's.

docs/user-guide.md is executed in order, in one scratch folder:
- a ```python block whose first line is `# name.py` is written to that file;
- any other ```python block runs as a script;
- a ```bash block right after a `<!-- run -->` line runs with bash -e, with
  the environment's bin/ (python, kiln-run, ...) first on PATH.
Other blocks (install commands, sample output) are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "user-guide.md"
OPS_PAGE = ROOT / "docs" / "supported-ops.md"

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def guide_blocks(text: str) -> list[tuple[str, str, bool]]:
    """(language, code, marked to run) for every fenced block, in order."""
    blocks = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip().splitlines()
        marked = bool(before) and before[-1].strip() == "<!-- run -->"
        blocks.append((match.group(1), match.group(2), marked))
    return blocks


def test_the_guide_has_runnable_examples():
    blocks = guide_blocks(GUIDE.read_text())
    python = [b for b in blocks if b[0] == "python"]
    bash = [b for b in blocks if b[0] == "bash" and b[2]]
    assert len(python) >= 8 and len(bash) >= 3, (len(python), len(bash))


def test_the_guide_examples_run(tmp_path):
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["KILN_CACHE"] = "1"  # conftest turns it off for the tests themselves
    env["KILN_CACHE_DIR"] = str(tmp_path / "cache")
    for name in ("KILN_LOG", "KILN_DUMP_DIR", "KILN_FALLBACK", "KILN_FORCE_EAGER"):
        env.pop(name, None)
    ran = 0
    for index, (language, code, marked) in enumerate(guide_blocks(GUIDE.read_text())):
        first = code.splitlines()[0] if code.strip() else ""
        if language == "python" and re.fullmatch(r"# [\w.-]+\.py", first):
            (tmp_path / first[2:]).write_text(code)
            continue
        if language == "python":
            script = tmp_path / f"guide_block_{index}.py"
            script.write_text(code)
            command = [sys.executable, str(script)]
        elif language == "bash" and marked:
            command = ["bash", "-euo", "pipefail", "-c", code]
        else:
            continue
        result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=600)
        assert result.returncode == 0, (
            f"docs/user-guide.md block {index} ({language}) failed:\n{code}\n"
            f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr[-4000:]}")
        ran += 1
    assert ran >= 10


def test_the_supported_op_page_is_generated_from_the_compiler():
    pytest.importorskip("kiln._C")
    from kiln.op_table import render

    assert OPS_PAGE.read_text() == render(), (
        "docs/supported-ops.md is stale: regenerate it with "
        "`python -m kiln.op_table > docs/supported-ops.md`")


def test_the_op_page_lists_every_supported_op():
    from kiln import _C

    page = OPS_PAGE.read_text()
    for name in _C.compiler.supported_ops():
        packet, _, overload = name.rpartition(".")
        assert f"`{packet}`" in page, name


def test_the_readme_links_the_guide():
    readme = (ROOT / "README.md").read_text()
    assert "docs/user-guide.md" in readme
    guide = GUIDE.read_text()
    assert "supported-ops.md" in guide
