"""Run an unmodified script with Kiln's dumps on: ``python -m kiln.dump [options] script.py [args...]``.

    python -m kiln.dump train.py --epochs 1                 dumps to ./kiln_dump
    python -m kiln.dump --dump-dir out --inputs train.py    also saves inputs.npz / outputs.npz

The script runs in this process as __main__ with sys.argv = [script, args...];
its torch.compile(..., backend="kiln") calls pick the dump folder up from
KILN_DUMP_DIR (and KILN_DUMP_INPUTS). Options for kiln.dump come before the
script; everything after the script is the script's. At the end the graphs
this run dumped are listed as kiln.inspect lists them.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path
from typing import Sequence

from kiln.inspect import InspectError, listing_lines, load_dump

DEFAULT_DUMP_DIR = "kiln_dump"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kiln.dump",
        description="Run a Python script with Kiln's dump_dir on, then list the graphs it compiled.",
    )
    parser.add_argument(
        "--dump-dir", default=DEFAULT_DUMP_DIR, metavar="DIR",
        help=f"where the graph_<n>/ folders go (default ./{DEFAULT_DUMP_DIR})",
    )
    parser.add_argument(
        "--inputs", action="store_true",
        help="also save each graph's first inputs and eager outputs (inputs.npz, outputs.npz)",
    )
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    opts = parser.parse_args(argv)

    script = Path(opts.script)
    if not script.is_file():
        print(f"kiln.dump: error: {script}: no such script", file=sys.stderr)
        return 2
    dump_dir = Path(opts.dump_dir).absolute()
    before = {p.name for p in dump_dir.glob("graph_*")}
    os.environ["KILN_DUMP_DIR"] = str(dump_dir)
    if opts.inputs:
        os.environ["KILN_DUMP_INPUTS"] = "1"

    sys.argv = [str(script), *opts.args]
    sys.path.insert(0, str(script.absolute().parent))
    status = 0
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exit_:
        status = _exit_status(exit_.code)
    finally:
        _report(dump_dir, before)
    return status


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _report(dump_dir: Path, before: set[str]) -> None:
    try:
        graphs = [g for g in load_dump(dump_dir) if g.path.name not in before]
    except InspectError:
        graphs = []
    if not graphs:
        print(f'kiln.dump: no graph was compiled with backend="kiln"; nothing dumped to {dump_dir}', file=sys.stderr)
        return
    count = f"{len(graphs)} graph" + ("s" if len(graphs) != 1 else "")
    lines = [f"kiln.dump: {count} dumped to {dump_dir}", *listing_lines(graphs)]
    lines.append(f"Details: python -m kiln.inspect {dump_dir} [--graph NAME] [--html report.html]")
    print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
