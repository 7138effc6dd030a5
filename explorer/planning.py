"""Planning: a validated spec expanded into its trials, their keys and their references.

``plan`` turns a spec into trial configurations (``trials.TrialConfig``, one per grid point and
problem draw, all its seeds batched), each with a ``trial_key`` (a hash of the config, its
reference and the store's schema version), grouped by the reference they are compared with
(SPEC section 3): ``mean_ode`` (a particle solution, one per limit-defining group) or
``largest`` (the largest grid point of the group at the same seeds, with embeddings coupled
across D, as in the companion paper, arXiv:2603.18168). A reference is defined by the problem
draw too, so each of ``[grid] problem_seeds`` gets its own.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from store import SCHEMA_VERSION
from trials import ConfigError, ReferenceConfig, TrialConfig, largest_reference_key, stable_hash

if TYPE_CHECKING:  # the module imports torch; planning other kinds must not
    from trials import JointLimitConfig

from .errors import spec_error
from .spec import SweepSpec


@dataclass(frozen=True)
class PlannedReference:
    """One reference: computed once, cached in the store under ``ref_key``, shared by its group."""

    ref_key: str
    kind: str  # mean_ode | largest | joint_limit
    config: ReferenceConfig | TrialConfig | JointLimitConfig  # the largest kind: the largest grid point's config


@dataclass(frozen=True)
class PlannedTrial:
    """One grid point (all its seeds): what a worker trains and writes under ``trial_key``."""

    trial_key: str
    ref_key: str
    config: TrialConfig


@dataclass(frozen=True)
class Plan:
    """A spec expanded: references first, then the trials that use them."""

    spec: SweepSpec
    references: tuple[PlannedReference, ...]
    trials: tuple[PlannedTrial, ...]

    def trials_by_reference(self) -> dict[str, list[PlannedTrial]]:
        """ref_key -> the trials compared with it, in plan order."""
        groups: dict[str, list[PlannedTrial]] = {r.ref_key: [] for r in self.references}
        for t in self.trials:
            groups[t.ref_key].append(t)
        return groups


def trial_key(config: TrialConfig, ref_key: str, schema_version: int = SCHEMA_VERSION) -> str:
    """A trial's identity in the store: its numbers depend on the config, on the reference it is
    compared with, and on the row schema, so all three are hashed."""
    return stable_hash({"trial": config.key(), "reference": ref_key, "schema_version": schema_version})


def plan(spec: SweepSpec, schema_version: int = SCHEMA_VERSION) -> Plan:
    """Expand a spec into its references and trials, in a stable order.

    Args:
        spec: a validated spec.
        schema_version: the store's row schema version (default: ``store.SCHEMA_VERSION``).

    Returns:
        A ``Plan``: one ``PlannedReference`` per reference key, one ``PlannedTrial`` per grid
        point and problem draw (seeds 0..seeds-1 batched in its config), ordered by reference
        then grid order (problem draws outermost).

    Raises:
        SpecError: a grid point that the trial configuration refuses.
    """
    axes = spec.axes()
    # A mean_ode reference is defined by everything but L and M ("limit": any trial of the group),
    # the largest point's by everything but L, M and D: one reference per group, computed once.
    # The problem draw is always part of the group (the problem config is hashed into the key).
    # joint_limit is grouped like mean_ode (its hidden state is written in each D's embeddings).
    outside_group = ("L", "M") if spec.reference.kind in ("mean_ode", "joint_limit") else ("L", "M", "D")
    largest = {"L": max(spec.grid.L), "M": max(spec.grid.M), "D": max(spec.grid.D)}
    references: dict[tuple, PlannedReference] = {}
    trials = []
    for problem_seed in spec.problem_seeds():
        problem = spec.problem_config(problem_seed)
        for values in itertools.product(*axes.values()):
            point = dict(zip(axes, values))
            try:
                cfg = spec.trial_config(problem, point)
            except ConfigError as exc:
                where = ", ".join(f"{k}={v}" for k, v in point.items())
                raise spec_error(f"[grid] point {where}, problem_seed={problem_seed}", str(exc)) from None
            group = (problem_seed, *(v for k, v in point.items() if k not in outside_group))
            ref = references.get(group)
            if ref is None:
                if spec.reference.kind in ("mean_ode", "joint_limit"):
                    rc = spec.reference_config(cfg)
                    ref = PlannedReference(rc.key(), spec.reference.kind, rc)
                else:
                    top = cfg.replace(**largest)
                    ref = PlannedReference(largest_reference_key(top), "largest", top)
                references[group] = ref
            trials.append(PlannedTrial(trial_key(cfg, ref.ref_key, schema_version), ref.ref_key, cfg))
    unique = list({r.ref_key: r for r in references.values()}.values())
    order = {r.ref_key: i for i, r in enumerate(unique)}
    trials.sort(key=lambda t: order[t.ref_key])  # stable: grid order within a group
    return Plan(spec=spec, references=tuple(unique), trials=tuple(trials))
