"""A sweep's references, before its trials: the reference phase (``phase``: those the store holds
read on the driver, one Ray task per reference still to compute), the cache a worker reads them
from (``cache``) and the screen that rejects a reference file with values out of range
(``screen``).

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "run_references": "phase",
    "load_reference": "cache",
    "reference_problem": "screen",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
