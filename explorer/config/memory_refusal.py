"""A point too large for the memory that would run it: the largest trial and reference of a plan,
or of a spec without expanding its grid (``largest_point``); the refusal of a sweep whose largest
point cannot fit, one line naming the point and its estimate (``check_fits_memory``); and the dry
run's list of the points that would not fit here (``too_large_lines``), which a dry run flags where
a run refuses them. The estimates are the cost model's (``cost_model``) and the reference kinds'."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from ..errors import spec_error
from ..formatting import format_bytes
from .cost_model import PROCESS_BYTES, point, trial_memory_bytes
from .reference_kinds import kind_named, kind_of_config

if TYPE_CHECKING:
    from trials import LimitReferenceConfig, TrialConfig

    from .planning import Plan
    from .sections import SweepSpec


def _reference_bytes(config: "LimitReferenceConfig | TrialConfig") -> int:
    """The estimated peak bytes of the reference of ``config``, as its kind prices it."""
    return kind_of_config(config).memory_bytes(config)


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
    ref = max(refs, key=_reference_bytes, default=None)
    return (Largest(f"trial {point(trial)}", trial_memory_bytes(trial)),
            None if ref is None else Largest(f"reference {_reference_what(ref)}", _reference_bytes(ref)))


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


__all__ = ["Largest", "check_fits_memory", "largest_point", "too_large_lines"]
