"""What the adaptive loop does after a refit: the next points, or why it stops (docs/sweeps.md,
"Adaptive sweeps").

``next_choice`` takes the steps in order: no candidate left stops; no fit yet runs more of the
space-filling design; targets met run one more round to confirm them (``unconfirmed``: met in two
consecutive rounds, each estimate inside the previous round's interval) and then stop; unmet
targets get the batch with the largest expected CI gain per predicted second, or a stop that
says what blocks them. ``rules_changed`` tells a resumed loop whether the stopping rules it was
decided under still hold. Each function reads the state of one run, a ``loop.AdaptiveLoop``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.fitting import halfwidth_of, target_halfwidth, unmeasured_in
from .rounds import read_rounds
from .selection import COST_UNIT, INITIAL_SHARE, Linearised, choose_batch, initial_design


def next_choice(loop, result, keys: list[str], number: int, count: int | None = None
                ) -> tuple[list, str, str | None]:
    """(choices, reason, stop_reason) after round ``number``: the next ``count`` points (default
    the batch), or why the loop stops (``keys``: every point chosen so far, spent; ``result``: the
    refit, a FitResult, or the text of why there is none)."""
    count = loop.ad.batch if count is None else count
    left = loop.budget - loop.spent(keys)
    have = set(keys) | set(loop.reads.statuses())  # a trial already in the store is not chosen again
    remaining = [c for c in loop.cands if c.trial_key not in have]
    counts = loop.draw_counts(keys)
    if not remaining:
        return [], "", "every candidate has run"
    if isinstance(result, str):  # no fit yet: more of the space-filling design
        more = initial_design(loop.cands, count, min(left, INITIAL_SHARE * loop.budget), set(keys), counts)
        if not more:
            return [], "", f"budget spent before the law could be fitted ({result})"
        return more, f"space-filling design (no fit yet: {result})", None
    hw = {t: halfwidth_of(result, t) for t in loop.targets}  # relative for constants, as the selection
    why = {t: unmeasured_in(result, t) for t in loop.targets}
    unmet = [t for t in loop.targets if why[t] or not hw[t] <= loop.ad.halfwidth]
    if not unmet:
        return _confirm(loop, result, number, remaining, count, left, counts)
    dropped = [t for t in unmet if t not in result.law.parameters]
    if dropped:  # the points so far cannot measure a target the grid can: spread them first
        more = initial_design(loop.cands, count, left, set(keys), counts)
        if more:
            return more, (f"space-filling design ({', '.join(dropped)} not measurable from the points so far: "
                          f"{'; '.join(result.unidentified.get(t, '') for t in dropped)})"), None
    model = Linearised.from_fit(result, unmet, loop.ad.halfwidth)
    _, wall_model = loop.wall()
    ref_err = result.grid.groupby("problem_seed")["ref_err"].mean().to_dict() if "problem_seed" in result.grid else {}
    choices = choose_batch(model, remaining, count, left, wall_model, ref_err, draw_counts=counts)
    if choices:
        return choices, "greedy: expected CI gain per predicted second (linearised)", None
    best = model.predicted_halfwidths_with(remaining)
    detail = "; ".join(_unmet_detail(loop, result, model.law.parameters, best, t, hw[t], why[t]) for t in unmet)
    if min(c.cost for c in remaining) > left:
        blocked = (f"budget spent ({loop.spent(keys) / loop.full:.1%} of the full grid's cost, budget "
                   f"{loop.ad.budget:.0%})")
    else:
        blocked = "no remaining candidate within the budget is expected to shrink the unmet targets"
    return [], "", f"{blocked}; not reached: {detail}"


def _confirm(loop, result, number: int, remaining: list, count: int, left: float, counts: dict
             ) -> tuple[list, str, str | None]:
    """Every target met after round ``number``: stop once confirmed, else a round to confirm them."""
    unconfirmed_why = unconfirmed(loop, result, number)
    if not unconfirmed_why:
        said = loop.stop_warnings(result)
        warns = f"; the fit warns: {'; '.join(said)}" if said else ""
        consts = [t for t in loop.targets if t in loop.positive]
        rel = f" (relative for {', '.join(consts)})" if consts else ""
        return [], "", (f"every target reached its half-width {loop.ad.halfwidth:g}{rel} in two consecutive "
                        f"rounds, each estimate inside the previous round's interval{warns}")
    model = Linearised.from_fit(result, list(loop.targets), loop.ad.halfwidth)
    _, wall_model = loop.wall()
    choices = choose_batch(model, remaining, count, left, wall_model, draw_counts=counts)
    if choices:
        return choices, f"targets reached once; another round to confirm them ({unconfirmed_why})", None
    return [], "", (f"every target reached its half-width {loop.ad.halfwidth:g} in round {number} but not "
                    f"confirmed ({unconfirmed_why}) and no remaining candidate within the budget would add to it")


def _unmet_detail(loop, result, names: tuple, best: np.ndarray, target: str, halfwidth: float, why: str) -> str:
    """Why ``target`` is not reached, for the stop reason: not fitted, unmeasured, or its
    half-width (and whether every remaining candidate together could reach it: ``best``, the
    linearised model's half-widths of ``names`` with all of them)."""
    if target not in names:
        return f"{target} {result.unidentified.get(target, 'not fitted')}"
    kind = "relative half-width" if target in loop.positive else "half-width"
    if why:
        return f"{target} {kind} {halfwidth:.3g}: {why}"
    reachable = best[names.index(target)]
    more = (f" (the linearised model predicts {reachable:.3g} even with every remaining candidate: "
            "no subset of this grid reaches the target)" if reachable > loop.ad.halfwidth else "")
    return f"{target} {kind} {halfwidth:.3g} > {loop.ad.halfwidth:g}{more}"


def unconfirmed(loop, result, number: int) -> str:
    """Why the targets met after round ``number`` are not yet confirmed ('' when they are): the
    previous done round must have met them too, and each estimate must lie in that round's
    interval (one lucky round does not stop the loop)."""
    rounds = read_rounds(loop.store, loop.spec.name)
    if rounds.empty:
        return "the first fit"
    before = rounds[(rounds["round"] < number) & (rounds["state"] == "done") & (rounds["entry"] == "target")]
    if before.empty:
        return "the first fit"
    last = before[before["round"] == before["round"].max()].set_index("parameter")
    out = []
    for t in loop.targets:
        if t not in last.index:
            out.append(f"{t} not fitted in the previous round")
            continue
        row = last.loc[t]
        lo, hi = float(row["ci_low"]), float(row["ci_high"])
        if not target_halfwidth(t, lo, hi, loop.positive) <= loop.ad.halfwidth:
            out.append(f"{t} was not reached in the previous round")
        elif not lo <= float(result.estimate[t]) <= hi:
            out.append(f"{t} = {result.estimate[t]:.4g} moved outside the previous round's [{lo:.4g}, {hi:.4g}]")
    return "; ".join(out)


def rules_changed(loop, last: pd.DataFrame) -> str:
    """What of the stopping rules (budget, halfwidth, targets, form) differs between the
    spec and the round ``last`` was decided under; empty when nothing does."""
    out = []
    budget = float(last["budget_cost"].iloc[0])
    unit = last["cost_unit"].iloc[0] if "cost_unit" in last else None
    if pd.isna(unit) or unit != COST_UNIT:  # a log from before the one cost model: L*M*D*seeds
        out.append(f"cost unit {'L*M*D*seeds' if pd.isna(unit) else unit} -> {COST_UNIT}")
    elif not np.isclose(budget, loop.budget, rtol=1e-9, atol=0.0):
        full = float(last["full_cost"].iloc[0])
        out.append(f"budget {budget / full:.0%} -> {loop.ad.budget:.0%}" if full == loop.full
                   else "budget or grid")
    if str(last["form"].iloc[0]) != loop.ad.form:
        out.append(f"form {last['form'].iloc[0]} -> {loop.ad.form}")
    targets = last[last["entry"] == "target"]
    if not targets.empty:
        if set(targets["parameter"]) != set(loop.targets):
            out.append(f"targets {', '.join(sorted(targets['parameter']))} -> {', '.join(sorted(loop.targets))}")
        halfwidth = float(targets["halfwidth"].iloc[0])
        if not np.isclose(halfwidth, loop.ad.halfwidth, rtol=1e-9, atol=0.0):
            out.append(f"halfwidth {halfwidth:g} -> {loop.ad.halfwidth:g}")
    return ", ".join(out)
