"""What a sweep will cost before it runs, and what a machine can hold: the plan's trials priced by
the cost model (``cost_model``) and its references by their kind (``reference_kinds``), this
machine's memory (``available_memory_bytes``), the dry run's lines and the refusal of a point that
cannot fit. The planner, the packer, the progress line and the dry run all read these prices.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from ..errors import spec_error
from ..formatting import format_bytes, format_seconds
from .cost_model import (PROCESS_BYTES, FusedMemory, fused_memory_bytes, fused_seconds, point, trial_memory_bytes,
                         trial_seconds)
from .reference_kinds import kind_named, kind_of_config

if TYPE_CHECKING:
    from trials import LimitReferenceConfig, TrialConfig

    from .planning import Plan
    from .sections import SweepSpec

# the trial cost model's names, read from here by the packer, the planner and the design
__all__ = ["PROCESS_BYTES", "FusedMemory", "Largest", "PlanCost", "available_memory_bytes", "check_fits_memory",
           "compute_wall_seconds", "dry_run_lines", "fused_memory_bytes", "fused_seconds", "largest_point",
           "physical_memory_bytes", "plan_cost", "reference_memory_bytes", "reference_seconds", "slots_here",
           "too_large_lines", "trial_memory_bytes", "trial_seconds"]


def reference_memory_bytes(config: "LimitReferenceConfig | TrialConfig") -> int:
    """Estimated peak bytes of computing the reference of ``config``, as its kind prices it
    (the kind owning the config's type: ``reference_kinds.kind_of_config``)."""
    return kind_of_config(config).memory_bytes(config)


def reference_seconds(config: "LimitReferenceConfig | TrialConfig") -> float:
    """Estimated single-core seconds of computing the reference of ``config``, as its kind prices it."""
    return kind_of_config(config).seconds(config)


def physical_memory_bytes() -> int:
    """This machine's physical memory (what a design for it may plan with)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


# cgroup v2 (the unified hierarchy) and v1 files of this process's memory limit, usage and page cache
_CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.stat", "inactive_file"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes",
                  "/sys/fs/cgroup/memory/memory.stat", "total_inactive_file"))


def _read_small(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(1 << 16).decode("ascii", "replace")
    except OSError:
        return None


def _meminfo_available() -> int | None:
    """The kernel's MemAvailable: free memory plus what it can reclaim without swapping."""
    text = _read_small("/proc/meminfo")
    for line in (text or "").splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _cgroup_available() -> int | None:
    """What this process's memory cgroup leaves (its limit less its usage, the inactive page
    cache counted as free), or None without a limit."""
    for limit_file, usage_file, stat_file, cache_key in _CGROUP_FILES:
        limit = (_read_small(limit_file) or "").strip()
        if not limit.isdigit():  # absent, or "max": no limit at this level
            continue
        if int(limit) >= 2**60:  # cgroup v1 writes "no limit" as a page-rounded 2^63
            return None
        usage = (_read_small(usage_file) or "0").strip()
        cache = 0
        for line in (_read_small(stat_file) or "").splitlines():
            key, _, value = line.partition(" ")
            if key == cache_key and value.strip().isdigit():
                cache = int(value)
        used = int(usage) - cache if usage.isdigit() else 0
        return max(int(limit) - max(used, 0), 0)
    return None


def available_memory_bytes() -> int:
    """The memory a sweep on this machine can use now: the kernel's available memory (not the
    physical total: other processes hold some), no more than what a cgroup limit
    (``/sys/fs/cgroup/memory.max``, or cgroup v1's ``memory.limit_in_bytes``) leaves; the
    physical memory where neither can be read."""
    known = [n for n in (_meminfo_available(), _cgroup_available()) if n is not None]
    return min(known) if known else physical_memory_bytes()


@dataclass(frozen=True)
class Largest:
    """The point of a sweep with the largest memory estimate: what it is and how much it needs."""

    what: str  # "trial L=..., M=..., D=..." or "reference ..."
    bytes: int


def _largest_configs(source: "Plan | SweepSpec"):
    """(trial configs, reference configs) whose estimates bound the sweep's: from a plan, all of
    them; from a spec, without expanding it: memory grows with L, M and D, and nothing else of a
    grid point changes it, so the point at the largest L, M and D (and each reference config at
    the largest D) bounds every other."""
    if hasattr(source, "trials"):
        return [t.config for t in source.trials], [r.config for r in source.references]
    spec = source
    axes = spec.axes()
    top = {axis: values[0] for axis, values in axes.items()}
    top.update(L=max(axes["L"]), M=max(axes["M"]), D=max(axes["D"]))  # with cases: the largest of any
    trial = spec.trial_config(spec.problem_config(spec.problem_seeds()[0]), top)
    bound = kind_named(spec.reference.kind).bounding_config(spec, trial)
    return [trial], [bound] if bound is not None else []


def largest_point(source: "Plan | SweepSpec") -> tuple[Largest, Largest | None]:
    """The trial and the reference with the largest memory estimates (from a plan, or from a
    spec without expanding it); no reference (None) where the kind computes none."""
    trials, refs = _largest_configs(source)
    trial = max(trials, key=trial_memory_bytes)
    ref = max(refs, key=reference_memory_bytes, default=None)
    return (Largest(f"trial {point(trial)}", trial_memory_bytes(trial)),
            None if ref is None else Largest(f"reference {_reference_what(ref)}", reference_memory_bytes(ref)))


def _reference_what(ref: "LimitReferenceConfig | TrialConfig") -> str:
    return kind_of_config(ref).what(ref)


def check_fits_memory(plan_or_spec: "Union[Plan, SweepSpec]", available_bytes: int,
                      where: str = "this machine has available") -> None:
    """Refuse a sweep whose largest trial or reference cannot fit in ``available_bytes`` (a
    machine's or a node's memory), with ``PROCESS_BYTES`` for the worker process that runs it.

    Args:
        plan_or_spec: a ``Plan`` (every trial and reference judged) or a ``SweepSpec`` (its
            largest point, without expanding the grid).
        available_bytes: the memory the largest machine that could run it has for it.
        where: how the message names that memory ("this machine has available", "the largest
            Ray node has").

    Raises:
        SpecError: one line naming the point and its estimate (exit 2).
    """
    trial, ref = largest_point(plan_or_spec)
    for item in (trial, ref):
        if item is not None and item.bytes + PROCESS_BYTES > available_bytes:
            raise spec_error(
                "[grid]" if item is trial else "[reference]",
                f"the {item.what} needs about {format_bytes(item.bytes)} of memory, more than {where} "
                f"({format_bytes(available_bytes)}, less {format_bytes(PROCESS_BYTES)} for its worker); "
                "sweep smaller L, M or D (or seeds)" + (", or a coarser reference" if item is ref else ""),
            )

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


def dry_run_lines(plan: "Plan", available_bytes: int | None = None, cpus: int | None = None) -> list[str]:
    """What ``explorer sweep SPEC --dry-run`` prints: the trials, the references (count and
    resolution), and the estimated memory and time per trial and in all. Nothing runs."""
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


def too_large_lines(plan: "Plan", trial_bytes: list[int], ref_bytes: list[int], available_bytes: int,
                    shown: int = 5) -> list[str]:
    """The points of a plan that would not fit in ``available_bytes`` (with ``PROCESS_BYTES`` for
    the worker): a count, then the first ``shown`` of each kind with their estimates. A dry run
    prices a grid for a larger machine or a cluster, so it lists them where a run refuses them."""
    limit = available_bytes - PROCESS_BYTES
    trials = [(t, b) for t, b in zip(plan.trials, trial_bytes) if b > limit]
    refs = [(r, b) for r, b in zip(plan.references, ref_bytes) if b > limit]
    if not trials and not refs:
        return []
    lines = [f"does not fit here: {len(trials)} of {len(plan.trials)} trials and {len(refs)} of "
             f"{len(plan.references)} references need more than the memory this machine has available less a worker "
             f"({format_bytes(limit)}); `explorer sweep` refuses them here: run on a larger machine or a "
             "cluster (--address)"]
    for t, b in sorted(trials, key=lambda item: -item[1])[:shown]:
        lines.append(f"  trial {point(t.config)}: {format_bytes(b)}")
    for r, b in sorted(refs, key=lambda item: -item[1])[:shown]:
        lines.append(f"  reference {r.ref_key} {_reference_what(r.config)}: {format_bytes(b)}")
    return lines


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
