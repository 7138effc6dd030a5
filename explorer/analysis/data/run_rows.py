"""One row per run: the queries that fold a run's (a trial's seed's) metric rows into one row
of what an analysis reads from them, for the phase diagram (``phase_seed_rows``), the
hyperparameter runs along an axis (``axis_run_rows``) and the coordinate check
(``coord_run_rows``). Each is a named query, so that no SQL is written outside this wing.
"""
from __future__ import annotations

import pandas as pd

from .queries import DRAW_COLUMN, FLAGS_COLUMN, final_step_clause, query_frame, sweep_is, table_columns, where_clause


def _flag_conditions(columns, noise: str, init_noise: float) -> tuple[str, str]:
    """SQL booleans on a metric row: (it is marked init_noise, it carries another flag). Marked:
    its init noise alpha_eff sqrt(D / (L M)) is >= ``init_noise``, or the trials flagged it
    (their own rule, with the sweep's init_noise_limit, in the ``flags`` column)."""
    criterion = f"({noise} >= {float(init_noise)!r})"
    if FLAGS_COLUMN not in columns:
        return criterion, "FALSE"
    names = f'string_split(replace("{FLAGS_COLUMN}", \' \', \'\'), \',\')'
    init = f'({criterion} OR coalesce(list_contains({names}, \'init_noise\'), FALSE))'
    other = (f'coalesce(regexp_replace(replace("{FLAGS_COLUMN}", \'init_noise\', \'\'), \'[ ,]\', \'\', \'g\') '
             f"<> '', FALSE)")
    return init, other


def phase_seed_rows(con, sweep: str, axes, *, where: str | None, step: int | None, init_noise: float) -> pd.DataFrame:
    """One row per (trial, seed) of ``sweep`` (rows filtered by ``where``), as read: the axes, L,
    M, D, alpha and the problem draw, the seed, its final-step feature_update, lin_ratio and
    output_change (null unless it ended ok), initial_residual (sqrt of the step-0 loss), whether
    it diverged, failed, has its final row, carries a stability flag other than init_noise
    (``flagged``), its init noise and whether it is marked (``init_noise_flag``: its init noise
    is at least ``init_noise``, or the trials flagged it)."""
    columns = table_columns(con)
    final = final_step_clause(columns, sweep, step)
    alpha = '"alpha"' if "alpha" in columns else "1.0"
    anti = '"antithetic"' if "antithetic" in columns else "FALSE"
    scale = '"residual_scale" * "L" * "M"' if "residual_scale" in columns else alpha  # alpha_eff
    noise = f'CASE WHEN {anti} THEN 0.0 ELSE {scale} * sqrt("D" / ("L" * "M")) END'
    init_flag, other_flag = _flag_conditions(columns, noise, init_noise)
    names = list(dict.fromkeys([*axes, "L", "M", "D"]))
    kept = [f'any_value("{a}") AS "{a}"' for a in names]
    kept.append(f"any_value({alpha}) AS alpha" if "alpha" not in names else "")
    kept.append(f'any_value("{DRAW_COLUMN}") AS draw' if DRAW_COLUMN in columns else "1 AS draw")

    def at_final(c):
        return f"max(CASE WHEN {final} AND status = 'ok' THEN {c} END) AS {c}"

    return query_frame(con, f"""
        SELECT {", ".join(k for k in kept if k)}, trial_key, seed, bool_or({anti}) AS antithetic,
               max({noise}) AS init_noise, bool_or({init_flag}) AS init_noise_flag,
               bool_or(status = 'diverged') AS diverged, bool_or(status = 'failed') AS failed,
               max(CASE WHEN {final} AND status = 'ok' THEN 1 ELSE 0 END) AS has_final,
               max(CASE WHEN step = 0 THEN sqrt(loss) END) AS initial_residual,
               {at_final('feature_update')}, {at_final('lin_ratio')}, {at_final('output_change')},
               bool_or({other_flag}) AS flagged
        FROM metrics WHERE {sweep_is(sweep)}{where_clause(where)} GROUP BY trial_key, seed""")


def _step_of(step: int | None) -> str:
    """The SQL value of the step read: ``step``, or each trial's final step (``steps``) for None."""
    return "steps" if step is None else str(int(step))


def axis_run_rows(con, sweep: str, columns, metric: str, step: int | None, where: str | None) -> pd.DataFrame:
    """One row per run of ``sweep`` (rows matching ``where``), keyed by ``columns`` (quoted as
    names) and ``trial_key``: its last step and status (``last_step``, ``last_status``), its
    ``metric`` and status at ``step`` (``value``, ``status_k``; None: each trial's final step),
    ``steps`` and the step read (``at_step``)."""
    at = _step_of(step)
    keys = [f'"{c}"' for c in columns] + ["trial_key"]
    return query_frame(con, f"""
        SELECT {', '.join(keys)}, max(step) AS last_step, arg_max(status, step) AS last_status,
               any_value("{metric}") FILTER (WHERE step = {at}) AS value,
               any_value(status) FILTER (WHERE step = {at}) AS status_k, max(steps) AS steps, max({at}) AS at_step
        FROM metrics WHERE {sweep_is(sweep)}{where_clause(where)} GROUP BY ALL""")


def coord_run_rows(con, sweep: str, columns, groups, quantities, step: int | None, where: str | None) -> pd.DataFrame:
    """One row per run of ``sweep`` (rows matching ``where``): the ``groups`` columns, M, L, the
    problem draw (``draw``, 0 when the view's ``columns`` have no ``problem_seed``), seed,
    trial_key, ``steps``, and each of ``quantities`` at ``step`` in a status-ok row (None: each
    trial's final step)."""
    draw = f'"{DRAW_COLUMN}"' if DRAW_COLUMN in columns else "0"
    at = _step_of(step)
    return query_frame(con, f"""
        SELECT {''.join(f'"{g}", ' for g in groups)}"M", "L", {draw} AS draw, "seed", trial_key, max(steps) AS steps,
               {', '.join(f'any_value("{q}") FILTER (WHERE step = {at} AND status = {chr(39)}ok{chr(39)}) AS "{q}"'
                          for q in quantities)}
        FROM metrics WHERE {sweep_is(sweep)}{where_clause(where)} GROUP BY ALL""")


__all__ = ["axis_run_rows", "coord_run_rows", "phase_seed_rows"]
