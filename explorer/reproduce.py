"""``explorer reproduce NAME``: run the sweeps of one of the papers' experiments and write a
reproduction report (docs/reproduce.md maps every protocol onto this project).

The registry ``EXPERIMENTS`` says, for each experiment, which specs it runs (``examples/paper/``,
one file per sweep and scale: ``NAME.toml`` is the authors' grid, ``NAME-laptop.toml`` the
reduced grid) and which claims of the papers it checks. A claim is one row of the report:

- ``fit``: a law of ``explorer.fit.FORMS`` fitted to one sweep (metric, step, SQL filter); the
  row compares one parameter (times ``scale``, to put it in the paper's units) with the paper's
  number: *agrees* when the paper's value lies in our 95 % CI or within ``factor`` of our
  estimate (``zero``: when our CI reaches below ``zero``).
- ``curve``: the authors' hand-set curve ``f(L, M, D)``; the row gives the ratio measured /
  curve over the points kept by the filter (geometric mean, [min, max]): *agrees* when every
  ratio is within ``factor``.
- ``ratio``: err at ``a`` / err at ``b`` (two grid points): *agrees* when at least ``at_least``.
- ``collapse``: at equal L*M, the spread max/min - 1 of the errors across M (worst over the
  products shared by several M, within the filter): *agrees* when at most ``at_most``.

A claim whose points are not in the sweep is *not measured at this scale*. Sweeps resume like
every sweep (``explorer.api.sweep``): rerunning skips the trials the store has.
"""
from __future__ import annotations

import math
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

PAPER_DIR = Path(__file__).resolve().parents[1] / "examples" / "paper"
SCALES = ("laptop", "full")  # "tiny" is the tests' miniature (the laptop spec with TINY overrides)

AGREES, DISAGREES, NOT_MEASURED = "agrees", "disagrees", "not measured at this scale"

COMPANION = "Chaintron, Chizat, Maass 2026 (arXiv:2603.18168)"
HIDDEN_WIDTH = "Chizat 2025, The Hidden Width of Deep ResNets (arXiv:2509.10167)"


@dataclass(frozen=True)
class Claim:
    """One claim of a paper and how this tool measures it (see the module docstring)."""

    id: str
    text: str
    source: str
    sweep: str  # the experiment's sweep it is measured on (Experiment.sweeps key)
    kind: str  # fit | curve | ratio | collapse
    metric: str = "err_out"
    step: int | None = None
    where: str | None = None  # SQL filter on metric rows
    paper: float | None = None  # the paper's number (fit: the parameter; others: the threshold)
    paper_text: str = ""  # how the paper states it
    # fit
    form: str | None = None
    parameter: str | None = None
    scale: float = 1.0  # our estimate times this is in the paper's units
    factor: float | None = None  # fit / curve tolerance
    zero: float | None = None  # fit: "near zero" below this
    # curve: the authors' curve, err(L, M, D)
    curve: Callable | None = None
    # ratio: two points (dicts of L, M, D); threshold in paper
    a: dict | None = None
    b: dict | None = None
    pooled: bool = True  # curve / ratio / collapse: pool problem draws as sqrt(mean err^2)


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    sweeps: dict  # role -> spec stem under examples/paper (full scale; "-laptop" appended for laptop)
    claims: tuple
    tiny: dict = field(default_factory=dict)  # role -> overrides of the laptop spec (tests' miniature)

    def spec_path(self, role: str, scale: str) -> Path:
        stem = self.sweeps[role]
        return PAPER_DIR / (f"{stem}.toml" if scale == "full" else f"{stem}-laptop.toml")

    def overrides(self, role: str, scale: str) -> list[str]:
        if scale != "tiny":
            return []
        return [f"name={self.sweeps[role]}-tiny", *self.tiny.get(role, [])]

    def load(self, role: str, scale: str):
        from .spec import load_spec

        if scale not in (*SCALES, "tiny"):
            raise ValueError(f"unknown scale {scale!r}; expected one of: {', '.join(SCALES)}")
        return load_spec(self.spec_path(role, scale), self.overrides(role, scale))


def _nonlinear_hidden(L, M, D):
    return np.sqrt((0.8 * np.sqrt(D / (L * M))) ** 2 + (2.5 / np.sqrt(D)) ** 2)


def _nonlinear_output(L, M, D):
    return np.sqrt((0.15 * D / (L * M)) ** 2 + (0.9 / np.sqrt(D)) ** 2)


_LINEAR_REGION = "L > 50 AND M > 10 AND D > 10"  # the authors' fit region
_TINY_LINEAR = ["grid.L=[4, 8]", "grid.M=[4, 8]", "grid.D=[4, 8]", "grid.problem_seeds=[1, 2]", "grid.seeds=1",
                "reference.grid=16"]
_TINY_NONLINEAR = ["grid.M=[1, 4]", "grid.D=[2, 17]", "grid.L=[4]", "grid.problem_seeds=[1]", "train.steps=3"]

EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    Experiment(
        "companion-linear",
        "Companion paper, linear experiment: identity activation, one sample, exact joint limit",
        {"main": "companion-linear"},
        (
            Claim("hidden-a", "hidden error^2 = a D/(LM) + b/D + c/L^2 at k = 5: constant a of D/(LM)", COMPANION,
                  "main", "fit", metric="err_hidden", step=5, where=_LINEAR_REGION, form="companion_hidden",
                  parameter="a", paper=0.673, paper_text="a = 0.673 (fitted)", factor=1.5),
            Claim("hidden-b", "same fit: constant b of 1/D", COMPANION, "main", "fit", metric="err_hidden", step=5,
                  where=_LINEAR_REGION, form="companion_hidden", parameter="b", paper=0.437,
                  paper_text="b = 0.437 (fitted)", factor=1.5),
            Claim("hidden-c", "same fit: constant c of 1/L^2 is negligible", COMPANION, "main", "fit",
                  metric="err_hidden", step=5, where=_LINEAR_REGION, form="companion_hidden", parameter="c",
                  paper=4e-16, paper_text="c ~ 4e-16 (fitted)", zero=0.05),
            Claim("output-a", "output error^2 = a (D/(LM))^2 + b/D at k = 5: constant a (authors' units: "
                  "our err_out is sqrt(3) x theirs, so our a / 3)", COMPANION, "main", "fit", metric="err_out",
                  step=5, where=_LINEAR_REGION, form="companion_output", parameter="a", paper=0.0265,
                  paper_text="a = 0.0265 (fitted)", scale=1 / 3, factor=1.5),
            Claim("output-b", "same fit: constant b of 1/D (our b / 3)", COMPANION, "main", "fit", metric="err_out",
                  step=5, where=_LINEAR_REGION, form="companion_output", parameter="b", paper=0.250,
                  paper_text="b = 0.250 (fitted)", scale=1 / 3, factor=1.5),
        ),
        tiny={"main": _TINY_LINEAR},
    ),
    Experiment(
        "companion-nonlinear",
        "Companion paper, nonlinear experiment: tanh, L = 50, M and D swept, largest model as reference",
        {"coupled": "companion-nonlinear-coupled", "uncoupled": "companion-nonlinear-uncoupled"},
        (
            Claim("coupled-hidden", "coupled sweep, hidden error at k = 15 (step 14) follows "
                  "sqrt((0.8 sqrt(D/(LM)))^2 + (2.5/sqrt(D))^2), every M, D >= 16 (reference point left out)",
                  COMPANION, "coupled", "curve", metric="err_hidden", step=14, where="D >= 16",
                  paper_text="hand-set curve", curve=_nonlinear_hidden, factor=1.5),
            Claim("uncoupled-output", "uncoupled sweep, output error at k = 15 (step 14) follows "
                  "sqrt((0.15 D/(LM))^2 + (0.9/sqrt(D))^2), D >= 16, M >= 14 (their plotted series; "
                  "reference D left out)",
                  COMPANION, "uncoupled", "curve", metric="err_out", step=14, where="D >= 16 AND M >= 14",
                  paper_text="hand-set curve", curve=_nonlinear_output, factor=1.5),
            Claim("coupled-hidden-P", "hidden error frontier 2 P^(-1/6), P = 2 L M D, at k = 10", COMPANION,
                  "coupled", "curve", metric="err_hidden", step=9, paper_text="2 P^(-1/6) (frontier)",
                  where="FALSE"),
            Claim("uncoupled-output-P", "output error frontier 0.7 P^(-1/5), P = 2 L M D, at k = 10", COMPANION,
                  "uncoupled", "curve", metric="err_out", step=9, paper_text="0.7 P^(-1/5) (frontier)",
                  where="FALSE"),
        ),
        tiny={"coupled": _TINY_NONLINEAR, "uncoupled": _TINY_NONLINEAR},
    ),
    Experiment(
        "hidden-width-rates",
        "Hidden width paper: O(1/L + sqrt(D/(LM))), tanh, D = 8, Mean ODE reference",
        {"main": "hidden-width-rates"},
        (
            Claim("m1-converges", "M = 1 converges as L grows (depth begets width): err_out at L = 16 / "
                  "at L = 1024 (1/sqrt(LM) predicts 8x)", HIDDEN_WIDTH, "main", "ratio", step=10,
                  a={"L": 16, "M": 1}, b={"L": 1024, "M": 1}, paper=4.0, paper_text=">= 4x"),
            Claim("lm-collapse", "the sampling term depends on L*M only: errors at equal L*M within 30 % "
                  "across M (L*M >= 1024)", HIDDEN_WIDTH, "main", "collapse", step=10, where="L * M >= 1024",
                  paper=0.30, paper_text="<= 30 % spread"),
        ),
        tiny={"main": ["grid.L=[4, 8]", "grid.M=[1, 2]", "grid.seeds=2", "reference.depth=16",
                       "reference.width=16", "train.steps=3"]},
    ),
)}


# --- verdicts -------------------------------------------------------------------------------


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float, np.floating)) and math.isfinite(x)


INFORMATIVE_CI = 10.0  # a CI wider than this factor (ci_high / ci_low) does not measure the constant


def fit_verdict(paper: float, estimate, ci_low=None, ci_high=None, *, factor: float | None = None,
                zero: float | None = None) -> str:
    """agrees: the estimate within ``factor`` of the paper's value, or the paper's value in an
    informative 95 % CI (ci_high / ci_low <= INFORMATIVE_CI); disagrees otherwise, unless the CI
    is uninformative: not measured. A "near zero" claim (``zero``) agrees when the estimate or
    the CI's low end is below ``zero``."""
    if not _finite(estimate):
        return NOT_MEASURED
    if zero is not None:
        low = ci_low if _finite(ci_low) else estimate
        return AGREES if min(low, estimate) <= zero else DISAGREES
    if factor is not None and paper > 0 and estimate > 0 and paper / factor <= estimate <= paper * factor:
        return AGREES
    informative = _finite(ci_low) and _finite(ci_high) and ci_low > 0 and ci_high / ci_low <= INFORMATIVE_CI
    if informative and ci_low <= paper <= ci_high:
        return AGREES
    if _finite(ci_low) and _finite(ci_high) and not informative:
        return NOT_MEASURED
    return DISAGREES


def ratio_verdict(ratios, factor: float) -> str:
    """agrees when every ratio measured / curve lies in [1/factor, factor]."""
    ratios = np.asarray(ratios, dtype=float)
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return NOT_MEASURED
    return AGREES if ((ratios >= 1 / factor) & (ratios <= factor)).all() else DISAGREES


def threshold_verdict(value, *, at_least: float | None = None, at_most: float | None = None) -> str:
    if not _finite(value):
        return NOT_MEASURED
    if at_least is not None and value < at_least:
        return DISAGREES
    if at_most is not None and value > at_most:
        return DISAGREES
    return AGREES


# --- measuring ------------------------------------------------------------------------------


def pooled(grid: pd.DataFrame) -> pd.DataFrame:
    """Problem draws pooled as the authors do: err = sqrt(mean over draws of err^2) per (L, M, D)."""
    g = grid.assign(err2=grid["err"] ** 2).groupby(["L", "M", "D"], as_index=False)["err2"].mean()
    return g.assign(err=np.sqrt(g["err2"])).drop(columns="err2")


def _grid(con, sweep: str, claim: Claim) -> pd.DataFrame | None:
    from .errors import SweepDataError
    from .sweep_data import grid_errors

    try:
        return grid_errors(con, sweep, metric=claim.metric, step=claim.step, where=claim.where)
    except SweepDataError:
        return None


def _largest(spec) -> dict:
    return {"L": max(spec.grid.L), "M": max(spec.grid.M), "D": max(spec.grid.D)}


def measure(claim: Claim, con, sweep: str, spec, n_boot: int = 200) -> dict:
    """One claim on one sweep: a dict with value, ci_low, ci_high (or range), n, verdict, note."""
    from .errors import UsageError
    from .fit import fit

    row = {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_points": 0, "note": ""}
    grid = None if claim.where == "FALSE" else _grid(con, sweep, claim)
    if grid is not None and spec.reference.kind == "largest":  # the reference point itself (err 0)
        top = _largest(spec)
        grid = grid[~((grid["M"] == top["M"]) & (grid["D"] == top["D"]))] if claim.kind == "curve" else grid
        if claim.kind == "curve" and not spec.coupled_embeddings:  # uncoupled: the reference's D too
            grid = grid[grid["D"] != top["D"]]
    if grid is None or grid.empty:
        row["verdict"] = NOT_MEASURED
        row["note"] = "not measured by this tool" if claim.where == "FALSE" else "no points of this claim in the sweep"
        return row
    if claim.kind == "fit":
        try:
            result = fit(grid, claim.form, n_boot=n_boot, where=claim.where)
        except UsageError as exc:
            row.update(verdict=NOT_MEASURED, note=f"fit failed: {exc}")
            return row
        p = claim.parameter
        est, lo, hi = (result.estimate.get(p, math.nan), result.ci_low.get(p, math.nan), result.ci_high.get(p, math.nan))
        row.update(value=est * claim.scale, ci_low=lo * claim.scale, ci_high=hi * claim.scale,
                   n_points=int(result.n_points), fit=result)
        row["verdict"] = fit_verdict(claim.paper, row["value"], row["ci_low"], row["ci_high"],
                                     factor=claim.factor, zero=claim.zero)
        notes = list(result.warnings)
        lo_, hi_ = row["ci_low"], row["ci_high"]
        if _finite(lo_) and _finite(hi_) and not (lo_ > 0 and hi_ / lo_ <= INFORMATIVE_CI):
            notes.insert(0, f"the 95 % CI spans more than {INFORMATIVE_CI:g}x: this grid does not determine the "
                            "constant")
        if claim.zero is not None and _finite(est) and claim.parameter == "c":  # the c/L^2 term's weight
            share = float((est / grid["L"].astype(float) ** 2 / grid["err"] ** 2).max())
            notes.insert(0, f"the fitted c/L^2 is at most {share:.1%} of err^2 at any point fitted")
        row["note"] = "; ".join(notes)
        return row
    points = pooled(grid) if claim.pooled else grid
    if claim.kind == "curve":
        ratio = points["err"] / claim.curve(points["L"], points["M"], points["D"])
        row.update(value=float(np.exp(np.log(ratio).mean())), ci_low=float(ratio.min()), ci_high=float(ratio.max()),
                   n_points=len(points), verdict=ratio_verdict(ratio, claim.factor),
                   note="value: geometric mean of measured / curve; interval: [min, max] over the points")
        return row
    if claim.kind == "ratio":
        def at(pt):
            sel = points
            for k, v in pt.items():
                sel = sel[sel[k] == v]
            return float(sel["err"].iloc[0]) if len(sel) else math.nan
        value = at(claim.a) / at(claim.b)
        row.update(value=value, n_points=2, verdict=threshold_verdict(value, at_least=claim.paper))
        return row
    if claim.kind == "collapse":
        pts = points.assign(LM=points["L"] * points["M"])
        spreads = {int(lm): float(g["err"].max() / g["err"].min() - 1) for lm, g in pts.groupby("LM") if len(g) > 1}
        if not spreads:
            row.update(verdict=NOT_MEASURED, note="no L*M shared by several M")
            return row
        worst = max(spreads.values())
        row.update(value=worst, n_points=len(pts), verdict=threshold_verdict(worst, at_most=claim.paper),
                   note="spread (max/min - 1) per L*M: " + ", ".join(f"{k}: {v:.0%}" for k, v in sorted(spreads.items())))
        return row
    raise ValueError(f"unknown claim kind {claim.kind!r}")


# --- charts: the authors' curves over our points -------------------------------------------


def _overlay(points: pd.DataFrame, curves: pd.DataFrame, x: str, x_title: str, y_title: str, color: str, title: str):
    """Our measured points (filled circles) and the authors' curves (dashed lines), one colour per
    ``color`` value; the legend ``source`` says which is which."""
    import altair as alt

    points = points[points["err"] > 0]  # a log axis: the reference point itself (err 0) is not drawn
    scale_x = alt.Scale(type="log")
    base_color = alt.Color(f"{color}:O", title=color, scale=alt.Scale(scheme="viridis"))
    pts = alt.Chart(points.assign(source="this tool (measured)")).mark_point(filled=True, size=50).encode(
        x=alt.X(f"{x}:Q", scale=scale_x, title=x_title), y=alt.Y("err:Q", scale=alt.Scale(type="log"), title=y_title),
        color=base_color, shape=alt.Shape("source:N", title="source"),
        tooltip=["L", "M", "D", alt.Tooltip("err:Q", format=".3g")])
    layers = [pts]
    if curves is not None and len(curves):
        if "source" not in curves:
            curves = curves.assign(source="authors' curve")
        enc = dict(x=f"{x}:Q", y="err:Q",
                   strokeDash=alt.StrokeDash("source:N", title="line", scale=alt.Scale(range=[[6, 3]])))
        if color in curves:  # one line per colour; else one black line
            enc.update(color=base_color, detail=f"{color}:O")
        layers.insert(0, alt.Chart(curves).mark_line(color="black").encode(**enc))
    chart = alt.layer(*layers).properties(title=y_title, width=420, height=300).resolve_scale(shape="independent")
    return chart, title  # the title is the figure's caption in the report


def _curve_frame(points: pd.DataFrame, by: str, x: str, fn: Callable) -> pd.DataFrame:
    rows = []
    for value, g in points.groupby(by):
        lo, hi = g[x].min(), g[x].max()
        xs = np.geomspace(lo, hi, 30) if hi > lo else np.array([lo])
        fixed = {k: float(g[k].iloc[0]) for k in ("L", "M", "D") if k not in (x, by) or k == by}
        for xv in xs:
            args = {**fixed, x: xv} if x in ("L", "M", "D") else None
            if args is None:  # x is D/(LM): vary M at fixed L, D
                L, D = float(g["L"].iloc[0]), float(value if by == "D" else g["D"].iloc[0])
                args = {"L": L, "D": D, "M": D / (L * xv)}
            rows.append({x: xv, by: value, "err": float(fn(args["L"], args["M"], args["D"]))})
    return pd.DataFrame(rows)


def experiment_charts(exp: Experiment, grids: dict) -> list:
    """(name, (chart, caption)) pairs for the report; ``grids`` role -> {metric: pooled points} as measured."""
    charts = []
    if exp.name == "companion-linear":
        # their hidden metric is the max over depth of the mean |error|: ~1.24x below err_hidden
        law = {"err_hidden": (lambda L, M, D: np.sqrt(0.673 * D / (L * M) + 0.437 / D),
                              "hidden error (err_hidden; the authors' metric ~1.24x lower)"),
               "err_out": (lambda L, M, D: np.sqrt(3 * (0.0265 * (D / (L * M)) ** 2 + 0.250 / D)),
                           "output error (err_out = sqrt(3) x the authors')")}
        for metric, (fn, label) in law.items():
            pts = grids.get("main", {}).get(metric)
            if pts is None or pts.empty:
                continue
            pts = pts.assign(ratio=pts["D"] / (pts["L"] * pts["M"]))
            rows = []
            L = float(pts["L"].max())  # with c = 0 the law depends on L only through L M: one line per D
            for D, g in pts.groupby("D"):
                for xv in np.geomspace(g["ratio"].min(), g["ratio"].max(), 20):
                    rows.append({"ratio": xv, "D": D, "err": float(fn(L, D / (L * xv), D))})
            curves = pd.DataFrame(rows)
            charts.append((f"{metric}-vs-D-over-LM", _overlay(
                pts, curves, "ratio", "D/(LM)", label, "D",
                f"{label} at k = 5 vs D/(LM); dashed: the authors' fitted law (their a, b; c = 0), one per D")))
    elif exp.name == "companion-nonlinear":
        for role, metric, fn, label in (("coupled", "err_hidden", _nonlinear_hidden, "hidden error (coupled)"),
                                         ("uncoupled", "err_out", _nonlinear_output, "output error (uncoupled)")):
            pts = grids.get(role, {}).get(metric)
            if pts is None or pts.empty:
                continue
            curves = _curve_frame(pts, "M", "D", fn)
            charts.append((f"{role}-{metric}-vs-D", _overlay(
                pts, curves, "D", "D", label, "M", f"{label} at step 14 vs D, one colour per M; dashed: the authors' hand-set curve")))
    elif exp.name == "hidden-width-rates":
        pts = grids.get("main", {}).get("err_out")
        if pts is not None and not pts.empty:
            pts = pts.assign(LM=pts["L"] * pts["M"])
            anchor = pts.sort_values("LM").iloc[0]
            xs = np.geomspace(pts["LM"].min(), pts["LM"].max(), 30)
            curves = pd.DataFrame({"LM": xs, "err": anchor["err"] * np.sqrt(anchor["LM"] / xs),
                                   "source": "theory slope sqrt(D/(LM))"})
            charts.append(("err_out-vs-LM", _overlay(
                pts, curves, "LM", "L*M", "output error (err_out) at step 10", "M",
                "err_out vs L*M, one colour per M; dashed: the theory's sqrt(D/(LM)) slope (the paper gives "
                "a rate, no constant) through our smallest L*M")))
    return charts


# --- the report -----------------------------------------------------------------------------


def _num(x) -> str:
    return "" if not _finite(x) else f"{x:.3g}"


def claims_table(exp: Experiment, rows: list[dict]) -> pd.DataFrame:
    """The claims as a table: claim, paper's number, this tool's value and 95 % CI (or range), verdict."""
    out = []
    for claim, r in zip(exp.claims, rows):
        out.append({"claim": claim.text, "source": claim.source, "sweep": r.get("sweep", ""),
                    "paper": claim.paper_text, "this tool": _num(r["value"]),
                    "95 % CI / range": (f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}]"
                                        if _finite(r["ci_low"]) else ""),
                    "points": r["n_points"], "verdict": r["verdict"], "note": r["note"]})
    return pd.DataFrame(out)


def write_reproduction_report(exp: Experiment, scale: str, table: pd.DataFrame, charts: list, out: str | Path,
                              sweeps: dict, wall_s: float, force: bool = False) -> Path:
    """out/index.html (claims table + charts as SVG), out/claims.csv, out/claims.md; a file there
    that the explorer did not write is refused unless ``force`` (``OutputFolder``)."""
    import jinja2

    from .chart_files import save_chart
    from .output_folder import OutputFolder

    out = Path(out)
    folder = OutputFolder(out, force=force)
    for name in ("claims.csv", "claims.md", "index.html"):
        folder.check(name)  # someone else's file, or a linked folder: refused before writing
    folder.write("claims.csv", table.to_csv(index=False))
    folder.write("claims.md", markdown_table(table))
    figures = []
    for name, (chart, caption) in charts:
        save_chart(chart, out / "charts", name, formats=("svg",), output=folder)
        figures.append({"name": name, "src": f"charts/{name}.svg", "title": caption})
    env = jinja2.Environment(loader=jinja2.PackageLoader("explorer", "templates"), autoescape=True)
    page = env.get_template("reproduce.html.j2").render(
        experiment=exp, scale=scale, columns=list(table.columns), rows=table.to_dict("records"),
        figures=figures, sweeps=sweeps, wall_s=wall_s, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    folder.write("index.html", page)
    return out


def markdown_table(table: pd.DataFrame) -> str:
    cols = ["claim", "paper", "this tool", "95 % CI / range", "verdict"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in table.to_dict("records"):
        lines.append("| " + " | ".join(str(r[c]).replace("|", "\\|") for c in cols) + " |")
    return "\n".join(lines) + "\n"


def grid_sizes(exp: Experiment, scale: str) -> tuple[int, int]:
    """(grid points incl. problem draws, trained seeds) over the experiment's sweeps at a scale."""
    points = seeds = 0
    for role in exp.sweeps:
        spec = exp.load(role, scale)
        points += spec.grid_points()
        seeds += spec.grid_points() * spec.grid.seeds
    return points, seeds


def scale_cost(exp: Experiment, scale: str):
    """The experiment's sweeps at a scale, planned: trials, references and single-core compute
    (``estimate.PlanCost``, summed over its sweeps)."""
    from .estimate import PlanCost, plan_cost
    from .planning import plan

    costs = [plan_cost(plan(exp.load(role, scale))) for role in exp.sweeps]
    return PlanCost(sum(c.trials for c in costs), sum(c.references for c in costs),
                    sum(c.trial_seconds for c in costs), sum(c.reference_seconds for c in costs))


def list_lines() -> list[str]:
    """``explorer reproduce --list``: per experiment and scale, its trials (and trained seeds),
    references and estimated single-core compute."""
    from .estimate import format_seconds

    lines = []
    for exp in EXPERIMENTS.values():
        sizes = []
        for scale in SCALES:
            points, seeds = grid_sizes(exp, scale)
            cost = scale_cost(exp, scale)
            sizes.append(f"{scale}: {points} points, {seeds} runs, {cost.references} reference{'' if cost.references == 1 else 's'}, "
                         f"~{format_seconds(cost.seconds)} of single-core compute")
        lines.append(f"{exp.name:<22}{'; '.join(sizes)}  ({len(exp.claims)} claims) - {exp.title}")
    return lines


def report_folder(name: str, scale: str, out: str | Path | None) -> Path:
    """Where ``reproduce`` writes its report: ``out``, else ``reproduce-NAME-SCALE`` in the
    working directory."""
    return Path(out) if out is not None else Path(f"reproduce-{name}-{scale}")


def dry_run_lines(name: str, scale: str, out: str | Path | None, available_bytes: int | None,
                  cpus: int | None) -> list[str]:
    """``explorer reproduce NAME --dry-run``: each sweep's plan and estimates (as ``explorer
    sweep SPEC --dry-run``) and where the report would go. Nothing runs, nothing is written."""
    from . import estimate
    from .planning import plan

    exp = _experiment(name, scale)
    lines = [f"experiment {name} at scale {scale}: {len(exp.sweeps)} sweep(s), {len(exp.claims)} claims"]
    for role in exp.sweeps:
        spec = exp.load(role, scale)
        lines.append(f"{role}: {exp.spec_path(role, scale)}")
        lines += ["  " + line for line in estimate.dry_run_lines(plan(spec), available_bytes, cpus)[:-1]]
    lines.append(f"report: {report_folder(name, scale, out).resolve()}/ (index.html, claims.csv, claims.md, charts/)")
    lines.append("nothing run (--dry-run)")
    return lines


def _experiment(name: str, scale: str) -> Experiment:
    from .errors import UsageError

    if name not in EXPERIMENTS:
        raise UsageError(f"unknown experiment {name!r}; expected one of: {', '.join(EXPERIMENTS)} (explorer reproduce --list)")
    if scale not in (*SCALES, "tiny"):
        raise UsageError(f"unknown scale {scale!r}; expected one of: {', '.join(SCALES)}")
    return EXPERIMENTS[name]


def reproduce(name: str, scale: str = "laptop", store="results", address: str | None = None,
              out: str | Path | None = None, n_boot: int = 200, progress: bool = True,
              force: bool = False) -> tuple[int, pd.DataFrame, Path]:
    """Run (or resume) the sweeps of experiment ``name`` at ``scale``, measure its claims and write
    the reproduction report into ``out`` (default ``reproduce-NAME-SCALE``).

    Returns:
        (exit code: 0, or 1 when some trial failed; the claims table; the report folder).
    Raises:
        UsageError: an unknown experiment name or scale (one line).
        RunInterrupted: SIGINT or SIGTERM stopped a sweep: no claim is measured and no report
            written (a verdict on a partial sweep would be a false one); the message counts the
            trials that are complete.
    """
    from .api import sweep
    from .errors import RunInterrupted, UsageError
    from .options import open_sweep

    exp = _experiment(name, scale)
    out = report_folder(name, scale, out)
    if progress:
        print(f"reproduce {name} ({scale}): the report goes to {out.resolve()}/ (--out to change)", file=sys.stderr,
              flush=True)
    started = time.monotonic()
    specs = {role: exp.load(role, scale) for role in exp.sweeps}
    code, complete = 0, 0
    for role, spec in specs.items():
        result = sweep(spec, store=store, address=address, progress=progress)
        code = max(code, result.exit_code)
        complete += result.skipped + result.ok + result.diverged
        if result.interrupted is not None:  # a verdict on a partial sweep would be a false one
            raise RunInterrupted(
                f"interrupted ({signal.Signals(result.interrupted).name}): partial, {complete} of "
                f"{sum(s.grid_points() for s in specs.values())} trials; no verdict written; "
                "run the same command again to resume", result.exit_code)
    wall = time.monotonic() - started
    rows, grids = [], {}
    cons = {}
    try:
        for role, spec in specs.items():
            _, cons[role] = open_sweep(store, spec.name)
        for claim in exp.claims:
            spec = specs[claim.sweep]
            row = measure(claim, cons[claim.sweep], spec.name, spec, n_boot=n_boot)
            row["sweep"] = spec.name
            rows.append(row)
        for role, spec in specs.items():
            grids[role] = {}
            for metric, step in _chart_metrics(exp, role):
                claim = Claim("chart", "", "", role, "curve", metric=metric, step=step)
                g = _grid(cons[role], spec.name, claim)
                if g is not None and spec.reference.kind == "largest":
                    top = _largest(spec)
                    g = g[~((g["M"] == top["M"]) & (g["D"] == top["D"]))]
                    if not spec.coupled_embeddings:
                        g = g[g["D"] != top["D"]]
                grids[role][metric] = pooled(g) if g is not None and len(g) else None
    finally:
        for con in cons.values():
            con.close()
    table = claims_table(exp, rows)
    write_reproduction_report(exp, scale, table, experiment_charts(exp, grids), out,
                              {role: spec.name for role, spec in specs.items()}, wall, force=force)
    return code, table, out


def _chart_metrics(exp: Experiment, role: str) -> list[tuple[str, int | None]]:
    steps = {"companion-linear": 5, "companion-nonlinear": 14, "hidden-width-rates": 10}[exp.name]
    if exp.name == "companion-linear":
        return [("err_hidden", steps), ("err_out", steps)]
    if exp.name == "companion-nonlinear":
        return [("err_hidden" if role == "coupled" else "err_out", steps)]
    return [("err_out", steps)]


__all__ = ["AGREES", "DISAGREES", "EXPERIMENTS", "NOT_MEASURED", "Claim", "Experiment", "claims_table", "dry_run_lines",
           "fit_verdict", "list_lines", "measure", "pooled", "ratio_verdict", "report_folder", "reproduce", "scale_cost",
           "threshold_verdict"]
