"""The reference kinds: what a trial is compared with, one module per kind and one registry.

``kind`` declares what a kind is (``ReferenceKind``, a Protocol); ``registry`` maps each name a
spec may give as ``[reference] kind`` to its kind (``KINDS``: ``mean_ode``, ``joint_limit``,
``largest``, ``none``). A kind owns its configuration and key, the presets and scalings it serves,
its compute, memory and time estimates, its description and the spec keys it ignores; the spec's
rules, the planner, the cost model's dry run, the sweep's resources and reference cache, and the
experiment design ask it and never compare its name. A new kind is one module here and one entry
in ``KINDS`` (``none`` is the smallest example). The numerics of a kind live in ``trials``.

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "DEFAULT_KIND": "registry",
    "KINDS": "registry",
    "ReferenceKind": "kind",
    "kind_named": "registry",
    "kind_of_config": "registry",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
