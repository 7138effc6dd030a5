"""What a sweep will cost before it runs: the plan's trials priced by the cost model
(``cost_model``) and its references by their kind (``reference_kinds``), the wall time on a
machine's CPUs, and the estimates as the dry run says them (``estimate_lines``). This machine's
memory is ``host_memory``'s, and the points too large for it are ``memory_refusal``'s. The dry
runs, the progress line and ``explorer reproduce --list`` read these prices.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..formatting import format_bytes, format_seconds
from .cost_model import PROCESS_BYTES, trial_memory_bytes, trial_seconds
from .memory_refusal import largest_point, too_large_lines
from .reference_kinds import kind_named, kind_of_config

if TYPE_CHECKING:
    from trials import LimitReferenceConfig, TrialConfig

    from .planning import Plan
    from .sections import SweepSpec


def reference_memory_bytes(config: "LimitReferenceConfig | TrialConfig") -> int:
    """Estimated peak bytes of computing the reference of ``config``, as its kind prices it
    (the kind owning the config's type: ``reference_kinds.kind_of_config``)."""
    return kind_of_config(config).memory_bytes(config)


def reference_seconds(config: "LimitReferenceConfig | TrialConfig") -> float:
    """Estimated single-core seconds of computing the reference of ``config``, as its kind prices it."""
    return kind_of_config(config).seconds(config)


def case_lines(plan: "Plan") -> list[str]:
    """One line per ``[[grid.cases]]`` case: the axes it names and the trials its product defines
    (problem draws counted), and how many points two cases share (planned once). None without cases."""
    if not plan.case_trials:
        return []
    spec = plan.spec
    out = []
    for number, (case, count) in enumerate(zip(spec.grid.case_tables(), plan.case_trials)):
        named = ", ".join(f"{axis} {_values_shown(values)}" for axis, values in case.items())
        out.append(f"  case {number} ({named}): {count} trials")
    shared = sum(plan.case_trials) - len(plan.trials)
    if shared:
        out.append(f"  {shared} trials lie in more than one case: each runs once (the same trial key)")
    return out


def _values_shown(values) -> str:
    """'raw' for one value, '0.5 .. 32 (7 values)' for several numbers, 'a, b' for few names."""
    if len(values) == 1:
        return f"{values[0]}"
    if all(isinstance(v, (int, float)) for v in values):
        return f"{min(values):g} .. {max(values):g} ({len(values)} values)"
    return ", ".join(str(v) for v in values)


def estimate_lines(plan: "Plan", available_bytes: int | None = None, cpus: int | None = None) -> list[str]:
    """The plan and its estimates, as ``explorer sweep SPEC --dry-run`` prints them (the sweep's dry
    run adds its fused groups and what is left to run, ``explorer.sweeps``; an experiment's quotes
    them, ``explorer.reproduce``): the trials, the references (count and resolution), and the
    estimated memory and time per trial and in all. Nothing runs."""
    spec = plan.spec
    axes = {**{name: values for name, values in spec.axes().items() if len(values) > 1 or name in ("L", "M", "D")},
            **({"problem_seeds": spec.problem_seeds()} if len(spec.problem_seeds()) > 1 else {})}
    shape = " x ".join(f"{name} {len(values)}" for name, values in axes.items())
    if plan.case_trials:  # not a product: the union of the cases' products
        shape = f"the union of {len(plan.case_trials)} cases over " + ", ".join(
            f"{name} {len(values)}" for name, values in axes.items())
    lines = [f"sweep {spec.name}: {len(plan.trials)} trials ({shape}; {spec.grid.seeds} seeds each, "
             f"{spec.train.steps} steps, {spec.train.dtype})"]
    lines += case_lines(plan)
    lines.append(kind_named(spec.reference.kind).dry_run_line(spec, len(plan.references)))
    trial_bytes = [trial_memory_bytes(t.config) for t in plan.trials]
    trial_secs = [trial_seconds(t.config) for t in plan.trials]
    ref_bytes = [reference_memory_bytes(r.config) for r in plan.references]
    ref_secs = [reference_seconds(r.config) for r in plan.references]
    largest, ref_largest = largest_point(plan)
    priced_ref = "" if ref_largest is None else f"; largest {ref_largest.what}: {format_bytes(max(ref_bytes))}"
    lines.append(f"memory: largest {largest.what}: {format_bytes(max(trial_bytes))}{priced_ref} "
                 f"(peaks, each plus ~{format_bytes(PROCESS_BYTES)} for its worker process)")
    lines.append(f"time: {format_seconds(sum(trial_secs) / len(trial_secs))} per trial on average, longest "
                 f"{format_seconds(max(trial_secs))}; {format_seconds(sum(trial_secs))} of trial compute and "
                 f"{format_seconds(sum(ref_secs))} of references in all (single-core estimates)")
    if cpus:
        slots = slots_here(spec, cpus)
        wall = compute_wall_seconds(trial_secs, ref_secs, slots)
        lines.append(f"on this machine: {cpus} CPUs, {slots} trials at once: about {format_seconds(wall)} of compute "
                     "for the whole grid")
    if available_bytes is not None:
        lines.append(f"memory here: {format_bytes(available_bytes)} available")
        lines += too_large_lines(plan, trial_bytes, ref_bytes, available_bytes)
    lines.append("nothing run (--dry-run)")
    return lines


def slots_here(spec: "SweepSpec", cpus: int) -> int:
    """How many trials run at once on ``cpus`` CPUs (the spec's cpus_per_trial and max_concurrent)."""
    per_trial = max(spec.resources.cpus_per_trial, 1e-9)
    slots = max(1, int(cpus // per_trial)) if per_trial <= cpus else 1
    return min(slots, spec.resources.max_concurrent) if spec.resources.max_concurrent else slots


def compute_wall_seconds(trial_secs: list[float], ref_secs: list[float], slots: int) -> float:
    """Wall seconds of compute for these trials and references, ``slots`` at once: the references
    first, then the trials, each phase at least its longest item."""
    refs = max(max(ref_secs), sum(ref_secs) / slots) if ref_secs else 0.0
    return refs + (max(max(trial_secs), sum(trial_secs) / slots) if trial_secs else 0.0)


@dataclass(frozen=True)
class PlanCost:
    """A plan's size and its single-core compute estimate (what ``explorer reproduce --list``
    prints per scale)."""

    trials: int
    references: int
    trial_seconds: float
    reference_seconds: float

    @property
    def seconds(self) -> float:
        return self.trial_seconds + self.reference_seconds


def plan_cost(plan: "Plan") -> PlanCost:
    return PlanCost(len(plan.trials), len(plan.references), sum(trial_seconds(t.config) for t in plan.trials),
                    sum(reference_seconds(r.config) for r in plan.references))


__all__ = ["PlanCost", "case_lines", "compute_wall_seconds", "estimate_lines", "plan_cost", "reference_memory_bytes",
           "reference_seconds", "slots_here"]
