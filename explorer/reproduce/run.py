"""``explorer reproduce NAME``: run the sweeps of one of the papers' experiments and write a
reproduction report (docs/reproduce.md maps every protocol onto this project).

The experiments, their specs (``explorer/reproduce/paper/``, shipped with the package) and their claims are
the registry of ``explorer.reproduce.claims``; each claim is graded by ``explorer.reproduce.verdicts``: consistent,
close (CI excludes), not measured or disagrees, always with the reason. The report is the claims
table (CLI, ``claims.csv``, ``claims.md``, ``index.html``: the same grades, a headline counting
each) and charts of the authors' curves over our points. The fits behind the claims are stored
(kind ``fits``, fit id ``reproduce-EXPERIMENT-CLAIM``). Sweeps resume like every sweep
(``explorer.sweeps.sweep``): rerunning skips the trials the store has.
"""
from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .claims import (EXPERIMENTS, SCALES, Claim, Experiment, claim_fit_id, claim_grid, measure,
                     nonlinear_hidden, nonlinear_output, pooled)
from ..formatting import fmt
from .pooling import read_pooling
from .verdicts import (CLOSE, CONSISTENT, DISAGREES, EXCEEDS_BOUND, NOT_COMPARABLE, NOT_MEASURED, TIGHT, WITHIN_BOUND,
                       finite, headline)


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


# The linear experiment's P-lines (plt_cvg_rate cells 18, 23; P = L M D there): constant x P^-power, the
# constant theirs, sqrt(a^2 + b^2 + c^2) + 0.1 (hidden), sqrt(a^2 + b^2) + 0.22 (output, times sqrt(3):
# our err_out is sqrt(3) x theirs)
_HIDDEN_P = float(np.sqrt(0.673**2 + 0.437**2) + 0.1)
_OUTPUT_P = float(np.sqrt(3) * (np.sqrt(0.0265**2 + 0.250**2) + 0.22))
LINEAR_P_LINES = {"err_hidden_depthmax": (_HIDDEN_P, 1 / 6, f"{_HIDDEN_P:.2f} P^(-1/6)"),
                  "err_out": (_OUTPUT_P, 1 / 5, f"{_OUTPUT_P:.2f} P^(-1/5) (sqrt(3) x theirs)")}


def experiment_charts(exp: Experiment, grids: dict) -> list:
    """(name, (chart, caption)) pairs for the report; ``grids`` role -> {metric: pooled points} as measured."""
    charts = []
    if exp.name == "companion-linear":
        law = {"err_hidden_depthmax": (lambda L, M, D: np.sqrt(0.673 * D / (L * M) + 0.437 / D),
                                       "hidden error (err_hidden_depthmax: the authors' metric)"),
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
            const, power, words = LINEAR_P_LINES[metric]
            pts_p = pts.assign(P=pts["L"] * pts["M"] * pts["D"])
            xs = np.geomspace(pts_p["P"].min(), pts_p["P"].max(), 30)
            line = pd.DataFrame({"P": xs, "err": const * xs ** (-power), "source": words})
            charts.append((f"{metric}-vs-P", _overlay(
                pts_p, line, "P", "P = L M D", label, "D",
                f"{label} at k = 5 vs P = L M D, one colour per D; dashed: the authors' line {words} "
                "(plt_cvg_rate cells 18 and 23, their constant)")))
    elif exp.name == "companion-nonlinear":
        for role, metric, fn, label in (("coupled", "err_hidden", nonlinear_hidden, "hidden error (coupled)"),
                                         ("uncoupled", "err_out", nonlinear_output, "output error (uncoupled)")):
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
        for metric in ("err_out", "err_hidden"):
            charts += d_chart(grids.get("d", {}).get(metric), metric)
    return charts


def d_chart(pts: pd.DataFrame | None, metric: str) -> list:
    """The D claims' chart: err x sqrt(LM) (the L*M rate divided out) against D, one colour per
    L*M, the bound's sqrt(D) slope dashed through each L*M's smallest D."""
    if pts is None or pts.empty:
        return []
    pts = pts.assign(LM=pts["L"] * pts["M"])
    pts = pts.assign(err=pts["err"] * np.sqrt(pts["LM"]))
    rows = []
    for lm, g in pts.groupby("LM"):
        first = g.sort_values("D").iloc[0]
        for D in np.geomspace(g["D"].min(), g["D"].max(), 10):
            rows.append({"D": D, "LM": lm, "err": float(first["err"] * np.sqrt(D / first["D"])),
                         "source": "the bound's slope sqrt(D)"})
    return [(f"{metric}-vs-D", _overlay(
        pts, pd.DataFrame(rows), "D", "D", f"{metric} x sqrt(LM) at step 10", "LM",
        f"{metric} x sqrt(L M) against D on the D sweep, draws pooled, one colour per L*M; dashed: the bound "
        "sqrt(D/(LM))'s slope through each L*M's smallest D (points rising slower hold the bound, faster exceed it)"))]


# --- the report -----------------------------------------------------------------------------


def _num(x) -> str:
    return fmt(float(x), ".3g") if finite(x) else ""


def claims_table(exp: Experiment, rows: list[dict]) -> pd.DataFrame:
    """The claims as a table: claim, paper's number, this tool's value and 95 % CI (or range),
    verdict (one of ``explorer.reproduce.verdicts.GRADES``), the reason for it, the fit's notes, and
    the claim's procedure: form, region, pooling, loss."""
    out = []
    for claim, r in zip(exp.claims, rows):
        how = r.get("procedure", {})
        out.append({"id": claim.id, "kind": claim.kind, "claim": claim.text, "source": claim.source, "sweep": r.get("sweep", ""),
                    **{k: how.get(k, "") for k in PROCEDURE},
                    "paper": claim.paper_text, "this tool": _num(r["value"]),
                    "95 % CI / range": (f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}]"
                                        if finite(r["ci_low"]) else ""),
                    "points": r["n_points"], "verdict": r["verdict"], "reason": r.get("reason", ""),
                    "left out": r.get("left_out", ""), "note": r["note"]})
    return pd.DataFrame(out)


def write_reproduction_report(exp: Experiment, scale: str, table: pd.DataFrame, charts: list, out: str | Path,
                              sweeps: dict, wall_s: float, force: bool = False) -> Path:
    """out/index.html (claims table + charts as SVG), out/claims.csv, out/claims.md; a file there
    that the explorer did not write is refused unless ``force`` (``OutputFolder``)."""
    import jinja2

    from ..report.chart_files import save_chart
    from ..report.output_folder import OutputFolder

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
    env = jinja2.Environment(loader=jinja2.PackageLoader("explorer.report", "templates"), autoescape=True)
    page = env.get_template("reproduce.html.j2").render(
        experiment=exp, scale=scale, columns=list(table.columns), rows=table.to_dict("records"),
        headline=headline(table["verdict"]), grades={CONSISTENT: "consistent", CLOSE: "close",
                                                     NOT_MEASURED: "not", DISAGREES: "disagrees",
                                                     NOT_COMPARABLE: "not", TIGHT: "consistent",
                                                     WITHIN_BOUND: "consistent", EXCEEDS_BOUND: "disagrees"},
        figures=figures, sweeps=sweeps, wall_s=wall_s, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    folder.write("index.html", page)
    return out


PROCEDURE = ("form", "region", "pooling", "loss")  # how each claim is measured: a column each in the table


def markdown_table(table: pd.DataFrame) -> str:
    """The headline (each grade counted), then the claims with their verdicts and reasons, then
    each claim's procedure (form, region, pooling, loss)."""
    cols = ["id", "claim", "paper", "this tool", "95 % CI / range", "verdict", "reason"]
    lines = [f"Claims: {headline(table['verdict'])}", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in table.to_dict("records"):
        lines.append("| " + " | ".join(str(r[c]).replace("|", "\\|") for c in cols) + " |")
    records = table.to_dict("records")
    if records and all(k in records[0] for k in PROCEDURE):
        lines += ["", "Procedures (form; region; pooling; loss):"]
        lines += [f"- {r['id']}: " + "; ".join(f"{k}: {r[k]}" for k in PROCEDURE) for r in records]
    left = [r for r in table.to_dict("records") if r.get("left out")]
    if left:  # the points each curve comparison leaves out, from the paper spec, and why
        lines += ["", "Points left out (the paper spec's [reproduce] table):"]
        lines += [f"- {r['id']}: {r['left out']}" for r in left]
    frontiers = [r for r in table.to_dict("records") if r.get("kind") == "frontier" and r.get("note")]
    if frontiers:
        lines += ["", "Frontiers:"] + [f"- {r['id']}: {r['note']}" for r in frontiers]
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
    from ..config.estimate import PlanCost, plan_cost
    from ..config.planning import plan

    costs = [plan_cost(plan(exp.load(role, scale))) for role in exp.sweeps]
    return PlanCost(sum(c.trials for c in costs), sum(c.references for c in costs),
                    sum(c.trial_seconds for c in costs), sum(c.reference_seconds for c in costs))


def list_lines() -> list[str]:
    """``explorer reproduce --list``: per experiment and scale, its trials (and trained seeds),
    references and estimated single-core compute, then a line naming its claims."""
    from ..formatting import format_seconds

    lines = []
    for exp in EXPERIMENTS.values():
        sizes = []
        for scale in SCALES:
            points, seeds = grid_sizes(exp, scale)
            cost = scale_cost(exp, scale)
            sizes.append(f"{scale}: {points} points, {seeds} runs, {cost.references} reference{'' if cost.references == 1 else 's'}, "
                         f"~{format_seconds(cost.seconds)} of single-core compute")
        lines.append(f"{exp.name:<22}{'; '.join(sizes)}  ({len(exp.claims)} claims) - {exp.title}")
        lines.append(f"{'':<22}claims: {', '.join(c.id for c in exp.claims)}")
    return lines


def report_folder(name: str, scale: str, out: str | Path | None) -> Path:
    """Where ``reproduce`` writes its report: ``out``, else ``reproduce-NAME-SCALE`` in the
    working directory."""
    return Path(out) if out is not None else Path(f"reproduce-{name}-{scale}")


def experiment_dry_run_lines(name: str, scale: str, out: str | Path | None, available_bytes: int | None,
                             cpus: int | None) -> list[str]:
    """``explorer reproduce NAME --dry-run``: each sweep's plan and estimates (as ``explorer
    sweep SPEC --dry-run``), a row per claim (its sweep, its metric, the paper's number) and where
    the report would go. Nothing runs, nothing is written."""
    from ..config import estimate
    from ..config.planning import plan

    exp = _experiment(name, scale)
    lines = [f"experiment {name} at scale {scale}: {len(exp.sweeps)} sweep(s), {len(exp.claims)} claims"]
    for role in exp.sweeps:
        spec = exp.load(role, scale)
        lines.append(f"{role}: {exp.spec_path(role, scale)}")
        lines += ["  " + line for line in estimate.estimate_lines(plan(spec), available_bytes, cpus)[:-1]]
    lines.append("claims (id, sweep, metric: what the paper says):")
    lines += [f"  {c.id} ({c.sweep}, {c.metric}): {c.paper_text or 'reported beside the paper, not graded'}"
              for c in exp.claims]
    lines.append(f"report: {report_folder(name, scale, out).resolve()}/ (index.html, claims.csv, claims.md, charts/)")
    lines.append("nothing run (--dry-run)")
    return lines


def _experiment(name: str, scale: str) -> Experiment:
    from ..errors import UsageError

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
    from ..sweeps import sweep
    from ..errors import RunInterrupted, UsageError
    from ..store_access import open_sweep

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
    rows, grids, fits = [], {}, {}
    cons, stores = {}, {}
    pooling = {role: read_pooling(exp.spec_path(role, "laptop" if scale == "tiny" else scale)) for role in specs}
    sub_grids = {role: sub_grid(exp, role, spec) for role, spec in specs.items()}
    try:
        for role, spec in specs.items():
            stores[role], cons[role] = open_sweep(store, spec.name)
        for claim in exp.claims:
            spec = specs[claim.sweep]
            row = measure(claim, cons[claim.sweep], spec.name, spec, n_boot=n_boot,
                          leave_out=exp.leave_out(claim, scale, spec), fits=fits, pooling=pooling[claim.sweep],
                          sub_grid=sub_grids[claim.sweep])
            row["sweep"] = spec.name
            rows.append(row)
            if row.get("fit") is not None:
                save_claim_fit(stores[claim.sweep], exp, claim, row["fit"], spec.name)
            elif claim.kind == "frontier" and finite(row["value"]):
                save_frontier_fit(stores[claim.sweep], exp, claim, row, spec.name)
        for role, spec in specs.items():
            grids[role] = {}
            for metric, step in _chart_metrics(exp, role):
                grids[role][metric] = chart_points(exp, role, metric, step, scale, spec, cons[role])
    finally:
        for con in cons.values():
            con.close()
    table = claims_table(exp, rows)
    write_reproduction_report(exp, scale, table, experiment_charts(exp, grids), out,
                              {role: spec.name for role, spec in specs.items()}, wall, force=force)
    return code, table, out


def sub_grid(exp: Experiment, role: str, spec) -> str | None:
    """None when ``spec``'s grid is the paper's (the full-scale spec's L, M, D, draws and seeds);
    else the sub-grid in words (its fitted constants are then not the paper's to compare)."""
    full = exp.load(role, "full").grid
    axes = ("L", "M", "D", "problem_seeds", "seeds")
    if all(tuple(np.atleast_1d(getattr(spec.grid, a))) == tuple(np.atleast_1d(getattr(full, a))) for a in axes):
        return None
    g = spec.grid
    return (f"L {min(g.L)}..{max(g.L)} ({len(g.L)}), M {min(g.M)}..{max(g.M)} ({len(g.M)}), D {min(g.D)}..{max(g.D)} "
            f"({len(g.D)}), {len(g.problem_seeds or (0,))} draws x {g.seeds} seeds; the paper's grid: {len(full.L)} x "
            f"{len(full.M)} x {len(full.D)}, {len(full.problem_seeds or (0,))} draws x {full.seeds} seeds")


def save_claim_fit(store, exp: Experiment, claim: Claim, result, sweep: str) -> str:
    """Store a claim's fit (kind ``fits``) under ``reproduce-EXPERIMENT-CLAIM``, so SQL and
    ``explorer report`` see what the reproduction measured; a rerun replaces it. Its ``fit_key``
    is the same id (a question of its own in ``latest_fits``); ``data_hash`` says which trials it read."""
    fit_id = claim_fit_id(exp, claim)
    rows = result.rows().assign(fit_id=fit_id, fit_key=fit_id, sweep=sweep).to_dict("records")
    store.write_fit(sweep, fit_id, rows)
    return fit_id


def chart_points(exp: Experiment, role: str, metric: str, step: int, scale: str, spec, con) -> pd.DataFrame | None:
    """A chart's points, draws pooled: the sweep's rows of ``metric`` at ``step``, less what the
    curve claim drawn on them leaves out (the spec's ``[reproduce]`` table)."""
    from .leave_out import kept_where

    curve = next((c for c in exp.claims if c.sweep == role and c.kind == "curve" and c.metric == metric), None)
    left = exp.leave_out(curve, scale, spec) if curve is not None else ()
    g = claim_grid(con, spec.name, Claim("chart", "", "", role, "curve", metric=metric, step=step,
                                         where=kept_where(None, left)))
    return pooled(g) if g is not None and len(g) else None


def save_frontier_fit(store, exp: Experiment, claim: Claim, row: dict, sweep: str) -> str:
    """Store a frontier claim's exponent as a fit (kind ``fits``, form ``frontier``, parameter
    ``e`` of err ~ P^-e, its interval over the draws) under ``reproduce-EXPERIMENT-CLAIM``."""
    fit_id = claim_fit_id(exp, claim)
    store.write_fit(sweep, fit_id, [{
        "sweep": sweep, "fit_id": fit_id, "form": "frontier", "metric": claim.metric, "step": claim.step,
        "parameter": "e", "estimate": row["value"], "ci_low": row["ci_low"], "ci_high": row["ci_high"],
        "r2_log": None, "n_points": int(row["n_points"]), "n_excluded": 0, "extrapolation_error": None,
        "warnings": row["note"]}])
    return fit_id


def _chart_metrics(exp: Experiment, role: str) -> list[tuple[str, int | None]]:
    steps = {"companion-linear": 5, "companion-nonlinear": 14, "hidden-width-rates": 10}[exp.name]
    if exp.name == "companion-linear":
        return [("err_hidden_depthmax", steps), ("err_out", steps)]
    if exp.name == "companion-nonlinear":
        return [("err_hidden" if role == "coupled" else "err_out", steps)]
    if role == "d":  # the D claims: both metrics
        return [("err_out", steps), ("err_hidden", steps)]
    return [("err_out", steps)]


__all__ = ["EXPERIMENTS", "Claim", "Experiment", "claims_table", "experiment_dry_run_lines", "list_lines",
           "markdown_table", "measure", "pooled", "report_folder", "reproduce", "save_claim_fit", "save_frontier_fit",
           "scale_cost"]
