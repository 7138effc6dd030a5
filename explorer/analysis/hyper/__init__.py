"""Hyperparameters: each slice's best value of an axis (lr, alpha, any numeric grid axis) with a
seed-and-draw interval, and whether that optimum transfers across depth and width.

``minimum`` locates a minimum on the log axis between grid values; ``resample`` is the seed-and-draw
bootstrap of the minima (``Runs``: a sweep's runs along the axis); ``runs`` reads them from the
store; ``optimum`` gives each slice's optimum or its grid edge (``explorer optimum``); ``transfer_law``
fits log axis* = c + gamma log L (+ delta log M) per preset with verdicts and paired differences
(``explorer transfer``); ``coordcheck`` reads the coordinate check's sizes against M and L and fits
their exponents with the same bootstrap (``explorer coordcheck``); ``planted`` makes surfaces with a known optimum for the benchmark and tests.

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "ABOVE": "minimum",
    "BELOW": "minimum",
    "INSIDE": "minimum",
    "levels": "minimum",
    "locate": "minimum",
    "Runs": "resample",
    "interval": "resample",
    "replicate_minima": "resample",
    "axis_runs": "runs",
    "EDGE_WORDS": "optimum",
    "OPTIMUM_COLUMNS": "optimum",
    "Optima": "optimum",
    "optima": "optimum",
    "TRANSFER_BAND": "transfer_law",
    "Transfer": "transfer_law",
    "transfer": "transfer_law",
    "choose_pairs": "transfer_law",
    "exponent_name": "transfer_law",
    "COORD_COLUMNS": "coordcheck",
    "CoordCheck": "coordcheck",
    "coord_sizes": "coordcheck",
    "coord_exponents": "coordcheck",
    "LR_GRID": "planted",
    "planted_runs": "planted",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
