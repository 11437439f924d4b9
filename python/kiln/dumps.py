"""Dump folders (the dump_dir option), reproducers of failed compiles, and
saving a graph's first inputs and outputs for offline replay.

dump_dir layout, one folder per ATen graph:

    graph_<n>/fx_graph.py      the ATen FX graph as Python
             /graph.json       the graph as JSON: what the C++ importer received
                               (for a split graph: the whole graph, eager ops too)
             /NN-<stage>.mlir  the IR after each pipeline stage
             /kernels/kernels.ll, kernels.s   all kernels' optimized LLVM IR, assembly
             /kernels/<kernel>.ll, .s         one kernel's
             /artifact.kiln
             /summary.json     ops, kernels (fused ops, their FX nodes, workgroups,
                               source lines), fallbacks and why, stage times, sizes
             /inputs.npz       with dump_inputs: arg0, arg1, ... = graph.json's
                               inputs (lifted constants last), from the first call
             /outputs.npz      with dump_inputs: out0, out1, ... = the tensor
                               outputs of the FX graph run eagerly on them
             /fx_graph_split.py, partition_<k>/
                               when the graph was split: the split graph, and
                               the files above per Kiln-compiled partition

kiln.inspect reads this layout; keep the two in step.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.fx

from kiln.fx_serialize import executable_args, symint_placeholder_roles
from kiln.options import KilnOptions

log = logging.getLogger("kiln")


def write_reproducer(
    name: str, graph_json: str, opts: KilnOptions, dump: "Dump | None", err: Exception
) -> str:
    """Writes a self-contained bundle for a failed compile (the graph, the
    options, the error) and returns the error message extended with the one
    command that reproduces it without Python."""
    import tempfile

    folder = dump.path / "repro" if dump else Path(tempfile.mkdtemp(prefix=f"kiln-repro-{name}-"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "graph.json").write_text(graph_json)
        (folder / "options.json").write_text(json.dumps({"target": opts.target, "graph": name}))
        try:  # the imported MLIR too, when the failure comes after import
            from kiln import _C

            (folder / "graph.mlir").write_text(_C.compiler.import_graph(graph_json))
        except Exception:  # noqa: BLE001 - the import itself may be what fails
            pass
        (folder / "error.txt").write_text(str(err))
        command = (f"kiln-compile {folder / 'graph.json'} -o {folder / 'graph.kiln'}"
                   f" --target {opts.target}")
        (folder / "reproduce.sh").write_text(f"#!/bin/sh\n{command}\n")
    except OSError as write_err:
        return f"{err}\n(could not write a reproducer: {write_err})"
    return f"{err}\nReproducer: {folder}\nReproduce with: {command}"


def summary_updater(dump: "Dump", summary: dict[str, Any]) -> Callable[[list[float] | None, str | None], None]:
    def saved(checksums: list[float] | None, error: str | None) -> None:
        summary["output_checksums"] = checksums
        if error:
            summary["errors"].append(error)
        dump.write_json("summary.json", summary)

    return saved


def save_first_call(
    fn: Callable[[list[Any]], Any],
    reference: torch.fx.GraphModule,
    constants: Sequence[Any],
    dump: "Dump",
    saved: Callable[[list[float] | None, str | None], None],
) -> Callable[[list[Any]], Any]:
    """Wrap the boxed fn so its first call also writes inputs.npz and outputs.npz.

    aot_autograd compiles with fake tensors, so the first call's inputs (the
    ones Dynamo compiled for) are the first real values there are.
    """
    pending = [reference]

    def kiln_graph(args: list[Any]) -> Any:
        if pending:
            gm = pending.pop()
            try:
                checksums = write_replay(dump, gm, args, constants)
            except Exception as err:  # a failed dump must not break the user's program
                log.warning("kiln: could not save the inputs of %s: %s", dump.path, err)
                saved(None, f"dump_inputs: {type(err).__name__}: {err}")
            else:
                saved(checksums, None)
        return fn(args)

    kiln_graph._boxed_call = True  # type: ignore[attr-defined]
    if hasattr(fn, "executable"):
        kiln_graph.executable = fn.executable  # type: ignore[attr-defined]
    return kiln_graph


def write_replay(
    dump: "Dump", gm: torch.fx.GraphModule, args: Sequence[Any], constants: Sequence[Any]
) -> list[float]:
    import numpy as np

    def array(value: Any) -> Any:  # C order: kiln-run reads no Fortran-order .npy
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().resolve_conj().resolve_neg().numpy()
        return np.asarray(value, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)

    # What kiln-run takes: the executable's arguments (SymInts dropped or as
    # 0-d int64s), then the constants.
    inputs = [*executable_args(args, *symint_placeholder_roles(gm)), *constants]
    with torch.no_grad():
        result = gm(*args)
    results = result if isinstance(result, (tuple, list)) else [result]
    outputs = [t for t in results if isinstance(t, torch.Tensor)]
    np.savez(dump.path / "inputs.npz", **{f"arg{i}": array(v) for i, v in enumerate(inputs)})
    np.savez(dump.path / "outputs.npz", **{f"out{i}": array(t) for i, t in enumerate(outputs)})
    return [t.detach().double().sum().item() for t in outputs]


_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
_next_dump_index: dict[Path, int] = {}


class Dump:
    """One graph's folder under dump_dir."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, root: Path) -> "Dump":
        root.mkdir(parents=True, exist_ok=True)
        n = _next_dump_index.get(root, 0)
        while True:
            path = root / f"graph_{n}"
            try:
                path.mkdir()
                break
            except FileExistsError:
                n += 1
        _next_dump_index[root] = n + 1
        return cls(path)

    def child(self, name: str) -> "Dump":
        path = self.path / name
        path.mkdir(parents=True, exist_ok=True)
        return Dump(path)

    def write_text(self, name: str, text: str) -> None:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def write_bytes(self, name: str, data: bytes) -> None:
        (self.path / name).write_bytes(data)

    def write_json(self, name: str, value: Any) -> None:
        self.write_text(name, json.dumps(value, indent=1, default=str) + "\n")

    def write_stages(self, stages: Sequence[tuple[str, str]], kernel_ir: Sequence[tuple[str, str]]) -> None:
        for i, (stage, text) in enumerate(stages):
            self.write_text(f"{i:02d}-{_SAFE_NAME.sub('_', stage)}.mlir", text)
        for kernel, text in kernel_ir:
            name = _SAFE_NAME.sub("_", kernel)
            if not name.endswith((".ll", ".s", ".ptx", ".mlir")):
                name += ".ll"
            self.write_text(f"kernels/{name}", text)
