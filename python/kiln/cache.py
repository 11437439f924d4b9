"""The on-disk compile cache: artifacts keyed by everything they depend on.

An artifact is a pure function of the graph JSON the compiler receives (the
graph, its input shapes, dtypes, strides and symbols, and the source lines
its kernels report; not the graph's name, a counter), the target, the Kiln
build (the extension's bytes, which fix Kiln's version and its compiler), the
LLVM version and the host CPU's name and features. The key is the SHA-256 of
all of them; the entry is the artifact file itself, so the artifact's own
checksum and verifier detect a truncated or corrupt entry. Such an entry is
logged once, deleted and rebuilt.

Writes go to a temporary file in the same folder and are renamed into place,
so concurrent processes sharing a folder never read half an entry, and two
processes storing the same key store the same bytes.

    kiln-cache [--dir DIR] [list | info | clear]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kiln.cli import as_command

log = logging.getLogger("kiln")

# Bump when what an entry holds changes meaning (the key covers the rest).
_LAYOUT = "v1"
_SUFFIX = ".kiln"

_build_ids: dict[str, str] = {}
_build_lock = threading.Lock()
_reported: set[str] = set()


def default_dir() -> Path:
    """$XDG_CACHE_HOME/kiln, else ~/.cache/kiln."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kiln"


def build_id(ext: Any) -> str:
    """A digest of what the compiled code depends on besides the graph: the
    extension's bytes (Kiln's version and build), LLVM's version, the artifact
    format and the host CPU. Computed once per process."""
    path = getattr(ext, "__file__", None) or ""
    with _build_lock:
        if path not in _build_ids:
            digest = hashlib.sha256()
            if path:
                with open(path, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        digest.update(block)
            info = ext.compiler.build_info()
            digest.update(json.dumps(info, sort_keys=True).encode())
            _build_ids[path] = digest.hexdigest()
        return _build_ids[path]


@dataclass
class Hit:
    """A cache entry that loaded: the artifact, its executable and the
    kernels its metadata describes (as the compile result's kernel_info)."""

    artifact: bytes
    executable: Any
    kernels: list[dict[str, Any]]
    path: Path


class ArtifactCache:
    """One cache folder. Safe to share between threads and processes."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory)

    @property
    def root(self) -> Path:
        return self.directory / _LAYOUT

    def key(self, graph: dict[str, Any], target: str, build: str) -> str:
        """The key of a graph (the serialized graph's dict): its name, which
        only counts graphs in this process, is left out."""
        graph_json = json.dumps({**graph, "name": ""}, allow_nan=False)
        digest = hashlib.sha256()
        for part in (build, target, graph_json):
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / (key + _SUFFIX)

    def load(self, key: str, ext: Any, graph_name: str) -> Hit | None:
        """The entry for key, loaded as graph_name; None when there is none or
        it is bad (then it is deleted, and the caller compiles and stores again)."""
        path = self.path(key)
        try:
            artifact = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            self._report_bad(path, f"cannot be read ({err})")
            return None
        try:
            executable = ext.runtime.Executable(artifact, graph_name=graph_name)
            kernels = json.loads(executable.metadata)["kernels"]
        except Exception as err:  # the runtime's verdict: corrupt, truncated, stale
            self._report_bad(path, str(err).splitlines()[0] if str(err) else type(err).__name__)
            _unlink(path)
            return None
        return Hit(artifact, executable, kernels, path)

    def store(self, key: str, artifact: bytes) -> None:
        """Writes the entry atomically; a cache that cannot be written is
        logged once and otherwise ignored (compiling still works)."""
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(artifact)
                os.replace(tmp, path)
            except BaseException:
                _unlink(tmp)
                raise
        except OSError as err:
            if str(self.directory) not in _reported:
                _reported.add(str(self.directory))
                log.warning("kiln: cannot write the compile cache in %s (%s); compiling "
                            "without it", self.directory, err)

    def entries(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(self.root.glob("*/*" + _SUFFIX))

    def clear(self) -> int:
        """Deletes every entry (and stray temporary files); returns how many entries."""
        count = 0
        if not self.root.is_dir():
            return 0
        for path in self.root.glob("*/*"):
            if path.name.endswith(_SUFFIX):
                count += 1
            _unlink(path)
        for folder in self.root.glob("*"):
            try:
                folder.rmdir()
            except OSError:
                pass
        return count

    def _report_bad(self, path: Path, why: str) -> None:
        if str(path) not in _reported:
            _reported.add(str(path))
            log.warning("kiln: compile cache entry %s is unusable (%s); compiling again",
                        path, why)


def _unlink(path: str | os.PathLike[str]) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def cache_for(options: Any) -> ArtifactCache | None:
    """The cache the options ask for, or None when it is off."""
    if not options.cache:
        return None
    return ArtifactCache(options.cache_dir or default_dir())


def _describe(path: Path) -> dict[str, Any]:
    """An entry's graph name, kernel count and size, read from its artifact."""
    info: dict[str, Any] = {"key": path.stem, "bytes": path.stat().st_size}
    try:
        from kiln import _C

        exe = _C.runtime.Executable(path.read_bytes())
        meta = json.loads(exe.metadata)
        info["kernels"] = len(meta.get("kernels", ()))
        info["ops"] = sum(len(k.get("ops", ())) for k in meta.get("kernels", ()))
    except Exception as err:  # listing must survive a bad entry
        info["error"] = str(err).splitlines()[0] if str(err) else type(err).__name__
    return info


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        as_command()
    parser = argparse.ArgumentParser(
        prog="kiln-cache", description="List or clear Kiln's on-disk compile cache.")
    parser.add_argument("command", nargs="?", default="info", choices=("list", "info", "clear"),
                        help="info (default): folder, entries and size; list: one line per "
                             "entry; clear: delete every entry")
    parser.add_argument("--dir", default=None,
                        help="the cache folder (default: KILN_CACHE_DIR, else "
                             f"{default_dir()})")
    args = parser.parse_args(argv)
    cache = ArtifactCache(args.dir or os.environ.get("KILN_CACHE_DIR") or default_dir())
    if args.command == "clear":
        count = cache.clear()
        print(f"{cache.directory}: removed {count} entries")
        return 0
    entries = cache.entries()
    if args.command == "list":
        for path in entries:
            info = _describe(path)
            detail = (f"error: {info['error']}" if "error" in info
                      else f"{info['kernels']} kernels, {info['ops']} ops")
            print(f"{info['key'][:16]}  {info['bytes']:>9} bytes  {detail}")
    total = sum(p.stat().st_size for p in entries)
    print(f"{cache.directory}: {len(entries)} entries, {total / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
