"""Which points a reproduction claim leaves out, and why, as the paper spec writes it.

A claim that compares measured errors with a curve (a hand-set curve, a frontier) reads only
part of its sweep: the reference's own point has error zero, some ranges are not where the
authors drew their curve. That choice belongs to the protocol, made before any ratio is looked
at, so it is written in the paper spec beside the grid, not in code: a ``[reproduce]`` table
(which a sweep ignores) maps each claim id to its exclusions::

    [reproduce]
    coupled-hidden = [
      { where = "D < 16", why = "..." },
      { where = "M = {ref_M} AND D = {ref_D}", why = "the reference itself: error 0" },
    ]

``where`` is a SQL condition on the metric rows (L, M, D, problem_seed, ...); ``{ref_L}``,
``{ref_M}``, ``{ref_D}`` stand for the largest point of the sweep (a ``largest`` reference's
point), so a miniature of the grid leaves out its own reference. An empty list says the claim
leaves nothing out. The claim reads the rows ``NOT (where)`` for every entry, and the report
prints each entry with its reason.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError


@dataclass(frozen=True)
class LeftOut:
    """One exclusion of a claim: a SQL condition on the rows it drops, and why."""

    where: str
    why: str

    def describe(self) -> str:
        return f"{self.where} ({self.why})"


def read_leave_out(path: str | Path) -> dict[str, tuple[LeftOut, ...]]:
    """The ``[reproduce]`` table of a paper spec: claim id -> its exclusions (as written, the
    ``{ref_*}`` placeholders not yet filled). A spec without the table gives {}.

    Raises:
        UsageError: the table or an entry is malformed (one line naming the claim).
    """
    with open(path, "rb") as f:
        table = tomllib.load(f).get("reproduce", {})
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [reproduce] must be a table of claim id = list of {{where, why}}")
    from .pooling import OPTIONS

    out = {}
    for claim_id, entries in table.items():
        if claim_id in OPTIONS:  # an option of the reproduction (explorer.reproduce.pooling), not a claim
            continue
        if not isinstance(entries, list):
            raise UsageError(f"{path}: [reproduce] {claim_id} must be a list of {{ where = ..., why = ... }}")
        parsed = []
        for entry in entries:
            if not (isinstance(entry, dict) and set(entry) == {"where", "why"}
                    and all(isinstance(entry[k], str) and entry[k].strip() for k in ("where", "why"))):
                raise UsageError(f"{path}: [reproduce] {claim_id}: each entry is {{ where = \"SQL\", why = \"reason\" }}, "
                                 f"got {entry!r}")
            parsed.append(LeftOut(entry["where"].strip(), entry["why"].strip()))
        out[claim_id] = tuple(parsed)
    return out


def resolve(entries: tuple[LeftOut, ...], largest: dict) -> tuple[LeftOut, ...]:
    """The entries with ``{ref_L}``, ``{ref_M}``, ``{ref_D}`` filled from the sweep's largest point."""
    values = {f"ref_{k}": v for k, v in largest.items()}
    try:
        return tuple(LeftOut(e.where.format(**values), e.why) for e in entries)
    except (KeyError, IndexError, ValueError) as exc:
        raise UsageError(f"[reproduce] where: unknown placeholder {exc} (known: {', '.join(sorted(values))})") from None


def kept_where(base: str | None, entries: tuple[LeftOut, ...]) -> str | None:
    """The SQL condition of the rows a claim keeps: its own ``base`` region and none of the left-out ones."""
    from ..analysis.data import excluding

    return excluding(base, [e.where for e in entries])


def describe(entries: tuple[LeftOut, ...]) -> str:
    """One line for the report: every exclusion with its reason, or that none is made."""
    return "; ".join(e.describe() for e in entries) if entries else "nothing"


__all__ = ["LeftOut", "describe", "kept_where", "read_leave_out", "resolve"]
