"""The phase diagram: each cell of two swept axes classified as mlu, lazy, trivial or diverged.

Source: Chizat, "The Hidden Width of Deep ResNets" (arXiv:2509.10167), the phase diagram of
docs/model.md, section 6. In the maximal-local-update (MLU) regime every unit's own preactivation
change (``feature_update``) and the block's local linearization error (``lin_ratio``) are
Theta(1), as large as the change of the output; in the lazy regime (alpha >> 1) both are about
1/alpha while the output still moves Theta(1). A learning rate too small leaves the output where
it started (trivial); too large blows up (diverged).

The rule (``PhaseRule``, documented in docs/analysis.md), applied per cell to the medians over
seeds of the final-step values (problem draws pooled; seeds with a stability flag left out and
counted in ``n_flagged``):

1. failed:   every seed of the cell failed (no measurement).
2. diverged: any seed diverged at any step, or a final value is missing or non-finite.
3. trivial:  output_change < 0.25 * initial_residual, where initial_residual = sqrt(loss at
             step 0) is how far the output had to go (RMS of f_0 - y): the output did not move
             Theta(1), as a learning rate too small leaves it (lr = 0.125 with K = 10 moves it
             0.18 - 0.20 of the way, lr = 1 0.42 - 0.44: docs/analysis.md).
4. lazy:     local_ratio = max(feature_update, lin_ratio) / output_change < 0.5: the units'
             own, local movement is small next to the function's movement.
5. mlu:      otherwise.

Measured with the trial engine at L = M = 8 and 32, D = 4 and 8, K = 10, eta = 1: local_ratio is
about 0.73 at alpha = 1, 0.5 at alpha = 2, 0.25 to 0.38 at alpha = 4 and 0.06 to 0.16 at alpha =
16, i.e. about 1/alpha; the threshold 0.5 puts the MLU/lazy crossover near alpha = 2, so alpha = 4
already reads lazy (docs/model.md section 4's numbers give 0.70, 0.19, 0.056 at alpha = 1, 4, 16).
``phase_boundary`` measures where the crossover lies, per slice, with its bootstrap interval, and
how it scales with L, M and D beside the theory's exponents.

A cell is marked ``init_noise`` (``*``) when the initial noise of its hidden state, alpha_eff
sqrt(D / (L M)) (alpha_eff = residual_scale L M, 0 with antithetic units), is >= 1: the RMS of
h_L - h_0 at step 0 is 0.6 - 0.8 times that (engine, D = 8 - 64), as large as the state itself,
outside the Mean ODE picture; or when a seed carries the trials' ``init_noise`` flag (the
``flags`` column: alpha_eff / sqrt(L M) > the sweep's init_noise_limit). The cell is still
classified and drawn. Seeds with any other flag (``chaotic``) are left out of the cells and
counted.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import SweepDataError
from ..formatting import fmt
from .data import (DRAW_COLUMN, FLAGS_COLUMN, GRID_COLUMNS, choose_references, final_step_clause, held_axes, held_where, plain_value,
                   query_frame, require_sweep_rows, sweep_is, table_columns, where_clause)

PHASES = ("mlu", "lazy", "trivial", "diverged", "failed")
AXES = ("L", "M", "D") + GRID_COLUMNS
_NEEDED = ("feature_update", "lin_ratio", "output_change", "loss")


@dataclass(frozen=True)
class PhaseRule:
    """Thresholds of the phase rule (see the module docstring)."""

    trivial_output: float = 0.25  # output_change below this fraction of sqrt(loss_0): trivial (a too-small lr)
    lazy_ratio: float = 0.5  # max(feature_update, lin_ratio) / output_change below this: lazy
    init_noise: float = 1.0  # alpha_eff sqrt(D / (L M)) at or above this: the cell is marked init_noise


@dataclass
class PhaseDiagram:
    """Cells of a phase diagram.

    Attributes:
        cells: one row per (x, y) cell: x, y, L, M, alpha, n_seeds, n_diverged, n_failed, the
            medians feature_update, lin_ratio, output_change, initial_residual, then local_ratio,
            init_noise (alpha_eff / sqrt(L M) = residual_scale sqrt(L M), 0 with antithetic units),
            init_noise_flag (a seed carries the init_noise flag, see the module docstring) and phase.
        x, y: the two axes. fixed: the values the other varying axes were held at.
        rule: the thresholds used. notes: what the reader should know (``choose_references``).
    """

    cells: pd.DataFrame
    x: str
    y: str
    fixed: dict = field(default_factory=dict)
    rule: PhaseRule = field(default_factory=PhaseRule)
    notes: list = field(default_factory=list)  # e.g. trials against older references left out
    n_flagged: int = 0  # seeds left out for a flag other than init_noise (a cell whose every seed is so flagged is not drawn)
    n_init_noise: int = 0  # seeds flagged init_noise (kept in their cells, which are marked)

    def counts(self) -> dict:
        """phase -> number of cells."""
        return {p: int((self.cells["phase"] == p).sum()) for p in PHASES}


def classify(cells: pd.DataFrame, rule: PhaseRule = PhaseRule()) -> pd.Series:
    """Apply the phase rule to cells with the median columns of ``PhaseDiagram.cells``."""
    fu, lin, oc = (cells[c].astype(float) for c in ("feature_update", "lin_ratio", "output_change"))
    residual = cells["initial_residual"].astype(float)
    finite = np.isfinite(fu) & np.isfinite(lin) & np.isfinite(oc)
    with np.errstate(all="ignore"):
        ratio = np.maximum(fu, lin) / oc
    phase = np.where(ratio < rule.lazy_ratio, "lazy", "mlu")
    phase = np.where(oc < rule.trivial_output * residual, "trivial", phase)
    phase = np.where((cells["n_diverged"] > 0) | ~finite | (cells["n_final"] < cells["n_seeds"] - cells["n_failed"]),
                     "diverged", phase)
    phase = np.where(cells["n_failed"] >= cells["n_seeds"], "failed", phase)
    return pd.Series(phase, index=cells.index, name="phase")


def _held_for_phase(con, sweep: str, x: str, y: str, columns: list[str], where: str | None) -> dict:
    """Values for the varying axes that are not drawn, chosen one axis at a time: the value with
    the most (x, y) cells; ties go to the largest L, M, D (closest to the limit), else to
    ``held_axes``'s choice (the most common value)."""
    fixed: dict = {}
    preferred = held_axes(con, sweep, (x, y), where)
    for col in preferred:
        sql = (f'SELECT "{col}" AS v, count(DISTINCT ("{x}", "{y}")) AS cells FROM metrics '
               f"WHERE {sweep_is(sweep)}{where_clause(held_where(fixed, where))} GROUP BY 1")
        counts = query_frame(con, sql)
        top = [plain_value(v) for v in counts[counts["cells"] == counts["cells"].max()]["v"]]
        present = [v for v in top if v is not None]
        if preferred[col] in top:
            fixed[col] = preferred[col]
        elif present:
            fixed[col] = max(present) if col in ("L", "M", "D") else min(present)
        else:
            fixed[col] = None
    return fixed


def phase_diagram(con, sweep: str, x: str = "alpha", y: str = "D", *, step: int | None = None,
                  where: str | None = None, rule: PhaseRule = PhaseRule()) -> PhaseDiagram:
    """Classify every (x, y) cell of a sweep.

    Args:
        con: a DuckDB connection with a ``metrics`` view.
        sweep: the sweep name.
        x, y: two distinct axes among L, M, D and the grid columns (alpha, lr, sigma_u, ...).
        step: the GD step to read; None means each trial's final step.
        where: an optional SQL filter on metric rows.
        rule: the thresholds.
    Returns:
        A :class:`PhaseDiagram`; other varying axes are held at the values in ``fixed``.
    Raises:
        SweepDataError: unknown sweep or axis, axes equal, or missing metric columns.
    """
    columns = table_columns(con)
    _check_axes(columns, x, y)
    require_sweep_rows(con, sweep)
    fixed = _held_for_phase(con, sweep, x, y, columns, where)
    choice = choose_references(con, sweep, held_where(fixed, where))
    seeds = seed_rows(con, sweep, (x, y), where=choice.where, step=step, rule=rule)
    cells = cell_table(seeds[~seeds["flagged"]], (x, y), rule)
    if cells.empty:
        raise SweepDataError(f"sweep {sweep!r} has no rows for a phase diagram over {x} and {y}")
    n_flagged, n_init_noise = int(seeds["flagged"].sum()), int(seeds["init_noise_flag"].sum())
    notes = list(choice.notes)
    if n_flagged:
        notes.append(f"{n_flagged} seeds with a stability flag (the flags column) are left out of the cells")
    if n_init_noise:
        marked = int(cells["init_noise_flag"].sum())
        notes.append(f"{n_init_noise} seeds flagged init_noise in {marked} cell{'s' if marked != 1 else ''} (marked *): "
                     "classified, but outside the Mean ODE picture")
    return PhaseDiagram(cells=cells, x=x, y=y, fixed=fixed, rule=rule, notes=notes, n_flagged=n_flagged,
                        n_init_noise=n_init_noise)


def seed_rows(con, sweep: str, axes, *, where: str | None, step: int | None, rule: PhaseRule) -> pd.DataFrame:
    """One row per (trial, seed) of ``sweep`` (rows filtered by ``where``): the axes, L, M, D,
    alpha and the problem draw, the seed, its final-step feature_update, lin_ratio and
    output_change (null unless it ended ok), initial_residual (sqrt of the step-0 loss), whether
    it diverged, failed, has its final row, carries a stability flag other than init_noise
    (``flagged``), its init noise and whether it is marked (``init_noise_flag``)."""
    columns = table_columns(con)
    final = final_step_clause(columns, sweep, step)
    alpha = '"alpha"' if "alpha" in columns else "1.0"
    anti = '"antithetic"' if "antithetic" in columns else "FALSE"
    scale = '"residual_scale" * "L" * "M"' if "residual_scale" in columns else alpha  # alpha_eff
    noise = f'CASE WHEN {anti} THEN 0.0 ELSE {scale} * sqrt("D" / ("L" * "M")) END'
    init_flag, other_flag = _flag_conditions(columns, noise, rule)
    names = list(dict.fromkeys([*axes, "L", "M", "D"]))
    kept = [f'any_value("{a}") AS "{a}"' for a in names]
    kept.append(f"any_value({alpha}) AS alpha" if "alpha" not in names else "")
    kept.append(f'any_value("{DRAW_COLUMN}") AS draw' if DRAW_COLUMN in columns else "1 AS draw")

    def at_final(c):
        return f"max(CASE WHEN {final} AND status = 'ok' THEN {c} END) AS {c}"

    sql = f"""
        SELECT {", ".join(k for k in kept if k)}, trial_key, seed, bool_or({anti}) AS antithetic,
               max({noise}) AS init_noise, bool_or({init_flag}) AS init_noise_flag,
               bool_or(status = 'diverged') AS diverged, bool_or(status = 'failed') AS failed,
               max(CASE WHEN {final} AND status = 'ok' THEN 1 ELSE 0 END) AS has_final,
               max(CASE WHEN step = 0 THEN sqrt(loss) END) AS initial_residual,
               {at_final('feature_update')}, {at_final('lin_ratio')}, {at_final('output_change')},
               bool_or({other_flag}) AS flagged
        FROM metrics WHERE {sweep_is(sweep)}{where_clause(where)} GROUP BY trial_key, seed"""
    seeds = query_frame(con, sql)
    for c in ("feature_update", "lin_ratio", "output_change", "initial_residual", "init_noise"):
        seeds[c] = seeds[c].astype(float)
    for c in ("flagged", "init_noise_flag", "diverged", "failed", "antithetic"):
        seeds[c] = seeds[c].fillna(False).astype(bool)
    return seeds


def cell_table(seeds: pd.DataFrame, keys, rule: PhaseRule) -> pd.DataFrame:
    """The cells over ``keys`` from ``seed_rows`` (flagged seeds already left out): the counts,
    the medians over seeds, the local ratio, the init-noise mark and the phase of each."""
    keys = list(keys)
    given = {c: "first" for c in ("L", "M", "D", "alpha") if c not in keys and c in seeds}
    given.update(antithetic="any", init_noise="max", init_noise_flag="any", n_seeds="size", n_diverged="sum",
                 n_failed="sum", n_final="sum", feature_update="median", lin_ratio="median",
                 output_change="median", initial_residual="median")
    frame = seeds.assign(n_seeds=1, n_diverged=seeds["diverged"].astype(int), n_failed=seeds["failed"].astype(int),
                         n_final=seeds["has_final"].astype(int))
    cells = frame.groupby(keys, dropna=False).agg({c: how for c, how in given.items() if c != "n_seeds"})
    cells["n_seeds"] = frame.groupby(keys, dropna=False).size()
    return _typed_cells(cells.reset_index().sort_values(keys, ignore_index=True), rule)


def _check_axes(columns: list[str], x: str, y: str) -> None:
    """Refuse an axis the sweep does not have, the same axis twice, or a view without the
    columns the phase rule reads."""
    for axis in (x, y):
        if axis not in AXES or axis not in columns:
            allowed = ", ".join(a for a in AXES if a in columns)
            raise SweepDataError(f"unknown phase axis {axis!r}; expected one of: {allowed}")
    if x == y:
        raise SweepDataError(f"the phase diagram needs two different axes, got {x!r} twice")
    missing = [c for c in _NEEDED if c not in columns]
    if missing:
        raise SweepDataError(f"the metrics table lacks columns for the phase rule: {', '.join(missing)}")


def _typed_cells(cells: pd.DataFrame, rule: PhaseRule) -> pd.DataFrame:
    """The cells with plain dtypes, the local ratio and each cell's phase."""
    for c in ("feature_update", "lin_ratio", "output_change", "initial_residual", "alpha"):
        cells[c] = cells[c].astype(float)
    for c in ("n_seeds", "n_diverged", "n_failed", "n_final"):
        cells[c] = cells[c].astype(int)
    with np.errstate(all="ignore"):
        cells["local_ratio"] = np.maximum(cells["feature_update"], cells["lin_ratio"]) / cells["output_change"]
    cells["init_noise"] = cells["init_noise"].astype(float)
    cells["init_noise_flag"] = cells["init_noise_flag"].fillna(False).astype(bool)
    cells["phase"] = classify(cells, rule)
    return cells


def _flag_conditions(columns, noise: str, rule: PhaseRule) -> tuple[str, str]:
    """SQL booleans on a metric row: (it is marked init_noise, it carries another flag). Marked:
    its init noise alpha_eff sqrt(D / (L M)) is >= ``rule.init_noise``, or the trials flagged it
    (their own rule, with the sweep's init_noise_limit, in the ``flags`` column)."""
    criterion = f"({noise} >= {float(rule.init_noise)!r})"
    if FLAGS_COLUMN not in columns:
        return criterion, "FALSE"
    names = f'string_split(replace("{FLAGS_COLUMN}", \' \', \'\'), \',\')'
    init = f'({criterion} OR coalesce(list_contains({names}, \'init_noise\'), FALSE))'
    other = (f'coalesce(regexp_replace(replace("{FLAGS_COLUMN}", \'init_noise\', \'\'), \'[ ,]\', \'\', \'g\') '
             f"<> '', FALSE)")
    return init, other


def format_phase(diagram: PhaseDiagram) -> str:
    """A text grid: rows are y values, columns x values, each cell its phase (* = init noise)."""
    cells = diagram.cells
    xs = sorted(cells[diagram.x].unique())
    ys = sorted(cells[diagram.y].unique())
    lookup = {(r[diagram.x], r[diagram.y]): r["phase"] + ("*" if r["init_noise_flag"] else "")
              for _, r in cells.iterrows()}
    corner = f"{diagram.y} \\ {diagram.x}"
    head = f"{corner:>12} " + " ".join(f"{fmt(v, 'g'):>9}" for v in xs)
    lines = [head]
    for yv in ys:
        lines.append(f"{fmt(yv, 'g'):>12} " + " ".join(f"{lookup.get((xv, yv), '-'):>9}" for xv in xs))
    fixed = ", ".join(f"{k}={fmt(v, 'g')}" for k, v in diagram.fixed.items())
    if cells["init_noise_flag"].any():
        lines.append(f"* init noise: alpha_eff sqrt(D/(LM)) >= {diagram.rule.init_noise:g} (the initial hidden state's "
                     "noise as large as the state), or flagged by the trials: outside the Mean ODE picture")
    if fixed:
        lines.append(f"other axes held at: {fixed}")
    lines.extend(f"note: {note}" for note in diagram.notes)
    return "\n".join(lines)
