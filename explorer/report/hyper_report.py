"""The report's hyperparameter section (a sweep with an lr or alpha axis): the metric against the
axis, one line per L (or M) and a panel per preset, with each slice's located optimum and its
interval; the optimum against L with the fitted transfer law and its band; and, where the rows hold
it and the sweep varies M or L, the coordinate check's sizes against M (or L) per depth bin
(``explorer.analysis.hyper``). Tables in, Altair charts out, no I/O."""
from __future__ import annotations

from dataclasses import dataclass, field

import altair as alt
import numpy as np
import pandas as pd

from .charts import HEIGHT, WIDTH
from ..analysis.hyper import COORD_COLUMNS, Runs, levels, optima, transfer
from ..analysis.data import plain_value
from ..errors import UsageError
from ..formatting import fmt

HYPER_AXES = ("lr", "alpha")
_LOG = alt.Scale(type="log", nice=False, padding=12)
TITLES = {
    "hyper_curves": "Hyperparameters: the metric (geometric mean over runs) against the axis, one line per slice "
                    "(a diverged run removes its point); the black marks are each slice's located optimum with its "
                    "95% interval",
    "hyper_transfer": "Hyperparameters: the optimum against depth L (or width M) per group, with the fitted "
                      "transfer law log axis* = c + gamma log L (delta log M across M) and its 95% band (edge "
                      "slices are left out)",
    "hyper_coordcheck": "Coordinate check at each trial's last step: the geometric mean over runs of the RMS per "
                        "quarter of depth (b0..b3) against width M (or depth L), one line per L (or M), a row per "
                        "preset; flat in M is muP's Theta(1), `explorer coordcheck` fits the exponents",
}


def _label(runs: Runs, row) -> str:
    return ", ".join(f"{c}={row[c]}" for c in runs.slices.columns if c not in ("L", "M")) or "all"


def curves_chart(found) -> alt.Chart:
    """The metric against the axis per slice, and the optima with their intervals."""
    runs = found.runs
    flat = runs.values.reshape(runs.values.shape[0], -1, runs.values.shape[-1])
    level = np.exp(levels(flat, log_scale=True))
    rows, marks = [], []
    for j, row in runs.slices.reset_index(drop=True).iterrows():
        line = ", ".join(f"{c}={row[c]}" for c in ("L", "M") if c in runs.slices.columns) or "all"
        for x, y in zip(runs.grid, level[j]):
            if np.isfinite(y):
                rows.append({"axis": x, "metric": y, "slice": line, "group": _label(runs, row)})
        t = found.table.iloc[j]
        if np.isfinite(float(t["optimum"])):
            at = float(np.nanmin(np.where(np.isfinite(level[j]), level[j], np.nan)))
            marks.append({"axis": float(t["optimum"]), "low": float(t["ci_low"]), "high": float(t["ci_high"]),
                          "metric": at, "slice": line, "group": _label(runs, row)})
    data, opt = pd.DataFrame(rows), pd.DataFrame(marks, columns=["axis", "low", "high", "metric", "slice", "group"])
    x = alt.X("axis:Q", scale=_LOG, title=runs.axis)
    base = alt.Chart(data).mark_line(point=True).encode(x, alt.Y("metric:Q", scale=_LOG, title=runs.metric),
                                                         color=alt.Color("slice:N"), tooltip=list(data.columns))
    # plain rules, not errorbar marks: an errorbar aggregates per facet, and a facet without a
    # located optimum would give its aggregate an infinite extent (a console warning in the page)
    bars = alt.Chart(opt).mark_rule(color="black").encode(alt.X("low:Q", scale=_LOG), alt.X2("high:Q"),
                                                          alt.Y("metric:Q"))
    dots = alt.Chart(opt).mark_point(color="black", shape="diamond", size=80).encode(
        alt.X("axis:Q", scale=_LOG), alt.Y("metric:Q"), tooltip=list(opt.columns))
    layers = (base, bars, dots) if len(opt) else (base,)
    return alt.layer(*layers, data=data).properties(width=WIDTH // 2, height=HEIGHT).facet(
        column=alt.Column("group:N", title=None)) if len(data) else base


def transfer_chart(law) -> alt.Chart | None:
    """The optima against the first --across axis (L or M) per group, the fitted law and its band
    (quantiles of the resamples; drawn for a law of one axis only)."""
    table, runs = law.optima.table, law.optima.runs
    axis = law.across[0]
    points, lines = [], []
    for fit in law.fits:
        for j in fit.slices:
            t = table.iloc[j]
            points.append({axis: float(t[axis]), "optimum": float(t["optimum"]), "low": float(t["ci_low"]),
                           "high": float(t["ci_high"]), "group": fit.label})
        if not fit.measured or len(law.across) > 1:
            continue
        Ls = np.geomspace(table[axis].min(), table[axis].max(), 30)
        design = np.column_stack([np.ones_like(Ls), np.log(Ls)])
        reps = fit.outer[np.isfinite(fit.outer).all(axis=1)] @ design.T
        low, high = (np.quantile(reps, q, axis=0) if len(reps) > 1 else design @ fit.estimate for q in (0.025, 0.975))
        for L, mid, lo, hi in zip(Ls, design @ fit.estimate, low, high):
            lines.append({axis: L, "law": np.exp(mid), "low": np.exp(lo), "high": np.exp(hi), "group": fit.label})
    if not points:
        return None
    pts, law_frame = pd.DataFrame(points), pd.DataFrame(lines, columns=[axis, "law", "low", "high", "group"])
    x = alt.X(f"{axis}:Q", scale=_LOG, title={"L": "depth L", "M": "width M"}[axis])
    y = alt.Y("optimum:Q", scale=_LOG, title=f"{runs.axis}*")
    located = pts[np.isfinite(pts["optimum"]) & np.isfinite(pts["low"]) & np.isfinite(pts["high"])]
    layers = [alt.Chart(pts).mark_point(filled=True).encode(x, y, color="group:N", tooltip=list(pts.columns))]
    if len(located):  # an optimum at a grid edge has no interval to draw
        layers.append(alt.Chart(located).mark_rule().encode(x, alt.Y("low:Q", scale=_LOG), alt.Y2("high:Q"),
                                                            color="group:N"))
    if len(law_frame):
        layers += [alt.Chart(law_frame).mark_area(opacity=0.2).encode(x, alt.Y("low:Q", scale=_LOG), alt.Y2("high:Q"),
                                                                      color="group:N"),
                   alt.Chart(law_frame).mark_line().encode(x, alt.Y("law:Q", scale=_LOG), color="group:N")]
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT)


def coordcheck_charts(con, sweep: str, varying, where: str | None = None) -> dict:
    """name -> chart per kind (update, branch): the sizes against M (or L when M is fixed) per
    depth bin; none when the sweep varies neither or its rows hold no coordinate check."""
    from ..analysis.hyper import coord_sizes

    if "M" not in varying and "L" not in varying:
        return {}
    try:
        sizes = coord_sizes(con, sweep, where=where)
    except UsageError:
        return {}
    table = sizes.table()
    x, line = ("M", "L") if "M" in sizes.axes else ("L", "M")
    table["group"] = [", ".join(f"{c}={r[c]}" for c in sizes.groups) or "all" for _, r in table.iterrows()]
    out = {}
    for kind in ("update", "branch"):
        columns = [c for c in COORD_COLUMNS if c.startswith(f"coord_{kind}_") and c in table]
        data = table.melt(id_vars=["group", "M", "L"], value_vars=columns, var_name="bin", value_name="size")
        data["bin"] = data["bin"].str.rsplit("_", n=1).str[-1]
        data = data[np.isfinite(data["size"].astype(float))]
        if not len(data):
            continue
        out[f"hyper_coordcheck_{kind}"] = alt.Chart(data).mark_line(point=True).encode(
            alt.X(f"{x}:Q", scale=_LOG, title=x), alt.Y("size:Q", scale=_LOG, title=f"{kind} RMS"),
            color=alt.Color(f"{line}:N"), tooltip=list(data.columns)).properties(
            width=WIDTH // 4, height=HEIGHT // 2).facet(column=alt.Column("bin:N", title=None),
                                                        row=alt.Row("group:N", title=None))
    return out


@dataclass
class HyperAnswer:
    """The answer of one lr or alpha axis: each slice's optimum (``Optima``), the transfer law
    across the L and M the slices vary (``Transfer``, None when they vary neither), and why a
    part could not be made (``why``: what -> the reason, said in the report in one line each)."""

    axis: str
    optima: object = None
    transfer: object = None
    why: dict = field(default_factory=dict)

    def rows(self) -> list[dict]:
        """The rows of ``optima.csv``: the optima's and the transfer law's rows of kind optima
        (``explorer optimum`` and ``transfer`` write the same), then the paired differences."""
        out = list(self.optima.store_rows()) if self.optima is not None else []
        if self.transfer is not None:
            out += self.transfer.store_rows()
            for _, d in self.transfer.differences.iterrows():
                out.append({"axis": self.axis, "metric": self.optima.runs.metric, "step": self.optima.runs.step,
                            "parameter": f"{d['parameter']} difference", "across": ",".join(self.transfer.across),
                            "optimum": float(d["difference"]), "ci_low": float(d["ci_low"]),
                            "ci_high": float(d["ci_high"]), "verdict": d["verdict"],
                            "note": f"({d['b']}) - ({d['a']}) on the same draws and seeds"})
        return out


def hyper_answers(con, sweep: str, varying, where: str | None = None, n_boot: int = 200, seed: int = 0,
                  pairs=None) -> list:
    """A ``HyperAnswer`` for each of lr and alpha the sweep varies (none otherwise): the optima of
    the loss at each trial's last step, and the transfer law across L and M (both when both vary),
    its groups' slices at a grid edge left out and named. What cannot be made is kept as a reason."""
    from ..analysis.hyper import axis_runs

    answers = []
    for axis in (a for a in HYPER_AXES if a in varying):
        answer = HyperAnswer(axis)
        answers.append(answer)
        for metric in ("test_loss", "loss"):  # the held-out loss where the sweep holds samples out
            try:
                answer.optima = optima(axis_runs(con, sweep, axis, metric=metric, where=where), n_boot=n_boot, seed=seed)
                break
            except UsageError as exc:
                answer.why[f"the optima of {axis}"] = str(exc)
        if answer.optima is None:
            continue
        answer.why.pop(f"the optima of {axis}", None)  # a sweep without a test set: its loss serves
        across = tuple(a for a in ("L", "M") if a in answer.optima.slice_columns)
        if not across:
            continue
        try:
            answer.transfer = transfer(answer.optima, across, drop_edges=True, pairs=pairs)
        except (UsageError, ValueError, np.linalg.LinAlgError) as exc:
            answer.why[f"the transfer law of {axis} across {' and '.join(across)}"] = str(exc)
    return answers


def hyper_charts(con, sweep: str, varying, where: str | None = None, n_boot: int = 200, seed: int = 0,
                 answers=None) -> dict:
    """name -> chart for each of lr and alpha the sweep varies (none otherwise, or when the axis
    cannot be read: a report shows what it can), and the coordinate check's charts. ``answers``:
    the ``hyper_answers`` already made (else they are made here)."""
    if answers is None:
        answers = hyper_answers(con, sweep, varying, where, n_boot=n_boot, seed=seed)
    out = {}
    for answer in answers:
        if answer.optima is None:
            continue
        out[f"hyper_curves_{answer.axis}"] = curves_chart(answer.optima)
        chart = transfer_chart(answer.transfer) if answer.transfer is not None else None
        if chart is not None:
            out[f"hyper_transfer_{answer.axis}"] = chart
    out.update(coordcheck_charts(con, sweep, varying, where))
    return out


def optimum_words(row, axis: str) -> tuple[str, str]:
    """(the optimum, its 95% interval) of one slice in words: ``2.31``, ``[1.62, 3.3]``; ``below
    0.125`` or ``above 32`` at a grid edge (never a value); ``not measured``."""
    if row["edge"] == "below":
        return f"below {fmt(row['grid_low'], 'g')}", ""
    if row["edge"] == "above":
        return f"above {fmt(row['grid_high'], 'g')}", ""
    if not np.isfinite(float(row["optimum"])):
        return "not measured", ""
    interval = (f"[{fmt(row['ci_low'], '.3g')}, {fmt(row['ci_high'], '.3g')}]"
                if np.isfinite(float(row["ci_low"])) and np.isfinite(float(row["ci_high"])) else "")
    return fmt(row["optimum"], ".3g"), interval


def optima_frame(found) -> pd.DataFrame:
    """The page's optima table: the slice columns, the optimum (or its edge), its interval, runs
    and diverged runs."""
    axis = found.runs.axis
    rows = []
    for _, row in found.table.iterrows():
        record = {c: plain_value(row[c]) for c in found.slice_columns}
        record[f"{axis}*"], record["95% interval"] = optimum_words(row, axis)
        record.update(runs=int(row["n_runs"]), diverged=int(row["n_diverged"]))
        rows.append(record)
    return pd.DataFrame(rows)


def transfer_frames(law) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The page's transfer tables: per group and exponent its estimate, interval and verdict (and
    what was left out); the paired differences."""
    rows = []
    for fit in law.fits:
        for k in range(len(law.across)):
            name, _ = law.optima_parameter(k)
            rows.append({"group": fit.label, "exponent": name,
                         "estimate": fit.estimate[k + 1] if fit.measured else "not fitted",
                         "95% interval": f"[{fmt(fit.low[k + 1], '.3g')}, {fmt(fit.high[k + 1], '.3g')}]"
                         if fit.measured else "", "verdict": law.verdict(fit, k)[1], "note": fit.note})
    differences = pd.DataFrame([{"pair": f"({d['b']}) - ({d['a']})", "exponent": d["parameter"],
                                 "difference": d["difference"], "95% interval":
                                 f"[{fmt(d['ci_low'], '.3g')}, {fmt(d['ci_high'], '.3g')}]", "verdict": d["verdict"]}
                                for _, d in law.differences.iterrows()])
    return pd.DataFrame(rows), differences


def chart_title(name: str) -> str:
    """The title of a chart of this section (``hyper_curves_lr`` -> the curves' title, for lr)."""
    key = "_".join(name.split("_")[:2])
    return TITLES.get(key, name) + f" ({name.split('_', 2)[-1]})"


__all__ = ["HYPER_AXES", "TITLES", "HyperAnswer", "chart_title", "coordcheck_charts", "curves_chart", "hyper_answers",
           "hyper_charts", "optima_frame", "optimum_words", "transfer_chart", "transfer_frames"]
