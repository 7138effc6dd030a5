"""One reference per grid point and problem draw: when a sweep's trials were measured against
several references (a changed reference spec), the newest is chosen and the rest left out, and
the choice says so (``choose_references``, ``ReferenceChoice``)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ...errors import MixedReferencesError, SweepDataError
from .queries import point_columns, query_frame, quoted, sql_literal, sweep_is, table_columns, where_clause


@dataclass(frozen=True)
class ReferenceChoice:
    """Which trials an analysis reads when grid points were measured against several references.

    Changing a sweep's ``[reference]`` (depth, width, kind) and running it again keeps the old
    trials in the store next to the new ones: the same grid point then has trials against two
    references. Each such point is read against its newest reference (the one of its most
    recently started trial); trials against the others are left out and the notes say so.

    Attributes:
        where: the condition to read with: the caller's ``where`` and, when trials are left
            out, ``trial_key NOT IN (...)``.
        notes: what was chosen, for the fit notes and the report (empty when nothing was mixed;
            it names the ref_keys read and those left out).
        left_out: the keys of the trials left out (``where`` excludes exactly these).
    """

    where: str | None
    notes: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()


def shown_keys(keys, limit: int = 4) -> str:
    keys = list(keys)
    return ", ".join(keys[:limit]) + (f", ... ({len(keys)} in all)" if len(keys) > limit else "")


def mixed_references_error(sweep: str, refs: list[str], why: str) -> MixedReferencesError:
    return MixedReferencesError(
        f"sweep {sweep} mixes {len(refs)} references for the same grid points ({why}); pick one with "
        f"--where \"ref_key = '{refs[0]}'\" (keys: {', '.join(refs)})")


def trial_starts(con, sweep: str) -> pd.Series | None:
    """trial_key -> started_at from the ``trials`` view (None when it has no start times)."""
    try:
        if "started_at" not in table_columns(con, "trials"):
            return None
    except SweepDataError:
        return None
    frame = query_frame(con, f"SELECT trial_key, max(started_at) AS started_at FROM trials "
                             f"WHERE {sweep_is(sweep)} GROUP BY trial_key")
    return frame.set_index("trial_key")["started_at"]


def choose_references(con, sweep: str, where: str | None = None) -> ReferenceChoice:
    """Read each grid point against one reference: its newest when it has trials against several.

    A grid point is a value of L, M, D, every other grid column (``GRID_COLUMNS``) and the
    problem draw (``problem_seed``: each draw has its own reference); its reference is the ``ref_key`` of its trials. References legitimately differ between grid
    points (each D, alpha, ... has its own limit); only a point with several is resolved.
    Failed trials measured nothing and do not count: a rerun whose new reference failed leaves
    the point read against the reference its measured trials used.

    Returns:
        A :class:`ReferenceChoice` (``where`` unchanged when no point mixes references).
    Raises:
        MixedReferencesError: some point mixes references and the ``trials`` view's start
            times cannot tell which is newest (missing, or equal).
    """
    columns = table_columns(con)
    if "ref_key" not in columns:
        return ReferenceChoice(where)
    point = point_columns(columns)
    measured = " AND status <> 'failed'" if "status" in columns else ""
    pairs = query_frame(con, f"SELECT DISTINCT {quoted(point)}, ref_key, trial_key FROM metrics "
                             f"WHERE {sweep_is(sweep)}{measured}{where_clause(where)}")
    if pairs.empty:
        return ReferenceChoice(where)
    pairs["point"] = pairs.groupby(point, dropna=False, sort=False).ngroup()
    mixed = pairs[pairs.groupby("point")["ref_key"].transform("nunique") > 1].copy()
    if mixed.empty:
        return ReferenceChoice(where)
    refs = sorted(mixed["ref_key"].astype(str).unique())
    starts = trial_starts(con, sweep)
    if starts is None:
        raise mixed_references_error(sweep, refs, "the trials view has no start times to tell the newest")
    mixed["started_at"] = mixed["trial_key"].map(starts)
    per_ref = (mixed.groupby(["point", "ref_key"], sort=False)["started_at"].max().reset_index()
               .sort_values(["point", "started_at"], ascending=[True, False], na_position="last"))
    ranked = per_ref.groupby("point").cumcount()
    newest, runner_up = per_ref[ranked == 0].set_index("point"), per_ref[ranked == 1].set_index("point")
    tied = newest["started_at"] == runner_up["started_at"].reindex(newest.index)
    if newest["started_at"].isna().any() or tied.any():
        raise mixed_references_error(sweep, refs, "their trials' start times do not tell which is newest")
    keep = set(zip(newest.index, newest["ref_key"]))
    out = mixed[[(p, r) not in keep for p, r in zip(mixed["point"], mixed["ref_key"])]]
    left_out = tuple(sorted(out["trial_key"].astype(str).unique()))
    chosen = tuple(sorted(newest["ref_key"].astype(str).unique()))
    dropped = tuple(sorted(out["ref_key"].astype(str).unique()))
    n_points, n_mixed = int(pairs["point"].nunique()), int(mixed["point"].nunique())
    note = (f"{n_mixed} of {n_points} grid points have trials against several references; each is read against "
            f"its newest (ref_key {shown_keys(chosen)}) and {len(left_out)} trials against older references "
            f"(ref_key {shown_keys(dropped)}) are left out; choose one with --where \"ref_key = '...'\"")
    condition = f"trial_key NOT IN ({', '.join(sql_literal(k) for k in left_out)})"
    combined = f"({where}) AND {condition}" if where else condition
    return ReferenceChoice(combined, (note,), left_out)


__all__ = ["ReferenceChoice", "choose_references", "mixed_references_error", "shown_keys", "trial_starts"]
