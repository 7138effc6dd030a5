"""The report's summary in words: what the fit says about each term (with its theory), the
decomposed law's two terms, the shape advice, and what was left out. Each sentence is escaped
markup (numbers wrapped in spans the page can style)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from markupsafe import Markup

from ..analysis.fitting import FitResult, flag_summary, measured_law, stated_law
from ..analysis.laws import DEFAULT_FORM, FORMS, method_of, resolve_form
from ..analysis.data import FLOOR_FACTOR, REFERENCE_ERROR, plain_value
from ..analysis.shapes import beyond_data
from ..formatting import fmt

if TYPE_CHECKING:
    from .contents import Report


def _span(value: float, text: str, **data) -> Markup:
    """A number the page's readers (and tests) can check: ``data-*`` attributes name its fit."""
    attrs = Markup(" ").join(Markup('data-{}="{}"').format(k.replace("_", "-"), v) for k, v in data.items())
    return Markup('<span class="num" {} data-value="{}">{}</span>').format(attrs, repr(value), text)


def _slope_sentence(result: FitResult, parameter: str, label: Markup, theory: str) -> Markup:
    """'slope in L: -0.98, 95% CI [-1.05, -0.91], theory -1' from an exponent (slope = -exponent)."""
    est, lo, hi = result.estimate[parameter], result.ci_low[parameter], result.ci_high[parameter]
    common = {"fit_id": result.fit_id, "parameter": parameter}
    return Markup("{}: {}, 95% CI [{}, {}], theory {}.").format(
        label, _span(-est, fmt(-est, ".3f"), field="slope", **common),
        _span(-hi, fmt(-hi, ".3f"), field="slope_low", **common),
        _span(-lo, fmt(-lo, ".3f"), field="slope_high", **common), theory)


def result_field(result, name: str, default):
    """A FitResult field that newer versions of explorer.analysis.fitting add (older ones lack it)."""
    value = getattr(result, name, default)
    return default if value is None else value


def summary_sentences(report: Report, grid: pd.DataFrame | None, metric: str) -> list[Markup]:
    """The summary, the sweep's answer first: for an lr or alpha axis its optima, the transfer
    verdicts and the paired differences (``hyper_sentences``); then the law of L, M, D; then what
    could not be made, one line each (a held slice where nothing trains is never the headline);
    then the other fits, the references and the counts. ``grid``: the held slice's per-point
    errors (None: it has none, said among what was not made)."""
    M_ = Markup
    lines = hyper_sentences(report)
    fits = report.fits
    lines.extend(_decomposed_sentences(report))
    lines.extend(M_("Not made: {}: {}.").format(what, why.rstrip(".")) for what, why in report.not_made.items())
    # Grid points measured against several references are read against their newest (the note says which).
    notes = grid.attrs.get("notes", ()) if grid is not None else ()
    lines.extend(M_('<span class="warn">References: {}.</span>').format(note) for note in notes)
    lines.extend(_law_sentence(name, result, metric) for name, result in fits.items()
                 if name in FORMS and FORMS[name].report_law is not None)
    for name, result in fits.items():
        contrast = FORMS[name].contrast if name in FORMS else None
        if contrast is not None and contrast[0] in fits:
            rival, words = contrast
            better = name if result.r2_log > fits[rival].r2_log else rival
            lines.append(M_("{} form ({}): R&sup2; (log) {} vs {} for the {} form: the {} form describes this grid "
                            "better.").format(name.capitalize(), words, fmt(result.r2_log, ".3f"),
                                              fmt(fits[rival].r2_log, ".3f"), rival, better))
    for name, result in fits.items():
        warnings = len(result_field(result, "warnings", []))  # the red items of its block, each once
        if warnings:
            lines.append(M_('<span class="warn">The {} fit has {} warning{}</span> (listed with the fit below).')
                         .format(name, warnings, "s" if warnings > 1 else ""))
    if report.advice is not None:
        lines.append(advice_sentence(report.advice))
    for form, why in report.fit_errors.items():
        if form != DEFAULT_FORM:  # said in the first line
            lines.append(M_("The {} form was not fitted: {}").format(form, why))
    lines.extend(_skipped_sentences(report))
    if report.phase is not None:
        counts = report.phase.counts()
        shown = ", ".join(f"{n} {p}" for p, n in counts.items() if n)
        lines.append(M_("Phase diagram over {} and {}: {} cells.").format(report.phase.x, report.phase.y, shown))
    if grid is not None:
        ref = grid["ref_err"].to_numpy(float)
        floor = fmt(float(np.nanmedian(ref)), ".3g") if np.isfinite(ref).any() else "unknown"
        most = max(fits.values(), key=lambda r: int(result_field(r, "n_flagged", 0)), default=None)
        flagged = int(result_field(most, "n_flagged", 0)) if most is not None else 0
        lines.append(M_("Reference error floor (median {}): {}; {} of {} grid points within {}&times; of it were "
                        "left out of the fits{}.").format(
            REFERENCE_ERROR.get(metric, "reference error"), floor, int(grid["floor_limited"].sum()), len(grid),
            fmt(FLOOR_FACTOR, "g"), M_("; {} rows were left out for stability flags{}").format(
                flagged, flag_summary(most)) if flagged else ""))
    c = report.counts
    lines.append(M_("Trials: {} ({} seeds); diverged: {} trials ({} seeds); failed: {} trials.").format(
        c["trials"], c["seeds"], c["diverged_trials"], c["diverged_seeds"], c["failed_trials"]))
    return lines


def hyper_sentences(report: Report) -> list[Markup]:
    """The answer of each lr or alpha axis: one line per group of slices with its optima (the L
    and M slices of a preset together), one per group and exponent with its transfer verdict, one
    per paired difference."""
    from .hyper_report import optimum_words

    out = []
    for answer in report.hyper:
        found = answer.optima
        if found is None:
            continue
        axis, runs = answer.axis, found.runs
        step = "each trial's last step" if runs.step is None else f"step {runs.step}"
        inner = [c for c in ("L", "M") if c in found.slice_columns]
        outer = [c for c in found.slice_columns if c not in inner]
        table = found.table
        keys = [tuple(plain_value(v) for v in r) for r in table[outer].itertuples(index=False)] if outer \
            else [()] * len(table)
        for key in dict.fromkeys(keys):
            rows = table[[k == key for k in keys]]
            group = ", ".join(f"{c}={fmt(v, 'g')}" for c, v in zip(outer, key))
            parts = []
            for _, row in rows.iterrows():
                value, interval = optimum_words(row, axis)
                label = ", ".join(f"{c}={fmt(plain_value(row[c]), 'g')}" for c in inner)
                shown = Markup("{} {}").format(_span(float(row["optimum"]), value, axis=axis, field="optimum"),
                                               interval) if interval else Markup("{}").format(value)
                parts.append(Markup("{}{}").format(Markup("{}: ").format(label) if label else "", shown))
            out.append(Markup('<span class="answer">Optimum of {}</span> ({} at {}){}: {}.').format(
                axis, runs.metric, step, Markup(", {}").format(group) if group else "", Markup("; ").join(parts)))
        law = answer.transfer
        if law is None:
            continue
        for fit in law.fits:
            for k in range(len(law.across)):
                name, across = law.optima_parameter(k)
                _, words = law.verdict(fit, k)
                if fit.measured:
                    value = Markup("{} = {} [{}, {}]").format(
                        name, _span(fit.estimate[k + 1], fmt(fit.estimate[k + 1], ".3g"), axis=axis, parameter=name,
                                    field="estimate"), fmt(fit.low[k + 1], ".3g"), fmt(fit.high[k + 1], ".3g"))
                else:
                    value = Markup("{} not fitted").format(name)
                note = Markup(" ({})").format(fit.note) if fit.note else ""
                out.append(Markup('<span class="answer">Transfer of {} across {}</span>, {}: {}: {}{}.').format(
                    axis, across, fit.label, value, words, note))
        for _, d in law.differences.iterrows():
            out.append(Markup("Paired difference of {} ({}) - ({}): {} [{}, {}] on the same draws and seeds: {}.")
                       .format(d["parameter"], d["b"], d["a"], fmt(d["difference"], ".3g"), fmt(d["ci_low"], ".3g"),
                               fmt(d["ci_high"], ".3g"), d["verdict"]))
    return out


def _law_sentence(name: str, t: FitResult, metric: str) -> Markup:
    """A law's fit in the words its registry entry gives (``Form.report_law``: the theory's), with
    its measured terms alone (an unmeasured constant is named with its reason, never its value),
    its R^2 and its extrapolation."""
    quality = Markup("R&sup2; (log) {} over {} grid points ({} floor-limited left out); a fit without the largest "
                     "L&middot;M predicts it within {}%.").format(
        _span(t.r2_log, fmt(t.r2_log, ".3f"), fit_id=t.fit_id, field="r2_log"), t.n_points, t.n_excluded,
        fmt(100 * t.extrapolation_error, ".1f"))
    constants = resolve_form(name)[1].parameters
    missing = {n: why for n, why in result_field(t, "not_measured", t.unidentified).items() if n in constants}
    label = f"{name.capitalize()} fit"
    if not missing:
        filled = Markup(FORMS[name].report_law).format(**{n: fmt(t.estimate[n], ".3g") for n in constants})
        return Markup("{}: {} &asymp; {}, {}").format(label, metric, filled, quality)
    why = Markup("; ").join(Markup("{} {}").format(n, w) for n, w in missing.items())
    law = measured_law(t) if len(missing) < len(constants) else None
    if law is None:
        return Markup('{}: <span class="warn">no term measured</span> ({}); {}').format(label, why, quality)
    return Markup('{}, its measured term alone: {} &asymp; {} (<span class="warn">{}</span>); {}').format(
        label, metric, law, why, quality)


def _decomposed_sentences(report: Report) -> list[Markup]:
    """The summary's first lines: a and b of the decomposed fit with their intervals, or why
    they are not measured on this grid, then its two surfaces."""
    result = report.fits.get(DEFAULT_FORM)
    out = []
    if result is None:
        why = report.fit_errors.get(DEFAULT_FORM)
        if why is None:
            return []  # the sweep does not vary L and M: said with the other laws not fitted
        out.append(Markup("Exponents a (depth) and b (units) from the decomposed fit: not measured on this grid: "
                          "{}.").format(why))
        fallback = method_of(DEFAULT_FORM).fallback
        result = report.fits.get(fallback) if fallback is not None else None
        if result is None:
            return out
        source = Markup("{} fit to the RMS errors").format(fallback)
    else:
        source = Markup("{} fit").format(DEFAULT_FORM)
    for name, label, theory in (("a", Markup("Depth exponent a (bias ~ c1 L<sup>-a</sup>, {})").format(source), "1"),
                                ("b", Markup("Units exponent b (fluctuation ~ c2 (D/(L M))<sup>b</sup>, {})")
                                 .format(source), "1/2")):
        missing = result_field(result, "not_measured", result.unidentified)
        if name in missing:
            out.append(Markup("{}: {}.").format(label, missing[name]))
            continue
        common = {"fit_id": result.fit_id, "parameter": name}
        out.append(Markup("{}: {}, 95% CI [{}, {}], theory {}.").format(
            label, _span(result.estimate[name], fmt(result.estimate[name], ".3f"), field="estimate", **common),
            _span(result.ci_low[name], fmt(result.ci_low[name], ".3f"), field="ci_low", **common),
            _span(result.ci_high[name], fmt(result.ci_high[name], ".3f"), field="ci_high", **common), theory))
    out.extend(Markup("{}.").format(line[0].upper() + line[1:]) for line in stated_law(result))
    return out


def advice_sentence(advice: dict) -> Markup:
    """The best-error exponent in P, said as what it is: the fitted law's algebra, extrapolated
    beyond the measured budgets (a CI of zero width is that algebra, not a measurement). A best
    shape is stated as a finding only at a measured budget and inside the measured ranges; the
    shape at the largest budget read is said with how far beyond the data it lies
    (``shapes.beyond_data``, the wording of ``explorer fit --budget``)."""
    frontier = advice["frontier"]
    rows = [r for r in frontier.to_dict("records") if not r.get("refused")]
    lo_p, hi_p = advice["exponent_range"]
    degenerate = not (np.isfinite(advice["ci_low"]) and advice["ci_high"] - advice["ci_low"] > 1e-3)
    ci = (Markup("the bootstrap CI [{}, {}] has no width: the exponent restates the law's algebra, not a "
                 "measurement").format(fmt(advice["ci_low"], ".3f"), fmt(advice["ci_high"], ".3f")) if degenerate
          else Markup("95% CI [{}, {}] from the fit's bootstrap").format(fmt(advice["ci_low"], ".3f"),
                                                                       fmt(advice["ci_high"], ".3f")))
    out = Markup('<span class="warn">Extrapolation:</span> the joint law, read at budgets P = {} to {} beyond the '
                 "largest measured model, gives a best-error exponent in P of {} ({}; theory -1/6).").format(
        fmt(lo_p, ".3g"), fmt(hi_p, ".3g"), fmt(advice["exponent"], ".3f"), ci)
    measured = [r for r in rows if not beyond_data(r)]
    if measured:
        r = measured[-1]
        out += Markup(" Within the data, at P = {} its best shape is L = {}, M = {}, D = {}.").format(
            fmt(float(r["P"]), ".3g"), int(r["L_int"]), int(r["M_int"]), int(r["D_int"]))
    if rows and beyond_data(rows[-1]):
        r = rows[-1]
        out += Markup(' <span class="warn">At P = {}, {}, the law would advise L = {}, M = {}, D = {}: an '
                      "extrapolation, not a finding.</span>").format(
            fmt(float(r["P"]), ".3g"), beyond_data(r), int(r["L_int"]), int(r["M_int"]), int(r["D_int"]))
    return out


def _and(items) -> str:
    """'L', 'L and M', 'L, M and D'."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _skipped_sentences(report: Report) -> list[Markup]:
    """One sentence for the laws the sweep cannot determine, grouped by the axes they miss."""
    by_reason: dict = {}
    for form, missing in report.skipped.items():
        by_reason.setdefault(missing, []).append(form)
    varies = ", ".join(report.varying) or "nothing"
    return [Markup("Not fitted ({}): {} {} to vary; this sweep varies {}.").format(
        ", ".join(forms), "it needs" if len(forms) == 1 else "they need", _and(missing), varies)
        for missing, forms in by_reason.items()]


__all__ = ["advice_sentence", "hyper_sentences", "result_field", "summary_sentences"]
