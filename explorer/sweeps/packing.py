"""Grid points grouped into Ray Tune trials ("packs"): several tiny points per Tune trial, so that
Tune's fixed cost per trial is spread over them, balanced by estimated compute."""
from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from ..config.estimate import trial_seconds
from ..config.planning import PlannedTrial

PACK_TARGET_S = 2.0  # aim for Tune trials of about this much estimated compute
PACKS_PER_SLOT = 4  # at least this many Tune trials per concurrent slot, for balance and progress


def estimated_seconds(trial: PlannedTrial) -> float:
    """Estimated single-core seconds of one grid point (all seeds): the dry run's cost model
    (``config.estimate.trial_seconds``), so that the packs, the progress line's ETA and the dry
    run price a trial the same way."""
    return trial_seconds(trial.config)


def pack(trials: Sequence[PlannedTrial], slots: int, points_per_trial: int | str = "auto") -> list[list[PlannedTrial]]:
    """Group grid points into Tune trials.

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
    n_packs = min(len(trials), max(math.ceil(sum(costs) / PACK_TARGET_S), PACKS_PER_SLOT * max(1, slots)))
    heap = [(0.0, i) for i in range(n_packs)]
    packs: list[list[PlannedTrial]] = [[] for _ in range(n_packs)]
    loads = [0.0] * n_packs
    for index in sorted(range(len(trials)), key=lambda i: -costs[i]):
        load, p = heapq.heappop(heap)
        packs[p].append(trials[index])
        loads[p] = load + costs[index]
        heapq.heappush(heap, (loads[p], p))
    order = sorted(range(n_packs), key=lambda p: -loads[p])
    return [packs[p] for p in order if packs[p]]
