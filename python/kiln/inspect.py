"""Look at a Kiln dump_dir offline: ``python -m kiln.inspect DIR`` (or ``kiln-inspect``).

    kiln-inspect DIR                    one line per compiled graph
    kiln-inspect DIR --graph graph_0    kernels, fallbacks, stage times, files of one graph
    kiln-inspect DIR --html report.html one self-contained page; each graph drawn
                                        with Graphviz, nodes coloured by kernel

DIR is a dump_dir (holding graph_<n>/ folders) or one graph_<n>/ folder. The
layout is the one kiln.dumps writes; see its module docstring. Nothing here
needs torch or kiln._C.
"""

from __future__ import annotations

import argparse
import colorsys
import functools
import html
import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from kiln.cli import as_command

MAX_DRAWN_NODES = 2000


class InspectError(Exception):
    """A dump that cannot be inspected; the message is the whole story."""


@dataclass
class Part:
    """A folder holding one artifact's files: a whole graph or one partition of a split graph."""

    path: Path
    summary: dict[str, Any]
    index: int | None = None  # the partition number; None for a graph folder

    @property
    def label(self) -> str:
        return self.path.name if self.index is not None else ""

    @property
    def has_artifact(self) -> bool:
        return (self.path / "artifact.kiln").is_file()

    def graph_json(self) -> dict[str, Any] | None:
        return _read_json(self.path / "graph.json")

    def kernels_mlir(self) -> str | None:
        stage = sorted(self.path.glob("[0-9][0-9]-kernels.mlir"))
        return stage[0].read_text(errors="replace") if stage else None


@dataclass
class GraphDump:
    """One graph_<n>/ folder."""

    path: Path
    summary: dict[str, Any]
    partitions: list[Part] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.summary.get("name") or self.path.name)

    @property
    def folder(self) -> Part:
        return Part(self.path, self.summary)

    @property
    def compiled_parts(self) -> list[Part]:
        """The folders whose artifact Kiln runs (the graph itself, or its partitions)."""
        if self.folder.has_artifact:
            return [self.folder]
        return [p for p in self.partitions if p.has_artifact]

    @property
    def kernels(self) -> list[dict[str, Any]]:
        return list(self.summary.get("kernels") or [])

    @property
    def op_count(self) -> int:
        return sum(int(n) for n in (self.summary.get("ops") or {}).values())


# ---------------------------------------------------------------------------
# Reading a dump


def load_dump(root: Path) -> list[GraphDump]:
    """The graphs under root (a dump_dir or one graph folder), in compile order."""
    if not root.exists():
        raise InspectError(f"{root}: no such directory")
    if not root.is_dir():
        raise InspectError(f"{root}: not a directory")
    if (root / "summary.json").is_file() and not _graph_dirs(root):
        return [_load_graph(root)]
    graphs = [_load_graph(d) for d in _graph_dirs(root)]
    if not graphs:
        raise InspectError(
            f"{root}: no Kiln graph dumps here (expected graph_<n>/summary.json, "
            "written by torch.compile(..., backend=\"kiln\") with dump_dir or KILN_DUMP_DIR)"
        )
    return graphs


def find_graph(graphs: Sequence[GraphDump], name: str) -> GraphDump:
    for g in graphs:
        if name in (g.name, g.path.name, str(g.path)):
            return g
    known = ", ".join(g.path.name for g in graphs)
    raise InspectError(f"no graph named {name!r} in this dump (graphs: {known})")


def _graph_dirs(root: Path) -> list[Path]:
    found = [d for d in root.glob("graph_*") if d.is_dir() and _index(d.name, "graph_") is not None]
    return sorted(found, key=lambda d: _index(d.name, "graph_") or 0)


def _index(name: str, prefix: str) -> int | None:
    rest = name[len(prefix):] if name.startswith(prefix) else ""
    return int(rest) if rest.isdigit() else None


def _load_graph(path: Path) -> GraphDump:
    summary = _load_summary(path)
    parts = []
    for d in path.glob("partition_*"):
        k = _index(d.name, "partition_")
        if d.is_dir() and k is not None:
            parts.append(Part(d, _load_summary(d), k))
    parts.sort(key=lambda p: p.index or 0)
    if not summary.get("kernels") and parts:  # dumps written before graph summaries listed kernels
        summary["kernels"] = [
            {**k, "partition": p.index} for p in parts for k in p.summary.get("kernels") or []
        ]
    return GraphDump(path, summary, parts)


def _load_summary(path: Path) -> dict[str, Any]:
    try:
        summary = _read_json(path / "summary.json")
    except InspectError as err:
        return {"name": path.name, "status": "unknown", "errors": [str(err)]}
    if summary is None:
        return {"name": path.name, "status": "unknown", "errors": [f"{path}/summary.json is missing"]}
    # Older dumps: "kernels" was the count and "kernel_info" the list.
    if isinstance(summary.get("kernels"), int):
        summary["kernel_count"] = summary["kernels"]
        summary["kernels"] = summary.pop("kernel_info", [])
    return summary


def _read_json(path: Path) -> Any:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InspectError(f"{path}: cannot read it as JSON: {err}") from None


# ---------------------------------------------------------------------------
# Text


def format_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def listing_lines(graphs: Sequence[GraphDump]) -> list[str]:
    """A header and one line per graph: name, kind, status, ops, kernels, fallbacks, time, size."""
    rows = [("graph", "kind", "status", "ops", "kernels", "fallbacks", "compile ms", "artifact")]
    for g in graphs:
        s = g.summary
        rows.append(
            (
                g.path.name,
                str(s.get("kind", "?")),
                str(s.get("status", "?")),
                str(g.op_count),
                str(s.get("kernel_count", len(g.kernels))),
                str(len(s.get("fallbacks") or [])),
                f"{float(s.get('compile_time_ms') or 0):.1f}",
                format_size(int(s.get("artifact_bytes") or 0)),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {3, 4, 5, 6, 7}
    return [
        "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in rows
    ]


def format_listing(graphs: Sequence[GraphDump], root: Path) -> str:
    return "\n".join([f"Kiln dump {root}: {_count(len(graphs), 'graph')}", *listing_lines(graphs)])


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _symbol_range(symbol: dict[str, Any]) -> str:
    """e.g. "s77 in [2, inf]": a size symbol of a graph with dynamic shapes."""
    top = int(symbol.get("max", 2**63 - 1))
    return f"{symbol.get('name')} in [{symbol.get('min', 0)}, {'inf' if top >= 2**63 - 1 else top}]"


def _workgroups(kernel: dict[str, Any]) -> str:
    count = int(kernel.get("workgroups") or 0)
    return "workgroups sized at launch" if count < 0 else _count(count, "workgroup")


def format_graph(g: GraphDump) -> str:
    s = g.summary
    code = _source_code(g)
    out: list[str] = []
    status = str(s.get("status", "?"))
    if s.get("partitions"):
        status += f", {_count(int(s['partitions']), 'Kiln partition')}"
    out.append(f"{g.name}: {s.get('kind', '?')} graph, {status}, target {s.get('target', '?')}")
    out.append(f"  folder    {g.path}")
    ops = s.get("ops") or {}
    out.append(f"  ops       {g.op_count}" + (": " + ", ".join(f"{k} x{v}" for k, v in ops.items()) if ops else ""))
    out.append(
        f"  compile   {float(s.get('compile_time_ms') or 0):.1f} ms, "
        f"artifact {format_size(int(s.get('artifact_bytes') or 0))}"
    )
    for symbol in s.get("symbols") or []:
        out.append(f"  symbol    {_symbol_range(symbol)}")

    kernels = g.kernels
    out.append("")
    out.append(f"Kernels ({len(kernels)}):" if kernels else "Kernels: none")
    for k in kernels:
        out.append(f"  {_kernel_label(k)}  {_workgroups(k)}")
        out.append(f"    fuses  {', '.join(k.get('ops') or []) or '-'}")
        for i, loc in enumerate(k.get("locations") or []):
            text = code.get(loc, "")
            out.append(f"    {'from' if i == 0 else '    '}   {loc}" + (f"   {text}" if text else ""))
        gpu = _gpu_kernel(g, k)
        if gpu:
            out.append(f"    gpu    {gpu}")

    fallbacks = s.get("fallbacks") or []
    out.append("")
    out.append(f"Fallbacks ({len(fallbacks)}), run in PyTorch eager:" if fallbacks else "Fallbacks: none")
    for f in fallbacks:
        node = f" ({f['node']})" if f.get("node") else ""
        out.append(f"  {f.get('op')}{node} at {_where(f)}: {f.get('reason')}")
        if f.get("code"):
            out.append(f"      {f['code']}")

    errors = list(s.get("errors") or [])
    for p in g.partitions:
        errors += [f"{p.path.name}: {e}" for e in p.summary.get("errors") or []]
    if errors:
        out.append("")
        out.append(f"Errors ({len(errors)}):")
        out.extend(f"  {e}" for e in errors)

    times = s.get("stage_times_ms") or {}
    if times:
        out.append("")
        out.append(f"Stage times (ms, {sum(float(v) for v in times.values()):.1f} in all):")
        width = max(len(k) for k in times)
        out.extend(f"  {k.ljust(width)}  {float(v):8.2f}" for k, v in times.items())

    checksums = s.get("output_checksums")
    if checksums:
        out.append("")
        out.append("Output checksums (eager, sum in float64): " + ", ".join(f"{c:.6g}" for c in checksums))

    out.append("")
    out.append("Files:")
    files = sorted(p for p in g.path.rglob("*") if p.is_file())
    width = max((len(str(p.relative_to(g.path))) for p in files), default=0)
    out.extend(f"  {str(p.relative_to(g.path)).ljust(width)}  {format_size(p.stat().st_size):>10}" for p in files)
    return "\n".join(out)


def _gpu_kernel(g: GraphDump, kernel: dict[str, Any]) -> str | None:
    """A GPU kernel's threads per workgroup, workgroup (shared) memory and
    SPIR-V file, read from its dumped kernels/<name>.spirv.mlir."""
    folder = g.path if kernel.get("partition") is None else g.path / f"partition_{kernel['partition']}"
    path = folder / "kernels" / f"{kernel.get('name')}.spirv.mlir"
    if not path.is_file():
        return None
    text = path.read_text()
    size = re.search(r'"LocalSize", (\d+), (\d+), (\d+)', text)
    threads = "x".join(size.groups()) if size else "?"
    shared = sum(_array_bytes(m.group(1)) for m in re.finditer(r"!spirv\.ptr<(.*), Workgroup>", text))
    lines = text.count("\n")
    line = (f"{threads} threads per workgroup, {format_size(shared)} workgroup memory, "
            f"SPIR-V {path.relative_to(g.path)} ({lines} lines; spirv-dis after "
            "mlir-translate-22 --serialize-spirv)")
    strategies = _gpu_strategies(folder, kernel.get("name"))
    return line + (f"; {', '.join(strategies)}" if strategies else "")


def _gpu_strategies(folder: Path, name: str | None) -> list[str]:
    """How the GPU mapping spread the kernel over its threads, as its
    kiln_kernel.gpu_strategies attribute in the dumped GPU stage says."""
    return _gpu_strategies_by_kernel(folder).get(name or "", [])


@functools.lru_cache(maxsize=8)
def _gpu_strategies_by_kernel(folder: Path) -> dict[str, list[str]]:
    """Each kernel's strategies in a dump folder's GPU stage, read once."""
    stages = sorted(folder.glob("[0-9][0-9]-gpu.mlir"))
    if not stages:
        return {}
    found = re.finditer(r"func\.func private @(\w+)\(.*kiln_kernel\.gpu_strategies = \[(.*?)\]",
                        stages[0].read_text())
    return {m.group(1): re.findall(r'"([^"]*)"', m.group(2)) for m in found}


_SCALAR_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "i1": 1}


def _array_bytes(spirv_type: str) -> int:
    """Bytes of a SPIR-V type like !spirv.array<256 x f32>, nested arrays included."""
    count = 1
    for n in re.findall(r"array<(\d+) x", spirv_type):
        count *= int(n)
    scalar = re.search(r"\b(f16|bf16|f32|f64|i8|i16|i32|i64|i1)\b", spirv_type)
    return count * _SCALAR_BYTES[scalar.group(1)] if scalar else 0


def _kernel_label(kernel: dict[str, Any]) -> str:
    part = kernel.get("partition")
    return f"partition_{part}/{kernel.get('name')}" if part is not None else str(kernel.get("name"))


def _where(fallback: dict[str, Any]) -> str:
    if fallback.get("file") and fallback.get("line") is not None:
        return f"{fallback['file']}:{fallback['line']}"
    return "<unknown source line>"


def _source_code(g: GraphDump) -> dict[str, str]:
    """"file:line" -> the source text, from the node locations graph.json files carry."""
    code: dict[str, str] = {}
    for part in [g.folder, *g.partitions]:
        try:
            graph = part.graph_json()
        except InspectError:
            continue
        for node in (graph or {}).get("nodes", []):
            loc = node.get("loc")
            if loc and loc.get("code"):
                code.setdefault(f"{loc['file']}:{loc['line']}", loc["code"])
    return code


# ---------------------------------------------------------------------------
# Which kernel holds which FX node

_LOC_ALIAS = re.compile(r"^#(loc\d*) = loc\((.*)\)\s*$")
_NAME_LOC = re.compile(r'"((?:[^"\\]|\\.)*)"\(')  # NameLoc: "name"(child)
_ALIAS_REF = re.compile(r"#(loc\d*)\b")
_KERNEL_OP = re.compile(r'kiln_kernel\.kernel\s+"((?:[^"\\]|\\.)*)"')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def kernel_membership(mlir: str) -> dict[str, list[str]]:
    """FX node name -> the kernels holding its ops, from the text of NN-kernels.mlir.

    The importer gives every op loc("<fx node name>"(file:line)); kiln-form-kernels
    puts ops in `kiln_kernel.kernel "<name>"` regions. Locations may be aliases
    (#locN = loc(...)) defined at the end of the module.
    """
    aliases: dict[str, str] = {}
    for line in mlir.splitlines():
        m = _LOC_ALIAS.match(line)
        if m:
            aliases[m[1]] = m[2]

    resolved: dict[str, set[str]] = {}

    def names(body: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found = set(_NAME_LOC.findall(body))
        for ref in _ALIAS_REF.findall(body):
            if ref in seen or ref not in aliases:
                continue
            if ref not in resolved:
                resolved[ref] = names(aliases[ref], seen | {ref})
            found |= resolved[ref]
        return found

    membership: dict[str, list[str]] = defaultdict(list)
    depth = 0
    kernels: list[tuple[str, int]] = []  # (kernel name, depth outside its region)
    for line in mlir.splitlines():
        stripped = line.strip()
        start = _KERNEL_OP.search(line)
        if kernels and not start and not stripped.startswith(("^", "}", "kiln_kernel.yield")):
            at = line.rfind(" loc(")
            if at >= 0:
                for name in names(line[at + 5:]):
                    if kernels[-1][0] not in membership[name]:
                        membership[name].append(kernels[-1][0])
        before = depth
        unquoted = _STRING.sub("", line)
        depth += unquoted.count("{") - unquoted.count("}")
        if start and depth > before:
            kernels.append((start[1], before))
        while kernels and depth <= kernels[-1][1]:
            kernels.pop()
    return dict(membership)


@dataclass
class NodeRole:
    kind: str  # "input", "kernel", "kiln" (compiled, in no kernel: views, folded), "fallback", "eager"
    kernels: list[str] = field(default_factory=list)
    note: str = ""


def node_roles(g: GraphDump) -> tuple[dict[str, NodeRole], list[str]]:
    """What happens to each FX node of g, and notes on how well that is known."""
    notes: list[str] = []
    roles: dict[str, NodeRole] = {}
    fallback_names = {f["node"] for f in g.summary.get("fallbacks") or [] if f.get("node")}
    fallback_lines = {
        (f.get("op"), f.get("file"), f.get("line")) for f in g.summary.get("fallbacks") or [] if not f.get("node")
    }
    reasons = {f["node"]: f.get("reason", "") for f in g.summary.get("fallbacks") or [] if f.get("node")}

    for part in g.compiled_parts:
        prefix = f"{part.label}/" if part.label else ""
        graph = part.graph_json() or {}
        part_nodes = [n["name"] for n in graph.get("nodes", [])]
        mlir = part.kernels_mlir()
        kernels = part.summary.get("kernels") or []
        if kernels and all("nodes" in k for k in kernels):
            members = _membership_from_nodes(kernels)
        elif mlir is not None:  # dumps written before kernels listed their FX nodes
            members = kernel_membership(mlir)
        else:
            members = _membership_from_locations(graph, part.summary.get("kernels") or [])
            notes.append(
                f"{part.path.name}: no NN-kernels.mlir; kernels matched to nodes by source line only"
            )
        for name in part_nodes:
            kernels = [prefix + k for k in members.get(name, [])]
            roles[name] = NodeRole("kernel", kernels) if kernels else NodeRole(
                "kiln", note="compiled by Kiln outside kernels (a view or a folded value)"
            )

    graph = g.folder.graph_json() or {}
    for node in graph.get("nodes", []):
        name = node["name"]
        loc = node.get("loc") or {}
        if name in fallback_names or (node.get("target"), loc.get("file"), loc.get("line")) in fallback_lines:
            roles[name] = NodeRole("fallback", note=f"runs in PyTorch eager: {reasons.get(name, 'unsupported')}")
        elif name not in roles:
            roles[name] = NodeRole("eager", note="runs in PyTorch eager")
    for inp in graph.get("inputs", []):
        roles[inp["name"]] = NodeRole("input")
    return roles, notes


def _membership_from_nodes(kernels: list[dict[str, Any]]) -> dict[str, list[str]]:
    """FX node name -> kernels, from the node names the compiler lists per kernel."""
    members: dict[str, list[str]] = defaultdict(list)
    for k in kernels:
        for node in k["nodes"]:
            members[node].append(k["name"])
    return members


def _membership_from_locations(graph: dict[str, Any], kernels: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Best effort without MLIR: a node belongs to the only kernel whose source lines hold its line."""
    members: dict[str, list[str]] = {}
    for node in graph.get("nodes", []):
        loc = node.get("loc")
        if not loc:
            continue
        where = f"{loc['file']}:{loc['line']}"
        holders = [k["name"] for k in kernels if where in (k.get("locations") or [])]
        if len(holders) == 1:
            members[node["name"]] = holders
    return members


# ---------------------------------------------------------------------------
# Pictures

FALLBACK_FILL, FALLBACK_LINE = "#ffd6d6", "#cc0000"
EAGER_FILL, INPUT_FILL, KILN_FILL = "#e6e6e6", "#f4f4f4", "#ffffff"


def kernel_colors(g: GraphDump) -> dict[str, str]:
    """A distinct pastel per kernel: hues a golden angle apart, so neighbours differ."""
    colors = {}
    for i, k in enumerate(g.kernels):
        r, gr, b = colorsys.hls_to_rgb((0.45 + i * 0.618034) % 1.0, 0.78, 0.65)
        colors[_kernel_label(k)] = f"#{int(r * 255):02x}{int(gr * 255):02x}{int(b * 255):02x}"
    return colors


def graph_dot(g: GraphDump, roles: dict[str, NodeRole] | None = None) -> str | None:
    """The graph in Graphviz DOT, or None when the dump has no graph.json to draw from."""
    graph = g.folder.graph_json()
    if graph is None:
        return None
    if roles is None:
        roles, _ = node_roles(g)
    colors = kernel_colors(g)
    lines = [
        f"digraph {_dot_id(g.name)} {{",
        '  graph [rankdir=TB, fontname="Helvetica", nodesep=0.25, ranksep=0.35];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, '
        f'fillcolor="{KILN_FILL}", color="#555555"];',
        '  edge [color="#777777", arrowsize=0.6];',
    ]
    for inp in graph.get("inputs", []):
        label = [inp["name"], _spec(inp)]
        lines.append(
            f"  {_dot_id(inp['name'])} [shape=ellipse, style=filled, fillcolor=\"{INPUT_FILL}\", "
            f"label={_dot_label(label)}, tooltip={_dot_id('input ' + inp['name'] + ' ' + _spec(inp))}];"
        )
    for node in graph.get("nodes", []):
        role = roles.get(node["name"], NodeRole("eager"))
        target = str(node.get("target", ""))
        short = target.split(".")[1] if target.startswith("aten.") and target.count(".") >= 2 else target
        specs = [_spec(o) for o in node.get("outputs") or [] if o]
        label = [node["name"]] + ([short] if re.sub(r"_\d+$", "", node["name"]) != short else [])
        label += [specs[0]] if specs else []
        tip = [target]
        loc = node.get("loc")
        if loc:
            tip.append(f"{loc['file']}:{loc['line']}" + (f"  {loc['code']}" if loc.get("code") else ""))
        attrs = {"label": _dot_label(label)}
        if role.kind == "kernel":
            attrs["fillcolor"] = _dot_id(colors.get(role.kernels[0], KILN_FILL))
            tip.append("kernel " + ", ".join(role.kernels))
        elif role.kind == "fallback":
            attrs.update(
                style='"rounded,filled,dashed"', fillcolor=_dot_id(FALLBACK_FILL),
                color=_dot_id(FALLBACK_LINE), penwidth="2", fontcolor=_dot_id(FALLBACK_LINE),
            )
            tip.append(role.note)
        elif role.kind == "eager":
            attrs.update(style='"rounded,filled,dashed"', fillcolor=_dot_id(EAGER_FILL))
            tip.append(role.note)
        else:
            tip.append(role.note)
        attrs["tooltip"] = _dot_id("\n".join(t for t in tip if t))
        lines.append(f"  {_dot_id(node['name'])} [{', '.join(f'{k}={v}' for k, v in attrs.items())}];")
        for ref in _refs([node.get("args"), node.get("kwargs")]):
            lines.append(f"  {_dot_id(ref)} -> {_dot_id(node['name'])};")
    lines.append('  "%output" [shape=ellipse, style=filled, fillcolor="#f4f4f4", label="output"];')
    for ref in _refs(graph.get("outputs")):
        lines.append(f'  {_dot_id(ref)} -> "%output";')
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(dot_source: str) -> tuple[str | None, str]:
    """(the SVG, "") from Graphviz dot, or (None, why not)."""
    dot = shutil.which("dot")
    if dot is None:
        return None, "Graphviz `dot` was not found on PATH, so graphs are not drawn (install graphviz)."
    try:
        done = subprocess.run(
            [dot, "-Tsvg"], input=dot_source, capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"Graphviz dot failed: {err}"
    if done.returncode != 0 or "<svg" not in done.stdout:
        return None, f"Graphviz dot failed (exit {done.returncode}): {done.stderr.strip()[:500]}"
    return done.stdout[done.stdout.index("<svg"):], ""


def _refs(value: Any) -> Iterable[str]:
    """The node names an ARG JSON value refers to, in order, without repeats."""
    seen: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            if "ref" in v:
                if v["ref"] not in seen:
                    seen.append(v["ref"])
            else:
                for item in v.values():
                    walk(item)
        elif isinstance(v, list):
            for item in v:
                walk(item)

    walk(value)
    return seen


def _spec(spec: dict[str, Any]) -> str:
    return f"{list(spec.get('shape', []))} {spec.get('dtype', '')}".strip()


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dot_label(lines: Sequence[str]) -> str:
    return '"' + "\\n".join(t.replace("\\", "\\\\").replace('"', '\\"') for t in lines) + '"'


# ---------------------------------------------------------------------------
# HTML

_CSS = """
body { font-family: -apple-system, Helvetica, Arial, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; }
code, pre { font-family: Menlo, Consolas, monospace; font-size: 90%; }
section { border-top: 2px solid #ddd; margin-top: 2em; }
.picture { overflow: auto; border: 1px solid #eee; max-height: 900px; }
.swatch { display: inline-block; padding: 1px 8px; margin: 2px; border: 1px solid #999; border-radius: 4px; font-size: 85%; }
.fallback { border: 2px dashed #cc0000; color: #cc0000; }
.eager { border-style: dashed; }
.note { color: #a05000; }
"""


def write_html(graphs: Sequence[GraphDump], out: Path, title: str) -> list[str]:
    """Write the report; returns notes worth telling the user (e.g. dot is missing)."""
    notes: list[str] = []
    e = html.escape
    columns = ("graph", "kind", "status", "ops", "kernels", "fallbacks", "compile ms", "artifact")
    body = [f"<h1>Kiln dump {e(title)}</h1>", "<table>"]
    body.append("<tr>" + "".join(f"<th>{e(h)}</th>" for h in columns) + "</tr>")
    for g in graphs:
        s = g.summary
        cells = [
            f'<a href="#{e(g.path.name)}">{e(g.path.name)}</a>', e(str(s.get("kind", "?"))),
            e(str(s.get("status", "?"))),
        ]
        nums = [g.op_count, s.get("kernel_count", len(g.kernels)), len(s.get("fallbacks") or []),
                f"{float(s.get('compile_time_ms') or 0):.1f}", format_size(int(s.get("artifact_bytes") or 0))]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells)
                    + "".join(f'<td class="num">{e(str(n))}</td>' for n in nums) + "</tr>")
    body.append("</table>")
    for g in graphs:
        body.append(_graph_section(g, notes))
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>Kiln dump {e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    try:
        out.write_text(page)
    except OSError as err:
        raise InspectError(f"cannot write {out}: {err}") from None
    return sorted(set(notes))


def _graph_section(g: GraphDump, notes: list[str]) -> str:
    e = html.escape
    s = g.summary
    out = [f'<section id="{e(g.path.name)}">', f"<h2>{e(g.name)}</h2>"]
    out.append(
        f"<p>{e(str(s.get('kind', '?')))} graph, <b>{e(str(s.get('status', '?')))}</b>, "
        f"{_count(g.op_count, 'op')}, {_count(int(s.get('kernel_count', len(g.kernels))), 'kernel')}, "
        f"{_count(len(s.get('fallbacks') or []), 'fallback')}, compiled in {float(s.get('compile_time_ms') or 0):.1f} ms, "
        f"artifact {e(format_size(int(s.get('artifact_bytes') or 0)))}. Folder <code>{e(str(g.path))}</code></p>"
    )

    graph = g.folder.graph_json()
    roles, role_notes = node_roles(g)
    if graph is None:
        out.append('<p class="note">No graph.json in this folder, so there is no picture.</p>')
    elif len(graph.get("nodes", [])) > MAX_DRAWN_NODES:
        out.append(f'<p class="note">The graph is too large to draw (over {MAX_DRAWN_NODES} nodes).</p>')
    else:
        svg, why = render_svg(graph_dot(g, roles) or "")
        if svg is None:
            notes.append(why)
            out.append(f'<p class="note">{e(why)}</p>')
        else:
            out.append(f'<div class="picture">{svg}</div>')
    out.extend(f'<p class="note">{e(n)}</p>' for n in role_notes)

    colors = kernel_colors(g)
    legend = [f'<span class="swatch" style="background:{c}">{e(k)}</span>' for k, c in colors.items()]
    legend.append(f'<span class="swatch fallback" style="background:{FALLBACK_FILL}">fallback (PyTorch eager)</span>')
    legend.append(f'<span class="swatch eager" style="background:{EAGER_FILL}">eager (not in a Kiln partition)</span>')
    legend.append(f'<span class="swatch" style="background:{KILN_FILL}">Kiln, no kernel (view, folded)</span>')
    out.append("<p>" + " ".join(legend) + "</p>")

    code = _source_code(g)
    if g.kernels:
        out.append("<h3>Kernels</h3><table><tr><th>kernel</th><th>workgroups</th><th>fused ops</th><th>source</th></tr>")
        for k in g.kernels:
            label = _kernel_label(k)
            locs = "<br>".join(
                f"<code>{e(loc)}</code>" + (f" <code>{e(code[loc])}</code>" if loc in code else "")
                for loc in k.get("locations") or []
            )
            out.append(
                f'<tr><td><span class="swatch" style="background:{colors.get(label, "#fff")}">{e(label)}</span></td>'
                f'<td class="num">{html.escape(_workgroups(k))}</td>'
                f"<td>{e(', '.join(k.get('ops') or []))}</td><td>{locs}</td></tr>"
            )
        out.append("</table>")
    fallbacks = s.get("fallbacks") or []
    if fallbacks:
        out.append("<h3>Fallbacks</h3><table><tr><th>op</th><th>node</th><th>source</th><th>reason</th></tr>")
        for f in fallbacks:
            where = e(_where(f)) + (f"<br><code>{e(f['code'])}</code>" if f.get("code") else "")
            out.append(
                f"<tr><td><code>{e(str(f.get('op')))}</code></td><td>{e(str(f.get('node') or ''))}</td>"
                f"<td>{where}</td><td>{e(str(f.get('reason') or ''))}</td></tr>"
            )
        out.append("</table>")
    errors = list(s.get("errors") or [])
    for p in g.partitions:
        errors += [f"{p.path.name}: {x}" for x in p.summary.get("errors") or []]
    if errors:
        out.append("<h3>Errors</h3>" + "".join(f"<pre>{e(x)}</pre>" for x in errors))
    times = s.get("stage_times_ms") or {}
    if times:
        out.append("<h3>Stage times</h3><table><tr><th>stage</th><th>ms</th></tr>")
        out.extend(f'<tr><td>{e(k)}</td><td class="num">{float(v):.2f}</td></tr>' for k, v in times.items())
        out.append("</table>")
    out.append("</section>")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Command line


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        as_command()
    parser = argparse.ArgumentParser(
        prog="kiln-inspect",
        description="Summarize a Kiln dump_dir: compiled graphs, kernels, fallbacks, timings.",
    )
    parser.add_argument("dir", help="a dump_dir (graph_<n>/ folders) or one graph folder")
    parser.add_argument("--graph", metavar="NAME", help="show one graph in detail (e.g. graph_0)")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with pictures")
    args = parser.parse_args(argv)
    root = Path(args.dir)
    try:
        graphs = load_dump(root)
        if args.graph:
            graphs = [find_graph(graphs, args.graph)]
            print(format_graph(graphs[0]))
        else:
            print(format_listing(graphs, root))
        if args.html:
            out = Path(args.html)
            for note in write_html(graphs, out, str(root)):
                print(f"kiln-inspect: note: {note}", file=sys.stderr)
            print(f"wrote {out}")
    except InspectError as err:
        print(f"kiln-inspect: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
