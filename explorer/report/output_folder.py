"""Writing reports into a user's folder (``--out DIR``) without harm to what is already there.

- No write follows a link: each file is written under a fresh temporary name in its folder
  (created exclusively, never through a link), then renamed over its final name, which replaces
  a symbolic link placed there instead of writing through it. A subfolder of the output that is
  a link (``DIR/charts -> elsewhere``) is refused.
- No file the explorer did not create is replaced unless ``force``: the folder keeps a list of
  the files the explorer wrote into it (``.explorer-outputs``), so a second report into the same
  folder replaces its own files, while a folder holding someone else's ``index.html`` is refused
  with one line that names the file and ``--force``.
"""
from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from ..errors import UsageError

MANIFEST = ".explorer-outputs"


class OutputError(UsageError):
    """An output file that may not be written (someone else's file, a linked folder)."""


class OutputFolder:
    """One output folder; ``write(relative, data)`` writes one file there safely."""

    def __init__(self, directory: str | os.PathLike, force: bool = False):
        self.root = Path(directory)
        self.force = force
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create the output folder {self.root}: {exc.strerror or exc}") from None
        self.owned = self._read_manifest()

    def _read_manifest(self) -> set[str]:
        path = self.root / MANIFEST
        if path.is_symlink() or not path.is_file():
            return set()
        try:
            names = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()

    def path(self, relative: str) -> Path:
        return self.root / relative

    def check(self, relative: str) -> Path:
        """The target of ``relative``, after refusing a linked subfolder or someone else's file."""
        parts = Path(relative).parts
        if not parts or any(p in ("", ".", "..") for p in parts) or Path(relative).is_absolute():
            raise OutputError(f"output name {relative!r} is not a plain relative path")
        folder = self.root
        for part in parts[:-1]:
            folder = folder / part
            if folder.is_symlink():
                raise OutputError(f"{folder} is a symbolic link; the output is never written through one "
                                  "(remove it or choose another --out)")
        target = self.root / relative
        exists = target.is_symlink() or target.exists()
        if exists and relative not in self.owned and not self.force:
            raise OutputError(f"{target} exists and was not written by explorer; pass --force to replace it, "
                              "or choose another --out")
        if target.is_dir() and not target.is_symlink():
            raise OutputError(f"{target} is a folder; the output needs that name for a file")
        return target

    def write(self, relative: str, data: bytes | str) -> Path:
        """Write one file (temporary name, then rename over the target); returns its path."""
        target = self.check(relative)
        if isinstance(data, str):
            data = data.encode("utf-8")
        self.owned.add(relative)
        self._put(target, data)
        self._put(self.root / MANIFEST, json.dumps(sorted(self.owned), indent=0).encode())
        return target

    def _put(self, target: Path, data: bytes) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(tmp, flags, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, target)  # replaces a link at target, never writes through it
        except BaseException as exc:
            try:
                os.remove(tmp)
            except OSError:
                pass
            if isinstance(exc, OSError):
                raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None
            raise
