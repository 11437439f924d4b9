"""Compiling for the NVIDIA targets where no GPU is: zoo graphs in the form
Kiln receives them, compiled for a chip, with ptxas's report per kernel
(registers, shared memory, stack, spills). Used by the CUDA target's tests
and by benchmarks/gpu/ptxas_report.py."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import torch

from kiln.compiler import load_extension
from kiln.testing import zoo


@dataclasses.dataclass(frozen=True)
class KernelResources:
    name: str
    ops: tuple[str, ...]
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int


def dump_zoo_graphs(root: Path, names: list[str] | None = None, size: str = "small") -> dict[str, list[Path]]:
    """Each zoo model's inference graphs (graph.json, as Dynamo and
    aot_autograd hand them to Kiln), from a CPU compile's dump under root."""
    graphs: dict[str, list[Path]] = {}
    for name in names or list(zoo.ZOO):
        torch._dynamo.reset()
        model = zoo.build(name)
        compiled = torch.compile(model.model, backend="kiln",
                                 options={"fallback": "error", "dump_dir": str(root / name)})
        with torch.no_grad():
            compiled(*model.make_inputs(size))
        graphs[name] = sorted((root / name).glob("graph_*/graph.json"))
    torch._dynamo.reset()
    return graphs


_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?")


def compile_graph(graph: Path, chip: str) -> tuple[Any, list[KernelResources]]:
    """graph.json compiled for cuda:<chip>: the result and each kernel's
    resources as ptxas reported them for that chip."""
    result = load_extension().compiler.compile(graph.read_text(), f"cuda:{chip}", keep_stages=True)
    ops = {kernel.name: tuple(kernel.ops) for kernel in result.kernels}
    resources = []
    for name, text in result.kernel_files:
        if not name.endswith(".ptxas.txt"):
            continue
        entry, frame, used = _ENTRY.search(text), _FRAME.search(text), _USED.search(text)
        assert entry and frame and used and entry.group(2) == chip, text
        resources.append(KernelResources(entry.group(1), ops.get(entry.group(1), ()), int(used.group(1)),
                                         int(used.group(2) or 0), *(int(g) for g in frame.groups())))
    return result, resources
