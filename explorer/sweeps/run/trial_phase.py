"""The trial phase: the remaining grid points, packed (``packing.packs_of_groups``: with
``[resources] fuse`` the points of one shape in a pack are one fused group, within the memory a
worker may hold), run as Ray Tune trials with ``reuse_actors`` and fractional GPUs allowed; points
of Tune trials lost for good (their actors died with a node) run once more."""
from __future__ import annotations

import tempfile
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from store import StoreUnreachable

from ..ray import (NodeAffinitySchedulingStrategy, environment, largest_node_memory, memory_request,
                   no_secrets_in_runtime_env, ray, tune)
from ..tracking import LOST_ACTOR_RETRIES, error_text
from ..worker import Group, Job, Ledger, group_memory, group_seconds, memory_share, packs_of_groups, run_pack
from .tune_glue import (TUNE_ENV, TUNE_LOGGERS, ProgressCallback, QuietReporter, StopOnSignal, StopWhenStoreLost,
                        quiet_loggers)

if TYPE_CHECKING:
    from store import Store

    from ...config.planning import Plan, PlannedTrial
    from ...config.sections import SweepSpec
    from ..tracking import Progress

# Passes over the points of Tune trials that Tune gave up on (their actors died: a node was lost
# while Ray still placed restarts there). Each pass runs only the points that have no rows yet.
LOST_TRIAL_PASSES = 2


@dataclass(frozen=True)
class RunContext:
    """What every pass of the trial phase shares: the sweep, where its rows go, what the reference
    phase left, how wide it runs, and where it reports (``runner`` makes one per claimed batch)."""

    spec: "SweepSpec"
    store: "Store"
    the_plan: "Plan"
    reference_errors: Mapping[str, str]  # ref_key -> why its reference diverged: its points are recorded failed
    rerun: Collection[str]  # trial keys the store already has rows of (failed before): they run again
    slots: int  # Tune trials at once
    limit: int | None  # the spec's or the caller's max_concurrent, None for what fits
    bar: "Progress"
    check: Callable[[], None]  # raises SweepInterrupted once a signal came (``StopOnSignal``)


def run_trials_again_when_lost(run: RunContext, todo: list["PlannedTrial"]) -> list[str]:
    """``run_trials``, then, while Tune trials were lost for good, once more over the points they
    left without rows (at most ``LOST_TRIAL_PASSES`` times); returns every loss's cause."""
    causes = lost = run_trials(run, todo)
    for _ in range(LOST_TRIAL_PASSES):
        if not lost:
            break
        known = run.store.trial_statuses(run.spec.name)
        left = [t for t in todo if t.trial_key not in known]  # no rows at all (a failed point has its own)
        if not left:
            break
        run.bar.message(f"{len(left)} points lost with their Tune trials ({lost[0]}): running them again")
        lost = run_trials(run, left)
        causes = causes + lost
    return causes


def fused_memory_bound(spec, slots: int, node_memory: float) -> int | None:
    """The most estimated bytes one fused group may hold: the largest node's memory resource
    shared by the Tune trials that fit on it at once, less a worker process (None when Ray
    reports no memory)."""
    if not node_memory:
        return None
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    largest = max(nodes, key=lambda n: n.get("memory", 0), default={})
    per_node = max(1, min(slots, int(largest.get("CPU", 1) // max(spec.resources.cpus_per_trial, 1e-9))))
    return memory_share(node_memory, per_node)


def _trainable(run: RunContext, packs: list[list[Group]], node_memory: float):
    """``run_pack`` with its job attached and the resources each pack asks of Ray (CPUs, GPUs
    and, for large points or groups, memory)."""
    spec = run.spec
    # On the driver's node: a lost worker node must not take the ledger with it.
    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=True)
    ledger = ray.remote(num_cpus=0, scheduling_strategy=here)(Ledger).remote()
    job = Job(sweep=spec.name, store=run.store, packs=tuple(tuple(p) for p in packs),
              references=run.the_plan.reference_map(), reference_errors=run.reference_errors,
              rerun=run.rerun, retries=spec.resources.retries, ledger=ledger)
    cpus, gpus = spec.resources.cpus_per_trial, spec.resources.gpus_per_trial
    # workers train a group one point after another (``trials.train_fused``'s default)
    memory = [memory_request(max(group_memory(g, batched=False) for g in p), node_memory) for p in packs]

    def pack_resources(config: dict) -> tune.PlacementGroupFactory:
        """What one Tune trial (one pack) asks of Ray: CPUs, GPUs and, for large points, memory."""
        bundle = {"CPU": cpus, "GPU": gpus}
        if memory[config["pack"]]:
            bundle["memory"] = memory[config["pack"]]
        return tune.PlacementGroupFactory([bundle])

    return tune.with_resources(tune.with_parameters(run_pack, job=job), pack_resources)


def run_trials(run: RunContext, todo: list["PlannedTrial"]) -> list[str]:
    """Run the points ``todo``, packed, as Tune trials; return why some Tune trials failed for good.
    ``run.check`` (a signal) is called at every step of Tune's loop (``StopOnSignal``)."""
    spec, slots, limit, bar = run.spec, run.slots, run.limit, run.bar
    node_memory = largest_node_memory()
    packs = packs_of_groups(todo, slots, spec.resources.points_per_trial, spec.resources.fuse,
                            fused_memory_bound(spec, slots, node_memory))
    trainable = _trainable(run, packs, node_memory)
    # each point's share of its group's estimate (a group of one: the point's own)
    costs = {t.trial_key: group_seconds(g) / len(g) for p in packs for g in p for t in g}
    callback = ProgressCallback(bar, costs)
    stopper = StopWhenStoreLost()
    bar.begin(total_cost=sum(costs.values()), slots=slots)
    fused = sum(len(g) > 1 for p in packs for g in p)
    bar.message(f"trials: {len(todo)} to run as {len(packs)} Tune trials, up to {slots} at once"
                + (f"; {fused} fused groups of points of one shape" if fused else ""))
    with tempfile.TemporaryDirectory(prefix="explorer-tune-") as tune_dir, environment(TUNE_ENV), \
            no_secrets_in_runtime_env(), quiet_loggers(*TUNE_LOGGERS):
        tuner = tune.Tuner(
            trainable,
            param_space={"pack": tune.grid_search(list(range(len(packs))))},
            tune_config=tune.TuneConfig(reuse_actors=True, max_concurrent_trials=limit),
            run_config=tune.RunConfig(
                name=f"explorer-{spec.name}", storage_path=tune_dir, verbose=0, log_to_file=False,
                callbacks=[callback, StopOnSignal(run.check)], progress_reporter=QuietReporter(), stop=stopper,
                failure_config=tune.FailureConfig(max_failures=LOST_ACTOR_RETRIES),
            ),
        )
        grid = tuner.fit()
    if stopper.lost is not None:
        raise StoreUnreachable(stopper.lost)
    lost = [error_text(e).splitlines()[0] for e in grid.errors]
    if lost:
        bar.message(f"{len(lost)} Tune trial(s) failed for good: {lost[0]}")
    return lost
