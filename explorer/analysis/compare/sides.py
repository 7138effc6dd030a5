"""``explorer compare``: two sweeps (or two values of one categorical axis of a sweep) read from
the store, checked for comparability, fitted on what they share and compared with paired
intervals (``pairing``); the rows can be saved as kind ``comparisons``.

Guard rails, as ``explorer fit``'s: each side is read as a fit of the law reads it (its method's
reader: ``seed_grams`` at the ``held_axes`` slice, one reference per point), each side's own
warnings are its fit's (``fit_sweep`` on the paired rows), and the comparison is refused, in one
line, when the two sides' errors are not comparable: different reference kinds, or different problems
(input and output dimensions, samples, coupled embeddings: the same problem seed would not draw
the same data), or stored references of another numerics version or problem. It warns when the
sides differ in more configuration columns than the one being compared, naming them, and when
their references were computed at another resolution.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import dataclass, field


import numpy as np
import pandas as pd

from ...formatting import fmt
from .pairing import PAIR_COLUMNS, Paired, PairedFit, pair_frames, paired_fit, verdict_line
from .seed_paths import departing_seeds, departure_warning
from ...errors import FitError, QueryError, SweepDataError
from ..laws import DEFAULT_FORM, compared_forms, resolve_form
from ..fitting import check_single_slice, data_and_fitter, fit_sweep
from ..data import (GRID_COLUMNS, all_of, column_is, column_values, held_axes, held_where, plain_value, reference_metas,
                   sweep_is, table_columns, where_clause)

# Columns that define the data a problem seed draws: sides that differ in them share no draws.
PROBLEM_COLUMNS = ("d_in", "d_out", "samples", "coupled_dim")
CATEGORICAL_AXES = ("preset", "activation")  # the axes `--by` is meant for (any grid column works)
COMPARED_FORMS = tuple(compared_forms())  # the laws ``explorer compare`` fits (``Form.comparable``)
# Settings of a reference's computation (its stored metadata): a different resolution changes the
# floor the fit removes, not what is measured (a warning); other numerics are not comparable.
REFERENCE_RESOLUTION = ("depth", "width", "replicas")
REFERENCE_NUMERICS = ("numerics_version",)


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a sweep, and the condition selecting its rows (``--by``)."""

    sweep: str
    where: str | None = None

    @property
    def label(self) -> str:
        return self.sweep if self.where is None else f"{self.sweep} [{self.where}]"


@dataclass
class Comparison:
    """The result of ``compare``: rows (one per parameter, the ``comparisons`` columns), the
    paired frames and fit, and what was left out, warned and noted."""

    a: Side
    b: Side
    form: str
    metric: str
    step: int | None
    rows: pd.DataFrame
    paired: Paired
    fit: PairedFit
    differing: dict = field(default_factory=dict)  # column -> (A's values, B's values)
    held: tuple = ({}, {})
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    seed: int = 0
    where: str | None = None  # the condition on both sides' rows (--where and --at)

    @property
    def comparison_id(self) -> str:
        payload = {"a": [self.a.sweep, self.a.where], "b": [self.b.sweep, self.b.where], "form": self.form,
                   "metric": self.metric, "step": self.step, "n_boot": self.fit.n_boot, "seed": self.seed,
                   "held": [sorted(h.items()) for h in self.held]}
        if self.where:  # another slice (--at, --where) is another comparison
            payload["where"] = self.where
        text = json.dumps(payload, sort_keys=True, default=str)
        return f"compare-{hashlib.sha256(text.encode()).hexdigest()[:12]}"

    def store_rows(self) -> list[dict]:
        """The rows of kind ``comparisons`` (``store.schema``)."""
        now = _dt.datetime.now(_dt.timezone.utc)
        common = {"sweep_a": self.a.sweep, "sweep_b": self.b.sweep, "where_a": self.a.where,
                  "where_b": self.b.where, "form": self.form, "metric": self.metric, "step": self.step,
                  "n_draws": self.fit.n_draws, "n_points": len(self.paired.a), "n_seeds": self.paired.n_seeds,
                  "n_boot": self.fit.n_boot, "differing_keys": ", ".join(self.differing), "created_at": now}
        return [{**common, **row} for row in self.rows.to_dict("records")]

    def lines(self) -> list[str]:
        """The printed comparison: what was compared, a line per parameter, then left out, warnings, notes."""
        shared = (f"{self.fit.n_draws} problem draw{'s' if self.fit.n_draws != 1 else ''}, {len(self.paired.a)} "
                  f"(draw, point) rows, {self.paired.n_seeds}+ seeds per point shared")
        rows = f"; rows where {self.where}" if self.where else ""
        out = [f"compare {self.form} fits: A = {self.a.label}, B = {self.b.label} ({self.metric}; {shared}{rows})"]
        if self.fit.identical:
            out.append("the runs are identical: A's and B's errors are bit-identical on every shared point, "
                       "so every difference is exactly 0 (ratio 1)")
        else:
            left = ("each problem draw" if self.fit.n_draws > 1 else "each seed index")
            out.append(f"95% intervals: difference +- t({self.fit.dof}) x sd; paired: sd from leaving {left} out of "
                       f"both sweeps at once (where that leaves a parameter unmeasured: {self.fit.n_boot} bootstrap "
                       "resamples applied to both); unpaired: as if the sweeps shared no randomness")
        out += [verdict_line(row) for _, row in self.rows.iterrows()]
        out += [f"left out: {line}" for line in self.paired.left_out]
        out += [f"warning: {line}" for line in self.warnings]
        out += [f"note: {line}" for line in self.seeds_note() + self.notes]
        return out

    def seeds_note(self) -> list[str]:
        """What the pairing cancels of the seeds' noise alone (``PairedFit.seeds_gain``, many more
        degrees of freedom than the intervals' own ratio), or nothing."""
        gain = self.fit.seeds_gain
        if self.fit.identical or self.fit.n_draws < 2 or not np.isfinite(gain).any():  # one draw: the intervals are it
            return []
        shown = ", ".join(f"{name} {fmt(g, '.2g')}x" for name, g in zip(self.rows["parameter"], gain) if np.isfinite(g))
        return [f"the seeds' noise alone (the jackknife over seed indices, applied to both) is narrower paired than "
                f"unpaired by {shown}; the intervals' own ratios rest on the draws' {self.fit.dof} degree(s) of freedom"]


def sides_by(con, sweep: str, column: str, where: str | None = None) -> tuple[Side, Side]:
    """The two sides of a comparison within one sweep: its two values of ``column`` (``--by``).

    Raises:
        FitError: not a column of the store, or the sweep does not hold exactly two values of it.
    """
    if column not in GRID_COLUMNS or column not in table_columns(con):
        raise FitError(f"--by {column}: not a configuration column to split by; try one of "
                       f"{', '.join(CATEGORICAL_AXES)} (or another swept column: {', '.join(GRID_COLUMNS)})")
    values = column_values(con, [column], f"{sweep_is(sweep)}{where_clause(where)}")[column]["v"]
    values = [plain_value(v) for v in values]
    if len(values) != 2:
        raise FitError(f"--by {column}: sweep {sweep!r} holds {len(values)} value(s) of {column} "
                       f"({', '.join(map(str, values)) or 'none'}); compare needs exactly two (narrow with --where)")
    return tuple(Side(sweep, column_is(column, v).replace('"', "")) for v in values)


def at_where(con, sweeps, at: dict | None, where: str | None = None) -> str | None:
    """``where`` and-ed with ``column = value`` for each ``--at column=value``.

    Args:
        sweeps: the sweeps compared (each must hold the value). at: column -> value as given
            (text from the command line, or a Python value); the value is matched against the
            column's stored values (``0.125`` matches lr = 0.125, ``mlu`` preset = 'mlu').
    Raises:
        FitError: not a configuration column, or a value a compared sweep does not hold (the message
            lists the values it has).
    """
    chosen: dict = {}
    for column, given in (at or {}).items():
        if column not in GRID_COLUMNS or column not in table_columns(con):
            raise FitError(f"--at {column}={given}: not a configuration column; use one of "
                           f"{', '.join(GRID_COLUMNS)}")
        for sweep in sweeps:
            values = [plain_value(v) for v in column_values(con, [column], f"{sweep_is(sweep)}{where_clause(where)}")
                      [column]["v"]]
            match = [v for v in values if _same_value(v, given)]
            if not match:
                raise FitError(f"--at {column}={given}: sweep {sweep!r} has no such {column}; it holds "
                               f"{', '.join(fmt(v, 'g') for v in values) or 'none'}")
        chosen[column] = match[0]
    return held_where(chosen, where)


def _same_value(stored, given) -> bool:
    """A stored value equals the one given (text from the command line compares as the column's type)."""
    if isinstance(given, str) and not isinstance(stored, str):
        try:
            given = float(given) if not isinstance(stored, bool) else given.lower() in ("true", "1")
        except ValueError:
            return False
    if isinstance(stored, (int, float)) and isinstance(given, (int, float)):
        return abs(float(stored) - float(given)) <= 1e-12 * max(abs(float(stored)), 1e-300)
    return stored == given


def refuse_held_slices(side: Side, fixed: dict, con, condition: str | None, by: str | None = None) -> None:
    """Refuse to compare one slice silently: a side that varies axes besides L, M, D (and the
    compared column) must be narrowed to one value of each with ``--at`` (or ``--where``).

    Raises:
        FitError: naming each such axis with its values, and the ``--at`` that would select one.
    """
    if not fixed:
        return
    found = column_values(con, list(fixed), f"{sweep_is(side.sweep)}{where_clause(condition)}")
    detail = "; ".join(f"{c}: {', '.join(fmt(plain_value(v), 'g') for v in found[c]['v'])}" for c in fixed)
    example = " ".join(f"--at {c}={fmt(v, 'g')}" for c, v in fixed.items())
    besides = "L, M, D" + (f" and {by}" if by else "")
    raise FitError(f"{side.sweep!r} also varies {', '.join(fixed)} besides {besides} ({detail}): a comparison "
                   f"holds one value of each; choose it, e.g. {example} (repeatable), or narrow with --where")


def _side_where(side: Side, where: str | None) -> str | None:
    return all_of(side.where, where)


def _configuration(con, side: Side, where: str | None) -> dict:
    """column -> sorted distinct values of the side's selected rows (configuration columns and ref_kind)."""
    columns = table_columns(con)
    wanted = [c for c in (*GRID_COLUMNS, "ref_kind") if c in columns]
    found = column_values(con, wanted, f"{sweep_is(side.sweep)}{where_clause(where)}")
    return {c: sorted((plain_value(v) for v in frame["v"]), key=str) for c, frame in found.items()}


def check_comparable(config_a: dict, config_b: dict, a: Side, b: Side) -> dict:
    """The columns whose values differ between the sides; refuses incomparable references or problems.

    Raises:
        FitError: the reference kinds differ, or a column of the problem (``PROBLEM_COLUMNS``) does.
    """
    differing = {c: (config_a[c], config_b.get(c)) for c in config_a if c in config_b and config_a[c] != config_b[c]}
    if "ref_kind" in differing:
        va, vb = differing["ref_kind"]
        raise FitError(f"{a.label} and {b.label} are measured against different kinds of reference "
                       f"({', '.join(map(str, va))} against {', '.join(map(str, vb))}): their errors are not "
                       "comparable")
    problem = [c for c in PROBLEM_COLUMNS if c in differing]
    if problem:
        detail = "; ".join(f"{c}: {differing[c][0]} against {differing[c][1]}" for c in problem)
        raise FitError(f"{a.label} and {b.label} solve different problems ({detail}): the same problem seed does "
                       "not draw the same data, so nothing can be paired")
    return differing


def reference_settings(con, frame) -> dict:
    """setting -> sorted distinct values over the references of ``frame``'s rows (their stored
    metadata: resolution, numerics version, the problem without its seed); {} when the
    connection has no ``references`` view or the references are not stored."""
    keys = sorted({str(k) for k in frame["ref_key"]}) if "ref_key" in frame else []
    if not keys:
        return {}
    try:
        metas = reference_metas(con, keys)
    except (QueryError, SweepDataError):
        return {}
    found: dict = {}
    for text in metas["meta"]:
        meta = json.loads(text)
        problem = {k: v for k, v in (meta.get("limit", {}).get("problem") or {}).items() if k != "seed"}
        for name in REFERENCE_RESOLUTION + REFERENCE_NUMERICS:
            found.setdefault(name, set()).add(json.dumps(meta.get(name)))
        found.setdefault("problem", set()).add(json.dumps(problem, sort_keys=True))
    return {name: sorted(values) for name, values in found.items()}


def check_references(settings_a: dict, settings_b: dict, a: Side, b: Side) -> list[str]:
    """Warnings for references computed at different resolutions; refuses other numerics or problems.

    Raises:
        FitError: the references' numerics versions or problems (seed aside) differ.
    """
    differing = [n for n in settings_a if n in settings_b and settings_a[n] != settings_b[n]]
    refused = [n for n in differing if n in REFERENCE_NUMERICS + ("problem",)]
    if refused:
        detail = "; ".join(f"{n}: {', '.join(settings_a[n])} against {', '.join(settings_b[n])}" for n in refused)
        raise FitError(f"the references of {a.label} and {b.label} are not comparable ({detail})")
    if not differing:
        return []
    detail = "; ".join(f"{n}: {', '.join(settings_a[n])} against {', '.join(settings_b[n])}" for n in differing)
    return [f"the references of A and B were computed at different resolutions ({detail}): the floor each fit "
            "removes differs"]


def side_warnings(paired, floor: str, form: str = DEFAULT_FORM) -> list[str]:
    """Each side's own fit warnings on the shared selection (a law that does not explain a grid,
    a term not measured), as ``explorer fit`` gives them (``fit_sweep`` of ``form`` on the side's
    paired rows), prefixed A: or B:."""
    out = []
    for name, frame in (("A", paired.a), ("B", paired.b)):
        try:
            result = fit_sweep(None, name, form, rows=frame, n_boot=0, floor=floor, per_draw=False,
                               range_check=False)
        except FitError as exc:
            out.append(f"{name}: {exc}")
            continue
        out += [f"{name}: {w}" for w in result.warnings]
    return out


def compare(con, a: Side, b: Side, *, form: str = DEFAULT_FORM, metric: str = "err_out", step: int | None = None,
            where: str | None = None, n_boot: int = 200, seed: int = 0, floor: str = "quadrature",
            by: str | None = None) -> Comparison:
    """Compare two sides fitted with ``form`` on their shared points, draws and seeds.

    Args:
        where: the rows of both sides (``at_where`` adds the ``--at`` values to it).
        by: the column the sides split (named in the refusal of ``refuse_held_slices``).
    Raises:
        FitError: a form other than decomposed, a side that varies axes besides L, M, D and ``by``
            within ``where`` (``refuse_held_slices``), incomparable sides (``check_comparable``), no
            shared draw or point (``pair_frames``). SweepDataError, QueryError: as ``seed_grams``.
    """
    label, _ = resolve_form(form)
    if label not in COMPARED_FORMS:
        raise FitError(f"compare fits the {', '.join(COMPARED_FORMS)} law only (its intervals resample the shared "
                       f"draws and seeds); --form {form} is not supported")
    read, _ = data_and_fitter(label)  # the law's own rows (the seeds' Gram rows)
    held, frames, configs = [], [], []
    for side in (a, b):
        condition = _side_where(side, where)
        fixed = held_axes(con, side.sweep, ("L", "M", "D"), condition)
        refuse_held_slices(side, fixed, con, condition, by)
        selected = held_where(fixed, condition)
        frame = read(con, side.sweep, metric=metric, step=step, where=selected)
        check_single_slice(frame)
        held.append(fixed)
        frames.append(frame)
        configs.append(_configuration(con, side, selected))
    differing = check_comparable(configs[0], configs[1], a, b)
    warnings = check_references(reference_settings(con, frames[0]), reference_settings(con, frames[1]), a, b)
    paired = pair_frames(frames[0], frames[1], names=(a.label, b.label))
    fit = paired_fit(paired, n_boot=n_boot, seed=seed, floor=floor)
    warnings += side_warnings(paired, floor, label)
    warnings += departure_warning(departing_seeds(paired.a, paired.b))
    if len(differing) > 1:
        detail = "; ".join(f"{c}: {', '.join(map(str, va))} against {', '.join(map(str, vb))}"
                           for c, (va, vb) in differing.items())
        warnings.append(f"A and B differ in {len(differing)} configuration columns, not one ({detail}): "
                        "a difference mixes their effects")
    notes = [f"slice of {side.label}: " + ", ".join(f"{k} = {v}" for k, v in h.items())
             for side, h in zip((a, b), held) if h]
    notes += [f"paired on {', '.join(PAIR_COLUMNS)} and the seed indices"]
    for frame in frames:
        notes += list(frame.attrs.get("notes", ()))
    return Comparison(a, b, label, metric, step, fit.rows(), paired, fit, differing, tuple(held), warnings,
                      notes, seed, where)


__all__ = ["CATEGORICAL_AXES", "COMPARED_FORMS", "Comparison", "PROBLEM_COLUMNS", "REFERENCE_NUMERICS",
           "REFERENCE_RESOLUTION", "Side", "at_where", "check_comparable", "check_references", "compare", "reference_settings",
           "refuse_held_slices", "side_warnings", "sides_by"]
