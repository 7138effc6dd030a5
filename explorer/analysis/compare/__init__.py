"""Comparing two sweeps (``explorer compare``): the decomposed law fitted to both on what they
share, and the difference with an interval that lets their shared randomness cancel.

``pairing`` pairs two ``seed_grams`` frames and fits them jointly (the problem draws' jackknife,
each draw left out of both); ``sides`` reads both sides from the store, refuses sides that are not
comparable and makes the ``Comparison`` (its rows, its lines); ``seed_paths`` names the seeds that
took different paths in the two sweeps, whose noise the pairing cannot cancel; ``stored`` compares
two sweeps of a store as ``explorer compare`` does.

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "CATEGORICAL_AXES": "sides",
    "COMPARED_FORMS": "sides",
    "Comparison": "sides",
    "Side": "sides",
    "at_where": "sides",
    "check_comparable": "sides",
    "check_references": "sides",
    "compare": "sides",
    "side_warnings": "sides",
    "sides_by": "sides",
    "compare_stored": "stored",
    "RATIO_PARAMETERS": "pairing",
    "Paired": "pairing",
    "PairedFit": "pairing",
    "pair_frames": "pairing",
    "paired_fit": "pairing",
    "DEPARTURE_FACTOR": "seed_paths",
    "departing_seeds": "seed_paths",
    "departure_warning": "seed_paths",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
