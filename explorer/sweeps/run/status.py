"""A sweep's trials counted by status, as the store sees them (``explorer status``): of a spec's
trials (with the spec: pending ones counted, and those of the store the spec no longer defines),
of every trial under a sweep's name, or of every sweep of the store, one row each; an adaptive
sweep's rounds follow its counts."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from store import SCHEMA_VERSION, STATUSES, Store

from ...config.planning import plan
from ...config.spec import load_spec
from ...store_access import open_store, store_errors


@dataclass
class SweepStatus:
    """Counts of a sweep's trials by status, as the store sees them."""

    sweep: str
    store: str
    counts: dict[str, int] = field(default_factory=dict)  # ok, diverged, failed (+ pending, other with a spec)
    planned: int | None = None  # trials the spec defines (None without a spec)
    adaptive: list[str] = field(default_factory=list)  # an adaptive sweep's rounds (explorer.sweeps.adaptive.adaptive_status)

    def lines(self) -> list[str]:
        head = f"sweep {self.sweep} in {self.store}"
        if self.planned is not None:
            done = sum(self.counts.get(s, 0) for s in ("ok", "diverged"))
            head += f": {done}/{self.planned} trials complete"
        order = list(STATUSES) + (["pending", "other"] if self.planned is not None else [])
        lines = [head]
        for name in order:
            note = {"pending": "  (not run yet, or lost: rerun the sweep)",
                    "other": "  (in the store, not in this spec)"}.get(name, "")
            lines.append(f"  {name:<9}{self.counts.get(name, 0):>8}{note}")
        return lines + self.adaptive


def sweep_status(spec_or_path=None, *, sweep: str | None = None, store: Store | str = "results",
                 overrides: Sequence[str] = ()) -> SweepStatus:
    """Counts by status of a sweep's trials: of the spec's trials (with a spec), or of every
    trial the store holds under the name ``sweep``.

    Raises:
        SpecError: an invalid spec. SweepDataError: a sweep name the store does not have (the
            message lists those it has). StoreAccessError: a store that cannot be opened.
        ValueError: neither or both of a spec and a sweep name.
    """
    if (spec_or_path is None) == (sweep is None):
        raise ValueError("give a spec or a sweep name (not both)")
    if sweep is not None:
        st = open_store(store, sweep=sweep)
        counts = st.trial_status_counts(sweep)  # from the compacted files' footers: flat in the trials
        return SweepStatus(sweep=sweep, store=st.uri, counts=counts, adaptive=_adaptive_lines(st, sweep))
    spec = load_spec(spec_or_path, overrides)
    st = open_store(store)  # a spec not run yet: every trial pending, even in an empty store
    planned = {t.trial_key for t in plan(spec, SCHEMA_VERSION).trials}
    known = st.trial_statuses(spec.name)
    counts = {s: 0 for s in (*STATUSES, "pending", "other")}
    for key in planned:
        counts[known.get(key, "pending")] += 1
    counts["other"] = len(set(known) - planned)
    return SweepStatus(sweep=spec.name, store=st.uri, counts=counts, planned=len(planned),
                       adaptive=_adaptive_lines(st, spec.name))


def _adaptive_lines(st: Store, sweep: str) -> list[str]:
    """The rounds of an adaptive sweep, for the status (none for other sweeps)."""
    if sweep not in st.sweeps() or not st.has_kind(sweep, "rounds"):
        return []
    from ..adaptive import adaptive_status

    return adaptive_status(st, sweep)


def every_sweep_status_lines(store) -> list[str]:
    """``explorer status`` alone: a header and one row per sweep of the store, trials by status.

    Raises:
        StoreAccessError: nothing was written to ``store`` yet.
    """
    st = open_store(store, must_exist=True)
    with store_errors():
        rows = [(name, st.trial_status_counts(name)) for name in st.sweeps()]
    lines = [f"{'sweep':<24}" + "".join(f"{s:>10}" for s in STATUSES) + f"{'trials':>10}"]
    for name, by_status in rows:
        counts = [by_status.get(s, 0) for s in STATUSES]
        lines.append(f"{name:<24}" + "".join(f"{c:>10}" for c in counts) + f"{sum(by_status.values()):>10}")
    return lines


__all__ = ["SweepStatus", "every_sweep_status_lines", "sweep_status"]
