"""``ReferenceKind``: what a kind of reference declares and does, for the code that asks it (the
spec's rules, the planner, the cost model, the sweep's resources and reference cache, the
experiment design). Each kind is a module of this wing and an entry of ``registry.KINDS``."""
from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from trials import Reference, TrialConfig

    from ...errors import SpecProblems

# A validated spec (``explorer.config.sections.SweepSpec``), named loosely: sections reads this
# registry, so its kinds do not import it back, not even for a type checker.
Spec = Any


class ReferenceKind(Protocol):
    """One kind of reference.

    Attributes:
        name: what ``[reference] kind`` says, and the rows' ``ref_kind``.
        description: one line: what a trial of this kind is compared with (spec help, docs).
        unused_keys: the ``[reference]`` keys this kind ignores: a spec that sets one is refused.
        measures_error: whether a trial's rows hold its errors against the reference (False: the
            loss alone; an adaptive sweep, which fits an error's law, refuses the kind).
        stored: whether a reference is computed once per key and cached in the store (False: a
            worker makes it itself, at no cost: nothing is planned, priced or computed).
        couples_embeddings: the default of ``[problem] coupled_embeddings`` under this kind.
        scales_with_particles: whether its error is a particle solution's, which a design can
            plan by scaling its resolution.
        config_type: the type of its configuration (``kind_of_config`` finds the kind by it).
    """

    name: str
    description: str
    unused_keys: tuple[str, ...]
    measures_error: bool
    stored: bool
    couples_embeddings: bool
    scales_with_particles: bool
    config_type: type

    def reference_config(self, spec: "Spec", trial: "TrialConfig") -> Any:
        """The configuration of the reference ``trial`` is compared with.

        Raises:
            trials.ConfigError: the kind does not serve this trial (its preset or scaling)."""

    def check_serves(self, spec: "Spec", trial: "TrialConfig") -> None:
        """Raise trials.ConfigError when this kind cannot serve ``trial`` (a preset or learning-rate
        scaling it has no reference for); the spec's rules call it for every axis value."""

    def identity(self, spec: "Spec", trial: "TrialConfig") -> Hashable:
        """What the trial's reference depends on, hashable and cheap next to a key: trials with
        equal identities share one reference (the planner hashes one key per identity)."""

    def key(self, config: Any) -> str:
        """The reference's identity in the store (hashed into every trial key: never to change)."""

    def check_spec(self, spec: "Spec", problems: "SpecProblems") -> None:
        """The kind's own cross-key rules of a spec, each refusal added to ``problems``."""

    def bounding_config(self, spec: "Spec", trial: "TrialConfig") -> Any | None:
        """A reference configuration whose estimate bounds the sweep's, from the spec's largest
        point ``trial`` (None: the kind computes nothing)."""

    def memory_bytes(self, config: Any) -> int:
        """Estimated peak bytes of computing the reference."""

    def request_bytes(self, config: Any) -> int:
        """The bytes a reference task asks of Ray (0: small enough to ask none)."""

    def seconds(self, config: Any) -> float:
        """Estimated single-core seconds of computing the reference."""

    def what(self, config: Any) -> str:
        """The reference described for the dry run and a refusal ("at D=8 (...)")."""

    def dry_run_line(self, spec: "Spec", count: int) -> str:
        """The dry run's line of the sweep's ``count`` references."""

    def compute(self, config: Any) -> "Reference":
        """The reference itself, on a worker (imports torch)."""
