"""``explorer sweep --dry-run``: the plan and its estimates, or (``--adaptive``) the candidates,
budget and initial design, with the points that cannot fit this machine flagged, not refused: a
dry run prices a grid for a larger machine too."""
from __future__ import annotations

import os
from collections import Counter

from ..config import estimate
from ..config.estimate import reference_memory_bytes, too_large_lines, trial_memory_bytes
from ..config.planning import Plan, plan
from ..config.sections import SweepSpec
from ..formatting import format_seconds
from .packing import batched_groups, estimated_seconds, fused_packs, fusion_groups, group_seconds, memory_share


def dry_run_lines(spec: SweepSpec, embedded: bool, adaptive: bool = False) -> list[str]:
    """What ``sweep --dry-run`` prints. ``embedded``: the sweep would run on this machine, so its
    memory and CPUs price the plan."""
    memory = estimate.available_memory_bytes() if embedded else None  # read at the call: tests set it
    if not adaptive:
        the_plan, cpus = plan(spec), os.cpu_count() if embedded else None
        lines = estimate.dry_run_lines(the_plan, memory, cpus)
        lines[-1:-1] = fused_group_lines(the_plan, memory, cpus)
        return lines
    lines = adaptive_dry_run_lines(spec)
    if memory is not None:
        lines[-1:-1] = _adaptive_fit_lines(spec, memory)
    return lines


def fused_group_lines(the_plan: Plan, memory: int | None, cpus: int | None) -> list[str]:
    """The fused groups the trial phase would make (``packing.packs_of_groups``: the points of one
    shape trained as one program, within a worker's share of ``memory``), their sizes, and their
    estimated compute against the points alone (``config.estimate.fused_seconds``)."""
    res = the_plan.spec.resources
    if not res.fuse:
        return ["fused groups: none ([resources] fuse = false: every point trains alone)"]
    slots = max(1, int(cpus // max(res.cpus_per_trial, 1e-9))) if cpus else 1
    slots = min(slots, res.max_concurrent or slots)
    bound = memory_share(memory, slots) if memory else None
    packs = fused_packs(the_plan.trials, slots, res.points_per_trial, bound, batched_groups(the_plan.spec))
    groups = [g for p in packs for g in p]
    fused = Counter(len(g) for g in groups if len(g) > 1)
    if not fused:
        return [f"fused groups: none (no two points of one shape to fuse in a Tune trial; {len(groups)} points alone)"]
    shown = ", ".join(f"{n} of {size}" for size, n in sorted(fused.items(), reverse=True))
    alone = sum(len(g) == 1 for g in groups)
    priced = sum(group_seconds(g) for g in groups), sum(estimated_seconds(t) for t in the_plan.trials)
    return [f"fused groups: {sum(fused.values())} ({shown} points){f', {alone} alone' if alone else ''}; "
            f"{len(fusion_groups(the_plan.trials))} shapes in {len(packs)} Tune trials"
            f"{'' if cpus else ' (packed for one trial at a time)'}: {format_seconds(priced[0])} of trial compute "
            f"fused against {format_seconds(priced[1])} alone (single-core estimates; a group draws its units once)"]


def _adaptive_fit_lines(spec: SweepSpec, memory: int) -> list[str]:
    """The candidates an adaptive dry run could choose that would not fit here (flagged)."""
    the_plan = plan(spec)
    return too_large_lines(the_plan, [trial_memory_bytes(t.config) for t in the_plan.trials],
                           [reference_memory_bytes(r.config) for r in the_plan.references], memory)


def adaptive_dry_run_lines(spec: SweepSpec) -> list[str]:
    """What ``explorer sweep SPEC --adaptive --dry-run`` prints: the candidates, the rules
    (form, targets, halfwidth), the budget in predicted seconds and as a fraction of the full grid, and
    the initial design's points, those a fresh store would run first. Nothing runs, no store is
    opened or written.

    Raises:
        SpecError: as ``run_adaptive`` before anything runs (a grid the law cannot be fitted
            on, a target it cannot measure, a budget that pays for no initial point).
    """
    from .adaptive import INITIAL_SHARE, AdaptiveLoop

    loop = AdaptiveLoop(spec, None, None, lambda line: None)  # type: ignore[arg-type]  # no store: nothing is read
    ad, cands = loop.ad, loop.cands
    draws = sorted({c.problem_seed for c in cands})
    shape = " x ".join(f"{v} {len({getattr(c, v) for c in cands})}" for v in ("L", "M", "D"))
    consts = [t for t in loop.targets if t in loop.positive]
    units = (f"relative (CI of log) for {', '.join(consts)}, absolute for the rest" if consts and len(consts) < len(loop.targets)
             else "relative, half the width of the CI of log c" if consts else "absolute")
    design = loop.initial_plan()
    cost = sum(c.cost for c in design)
    lines = [f"adaptive sweep {spec.name}: the [grid] is a candidate set of {len(cands)} trials ({shape}; "
             f"{len(draws)} problem draw(s); {spec.grid.seeds} seeds each, {spec.train.steps} steps); only the "
             "trials the loop chooses run",
             f"rules: form {ad.form}, targets {', '.join(loop.targets)}, 95% CI half-width <= {ad.halfwidth:g} "
             f"({units}); batch {ad.batch} per round, {ad.resamples} bootstrap resamples",
             f"budget: at most {loop.budget:.6g} of the full grid's {loop.full:.6g} predicted single-core seconds ({ad.budget:.0%}); the "
             f"initial design at most {INITIAL_SHARE:.0%} of that ({INITIAL_SHARE * loop.budget:.6g}), each of its "
             f"{loop.initial} points at most {INITIAL_SHARE * loop.budget / loop.initial:.6g}",
             f"round 0 (initial space-filling design): {len(design)} trials, {cost:.6g} predicted seconds "
             f"({cost / loop.full:.1%} of the full grid):"]
    lines += [f"  L={c.L} M={c.M} D={c.D} problem_seed={c.problem_seed}  cost {c.cost:.6g}  {c.trial_key}" for c in design]
    lines += ["then rounds of up to {} trials chosen by the refitted law, until every target reaches its "
              "half-width or the budget is spent".format(ad.batch),
              "on a store that already has this sweep's rounds, the command resumes them instead "
              f"(explorer status --sweep {spec.name})",
              "nothing run, nothing written (--dry-run)"]
    return lines


__all__ = ["adaptive_dry_run_lines", "dry_run_lines"]
