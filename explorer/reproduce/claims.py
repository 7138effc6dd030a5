"""The papers' claims that ``explorer reproduce`` checks, and how each is measured.

The registry ``EXPERIMENTS`` says, for each experiment, which specs it runs (``explorer/reproduce/paper/``,
shipped with the package: ``NAME.toml`` is the authors' grid, ``NAME-laptop.toml`` the reduced
grid) and which claims of the papers it checks. A claim is one row of the report, graded by
``explorer.reproduce.verdicts`` (consistent / close, CI excludes / not measured / disagrees, with a reason):

- ``fit``: a law of ``explorer.analysis.laws.FORMS`` (or an expression) fitted to one sweep (metric, step,
  SQL filter); the row compares one parameter (times ``scale``, to put it in the paper's units)
  with the paper's number. ``quantity`` says how: ``constant`` (informative when its CI spans at
  most 3x; close within ``factor``), ``exponent`` (informative when its half-width is at most
  0.15; close within ``tolerance``), ``bound`` (an exponent against a theorem's upper bound on it,
  ``paper``: tight, consistent with the bound, or exceeds the bound; ``verdicts.bound_verdict``),
  or ``negligible`` (the term ``parameter * term(L, M, D)`` stays below ``share`` of err^2 at
  every fitted point, even at the CI's upper end).
- ``curve``: the authors' hand-set curve ``f(L, M, D)``; the row gives the ratio measured /
  curve over the points kept by the filter (geometric mean, [min, max]): consistent when every
  ratio is within ``factor``.
- ``collapse``: at equal L*M, the spread max/min - 1 of the errors across M (worst over the
  products shared by several M, within the filter): consistent when at most ``paper``.
- ``compare``: the notebook's model comparison: the law ``form`` (the right rate) and ``wrong``
  fitted to the same pooled points by the same loss; the row gives RSS(wrong) / RSS(right) (above
  1: the right rate fits better) with a 95 % interval over the problem draws (resample, refit
  both), consistent when the interval lies above 1, disagrees when below, else not measured.
- ``frontier``: the exponent e of the best error at each compute P = 2 L M D along the grid's
  frontier (``explorer.analysis.shapes``: err ~ P^-e, an interval over the problem draws), graded as an
  exponent against ``paper``; the note gives the pooled frontier over the authors' curve.

Like with like: a fitted constant is graded against the paper's only when the sweep's grid is the
paper's (``measure(sub_grid=None)``, the full scale); on a sub-grid it is reported "not comparable
at this scale" (``verdicts.not_comparable``), while exponents, negligible terms and the model
comparison, which transfer across grids, are graded at every scale. A claim with no paper number
(``paper=None``: the tool's own procedure beside the authors') is reported, never graded.

Every row names its procedure (``procedure``): the form, the region, the pooling
(``explorer.reproduce.pooling``, the spec's ``[reproduce] pooling``) and the loss.

Which points a curve or frontier claim leaves out, and why, is written in the paper spec's
``[reproduce]`` table (``explorer.reproduce.leave_out``), not here; ``measure`` takes it resolved.
A claim whose points are not in the sweep is *not measured*, with the reason.

Size: the registry and its measurement are one concept, each claim beside the rule that measures it.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..analysis.laws import DEFAULT_FORM
from .pooling import POOL, describe as describe_pooling, with_blown_up_runs
from .verdicts import (NOT_MEASURED, Verdict, bound_verdict, bounds_verdict, constant_verdict, exponent_verdict,
                       finite, negligible_verdict, not_comparable)

SCALES = ("laptop", "full")  # "tiny": the laptop spec with the experiment's TINY overrides (tests, CI)

COMPANION = "Chaintron, Chizat, Maass 2026 (arXiv:2603.18168)"
HIDDEN_WIDTH = "Chizat 2025, The Hidden Width of Deep ResNets (arXiv:2509.10167)"


def paper_spec(filename: str) -> Path:
    """A paper spec shipped with the package (``explorer/reproduce/paper/``), as a file path: read with
    importlib.resources, so an installed (non-editable) package finds it too."""
    return Path(str(resources.files("explorer.reproduce").joinpath("paper", filename)))


@dataclass(frozen=True)
class Claim:
    """One claim of a paper and how this tool measures it (see the module docstring)."""

    id: str
    text: str
    source: str
    sweep: str  # the experiment's sweep it is measured on (Experiment.sweeps key)
    kind: str  # fit | curve | collapse | frontier | compare
    metric: str = "err_out"
    step: int | None = None
    where: str | None = None  # SQL filter on metric rows
    paper: float | None = None  # the paper's number (fit: the parameter; others: the threshold)
    paper_text: str = ""  # how the paper states it
    # fit
    form: str | None = None
    parameter: str | None = None
    quantity: str = "constant"  # constant | exponent | bound | negligible
    scale: float = 1.0  # our estimate times this is in the paper's units
    factor: float | None = None  # constant: "close" within this factor; curve: every ratio within it
    tolerance: float | None = None  # exponent: "close" within this distance
    share: float | None = None  # negligible: the term's largest share of err^2 allowed
    term: Callable | None = None  # negligible: the term is parameter * term(L, M, D) in err^2
    # curve: the authors' curve, err(L, M, D); frontier: the authors' curve, err(P)
    curve: Callable | None = None
    # fit: the law of the mean error over every run of a point, with a bootstrap over the draws
    # (the registry's mean_of_runs method: explorer.analysis.fitting.fit_pooled; the authors' pooling),
    # instead of a fit to every draw's rows
    mean_of_runs: bool = False
    residuals: str = "log"  # mean_of_runs: "err" minimises the squares of err - law, as the authors' curve_fit
    pooled: bool = True  # curve / collapse: pool problem draws as sqrt(mean err^2)
    wrong: str | None = None  # compare: the wrong law, fitted beside ``form``
    region: str = ""  # the table's words for ``where`` (whose region it is)


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    sweeps: dict  # role -> spec stem under explorer/reproduce/paper (full scale; "-laptop" appended for laptop)
    claims: tuple
    tiny: dict = field(default_factory=dict)  # role -> overrides of the laptop spec (tests' and CI's miniature)

    def spec_path(self, role: str, scale: str) -> Path:
        stem = self.sweeps[role]
        return paper_spec(f"{stem}.toml" if scale == "full" else f"{stem}-laptop.toml")

    def overrides(self, role: str, scale: str) -> list[str]:
        if scale != "tiny":
            return []
        return [f"name={self.sweeps[role]}-tiny", *self.tiny.get(role, [])]

    def leave_out(self, claim: Claim, scale: str, spec) -> tuple:
        """The points ``claim`` leaves out, as its sweep's paper spec writes them (``[reproduce]``),
        with the ``{ref_*}`` placeholders filled from ``spec``'s largest point."""
        from ..errors import UsageError
        from .leave_out import read_leave_out, resolve

        path = self.spec_path(claim.sweep, "laptop" if scale == "tiny" else scale)
        table = read_leave_out(path)
        known = {c.id for c in self.claims if c.sweep == claim.sweep}
        unknown = sorted(set(table) - known)
        if unknown:
            raise UsageError(f"{path.name}: [reproduce] names {', '.join(unknown)}, not a claim measured on this "
                             f"sweep (expected one of: {', '.join(sorted(known))})")
        return resolve(table.get(claim.id, ()), largest_point(spec))

    def load(self, role: str, scale: str):
        from ..config.spec import load_spec

        if scale not in (*SCALES, "tiny"):
            raise ValueError(f"unknown scale {scale!r}; expected one of: {', '.join(SCALES)}")
        return load_spec(self.spec_path(role, scale), self.overrides(role, scale))


def nonlinear_hidden(L, M, D):
    return np.sqrt((0.8 * np.sqrt(D / (L * M))) ** 2 + (2.5 / np.sqrt(D)) ** 2)


def nonlinear_output(L, M, D):
    return np.sqrt((0.15 * D / (L * M)) ** 2 + (0.9 / np.sqrt(D)) ** 2)


def hidden_frontier(P):
    return 2.0 * P ** (-1 / 6)


def output_frontier(P):
    return 0.7 * P ** (-1 / 5)


LINEAR_REGION = "L > 50 AND M > 10 AND D > 10"  # the authors' hidden-state fit region (plt_cvg_rate, mins=(10, 10, 50))
# the authors' output fit region (plt_cvg_rate cell 22: mins=(10, 10, 10), maxs=(200, 1000, 200))
OUTPUT_REGION = "D > 10 AND D < 200 AND M > 10 AND M < 1000 AND L > 10 AND L < 200"
# the notebook's output law (cell 21, "ignore 1/L term"): err^2 = a (D/(ML))^2 + b/D, c1 = a, c2 = b
NOTEBOOK_OUTPUT = "sqrt(c1*(D/(L*M))**2 + c2/D)"
WRONG_OUTPUT = "sqrt(c1*D/(L*M) + c2/D)"  # the notebook's "wrong model": the hidden state's rate sqrt(D/(LM))
RATE_LAW = "sqrt(c1*(D/(L*M))**r + c2/D)"  # the D/(LM) exponent r in err^2 left free
# tiny: inside the authors' fit region, with the 3 draws the bootstrap over draws needs (so the
# claims' fits run and are stored), 24 small trials, seconds
_TINY_LINEAR = ["grid.L=[53, 123]", "grid.M=[17, 40]", "grid.D=[17, 40]", "grid.problem_seeds=[1, 2, 3]", "grid.seeds=1",
                "reference.grid=16"]
_TINY_NONLINEAR = ["grid.M=[1, 4]", "grid.D=[2, 17]", "grid.L=[4]", "grid.problem_seeds=[1]", "train.steps=3"]
# The companion's hidden error is theirs exactly (err_hidden_depthmax: max over depth of the mean
# |error|), so its constants need no conversion; err_out is sqrt(3) x theirs (our RMS over the
# d_out = 3 outputs against their norm), so our constants of err_out^2 are 3 x theirs.
# Both are fitted as the authors do: to each point's mean error over every run (seeds x draws), by
# unweighted least squares on the error (their curve_fit), not the tool's log residuals.
_AUTHORS_HIDDEN = "the authors' hidden region (plt_cvg_rate, mins=(10, 10, 50))"
_AUTHORS_OUTPUT = "the authors' output region (plt_cvg_rate cell 22)"
_HIDDEN = dict(metric="err_hidden_depthmax", step=5, where=LINEAR_REGION, form="companion_hidden", mean_of_runs=True,
               residuals="err", region=_AUTHORS_HIDDEN)
_OUTPUT = dict(metric="err_out", step=5, where=OUTPUT_REGION, form=NOTEBOOK_OUTPUT, scale=1 / 3,
               mean_of_runs=True, residuals="err", region=_AUTHORS_OUTPUT)
# the tool's own output law (with c/L^2) on the hidden region: reported beside the authors', not graded
_TOOL_OUTPUT = dict(metric="err_out", step=5, where=LINEAR_REGION, form="companion_output", scale=1 / 3,
                    mean_of_runs=True, residuals="err", region="the hidden claims' region")
CLOSE_FACTOR = 1.15  # a fitted constant within 1.15x of the paper's is "close" (when its CI excludes it)
CLOSE_EXPONENT = 0.1  # an exponent within 0.1 of the paper's is "close"
# The hidden width paper's sampling term with its D exponent g untied from the L*M exponent b: the
# theorem's sqrt(D/(LM)) bounds it, so g <= 1/2 (docs/reproduce.md says why for both metrics)
WIDTH_D_LAW = "sqrt((c1*L**-a)**2 + (c2*D**g*(L*M)**-b)**2)"
_WIDTH_D = dict(step=10, form=WIDTH_D_LAW, parameter="g", quantity="bound", paper=0.5,
                paper_text="g <= 1/2 (bound sqrt(D/(LM)))")
# The frontier exponents 1/6 and 1/5 differ by 1/30: "close" within 0.05 keeps them apart
FRONTIER_EXPONENT = 0.05

EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    Experiment(
        "companion-linear",
        "Companion paper, linear experiment: identity activation, one sample, exact joint limit",
        {"main": "companion-linear"},
        (
            Claim("hidden-a", "hidden error^2 = a D/(LM) + b/D + c/L^2 at k = 5 (their metric: max over depth "
                  "of the mean |error|): constant a of D/(LM)", COMPANION, "main", "fit", parameter="a", paper=0.673,
                  paper_text="a = 0.673 (fitted)", factor=CLOSE_FACTOR, **_HIDDEN),
            Claim("hidden-b", "same fit: constant b of 1/D", COMPANION, "main", "fit", parameter="b", paper=0.437,
                  paper_text="b = 0.437 (fitted)", factor=CLOSE_FACTOR, **_HIDDEN),
            Claim("hidden-c", "same fit: the c/L^2 term is negligible (below 5 % of err^2 at every fitted point)",
                  COMPANION, "main", "fit", parameter="c", paper=4e-16, paper_text="c ~ 4e-16 (fitted)",
                  quantity="negligible", share=0.05, term=lambda L, M, D: 1.0 / L**2, **_HIDDEN),
            Claim("output-a", "output error^2 = a (D/(LM))^2 + b/D at k = 5, the notebook's law (no L term) on its "
                  "region: constant a (c1; authors' units: our err_out is sqrt(3) x theirs, so our a / 3)", COMPANION,
                  "main", "fit", parameter="c1", paper=0.0265, paper_text="a = 0.0265 (fitted)", factor=CLOSE_FACTOR,
                  **_OUTPUT),
            Claim("output-b", "same fit: constant b of 1/D (c2; our b / 3)", COMPANION, "main", "fit", parameter="c2",
                  paper=0.250, paper_text="b = 0.250 (fitted)", factor=CLOSE_FACTOR, **_OUTPUT),
            Claim("hidden-rate", "hidden error^2 = a (D/(LM))^r + b/D at k = 5 on the hidden region: the exponent r "
                  "of D/(LM) (the rate sqrt(D/(LM)): r = 1)", COMPANION, "main", "fit", metric="err_hidden_depthmax",
                  step=5, where=LINEAR_REGION, form=RATE_LAW, parameter="r", quantity="exponent", paper=1.0,
                  paper_text="r = 1 (rate sqrt(D/(LM)))", tolerance=CLOSE_EXPONENT, mean_of_runs=True,
                  residuals="err", region=_AUTHORS_HIDDEN),
            Claim("output-rate", "output error^2 = a (D/(LM))^r + b/D at k = 5 on the output region: the exponent r "
                  "of D/(LM) (the rate D/(LM): r = 2)", COMPANION, "main", "fit", metric="err_out", step=5,
                  where=OUTPUT_REGION, form=RATE_LAW, parameter="r", quantity="exponent", paper=2.0,
                  paper_text="r = 2 (rate D/(LM))", tolerance=CLOSE_EXPONENT, mean_of_runs=True, residuals="err",
                  region=_AUTHORS_OUTPUT),
            Claim("output-right-vs-wrong", "the output error follows the rate D/(LM), not the hidden state's "
                  "sqrt(D/(LM)): the notebook's two laws fitted to the same points, RSS(wrong) / RSS(right) > 1",
                  COMPANION, "main", "compare", metric="err_out", step=5, where=OUTPUT_REGION, form=NOTEBOOK_OUTPUT,
                  wrong=WRONG_OUTPUT, paper=1.0, paper_text="D/(LM) fits, sqrt(D/(LM)) does not (their figure)",
                  mean_of_runs=True, residuals="err", region=_AUTHORS_OUTPUT),
            Claim("tool-output-a", "the tool's own output law a (D/(LM))^2 + b/D + c/L^2 on the hidden region: "
                  "constant a (our a / 3), beside output-a; another estimator than the authors'", COMPANION, "main",
                  "fit", parameter="a", paper_text="none: not the authors' procedure (theirs is output-a)",
                  **_TOOL_OUTPUT),
            Claim("tool-output-b", "same fit: constant b of 1/D (our b / 3), beside output-b", COMPANION, "main", "fit",
                  parameter="b", paper_text="none: not the authors' procedure (theirs is output-b)", **_TOOL_OUTPUT),
        ),
        tiny={"main": _TINY_LINEAR},
    ),
    Experiment(
        "companion-nonlinear",
        "Companion paper, nonlinear experiment: tanh, L = 50, M and D swept, largest model as reference",
        {"coupled": "companion-nonlinear-coupled", "uncoupled": "companion-nonlinear-uncoupled"},
        (
            Claim("coupled-hidden", "coupled sweep, hidden error at k = 15 (step 14) follows "
                  "sqrt((0.8 sqrt(D/(LM)))^2 + (2.5/sqrt(D))^2)", COMPANION, "coupled", "curve", metric="err_hidden",
                  step=14, paper_text="hand-set curve", curve=nonlinear_hidden, factor=1.5),
            Claim("uncoupled-output", "uncoupled sweep, output error at k = 15 (step 14) follows "
                  "sqrt((0.15 D/(LM))^2 + (0.9/sqrt(D))^2)", COMPANION, "uncoupled", "curve", metric="err_out",
                  step=14, paper_text="hand-set curve", curve=nonlinear_output, factor=1.5),
            Claim("coupled-hidden-P", "coupled sweep, hidden error at k = 10 (step 9): the best error at each "
                  "P = 2 L M D decays along the frontier 2 P^(-1/6): exponent e of err ~ P^-e", COMPANION, "coupled",
                  "frontier", metric="err_hidden", step=9, paper=1 / 6, paper_text="2 P^(-1/6): e = 1/6 (frontier)",
                  curve=hidden_frontier, tolerance=FRONTIER_EXPONENT),
            Claim("uncoupled-output-P", "uncoupled sweep, output error at k = 10 (step 9): the best error at each "
                  "P = 2 L M D decays along the frontier 0.7 P^(-1/5): exponent e of err ~ P^-e", COMPANION,
                  "uncoupled", "frontier", metric="err_out", step=9, paper=1 / 5,
                  paper_text="0.7 P^(-1/5): e = 1/5 (frontier)", curve=output_frontier, tolerance=FRONTIER_EXPONENT),
        ),
        tiny={"coupled": _TINY_NONLINEAR, "uncoupled": _TINY_NONLINEAR},
    ),
    Experiment(
        "hidden-width-rates",
        "Hidden width paper: O(1/L + sqrt(D/(LM))), tanh, D = 8 (4..32 for the D claims), Mean ODE reference",
        {"main": "hidden-width-rates", "bias": "hidden-width-rates-bias", "d": "hidden-width-rates-d"},
        (
            Claim("m1-rate", "M = 1 converges as L grows (depth begets width): err_out ~ L^-b at M = 1, "
                  "the sqrt(D/(LM)) rate gives b = 1/2", HIDDEN_WIDTH, "main", "fit", step=10, where="M = 1",
                  form="c1*L**(-b)", parameter="b", quantity="exponent", paper=0.5, paper_text="b = 1/2 (rate)",
                  tolerance=CLOSE_EXPONENT),
            Claim("lm-collapse", "the sampling term depends on L*M only: errors at equal L*M within 30 % "
                  "across M (L*M >= 1024)", HIDDEN_WIDTH, "main", "collapse", step=10, where="L * M >= 1024",
                  paper=0.30, paper_text="<= 30 % spread"),
            Claim("sampling-rate", "the sampling term: fluctuation ~ c2 (D/(LM))^b across the seeds (decomposed fit: "
                  "b from the seeds' spread at each point, every L and M)", HIDDEN_WIDTH, "main", "fit", step=10,
                  form=DEFAULT_FORM, parameter="b", quantity="exponent", paper=0.5, paper_text="b = 1/2 (rate)",
                  tolerance=CLOSE_EXPONENT),
            Claim("bias-rate", "the depth term: bias ~ c1 L^-a, the seeds' mean error (decomposed fit, on the "
                  "shallow, wide grid where it dominates)", HIDDEN_WIDTH, "bias", "fit", step=10,
                  form=DEFAULT_FORM, parameter="a", quantity="exponent", paper=1.0, paper_text="a = 1 (rate)",
                  tolerance=CLOSE_EXPONENT),
            Claim("width-d-exponent", "the sampling term's D exponent: err_out ~ sqrt((c1 L^-a)^2 + (c2 D^g (LM)^-b)^2) "
                  "on a D sweep, g untied from b; the bound sqrt(D/(LM)) allows g <= 1/2 (the read-out averages "
                  "the hidden error over D coordinates: g below 1/2 is expected)", HIDDEN_WIDTH, "d", "fit",
                  metric="err_out", **_WIDTH_D),
            Claim("width-d-exponent-hidden", "same law on err_hidden (RMS over the D coordinates of h_L), where "
                  "the bound sqrt(D/(LM)) is the unit sampling's own size: g <= 1/2", HIDDEN_WIDTH, "d", "fit",
                  metric="err_hidden", **_WIDTH_D),
        ),
        tiny={role: ["grid.L=[4, 8]", f"grid.M={m}", "grid.seeds=2", "reference.depth=16", "reference.width=16",
                     "train.steps=3", *more] for role, m, more in (
            ("main", "[1, 2]", ()), ("bias", "[16, 32]", ()),
            ("d", "[16, 32]", ("grid.D=[4, 8]", "grid.problem_seeds=[1, 2, 3]")))},
    ),
)}


# --- measuring ------------------------------------------------------------------------------


def pooled(grid: pd.DataFrame) -> pd.DataFrame:
    """Problem draws pooled as the authors do: err = sqrt(mean over draws of err^2) per (L, M, D)."""
    g = grid.assign(err2=grid["err"] ** 2).groupby(["L", "M", "D"], as_index=False)["err2"].mean()
    return g.assign(err=np.sqrt(g["err2"])).drop(columns="err2")


def claim_grid(con, sweep: str, claim: Claim) -> pd.DataFrame | None:
    from ..errors import SweepDataError
    from ..analysis.data import grid_errors

    try:
        return grid_errors(con, sweep, metric=claim.metric, step=claim.step, where=claim.where)
    except SweepDataError:
        return None


def largest_point(spec) -> dict:
    return {"L": max(spec.grid.L), "M": max(spec.grid.M), "D": max(spec.grid.D)}


def _empty_row() -> dict:
    return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_points": 0, "note": ""}


def measure(claim: Claim, con, sweep: str, spec, n_boot: int = 200, leave_out: tuple = (),
            fits: dict | None = None, pooling: str = "authors", sub_grid: str | None = None) -> dict:
    """One claim on one sweep: a dict with value, ci_low, ci_high (or range), n_points, verdict
    (the grade), reason, note, procedure (form, region, pooling, loss), left_out (the points the
    spec leaves out and why; ``leave_out``: ``explorer.reproduce.leave_out.LeftOut`` entries,
    placeholders resolved) and ``fit``, the FitResult, for a fit claim. ``fits``: a dict that keeps
    each fit for the claims that share it (same law, metric, step, points). ``pooling``: the
    spec's ``[reproduce] pooling`` (for the claims fitted to pooled runs). ``sub_grid``: None when
    the sweep's grid is the paper's; else why not (its constants are then not comparable)."""
    from .leave_out import describe, kept_where

    row = _empty_row()
    row["left_out"] = describe(leave_out) if leave_out or claim.kind in ("curve", "frontier") else ""
    kept = dataclasses.replace(claim, where=kept_where(claim.where, tuple(leave_out)))
    row["procedure"] = procedure(kept, pooling)
    grid = claim_grid(con, sweep, kept)
    if grid is None or grid.empty:
        at = f"{claim.metric} at step {claim.step}" if claim.step is not None else claim.metric
        row.update(verdict=NOT_MEASURED,
                   reason=f"no points of this claim in the sweep ({at}{', ' + kept.where if kept.where else ''})")
        return row
    if claim.kind == "frontier":
        return measure_frontier(claim, grid, row)
    if claim.mean_of_runs and pooling == "authors":  # the notebook keeps a blown-up run as 0
        grid = with_blown_up_runs(con, sweep, grid, claim.metric, claim.step)
    if claim.kind == "fit":
        return _measure_fit(kept, grid, row, n_boot, con, sweep, {} if fits is None else fits, pooling, sub_grid)
    if claim.kind == "compare":
        from .comparison import measure_comparison

        return measure_comparison(kept, grid, row, n_boot, pooling)
    points = pooled(grid) if claim.pooled else grid
    if claim.kind == "curve":
        ratio = points["err"] / claim.curve(points["L"], points["M"], points["D"])
        verdict = bounds_verdict(ratio, 1 / claim.factor, claim.factor, "ratio measured / curve")
        row.update(value=float(np.exp(np.log(ratio).mean())), ci_low=float(ratio.min()), ci_high=float(ratio.max()),
                   n_points=len(points), verdict=verdict.grade, reason=verdict.reason,
                   note="value: geometric mean of measured / curve; interval: [min, max] over the points")
        return row
    if claim.kind == "collapse":
        pts = points.assign(LM=points["L"] * points["M"])
        spreads = {int(lm): float(g["err"].max() / g["err"].min() - 1) for lm, g in pts.groupby("LM") if len(g) > 1}
        if not spreads:
            row.update(verdict=NOT_MEASURED, reason="no L*M shared by several M")
            return row
        worst = max(spreads.values())
        verdict = bounds_verdict([worst], 0.0, claim.paper, "worst spread across M")
        row.update(value=worst, n_points=len(pts), verdict=verdict.grade, reason=verdict.reason,
                   note="spread (max/min - 1) per L*M: " + ", ".join(f"{k}: {v:.0%}" for k, v in sorted(spreads.items())))
        return row
    raise ValueError(f"unknown claim kind {claim.kind!r}")


def measure_frontier(claim: Claim, grid: pd.DataFrame, row: dict) -> dict:
    """The exponent of the best error at each compute along the grid's frontier, over the problem
    draws (``explorer.analysis.shapes``), graded as an exponent; the note gives each draw's exponent and
    the pooled frontier over the authors' curve."""
    from ..analysis.shapes import frontier_exponent

    result = frontier_exponent(grid)
    row.update(value=result.estimate, ci_low=result.ci_low, ci_high=result.ci_high, n_points=len(result.pooled_edge))
    geo, low, high = result.ratio_to(claim.curve)
    draws = ", ".join(f"{d}: {v:.3g}" for d, v in result.per_draw.items())
    row["note"] = (f"exponent per problem draw ({draws}), 95 % interval: Student's t over the draws; the pooled "
                   f"errors' frontier, inside the grid ({len(result.pooled_edge)} points, P {_span(result.pooled_edge)}), has exponent "
                   f"{result.pooled_exponent:.3g} and lies at {geo:.3g} [{low:.3g}, {high:.3g}] x the authors' curve")
    if result.problem:
        row.update(verdict=NOT_MEASURED, reason=result.problem)
        return row
    verdict = exponent_verdict(claim.paper, result.estimate, result.ci_low, result.ci_high, tolerance=claim.tolerance)
    row.update(verdict=verdict.grade, reason=verdict.reason)
    return row


def _span(edge: pd.DataFrame) -> str:
    return f"{edge['P'].min():.3g} to {edge['P'].max():.3g}" if len(edge) else "none"


def procedure(claim: Claim, pooling: str) -> dict:
    """How a claim is measured, for the table: form, region, pooling, loss (one phrase each)."""
    from ..analysis.laws import FORMS, method_of

    region = claim.where or "every point"
    region = f"{claim.region}: {region}" if claim.region else region
    if claim.kind in ("fit", "compare"):
        form = FORMS[claim.form].expression if claim.form in FORMS else claim.form
        if claim.kind == "compare":
            form = f"right {form}; wrong {claim.wrong}"
        if claim.mean_of_runs:
            pool = describe_pooling(pooling)
            loss = ("unweighted least squares on err, bounds >= 0 (the authors' loss: their scipy curve_fit)"
                    if claim.residuals == "err" else "soft-L1 on log residuals")
        else:
            method = method_of(claim.form)
            pool, loss = method.pooling, method.loss
    elif claim.kind == "frontier":
        form, pool = "err ~ P^-e along the frontier, P = 2 L M D", "per draw: RMS over seeds"
        loss = "least squares on log err along each draw's frontier; t interval over draws"
    else:
        form = "the authors' hand-set curve (see the claim)" if claim.kind == "curve" else "spread at equal L*M"
        pool = ("RMS over seeds, then sqrt(mean err^2) over draws" if claim.pooled else "none")
        loss = "none: ratio measured / curve" if claim.kind == "curve" else "none: max/min - 1"
    return {"form": form, "region": region, "pooling": pool, "loss": loss}


def fit_claim(claim: Claim, grid: pd.DataFrame, con, sweep: str, n_boot: int, pooling: str = "authors"):
    """The claim's fit, through ``fit_sweep``: the law fitted to the mean of every run (the
    ``mean_of_runs`` method on ``grid``, the claim's grid of errors) when the claim asks for it,
    else with the law's own method on the claim's rows of the store (the seeds' Gram rows for the
    decomposed law, the grid of errors for the others)."""
    from ..analysis.fitting import fit_sweep
    from ..analysis.laws import MEAN_OF_RUNS_METHOD

    if claim.mean_of_runs:  # the registry's mean-of-runs method on the claim's grid (its blown-up runs counted)
        return fit_sweep(con, sweep, claim.form, metric=claim.metric, step=claim.step, where=claim.where,
                         n_boot=n_boot, method=MEAN_OF_RUNS_METHOD, rows=grid,
                         options={"residuals": claim.residuals, "pool": POOL[pooling]})
    return fit_sweep(con, sweep, claim.form, metric=claim.metric, step=claim.step, where=claim.where, n_boot=n_boot,
                     hold=False)


def _measure_fit(claim: Claim, grid: pd.DataFrame, row: dict, n_boot: int, con, sweep: str, fits: dict,
                 pooling: str = "authors", sub_grid: str | None = None) -> dict:
    from ..errors import UsageError
    from ..analysis.fitting import R2_WARNING

    key = (sweep, claim.form, claim.metric, claim.step, claim.where, claim.mean_of_runs, n_boot, pooling)
    try:
        result = (fits[key] if key in fits
                  else fits.setdefault(key, fit_claim(claim, grid, con, sweep, n_boot, pooling)))
    except UsageError as exc:
        row.update(verdict=NOT_MEASURED, reason=f"the fit failed: {exc}")
        return row
    p = claim.parameter
    est, lo, hi = (result.estimate.get(p, math.nan), result.ci_low.get(p, math.nan), result.ci_high.get(p, math.nan))
    row.update(value=est * claim.scale, ci_low=lo * claim.scale, ci_high=hi * claim.scale,
               n_points=int(result.n_points), fit=result, note="; ".join([*result.warnings, *result.notes]))
    unexplained = None
    if finite(result.r2_log) and result.r2_log < R2_WARNING:
        unexplained = (f"the fit's R^2 (log) {result.r2_log:.3f} is below {R2_WARNING}: the law does not explain "
                       "this grid")
    if claim.paper is None:  # the tool's own procedure: reported beside the authors', never graded
        verdict = not_comparable("not the authors' procedure (another form or region); reported beside theirs")
    elif claim.quantity == "constant" and sub_grid is not None:  # like with like: the paper's constant is its grid's
        verdict = not_comparable(f"fitted on a sub-grid ({sub_grid}); the paper's {claim.paper:.3g} is its full "
                                 "grid's, and a constant fitted on one region is no evidence about another's")
    else:
        verdict = fit_claim_verdict(claim, row["value"], row["ci_low"], row["ci_high"], result, unexplained)
    row.update(verdict=verdict.grade, reason=verdict.reason)
    return row


def fit_claim_verdict(claim: Claim, value, ci_low, ci_high, result=None, unexplained: str | None = None) -> Verdict:
    """The grade of a fitted parameter (in the paper's units) against the claim."""
    if claim.quantity == "bound":
        return bound_verdict(claim.paper, value, ci_low, ci_high, unexplained=unexplained)
    if claim.quantity == "exponent":
        return exponent_verdict(claim.paper, value, ci_low, ci_high, tolerance=claim.tolerance, unexplained=unexplained)
    if claim.quantity == "negligible":
        shares = [term_share(claim, result, x / claim.scale) if finite(x) else math.nan for x in (value, ci_low, ci_high)]
        return negligible_verdict(*shares, claim.share, estimate=value, ci_low=ci_low, ci_high=ci_high,
                                  unexplained=unexplained)
    return constant_verdict(claim.paper, value, ci_low, ci_high, factor=claim.factor, unexplained=unexplained)


def term_share(claim: Claim, result, coefficient: float) -> float:
    """The largest share of err^2 the term ``coefficient * claim.term(L, M, D)`` takes over the
    fit's points (the error as fitted)."""
    g = result.grid
    g = g[g["used"]] if "used" in g else g
    err = g["err_fit"] if "err_fit" in g else g["err"]
    term = coefficient * claim.term(g["L"].astype(float), g["M"].astype(float), g["D"].astype(float))
    return float(np.max(term / err.astype(float) ** 2))


def claim_fit_id(exp: Experiment, claim: Claim) -> str:
    """The fit id a claim's fit is stored under (kind ``fits``): the experiment and the claim."""
    return f"reproduce-{exp.name}-{claim.id}"


__all__ = ["COMPANION", "EXPERIMENTS", "HIDDEN_WIDTH", "SCALES", "Claim", "Experiment", "claim_fit_id", "claim_grid",
           "fit_claim", "fit_claim_verdict", "hidden_frontier", "largest_point", "measure", "measure_frontier",
           "output_frontier", "nonlinear_hidden", "nonlinear_output", "paper_spec", "WIDTH_D_LAW",
           "pooled", "procedure", "term_share"]
