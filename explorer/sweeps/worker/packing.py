"""Grid points grouped into Ray Tune trials ("packs"): several tiny points per Tune trial, so that
Tune's fixed cost per trial is spread over them, balanced by estimated compute.

With fusion (``[resources] fuse``, the default) a pack is a list of fused groups: points of one
shape (``TrialConfig.fusion_key``) that its worker trains as one program (``trials.train_fused``),
each group within the memory a worker may hold (``config.cost_model.fused_memory_bytes``). The
points of a shape are kept together, split only as much as the balance of the packs across the
slots and the memory bound ask. Without fusion every group is one point, as the packs of
``pack`` give them."""
from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from ...config.cost_model import PROCESS_BYTES, FusedMemory, fused_memory_bytes, fused_seconds, trial_seconds
from ...config.planning import PlannedTrial

PACK_TARGET_S = 2.0  # aim for Tune trials of about this much estimated compute
PACKS_PER_SLOT = 4  # at least this many Tune trials per concurrent slot, for balance and progress

Group = tuple[PlannedTrial, ...]  # points a worker trains as one program (one point: alone)


def memory_share(node_bytes: float, at_once: int) -> int:
    """The most estimated bytes one fused group may hold on a node of ``node_bytes`` that runs
    ``at_once`` Tune trials: its share, less a worker process."""
    return int(node_bytes // max(1, at_once)) - PROCESS_BYTES


def estimated_seconds(trial: PlannedTrial) -> float:
    """Estimated single-core seconds of one grid point (all seeds): the dry run's cost model
    (``config.cost_model.trial_seconds``), so that the packs, the progress line's ETA and the dry
    run price a trial the same way."""
    return trial_seconds(trial.config)


def group_seconds(group: Sequence[PlannedTrial]) -> float:
    """Estimated single-core seconds of a fused group (one point: ``estimated_seconds``)."""
    return fused_seconds([t.config for t in group])


def group_memory(group: Sequence[PlannedTrial], batched: bool) -> int:
    """Estimated peak bytes of training a fused group (``config.cost_model.fused_memory_bytes``)."""
    return fused_memory_bytes([t.config for t in group], batched)


def _pack_count(costs: Sequence[float], slots: int) -> int:
    """How many packs "auto" makes: about ``PACK_TARGET_S`` each, at least ``PACKS_PER_SLOT`` per
    slot, never more than points."""
    return min(len(costs), max(math.ceil(sum(costs) / PACK_TARGET_S), PACKS_PER_SLOT * max(1, slots)))


def _longest_first(items: Sequence, costs: Sequence[float], n_packs: int) -> list[list]:
    """Deal ``items`` into ``n_packs`` bins, longest first, each to the least loaded; the bins,
    non-empty ones only, largest load first."""
    heap = [(0.0, i) for i in range(n_packs)]
    bins: list[list] = [[] for _ in range(n_packs)]
    loads = [0.0] * n_packs
    for index in sorted(range(len(items)), key=lambda i: -costs[i]):
        load, p = heapq.heappop(heap)
        bins[p].append(items[index])
        loads[p] = load + costs[index]
        heapq.heappush(heap, (loads[p], p))
    order = sorted(range(n_packs), key=lambda p: -loads[p])
    return [bins[p] for p in order if bins[p]]


def pack(trials: Sequence[PlannedTrial], slots: int, points_per_trial: int | str = "auto") -> list[list[PlannedTrial]]:
    """Group grid points into Tune trials, without fusion.

    Args:
        trials: the points to run.
        slots: how many Tune trials run at once.
        points_per_trial: ``"auto"``: as many packs as needed for about ``PACK_TARGET_S`` of
            estimated compute each, but at least ``PACKS_PER_SLOT`` per slot (and never more
            packs than points), balanced by longest-first assignment; an integer: fixed-size
            packs in plan order.

    Returns:
        Packs, largest estimated cost first (so the longest ones start first).
    """
    if not trials:
        return []
    if points_per_trial != "auto":
        size = int(points_per_trial)
        return [list(trials[i:i + size]) for i in range(0, len(trials), size)]
    costs = [estimated_seconds(t) for t in trials]
    return _longest_first(trials, costs, _pack_count(costs, slots))


def fusion_groups(trials: Sequence[PlannedTrial]) -> list[list[PlannedTrial]]:
    """The points that can train as one program (equal ``TrialConfig.fusion_key``), each group in
    plan order, the groups in the order of their first point."""
    groups: dict[tuple, list[PlannedTrial]] = {}
    for trial in trials:
        groups.setdefault(trial.config.fusion_key(), []).append(trial)
    return list(groups.values())


def _within_memory(group: Sequence[PlannedTrial], memory_bound: int | None, batched: bool) -> list[Group]:
    """``group`` cut, in order, into runs whose fused memory stays within ``memory_bound`` (a run
    of one point whatever its size: a point alone is what a worker ran before fusion)."""
    if memory_bound is None:
        return [tuple(group)]
    runs: list[Group] = []
    run: list[PlannedTrial] = []
    total = FusedMemory(batched)
    for trial in group:
        if total.add(trial.config) > memory_bound and run:
            runs.append(tuple(run))
            run, total = [], FusedMemory(batched)
            total.add(trial.config)
        run.append(trial)
    return runs + [tuple(run)] if run else runs


def _split(group: Sequence[PlannedTrial], parts: int) -> list[list[PlannedTrial]]:
    """``group`` cut, in order, into ``parts`` runs of nearly equal length."""
    parts = max(1, min(parts, len(group)))
    size, extra = divmod(len(group), parts)
    cuts = [i * size + min(i, extra) for i in range(parts + 1)]
    return [list(group[a:b]) for a, b in zip(cuts, cuts[1:])]


def fused_packs(trials: Sequence[PlannedTrial], slots: int, points_per_trial: int | str = "auto",
                memory_bound: int | None = None, batched: bool = False) -> list[list[Group]]:
    """Group grid points into Tune trials of fused groups.

    Args:
        trials: the points to run.
        slots: how many Tune trials run at once.
        points_per_trial: ``"auto"``: as many packs as ``pack`` makes; each shape's points are
            cut into runs of about one pack's share of the estimated compute (fused), which are
            dealt longest first; an integer: fixed-size packs of the points ordered by shape.
        memory_bound: the most estimated bytes one fused group may hold (None: no bound).
        batched: whether a group is trained batched (``trials.train_fused(batched=True)``), which
            its memory counts; a sweep's workers train one point after another.

    Returns:
        Packs, each a list of fused groups, largest estimated cost first.
    """
    if not trials:
        return []
    groups = fusion_groups(trials)
    if points_per_trial != "auto":
        size = int(points_per_trial)
        ordered = [t for g in groups for t in g]
        return [[run for g in fusion_groups(ordered[i:i + size]) for run in _within_memory(g, memory_bound, batched)]
                for i in range(0, len(ordered), size)]
    n_packs = _pack_count([estimated_seconds(t) for t in trials], slots)
    share = sum(group_seconds(g) for g in groups) / n_packs
    runs = [run for g in groups for part in _split(g, math.ceil(group_seconds(g) / share - 1e-9))
            for run in _within_memory(part, memory_bound, batched)]
    return _longest_first(runs, [group_seconds(r) for r in runs], n_packs)


def packs_of_groups(trials: Sequence[PlannedTrial], slots: int, points_per_trial: int | str, fuse: bool,
                    memory_bound: int | None = None, batched: bool = False) -> list[list[Group]]:
    """The packs a sweep runs: ``fused_packs`` with fusion, else ``pack``'s, each point a group of one."""
    if fuse:
        return fused_packs(trials, slots, points_per_trial, memory_bound, batched)
    return [[(t,) for t in p] for p in pack(trials, slots, points_per_trial)]
