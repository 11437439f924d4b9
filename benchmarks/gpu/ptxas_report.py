"""What ptxas makes of every zoo model's kernels for an NVIDIA chip, on a
machine without a GPU: per model, its kernels, the most registers and
shared memory one uses, and the kernels with a stack frame or spills.

    python benchmarks/gpu/ptxas_report.py                 # sm_90, small models
    python benchmarks/gpu/ptxas_report.py --chips sm_80,sm_90 --models bert,resnet
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from kiln.testing import nvidia, zoo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chips", default="sm_90")
    parser.add_argument("--models", default=",".join(zoo.ZOO))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kiln-ptxas-") as root:
        graphs = nvidia.dump_zoo_graphs(Path(root), args.models.split(","))
        for chip in args.chips.split(","):
            print(f"\n### cuda:{chip}, ptxas 13.0 (-O3), small zoo models, inference graphs\n")
            print("| model | kernels | most registers | most shared memory | kernels with stack | "
                  "kernels with spills |")
            print("|---|--:|--:|--:|--:|--:|")
            for name, paths in graphs.items():
                kernels = [k for path in paths for k in nvidia.compile_graph(path, chip)[1]]
                stacked = [k.name for k in kernels if k.stack_bytes]
                spilled = [k.name for k in kernels if k.spill_stores or k.spill_loads]
                print(f"| {name} | {len(kernels)} | {max(k.registers for k in kernels)} | "
                      f"{max(k.shared_bytes for k in kernels)} B | {len(stacked)} | {len(spilled)} |",
                      flush=True)


if __name__ == "__main__":
    main()
