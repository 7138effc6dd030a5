"""``explorer sweep --dry-run``: the plan and its estimates, or (``--adaptive``) the candidates,
budget and initial design, with the points that cannot fit this machine flagged, not refused: a
dry run prices a grid for a larger machine too."""
from __future__ import annotations

import os

from ..config import estimate
from ..config.estimate import reference_memory_bytes, too_large_lines, trial_memory_bytes
from ..config.planning import plan
from ..config.spec import SweepSpec


def dry_run_lines(spec: SweepSpec, embedded: bool, adaptive: bool = False) -> list[str]:
    """What ``sweep --dry-run`` prints. ``embedded``: the sweep would run on this machine, so its
    memory and CPUs price the plan."""
    memory = estimate.physical_memory_bytes() if embedded else None  # read at the call: tests set it
    if not adaptive:
        return estimate.dry_run_lines(plan(spec), memory, os.cpu_count() if embedded else None)
    from .adaptive import adaptive_dry_run_lines

    lines = adaptive_dry_run_lines(spec)
    if memory is not None:
        lines[-1:-1] = _adaptive_fit_lines(spec, memory)
    return lines


def _adaptive_fit_lines(spec: SweepSpec, memory: int) -> list[str]:
    """The candidates an adaptive dry run could choose that would not fit here (flagged)."""
    the_plan = plan(spec)
    return too_large_lines(the_plan, [trial_memory_bytes(t.config) for t in the_plan.trials],
                           [reference_memory_bytes(r.config) for r in the_plan.references], memory)


__all__ = ["dry_run_lines"]
