"""The worker side of a sweep: the points packed into Tune trials and fused groups (``packing``),
and a worker training them and writing its own rows (``training``: ``run_pack`` for a Tune trial,
``run_point`` for one point of an adaptive round).

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "Group": "packing",
    "estimated_seconds": "packing",
    "fused_packs": "packing",
    "fusion_groups": "packing",
    "group_memory": "packing",
    "group_seconds": "packing",
    "memory_share": "packing",
    "packs_of_groups": "packing",
    "Job": "training",
    "Ledger": "training",
    "run_pack": "training",
    "run_point": "training",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
