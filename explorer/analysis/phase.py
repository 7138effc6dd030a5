"""The phase diagram: each cell of two swept axes classified as mlu, lazy, trivial or diverged,
and the boundary between mlu and lazy located along alpha.

Size: one concept, the phase rule: the cells it classifies and the crossover of its lazy
threshold share the per-seed rows, the rule and its thresholds; the boundary is the rule read
between grid values, with the fits' bootstrap.

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

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import SweepDataError
from ..formatting import fmt
from .data import (GRID_COLUMNS, cells_per_value, choose_references, held_axes, held_where, phase_seed_rows, plain_value,
                   require_sweep_rows, table_columns)

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
    boundary: "PhaseBoundary | None" = None  # the crossover along alpha (``phase_boundary``), where measured

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
        counts = cells_per_value(con, sweep, col, x, y, held_where(fixed, where))
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
    require_sweep_rows(con, sweep, where)
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
    seeds = phase_seed_rows(con, sweep, axes, where=where, step=step, init_noise=rule.init_noise)
    for c in ("feature_update", "lin_ratio", "output_change", "initial_residual", "init_noise"):
        seeds[c] = seeds[c].astype(float)
    for c in ("flagged", "init_noise_flag", "diverged", "failed", "antithetic"):
        seeds[c] = seeds[c].fillna(False).astype(bool)
    seeds["draw"] = seeds["draw"].fillna(-1)  # rows without a problem seed: one draw of their own
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


# --- the boundary: where the local ratio crosses the lazy threshold along alpha ----------------

BOUNDARY_AXIS = "alpha"
SCALING_AXES = ("L", "M", "D")
_LOCAL = ("feature_update", "lin_ratio", "output_change")


@dataclass
class PhaseBoundary:
    """The MLU/lazy crossover alpha* of each slice of a sweep, and its scaling in L, M and D.

    Attributes:
        crossovers: one row per slice (its axes' values): alpha_star (nan at an edge), ci_low and
            ci_high (nan: open, more than 2.5% of the resamples leave the grid on that side),
            edge (None, "below": every usable cell is lazy, "above": none is), n_cells.
        exponents: one row per (group, axis): the group's non-scaling slice values, axis,
            exponent, ci_low, ci_high, theory (the preset's prediction), n_slices, preset.
        threshold: the lazy ratio crossed. n_boot, method: the resamples and what they resample.
        fixed: the other axes' held values. notes: what the reader should know.
    """

    crossovers: pd.DataFrame
    exponents: pd.DataFrame
    threshold: float
    n_boot: int
    method: str
    n_draws: int
    fixed: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def theory_exponents(preset: str | None) -> dict | None:
    """alpha*'s exponents in L, M, D that the theory predicts for ``preset``: the crossover sits
    at a fixed effective multiplier alpha_eff = c L M (the hidden-width paper's residual scale
    sqrt(D)/(LM) in its unit-variance form is c = alpha_eff / (L M) here, docs/model.md section 1),
    and with c = alpha L^-a M^-b D^-g, alpha* ~ L^(a-1) M^(b-1) D^g."""
    from trials import PRESETS

    if preset not in PRESETS:
        return None
    a, b, g = PRESETS[preset]
    return {"L": a - 1.0, "M": b - 1.0, "D": float(g)}


def crossing(alphas: np.ndarray, ratios: np.ndarray, threshold: float) -> tuple[float, str | None]:
    """(log alpha*, edge) where ``ratios`` first falls below ``threshold`` along ascending
    ``alphas``, log ratio interpolated linearly in log alpha between the two cells around it;
    -inf "below" when the smallest alpha is already under it, +inf "above" when no cell is,
    nan when no cell has a ratio."""
    ok = np.isfinite(ratios) & (ratios > 0)
    x, r = np.log(alphas[ok]), np.log(ratios[ok])
    if len(x) == 0:
        return math.nan, None
    above = r >= math.log(threshold)
    if not above[0]:
        return -math.inf, "below"
    falls = np.flatnonzero(above[:-1] & ~above[1:])
    if len(falls) == 0:
        return math.inf, "above"
    i = int(falls[0])
    t = (math.log(threshold) - r[i]) / (r[i + 1] - r[i])
    return float(x[i] + t * (x[i + 1] - x[i])), None


def phase_boundary(con, sweep: str, y: str = "D", *, step: int | None = None, where: str | None = None,
                   rule: PhaseRule = PhaseRule(), n_boot: int = 200, seed: int = 0) -> PhaseBoundary:
    """alpha* per slice (``y`` and every other varying one of L, M, D; other axes held as the
    diagram holds them), its 95% interval from the seed-and-draw bootstrap, and log alpha*
    fitted on log L, log M, log D (those that vary) per group of the other slice axes, beside
    the theory's exponents (``theory_exponents``).

    Raises:
        SweepDataError: no alpha axis, alpha with one value, or the diagram's errors.
    """
    columns = table_columns(con)
    _check_axes(columns, BOUNDARY_AXIS, y)
    fixed = {k: v for k, v in _held_for_phase(con, sweep, BOUNDARY_AXIS, y, columns, where).items()
             if k not in SCALING_AXES}
    choice = choose_references(con, sweep, held_where(fixed, where))
    extra = ("preset",) if "preset" in columns else ()
    seeds = seed_rows(con, sweep, (BOUNDARY_AXIS, y, *extra), where=choice.where, step=step, rule=rule)
    seeds = seeds[~seeds["flagged"]].reset_index(drop=True)
    if seeds[BOUNDARY_AXIS].nunique() < 2:
        raise SweepDataError(f"sweep {sweep!r} has one value of alpha: no crossover to locate")
    keys = list(dict.fromkeys([y, *(a for a in SCALING_AXES if seeds[a].nunique() > 1)]))
    cells = cell_table(seeds, [*keys, BOUNDARY_AXIS], rule)
    cells = cells[cells["phase"].isin(("mlu", "lazy"))].reset_index(drop=True)
    if cells.empty:
        raise SweepDataError(f"sweep {sweep!r} has no mlu or lazy cell: no crossover to locate")
    values, G = _seed_tensor(seeds, cells, [*keys, BOUNDARY_AXIS])
    slices = cells.groupby(keys, dropna=False, sort=True).indices
    estimate = _crossovers(cells["local_ratio"].to_numpy(float), cells, slices, rule.lazy_ratio)
    rng = np.random.default_rng(seed)
    outer = np.array([_crossovers(_resampled_ratio(values, rng, True), cells, slices, rule.lazy_ratio)
                      for _ in range(n_boot)]).reshape(n_boot, len(slices))
    inner = np.array([_crossovers(_resampled_ratio(values, rng, False), cells, slices, rule.lazy_ratio)
                      for _ in range(n_boot)]).reshape(n_boot, len(slices)) if G > 1 else None
    widen = math.sqrt(values.shape[-1] / (values.shape[-1] - 1)) if G == 1 and values.shape[-1] > 1 else 1.0
    rows = []
    for k, (key, members) in enumerate(slices.items()):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        low, high = _interval(estimate[k], outer[:, k], None if inner is None else inner[:, k], G, widen)
        edge = "below" if estimate[k] == -math.inf else "above" if estimate[k] == math.inf else None
        rows.append({**row, "alpha_star": math.exp(estimate[k]) if math.isfinite(estimate[k]) else math.nan,
                     "ci_low": low, "ci_high": high, "edge": edge, "n_cells": len(members),
                     "alpha_min": float(cells.loc[members, BOUNDARY_AXIS].min()),
                     "alpha_max": float(cells.loc[members, BOUNDARY_AXIS].max())})
    crossovers = pd.DataFrame(rows)
    exponents = _exponents(crossovers, keys, estimate, outer, inner, G, widen, seeds)
    method = "draws, then seeds within draws" if G > 1 else "seeds"
    return PhaseBoundary(crossovers, exponents, rule.lazy_ratio, n_boot, method, G, fixed, list(choice.notes))


def _seed_tensor(seeds: pd.DataFrame, cells: pd.DataFrame, keys: list) -> tuple[np.ndarray, int]:
    """(values (3, draws, cells, seeds) of feature_update, lin_ratio, output_change, nan where a
    seed is missing; the number of draws). Seed indices are common random numbers within a draw."""
    index = cells[keys].reset_index().merge(seeds, on=keys, how="inner")
    draw = pd.Categorical(index["draw"]).codes
    seed = pd.Categorical(index["seed"]).codes
    G, S = int(draw.max()) + 1 if len(index) else 1, int(seed.max()) + 1 if len(index) else 1
    values = np.full((3, G, len(cells), S), np.nan)
    for i, c in enumerate(_LOCAL):
        values[i, draw, index["index"].to_numpy(), seed] = index[c].to_numpy(float)
    return values, G


def _resampled_ratio(values: np.ndarray, rng, resample_draws: bool) -> np.ndarray:
    """Each cell's local ratio from one resample: draws with replacement (``resample_draws``),
    then seed indices within each chosen draw, the same for all its cells; medians pooled."""
    G, S = values.shape[1], values.shape[3]
    draws = rng.integers(0, G, G) if resample_draws and G > 1 else range(G)
    picked = np.concatenate([values[:, g][:, :, rng.integers(0, S, S)] for g in draws], axis=2)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a cell whose chosen seeds all lack a value
        fu, lin, oc = np.nanmedian(picked, axis=2)
        return np.maximum(fu, lin) / oc


def _crossovers(ratio: np.ndarray, cells: pd.DataFrame, slices: dict, threshold: float) -> list[float]:
    alphas = cells[BOUNDARY_AXIS].to_numpy(float)
    return [crossing(alphas[m], ratio[m], threshold)[0] for m in slices.values()]


def _interval(estimate: float, outer: np.ndarray, inner, G: int, widen: float) -> tuple[float, float]:
    """The 95% interval of alpha* from its log replicates (the fits' rule, ``fitting.spread``);
    a side is open (nan) when more than 2.5% of the resamples leave the grid there."""
    from .fitting import spread

    if not math.isfinite(estimate):
        return math.nan, math.nan
    finite = outer[np.isfinite(outer)]
    inner_finite = None if inner is None else inner[np.isfinite(inner)]
    if len(finite) < 2:
        return math.nan, math.nan
    sd, q = spread(finite[:, None], None if inner_finite is None else inner_finite[:, None], G)
    half = q * float(sd[0]) * widen
    low = math.exp(estimate - half) if np.mean(outer == -math.inf) <= 0.025 else math.nan
    high = math.exp(estimate + half) if np.mean(outer == math.inf) <= 0.025 else math.nan
    return low, high


def _exponents(crossovers, keys, estimate, outer, inner, G, widen, seeds) -> pd.DataFrame:
    """log alpha* on log L, log M, log D (those with two values or more among the located
    slices), per group of the other slice axes, with intervals from the same replicates."""
    from .fitting import spread

    groups = [k for k in keys if k not in SCALING_AXES]
    estimate = np.asarray(estimate, float)
    rows = []
    for label, members in (crossovers.groupby(groups, dropna=False).indices.items() if groups
                           else [((), np.arange(len(crossovers)))]):
        used = members[np.isfinite(estimate[members])]
        axes = [a for a in SCALING_AXES if a in keys and crossovers.loc[used, a].nunique() > 1]
        if not axes or len(used) < len(axes) + 1:
            continue
        X = np.column_stack([np.ones(len(used))] + [np.log(crossovers.loc[used, a].to_numpy(float)) for a in axes])

        def slopes(logs):  # the resamples in which every used slice has its crossover on the grid
            ok = np.isfinite(logs[:, used]).all(axis=1)
            if ok.sum() < 2:
                return None
            return np.linalg.lstsq(X, logs[ok][:, used].T, rcond=None)[0][1:].T

        beta = np.linalg.lstsq(X, estimate[used], rcond=None)[0][1:]
        replicates = slopes(outer)
        sd, q = (np.full(len(axes), np.nan), math.nan) if replicates is None else \
            spread(replicates, None if inner is None else slopes(inner), G)
        group = dict(zip(groups, label if isinstance(label, tuple) else (label,)))
        preset = _preset_of(seeds, group)
        theory = theory_exponents(preset) or {}
        for i, axis in enumerate(axes):
            half = q * float(sd[i]) * widen
            rows.append({**group, "axis": axis, "exponent": float(beta[i]), "ci_low": float(beta[i] - half),
                         "ci_high": float(beta[i] + half), "theory": theory.get(axis, math.nan),
                         "n_slices": len(used), "preset": preset})
    return pd.DataFrame(rows)


def _preset_of(seeds: pd.DataFrame, group: dict) -> str | None:
    if "preset" not in seeds:
        return "mlu"  # the only preset before the column existed
    rows = seeds
    for k, v in group.items():
        rows = rows[rows[k] == v]
    presets = rows["preset"].dropna().unique()
    return str(presets[0]) if len(presets) == 1 else None


def _theory_words(preset: str) -> str:
    """The theory's crossover in the tool's units, in words (docs/analysis.md, "The phase boundary")."""
    t = theory_exponents(preset)
    law = " ".join(f"{a}^{t[a]:g}" for a in SCALING_AXES if t[a] != 0) or "a constant"
    return (f"the hidden-width paper's lazy scale, a residual scale of order sqrt(D)/(LM) in its unit-variance "
            f"form, is alpha_eff = c L M of order 1 here, so alpha* ~ {law}")


def format_boundary(boundary: PhaseBoundary) -> str:
    """The crossovers as a table, then each exponent beside the theory's, in words."""
    c = boundary.crossovers
    keys = [k for k in c.columns if k not in ("alpha_star", "ci_low", "ci_high", "edge", "n_cells", "alpha_min",
                                              "alpha_max")]
    lines = [f"phase boundary: alpha* where local_ratio crosses {boundary.threshold:g} (mlu below, lazy above), "
             f"log ratio interpolated on log alpha between the grid values around it; 95% intervals from "
             f"{boundary.n_boot} resamples ({boundary.method}" + (f", t({boundary.n_draws - 1})" if boundary.n_draws > 1
                                                                   else "") + ")",
             " ".join(f"{k:>8}" for k in keys) + f" {'alpha*':>10}   95% CI"]
    for _, r in c.iterrows():
        head = " ".join(f"{fmt(r[k], 'g'):>8}" for k in keys)
        if r["edge"] == "below":
            lines.append(f"{head} {'below ' + fmt(r['alpha_min'], 'g'):>10}   (every cell lazy)")
        elif r["edge"] == "above":
            lines.append(f"{head} {'above ' + fmt(r['alpha_max'], 'g'):>10}   (no cell lazy)")
        elif not math.isfinite(r["alpha_star"]):
            lines.append(f"{head} {'-':>10}   (no mlu or lazy cell)")
        else:
            low = fmt(r["ci_low"], ".3g") if math.isfinite(r["ci_low"]) else f"<{fmt(r['alpha_min'], 'g')}"
            high = fmt(r["ci_high"], ".3g") if math.isfinite(r["ci_high"]) else f">{fmt(r['alpha_max'], 'g')}"
            lines.append(f"{head} {fmt(r['alpha_star'], '.3g'):>10}   [{low}, {high}]")
    for _, e in boundary.exponents.iterrows():
        theory = (f"theory {e['theory']:g} (preset {e['preset']}: {_theory_words(e['preset'])})")
        lines.append(f"alpha* ~ {e['axis']}^e: e = {e['exponent']:.3g} [{e['ci_low']:.3g}, {e['ci_high']:.3g}] over "
                     f"{e['n_slices']} slices; " + (theory if math.isfinite(e["theory"]) else "no theory for this preset"))
    if boundary.exponents.empty and len(c) > 1:
        lines.append("alpha*'s exponents: fewer located crossovers than a fit needs (a slice at an edge is left out)")
    if boundary.fixed:
        lines.append("other axes held at: " + ", ".join(f"{k}={fmt(v, 'g')}" for k, v in boundary.fixed.items()))
    lines.extend(f"note: {note}" for note in boundary.notes)
    return "\n".join(lines)
