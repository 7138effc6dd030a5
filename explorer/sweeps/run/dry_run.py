"""``explorer sweep --dry-run``: the plan and its estimates, with the points that cannot fit this
machine flagged, not refused: a dry run prices a grid for a larger machine too. Given the store,
it also says what the store already has (complete trials, cached references) and prices only what
is left, Ray's start included (``ray.records.start_estimate``: measured here, or a stated range).
Durations are rounded (``format_seconds``), never raw floats. An adaptive sweep's dry run (the
candidates, budget and initial design) is its wing's (``explorer.sweeps.adaptive.preview``)."""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...config import estimate, host_memory
from ...config.cost_model import trial_seconds
from ...config.estimate import compute_wall_seconds, reference_seconds, slots_here
from ...config.planning import Plan, plan
from ...config.sections import SweepSpec
from ...formatting import format_percent, format_seconds
from ..ray import start_estimate
from ..worker import estimated_seconds, fused_packs, fusion_groups, group_seconds, memory_share

if TYPE_CHECKING:
    from store import Store

COMPLETE = ("ok", "diverged")  # store.FINAL_STATUSES, not imported: a dry run without a store stays light


def sweep_dry_run_lines(spec: SweepSpec, embedded: bool, store: "Store | None" = None) -> list[str]:
    """What ``explorer sweep SPEC --dry-run`` prints (an adaptive sweep's is
    ``explorer.sweeps.adaptive.adaptive_dry_run_lines``). ``embedded``: the sweep would run on this
    machine, so its memory and CPUs price the plan. ``store``: also what it already has and what
    is left to run."""
    memory = host_memory.available_memory_bytes() if embedded else None  # read at the call: tests set it
    the_plan, cpus = plan(spec), os.cpu_count() if embedded else None
    lines = estimate.estimate_lines(the_plan, memory, cpus)
    lines[-1:-1] = fused_group_lines(the_plan, memory, cpus)
    lines[-1:-1] = left_to_run_lines(the_plan, store, cpus)
    return lines


def left_to_run_lines(the_plan: Plan, store: "Store | None", cpus: int | None) -> list[str]:
    """What a sweep of ``the_plan`` would run now: the trials the store has complete and the
    references it has cached are not priced again, and Ray's start is (on this machine, ``cpus``)."""
    done: set[str] = set()
    cached: set[str] = set()
    if store is not None and store.exists():
        statuses = store.trial_statuses(the_plan.spec.name)
        done = {t.trial_key for t in the_plan.trials if statuses.get(t.trial_key) in COMPLETE}
        cached = {r.ref_key for r in the_plan.references if reference_cached(store, r.ref_key)}
    lines = [f"in the store: {len(done)} of {len(the_plan.trials)} trials already complete, {len(cached)} of "
             f"{len(the_plan.references)} references cached" if store is not None else
             "no store given: every trial and reference priced"]
    return lines + left_to_run(the_plan, done, cached, cpus).lines


def reference_cached(store: "Store", ref_key: str) -> bool:
    """Whether the store has this reference; one it cannot say (a broken references folder) is
    priced as not cached: an estimate stops nothing, the reference phase says what is wrong."""
    from store import StoreError

    try:
        return store.has_reference(ref_key)
    except (OSError, StoreError):
        return False


@dataclass(frozen=True)
class LeftToRun:
    """What a sweep has left to run, priced: its lines, and on this machine the wall seconds it
    should take, Ray's start included (``low`` to ``high``; None without this machine's CPUs)."""

    lines: list[str]
    seconds: tuple[float, float] | None = None


def left_to_run(the_plan: Plan, done: set[str], cached: set[str], cpus: int | None) -> LeftToRun:
    """The trials of ``the_plan`` not in ``done`` and the references they need not in ``cached``,
    priced: single-core compute, and with ``cpus`` (this machine) the wall time with Ray's start
    (what the dry run prints and a sweep says before Ray starts, its first estimate)."""
    trials = [t for t in the_plan.trials if t.trial_key not in done]
    needed = {t.ref_key for t in trials}  # a reference only complete trials use is not loaded again
    refs = [r for r in the_plan.references if r.ref_key in needed and r.ref_key not in cached]
    if not trials:
        return LeftToRun(["left to run: nothing (the sweep prints its summary without starting Ray)"], (0.0, 0.0))
    trial_secs = [trial_seconds(t.config) for t in trials]
    ref_secs = [reference_seconds(r.config) for r in refs]
    lines = [f"left to run: {len(trials)} trials ({format_percent(len(trials) / len(the_plan.trials))}), "
             f"{len(refs)} references: {format_seconds(sum(trial_secs) + sum(ref_secs))} of single-core compute"]
    if not cpus:
        return LeftToRun(lines)
    compute = compute_wall_seconds(trial_secs, ref_secs, slots_here(the_plan.spec, cpus))
    low, high, said = start_estimate()
    span = format_seconds(compute + low) if high - low < 1 else \
        f"{format_seconds(compute + low)} to {format_seconds(compute + high)}"
    lines.append(f"here: about {format_seconds(compute)} of compute + {said} = about {span}")
    return LeftToRun(lines, (compute + low, compute + high))


def fused_group_lines(the_plan: Plan, memory: int | None, cpus: int | None) -> list[str]:
    """The fused groups the trial phase would make (``packing.packs_of_groups``: the points of one
    shape trained as one program, within a worker's share of ``memory``), their sizes, and their
    estimated compute against the points alone (``config.cost_model.fused_seconds``)."""
    res = the_plan.spec.resources
    if not res.fuse:
        return ["fused groups: none ([resources] fuse = false: every point trains alone)"]
    slots = max(1, int(cpus // max(res.cpus_per_trial, 1e-9))) if cpus else 1
    slots = min(slots, res.max_concurrent or slots)
    bound = memory_share(memory, slots) if memory else None
    packs = fused_packs(the_plan.trials, slots, res.points_per_trial, bound)
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


__all__ = ["LeftToRun", "fused_group_lines", "left_to_run", "left_to_run_lines", "reference_cached",
           "sweep_dry_run_lines"]
