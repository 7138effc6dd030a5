"""A sweep's data against its last ``sweep`` run (``Store.runs``): is it partial, and which trials
lie outside that run's grid. Every analysis says both in one line each (``data_notes``):

    partial: 1017 of 2592 trials of the last run; intervals will narrow
    15 trials outside the last run's grid (problem_seed = 8) are included; --where "problem_seed <> 8" leaves them out

*Partial*: trials the last run set out to run (its grid, or the subset an adaptive round runs)
have no trials row yet. *Outside the grid*: trials with a row whose keys the last run did not
plan, i.e. from an earlier run of a grid that has since shrunk. A grid grown on purpose (an L axis
extended) plans every earlier trial again, so none of them is outside it. A sweep with no run
record (written before runs were recorded) is neither.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from .queries import query_table, sql_literal, sweep_is, table_columns, where_clause

MAX_NAMED_KEYS = 5  # outside trials no axis value explains are named by key up to this many


@dataclass
class RunState:
    """The sweep's trials against its last run."""

    sweep: str
    run: object | None  # store.RunRecord, None when the sweep has no run record
    statuses: dict[str, str]  # trial_key -> status of every trial with a trials row
    outside: int = 0  # trials with rows (matching the filter) that the last run did not plan
    outside_clause: str | None = None  # what they have that the grid has not: "problem_seed = 8"
    outside_drop: str | None = None  # a --where leaving them out: "problem_seed <> 8"
    counts: dict[str, int] = field(default_factory=dict)  # the last run's trials by status (ok, diverged, failed)

    @property
    def total(self) -> int:
        return 0 if self.run is None else len(self.run.target_keys)

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    @property
    def partial(self) -> bool:
        return self.run is not None and self.done < self.total

    @property
    def live(self) -> bool:
        return self.run is not None and self.run.live

    @property
    def ended(self) -> bool:
        """The last run ended, or stopped (no longer live): nothing more will come without a new run."""
        return self.run is None or not self.run.live

    @property
    def running(self) -> int:
        """Trials of a live run not complete yet (claimed by its driver: the store cannot tell a
        trial in a worker from one waiting for a slot)."""
        return self.total - self.done if self.live else 0

    @property
    def pending(self) -> int:
        """Trials of the last run not complete and no longer run by anyone (a run that stopped)."""
        return 0 if self.live else self.total - self.done

    def partial_line(self) -> str | None:
        if not self.partial:
            return None
        head = f"partial: {self.done} of {self.total} trials of the last run"
        if self.live:
            return head + "; intervals will narrow"
        how = "ended" if self.run.ended_at is not None else "stopped"
        return head + f", which {how} without the others (`explorer sweep` again runs them)"

    def outside_line(self, where: str | None = None) -> str | None:
        if not self.outside:
            return None
        what = self.outside_clause or "settings its spec does not have"
        line = f"{self.outside} trial{'s' if self.outside != 1 else ''} outside the last run's grid ({what}) " \
               f"{'are' if self.outside != 1 else 'is'} included"
        if self.outside_drop:
            drop = f"({where}) AND {self.outside_drop}" if where else self.outside_drop
            line += f'; --where "{drop}" leaves them out'
        return line

    def lines(self, where: str | None = None) -> list[str]:
        return [line for line in (self.partial_line(), self.outside_line(where)) if line]


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == b or math.isclose(float(a), float(b), rel_tol=1e-9)
    return a == b


def _clauses(rows: list[dict], axes: Mapping[str, list]) -> tuple[str | None, str | None]:
    """(naming clause, dropping clause) of the outside rows' values no axis of the grid has."""
    named, dropped = [], []
    for column, values in axes.items():
        odd = sorted({row[column] for row in rows if column in row and row[column] is not None
                      and not any(_same(row[column], v) for v in values)}, key=str)
        if not odd:
            continue
        literals = [sql_literal(v) for v in odd]
        if len(odd) == 1:
            named.append(f"{column} = {literals[0]}")
            dropped.append(f"{column} <> {literals[0]}")
        else:
            named.append(f"{column} IN ({', '.join(literals)})")
            dropped.append(f"{column} NOT IN ({', '.join(literals)})")
    if named:
        return ", ".join(named), " AND ".join(dropped)
    keys = sorted(row["trial_key"] for row in rows)
    if len(keys) <= MAX_NAMED_KEYS:
        listed = ", ".join(sql_literal(k) for k in keys)
        return None, f"trial_key NOT IN ({listed})"
    return None, None


def run_state(st, sweep: str, *, con=None, where: str | None = None,
              statuses: Mapping[str, str] | None = None, run=...) -> RunState:
    """The sweep's trials against its last run (``RunState``).

    Args:
        st: the ``store.Store``. con: a connection on its views (else one query of the store's own,
            only when outside trials must be named). where: the analysis's filter: outside trials
            it leaves out are not counted. statuses: ``trial_key -> status`` when already read.
            run: the last run record when already read (None: the sweep has none).
    """
    if run is ...:
        found = st.runs(sweep, last=1)
        run = found[-1] if found else None
    statuses = dict(st.trial_statuses(sweep) if statuses is None else statuses)
    state = RunState(sweep, run, statuses)
    if run is None:
        return state
    for key in run.target_keys:
        status = statuses.get(key)
        if status is not None:
            state.counts[status] = state.counts.get(status, 0) + 1
    outside = set(statuses) - run.planned_keys
    if outside:
        axes = dict(run.spec.get("axes") or {})
        rows = _outside_rows(st, con, sweep, outside, list(axes), where)
        state.outside = len(rows)
        if rows:
            state.outside_clause, state.outside_drop = _clauses(rows, axes)
    return state


def _outside_rows(st, con, sweep: str, keys: set[str], columns: list[str], where: str | None) -> list[dict]:
    """The trials rows of ``keys`` (matching ``where``) with the grid's columns."""
    own = con is None
    if own:
        con = st.connect(sweep=sweep, read_only=True, views=["trials"])
    try:
        present = set(table_columns(con, "trials"))
        wanted = ["trial_key"] + [c for c in columns if c in present]
        sql = (f"SELECT {', '.join(chr(34) + c + chr(34) for c in wanted)} FROM trials "
               f"WHERE {sweep_is(sweep)}{where_clause(where)}")
        table = query_table(con, sql)
    finally:
        if own:
            con.close()
    return [row for row in table.to_pylist() if row["trial_key"] in keys]


def data_notes(st, sweep: str, *, con=None, where: str | None = None) -> list[str]:
    """What an analysis says of its data in one line each: partial, and trials outside the last
    run's grid (``RunState.lines``); nothing for a sweep whose last run is complete and alone."""
    return run_state(st, sweep, con=con, where=where).lines(where)
