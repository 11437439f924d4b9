"""kiln-import: a torch.export program (.pt2) -> kiln_graph MLIR.

    kiln-import model.pt2 -o graph.mlir
    kiln-compile graph.mlir -o graph.kiln && kiln-run graph.kiln --random

The exported program is decomposed to Core ATen (as torch.compile's path
does), its parameters and buffers become graph inputs after the user inputs'
placeholders (in the exported graph's placeholder order), and the graph is
imported by Kiln's C++ importer, so op support and error messages are the
same as for torch.compile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kiln.cli import as_command
from kiln.errors import KilnError


def export_to_mlir(path: str | Path, name: str = "exported") -> str:
    import torch

    from kiln import _C
    from kiln.fx_serialize import serialize_graph

    program = torch.export.load(str(path))
    program = program.run_decompositions(torch._decomp.core_aten_decompositions())
    serialized = serialize_graph(program.graph_module, name)
    return _C.compiler.import_graph(serialized.to_json())


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        as_command()
    parser = argparse.ArgumentParser(
        prog="kiln-import", description="Import a torch.export program (.pt2) as kiln_graph MLIR.")
    parser.add_argument("program", help="a file written by torch.export.save")
    parser.add_argument("-o", "--output", default="-", help="output .mlir file (default: stdout)")
    parser.add_argument("--name", default="exported", help="name of the graph function")
    args = parser.parse_args(argv)
    if not Path(args.program).is_file():
        print(f"kiln-import: error: {args.program}: no such file", file=sys.stderr)
        return 2
    try:
        text = export_to_mlir(args.program, args.name)
    except (KilnError, RuntimeError, ValueError) as err:
        print(f"kiln-import: error: {args.program}: {err}", file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
