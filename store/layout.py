"""Where everything lives in a store: pure functions from ids to paths, no I/O.

    <root>/sweep=<sweep>/kind=<kind>/<key>.parquet             one trial (or one fit, one round)
    <root>/sweep=<sweep>/kind=<kind>/compacted.<gen>.<n>.parquet  many, written by compaction
    <root>/references/<ref_key>.parquet                          one cached reference
    .../.tmp.<token>.<name>                                      a write in progress (hidden)
    <root>/references/.lock.<ref_key>                            a reference being computed
    <root>/sweep=<sweep>/.leases/<trial_key>                     a driver's claim on a trial
    <root>/sweep=<sweep>/.runs/<run_id>.json                     the record of one ``sweep`` run
    <root>/quarantine/<relative path>                            unreadable files moved aside

Only sweep and kind partition the data (low cardinality; never L, M, D). Names are checked
here so that a path can never escape the root: a key is letters, digits, ``_`` and ``-``; a
sweep name may also hold dots (never ``..``). Keys cannot contain dots, so a compacted file's
name can never collide with a trial's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidNameError
from .schema import KINDS
from .schema import check_kind as _check_kind

REFERENCES_DIR = "references"
DATA_KINDS = tuple(k for k in KINDS if k != REFERENCES_DIR)  # metrics, trials, fits, rounds, comparisons, optima: partitioned by sweep; references are not
SUFFIX = ".parquet"
TEMP_PREFIX = ".tmp."
LOCK_PREFIX = ".lock."
COMPACTED_PREFIX = "compacted."
LEASES_DIR = ".leases"  # in a sweep directory: claims of concurrent drivers
RUNS_DIR = ".runs"  # in a sweep directory: one record per ``sweep`` run (store/runs.py)
QUARANTINE_DIR = "quarantine"  # at the root: files `explorer check --quarantine` moved aside

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_SWEEP = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_GENERATION = re.compile(r"[0-9]{20}[0-9a-f]{8}")
_COMPACTED = re.compile(r"compacted\.([0-9]{20}[0-9a-f]{8})\.([0-9]{1,6})\.parquet")


def check_key(key: str, what: str = "trial key") -> str:
    """Return ``key`` when it can be a file name; raise InvalidNameError otherwise."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise InvalidNameError(
            f"invalid {what} {key!r}: use 1-128 letters, digits, '_' or '-', starting with a letter or digit"
        )
    return key


def check_sweep(sweep: str) -> str:
    """Return ``sweep`` when it can be a directory name; raise InvalidNameError otherwise."""
    if not isinstance(sweep, str) or not _SWEEP.fullmatch(sweep) or ".." in sweep:
        raise InvalidNameError(
            f"invalid sweep name {sweep!r}: use 1-128 letters, digits, '_', '-' or '.', "
            "starting with a letter or digit (no '..')"
        )
    return sweep


def check_kind(kind: str) -> str:
    """``kind`` when it is a kind partitioned by sweep (``DATA_KINDS``); InvalidNameError otherwise."""
    return _check_kind(kind, DATA_KINDS)


def join(*parts: str) -> str:
    """Join path parts with '/', the separator of every pyarrow filesystem."""
    head, *rest = parts
    return "/".join([head.rstrip("/")] + [p.strip("/") for p in rest])


def sweep_dir(root: str, sweep: str) -> str:
    return join(root, f"sweep={check_sweep(sweep)}")


def kind_dir(root: str, sweep: str, kind: str) -> str:
    return join(sweep_dir(root, sweep), f"kind={check_kind(kind)}")


def key_file(root: str, sweep: str, kind: str, key: str) -> str:
    """The file holding one trial (metrics, trials), one fit (fits), one round (rounds), one comparison
    or one request's optima."""
    what = {"fits": "fit id", "rounds": "round id", "comparisons": "comparison id",
            "optima": "optima id"}.get(kind, "trial key")
    return join(kind_dir(root, sweep, kind), check_key(key, what) + SUFFIX)


def compacted_name(generation: str, part: int) -> str:
    """Compacted file names sort by generation: a newer compaction sorts later."""
    if not _GENERATION.fullmatch(generation) or not 0 <= part < 10**6:
        raise InvalidNameError(f"invalid compaction generation {generation!r} or part {part!r}")
    return f"{COMPACTED_PREFIX}{generation}.{part}{SUFFIX}"


def references_dir(root: str) -> str:
    return join(root, REFERENCES_DIR)


def reference_file(root: str, ref_key: str) -> str:
    return join(references_dir(root), check_key(ref_key, "reference key") + SUFFIX)


def reference_lock(root: str, ref_key: str) -> str:
    return join(references_dir(root), LOCK_PREFIX + check_key(ref_key, "reference key"))


def temporary_path(path: str, token: str) -> str:
    """A hidden sibling of ``path``: readers and listings skip names starting with '.'."""
    head, _, name = path.rpartition("/")
    return f"{head}/{TEMP_PREFIX}{token}.{name}"


@dataclass(frozen=True)
class FileName:
    """What a file name inside a kind (or references) directory means."""

    role: str  # single | compacted | temporary | lock | foreign
    key: str | None = None  # single: the trial key, fit id or reference key
    generation: str | None = None  # compacted: sortable generation id


def classify(name: str) -> FileName:
    """Classify a bare file name found in a kind or references directory."""
    if name.startswith(TEMP_PREFIX):
        return FileName("temporary")
    if name.startswith(LOCK_PREFIX):
        return FileName("lock")
    if name.endswith(SUFFIX):
        stem = name[: -len(SUFFIX)]
        if _KEY.fullmatch(stem):
            return FileName("single", key=stem)
        match = _COMPACTED.fullmatch(name)
        if match:
            return FileName("compacted", generation=match.group(1))
    return FileName("foreign")


def single_key(name: str) -> str | None:
    """The key of a small file's name ``<key>.parquet``, or None (fast path of ``classify``)."""
    if name.endswith(SUFFIX):
        stem = name[: -len(SUFFIX)]
        if _KEY.fullmatch(stem):
            return stem
    return None


def parse_sweep_dir(name: str) -> str | None:
    """The sweep of a directory name ``sweep=<name>``, or None for anything else."""
    if name.startswith("sweep="):
        sweep = name[len("sweep="):]
        if _SWEEP.fullmatch(sweep) and ".." not in sweep:
            return sweep
    return None


def parse_kind_dir(name: str) -> str | None:
    """The kind of a directory name ``kind=<kind>``, or None for anything else."""
    if name.startswith("kind=") and name[len("kind="):] in DATA_KINDS:
        return name[len("kind="):]
    return None
