"""Soak and leak run: 100,000 calls of a compiled model, then 1,000 graphs
compiled and discarded in one process (after the same graphs with Dynamo
alone, whose own growth is the baseline); prints resident memory, open file
descriptors and mapped kernel libraries along the way, and fails (exit 1)
if they do not stay flat. The CI runs short versions (test_soak.py).

    python benchmarks/soak.py
    python benchmarks/soak.py --calls 20000 --graphs 200
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

from kiln.testing.machine import cpu_name
from kiln.testing.soak import soak_calls, soak_compiles

# Bounds, after the warm-up. Calls: allocator noise only. Compiles: Kiln's
# share beyond what Dynamo alone keeps for the same graphs (measured first,
# with backend="eager"), which is its bounded caches (4,096 compiled kernel
# objects at most).
CALLS_RSS_BOUND_MB = 8
COMPILES_EXCESS_BOUND_MB = 64


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--graphs", type=int, default=1_000)
    args = parser.parse_args()
    print(f"{cpu_name()}, {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}")
    failed = False
    calls = soak_calls(args.calls, progress=print)
    dynamo = soak_compiles(args.graphs, progress=print, backend="eager")
    compiles = soak_compiles(args.graphs, progress=print)
    print(dynamo.summary())
    mb = 1 << 20
    for result, allowed in ((calls, CALLS_RSS_BOUND_MB),
                            (compiles, COMPILES_EXCESS_BOUND_MB + dynamo.rss_growth_bytes() / mb)):
        print(result.summary())
        growth = result.rss_growth_bytes() / mb
        print(f"  RSS grew {growth:.1f} MB (allowed {allowed:.1f} MB)")
        if growth > allowed:
            print("  FAIL")
            failed = True
        if result.last.open_fds > result.first.open_fds:
            print(f"  FAIL: open file descriptors grew")
            failed = True
        if result.last.kernel_libraries > result.first.kernel_libraries:
            print(f"  FAIL: kernel libraries stay mapped")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
