"""Planning: a validated spec expanded into its trials, their keys and their references.

``plan`` turns a spec into trial configurations (``trials.TrialConfig``, one per grid point and
problem draw, all its seeds batched), each with a ``trial_key`` (a hash of the config, its
reference and the store's schema version), grouped by the reference they are compared with:
the one each trial's own configuration defines. ``mean_ode`` and ``joint_limit``: the limit of
the trial's limit-defining fields (``ReferenceConfig.limit_fields``; completep's effective alpha
grows with sqrt(M), so each M has its own); ``largest``: the trial's config at the grid's largest
L, M and D (same seeds, embeddings coupled across D, as in the companion paper,
arXiv:2603.18168); ``none``: an empty reference of the trial's shape, made by its worker, not
computed or stored. The spec's kind (``reference_kinds``) says which. A reference is defined by
the problem draw too, so each of ``[grid] problem_seeds`` gets its own.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from store import SCHEMA_VERSION
from trials import ConfigError, LimitReferenceConfig, NoReferenceConfig, TrialConfig, stable_hash

from ..errors import spec_error
from .reference_kinds import kind_named
from .sections import SweepSpec


CHECK_EVERY = 1000  # trials planned between two calls of plan's ``check`` (a few ms)


@dataclass(frozen=True)
class PlannedReference:
    """One reference: computed once, cached in the store under ``ref_key``, shared by its group."""

    ref_key: str
    kind: str  # a name of ``reference_kinds.KINDS``
    config: LimitReferenceConfig | TrialConfig | NoReferenceConfig  # the largest kind: the largest grid point's config


@dataclass(frozen=True)
class PlannedTrial:
    """One grid point (all its seeds): what a worker trains and writes under ``trial_key``."""

    trial_key: str
    ref_key: str
    config: TrialConfig


@dataclass(frozen=True)
class Plan:
    """A spec expanded: references first, then the trials that use them. ``references`` are those
    to compute and store (priced, counted, computed by the reference phase); ``made_by_workers``
    those of a kind that stores none (``ReferenceKind.stored``: kind none), which a worker makes
    itself at no cost."""

    spec: SweepSpec
    references: tuple[PlannedReference, ...]
    trials: tuple[PlannedTrial, ...]
    made_by_workers: tuple[PlannedReference, ...] = ()

    def reference_map(self) -> dict[str, PlannedReference]:
        """ref_key -> every reference a trial of the plan is compared with (what a worker looks up)."""
        return {r.ref_key: r for r in (*self.references, *self.made_by_workers)}
    # per [[grid.cases]] case (none without cases): the trials its product defines, problem draws
    # counted; a point two cases share is one trial of the plan
    case_trials: tuple[int, ...] = ()

    def trials_by_reference(self) -> dict[str, list[PlannedTrial]]:
        """ref_key -> the trials compared with it, in plan order."""
        groups: dict[str, list[PlannedTrial]] = {r.ref_key: [] for r in (*self.references, *self.made_by_workers)}
        for t in self.trials:
            groups[t.ref_key].append(t)
        return groups


def trial_key(config: TrialConfig, ref_key: str, schema_version: int = SCHEMA_VERSION) -> str:
    """A trial's identity in the store: its numbers depend on the config, on the reference it is
    compared with, and on the row schema, so all three are hashed."""
    return stable_hash({"trial": config.key(), "reference": ref_key, "schema_version": schema_version})


def plan(spec: SweepSpec, schema_version: int = SCHEMA_VERSION, check: Callable[[], None] | None = None) -> Plan:
    """Expand a spec into its references and trials, in a stable order.

    Args:
        spec: a validated spec.
        schema_version: the store's row schema version (default: ``store.SCHEMA_VERSION``).
        check: called every ``CHECK_EVERY`` trials; it may raise to stop planning (a driver's
            signal: ``interrupts.SignalGuard.check``).

    Returns:
        A ``Plan``: one ``PlannedReference`` per reference key, one ``PlannedTrial`` per grid
        point and problem draw (seeds 0..seeds-1 batched in its config), ordered by reference
        then grid order (problem draws outermost, then the cases in order: a point two cases
        share is planned once, by the first; its key is its config's, whichever case gave it).

    Raises:
        SpecError: a grid point that the trial configuration refuses.
    """
    cases = spec.case_axes()
    reference_of = _reference_finder(spec)
    references: dict[str, PlannedReference] = {}
    trials = []
    case_trials = [0] * len(cases)
    for problem_seed in spec.problem_seeds():
        problem = spec.problem_config(problem_seed)
        seen: set[tuple] = set()  # a point of two cases is one trial (the same key whichever case gave it)
        for number, axes in enumerate(cases):
            for values in itertools.product(*axes.values()):
                case_trials[number] += 1
                if len(cases) > 1:
                    if values in seen:
                        continue
                    seen.add(values)
                trials.append(_planned(spec, problem, problem_seed, dict(zip(axes, values)), reference_of,
                                       references, schema_version))
                if check is not None and len(trials) % CHECK_EVERY == 0:
                    check()
    unique = list(references.values())
    order = {r.ref_key: i for i, r in enumerate(unique)}
    trials.sort(key=lambda t: order[t.ref_key])  # stable: grid order within a group
    case_counts = tuple(case_trials) if len(cases) > 1 or spec.grid.cases else ()
    if kind_named(spec.reference.kind).stored:
        return Plan(spec=spec, references=tuple(unique), trials=tuple(trials), case_trials=case_counts)
    return Plan(spec=spec, references=(), trials=tuple(trials), made_by_workers=tuple(unique), case_trials=case_counts)


def _planned(spec: SweepSpec, problem, problem_seed: int, point: dict, reference_of, references: dict,
             schema_version: int) -> PlannedTrial:
    """One grid point's trial, its reference added to ``references`` (SpecError: a point the trial
    configuration refuses)."""
    try:
        cfg = spec.trial_config(problem, point)
    except ConfigError as exc:
        where = ", ".join(f"{k}={v}" for k, v in point.items())
        raise spec_error(f"[grid] point {where}, problem_seed={problem_seed}", str(exc)) from None
    ref = reference_of(cfg)
    references.setdefault(ref.ref_key, ref)
    return PlannedTrial(trial_key(cfg, ref.ref_key, schema_version), ref.ref_key, cfg)


def _reference_finder(spec: SweepSpec) -> Callable[[TrialConfig], PlannedReference]:
    """The reference a trial's own configuration defines, as a function of that configuration.

    A trial is compared with the reference its config defines, never with a group's: mean_ode and
    joint_limit with the limit of its ``limit_fields`` (completep's effective alpha depends on M,
    so each M has its own), largest with the largest grid point made from its config (L, M and D
    at the grid's maxima, seeds no trial uses, everything else its own); its kind says which
    (``ReferenceKind.reference_config``). Hashing a key costs a JSON dump and a SHA-256, so the
    references are cached by the kind's ``identity`` of a trial (hashable values the key is made
    of): planning 10^5 trials computes one key per distinct reference.
    """
    cache: dict[object, PlannedReference] = {}
    kind = kind_named(spec.reference.kind)

    def reference_of(cfg: TrialConfig) -> PlannedReference:
        identity = kind.identity(spec, cfg)
        found = cache.get(identity)
        if found is None:
            config = kind.reference_config(spec, cfg)
            found = cache[identity] = PlannedReference(kind.key(config), kind.name, config)
        return found

    return reference_of
