"""The fingerprint of the code that produces rows: the package's version and a hash of the files
of its three packages (``trials``, ``store``, ``explorer``) as this process loads them, so that
rows from a second checkout, another virtualenv or code edited since can be told apart (the
``code_fingerprint`` column of metrics and trials rows) and a session Ray started by other code
is not joined (``explorer.sweeps.ray.session``).

It is computed where a row is written (a Ray worker writes its trial's rows): it names the code
that ran, whatever the driver's is."""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from .schema import package_version

PACKAGES = ("trials", "store", "explorer")
HASH_HEX = 12  # of the sha256: enough to tell two checkouts apart, short enough to print


def package_root() -> Path:
    """The folder holding the three packages (a checkout's root, or site-packages)."""
    return Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """``<version>+<12 hex>``: the version and the sha256 of every file of the three packages
    (their paths and bytes; compiled caches left out), computed once per process."""
    root = package_root()
    digest = hashlib.sha256()
    for package in PACKAGES:
        folder = root / package
        files = sorted(p for p in folder.rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"))
        for path in files:
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            try:
                digest.update(path.read_bytes())
            except OSError:
                digest.update(b"<unreadable>")
            digest.update(b"\0")
    return f"{package_version()}+{digest.hexdigest()[:HASH_HEX]}"


__all__ = ["code_fingerprint", "package_root"]
