"""The fit cache: a fit (or a model comparison) whose inputs have not changed is read back, not
computed again.

A report fits six laws with their bootstraps and ranks the laws by cross-validation: most of
its time. Rerunning it on a sweep that did not change (``explorer demo`` on a complete store, a
second report) would compute the same numbers again. ``FitCache.computed`` keys a result by
everything it is a function of:

- the rows read from the store, whole (the pickled frame: its every value, column and dtype),
  so a sweep that gained, lost or changed a row is a new key and is fitted again;
- the options of the fit (law, metric, step, filter, resamples, seed, floor, ...);
- the code that computes it: the ``explorer`` package's files (its sources and the page's
  template) and the versions of Python and of the libraries that compute or write it (NumPy,
  SciPy, pandas, PyArrow, DuckDB, Altair, vl-convert, Jinja2: a change of any is a new key, not a
  stale answer).

A result read back is the pickle of the one computed, so every number is bit-identical. The
results are kept as files in ``$XDG_CACHE_HOME`` (default ``~/.cache``)
``/resnet-scaling-explorer/fits/`` (the user's own cache, beside the Vega bundle), at most
``MAX_ENTRIES`` of them and ``MAX_BYTES`` in all (the oldest go first), and in memory for the
process (the demo's fit lines reuse its report's fit). The folder is the user's, like their home:
its pickles are read as trusted. A cache that cannot be read or written is only slower.

Each file begins with ``FILE_MAGIC`` and the sha256 of the pickle after it, checked when it is
read back: a file emptied, cut or altered since (a full disk, a crash mid-copy, a hand edit) is
removed and counted a miss, and the result computed again; it is never unpickled.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import platform
import sys
from collections.abc import Callable
from pathlib import Path

MAX_ENTRIES = 512  # files kept; a demo report writes about ten
MAX_BYTES = 256 * 2**20  # and at most this much (a kept report, its page inline, is a few MB)

# A kept file: this line, the sha256 (hex) of the pickle, the pickle.
FILE_MAGIC = b"resnet-scaling-explorer cache 1\n"

_PACKAGES = ("numpy", "scipy", "pandas", "pyarrow", "duckdb", "altair", "vl-convert-python", "jinja2", "markupsafe")


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/resnet-scaling-explorer/fits`` (``~/.cache`` without the variable)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "resnet-scaling-explorer" / "fits"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 of the ``explorer`` package's sources and the numeric libraries' versions: a result
    computed by other code is never served."""
    digest = hashlib.sha256(f"{sys.version}|{platform.machine()}".encode())
    from importlib import metadata

    for name in _PACKAGES:
        version = None
        with contextlib.suppress(metadata.PackageNotFoundError):
            version = metadata.version(name)
        digest.update(f"|{name}={version}".encode())
    package = Path(__file__).resolve().parents[1]
    for source in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(source.relative_to(package)).encode())  # the page's template too
        digest.update(source.read_bytes())
    return digest.hexdigest()


class FitCache:
    """Results keyed by their inputs and code (``computed``), kept in ``folder`` and in memory.

    Args:
        folder: where the results are kept (default ``cache_folder()``); None with
            ``keep_files=False``: in memory only.
    """

    def __init__(self, folder: str | os.PathLike | None = None, *, keep_files: bool = True):
        self.folder = Path(folder) if folder is not None else cache_folder()
        self.keep_files = keep_files
        self._memory: dict[str, bytes] = {}
        self.hits = 0
        self.misses = 0

    def key(self, kind: str, inputs: dict) -> str:
        """The hex key of ``kind`` (e.g. "fit") of ``inputs`` (name -> value: frames, options)."""
        payload = pickle.dumps((kind, sorted(inputs.items())), protocol=pickle.HIGHEST_PROTOCOL)
        return hashlib.sha256(code_fingerprint().encode() + payload).hexdigest()

    def computed(self, kind: str, inputs: dict, compute: Callable[[], object]):
        """The result of ``compute()`` for ``inputs``: read back when it was computed before (a
        fresh copy each time, so a caller may change it), else computed and kept."""
        found, result = self.read(kind, inputs)
        if found:
            return result
        result = compute()
        self.keep(kind, inputs, result)
        return result

    def read(self, kind: str, inputs: dict) -> tuple[bool, object]:
        """(True, a fresh copy of the value kept for ``inputs``), or (False, None); counted in
        ``hits`` and ``misses``."""
        key = self.key(kind, inputs)
        stored = self._memory.get(key) or self._read(key)
        if stored is not None:
            with contextlib.suppress(Exception):  # a file of another version or truncated: a miss
                value = pickle.loads(stored)
                self._memory[key] = stored
                self.hits += 1
                return True, value
        self.misses += 1
        return False, None

    def keep(self, kind: str, inputs: dict, value) -> None:
        """Keep ``value`` as the result of ``kind`` for ``inputs``."""
        key = self.key(kind, inputs)
        stored = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        self._memory[key] = stored
        self._write(key, stored)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.pickle"

    def _read(self, key: str) -> bytes | None:
        """The pickle kept in ``key``'s file when it matches the sha256 written with it; else None
        (a damaged file is removed: it is computed and written again)."""
        if not self.keep_files:
            return None
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        head = len(FILE_MAGIC) + 64
        stored = data[head:]
        if data[:len(FILE_MAGIC)] == FILE_MAGIC and data[len(FILE_MAGIC):head] == hashlib.sha256(stored).hexdigest().encode():
            return stored
        with contextlib.suppress(OSError):
            path.unlink()
        return None

    def _write(self, key: str, stored: bytes) -> None:
        """Write whole or not at all (a temporary file, then a rename), then drop the oldest files
        past ``MAX_ENTRIES`` or ``MAX_BYTES`` (never the one just written)."""
        if not self.keep_files:
            return
        path = self._path(key)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            temporary.write_bytes(FILE_MAGIC + hashlib.sha256(stored).hexdigest().encode() + stored)
            os.replace(temporary, path)
            entries = sorted(((p.stat(), p) for p in self.folder.glob("*.pickle")), key=lambda e: e[0].st_mtime)
            total = sum(stat.st_size for stat, _ in entries)
            for count, (stat, old) in enumerate(entries):
                if len(entries) - count <= MAX_ENTRIES and total <= MAX_BYTES or old == path:
                    break
                old.unlink(missing_ok=True)
                total -= stat.st_size
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)


__all__ = ["FILE_MAGIC", "FitCache", "MAX_BYTES", "MAX_ENTRIES", "cache_folder", "code_fingerprint"]
