"""The registry of reference kinds: name -> kind (``KINDS``), in the order the spec's help lists
them. A new kind is its module in this wing and one entry here."""
from __future__ import annotations

from typing import Any

from .joint_limit import JointLimit
from .kind import ReferenceKind
from .largest import Largest
from .mean_ode import MeanOde
from .none import NoReference

KINDS: dict[str, ReferenceKind] = {kind.name: kind for kind in (MeanOde(), Largest(), JointLimit(), NoReference())}
DEFAULT_KIND = MeanOde.name  # a spec's kind when it names none, and a stored reference's that records none


def kind_named(name: str) -> ReferenceKind:
    """The kind of this name (a spec's ``[reference] kind``, a planned reference's ``kind``).

    Raises:
        KeyError: no such kind (a validated spec names one of ``KINDS``)."""
    return KINDS[name]


def kind_of_config(config: Any) -> ReferenceKind:
    """The kind whose configuration ``config`` is (by its type: a ``ReferenceConfig`` is mean_ode's,
    the largest point's ``TrialConfig`` largest's ...).

    Raises:
        TypeError: a configuration no kind owns."""
    for kind in KINDS.values():
        if type(config) is kind.config_type:
            return kind
    raise TypeError(f"no reference kind owns a {type(config).__name__}")
