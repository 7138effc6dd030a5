"""The decomposed law: each term of err^2 ~ (c1 L^-a)^2 + (c2 (D/(LM))^b)^2 fitted on the part of
the error it describes, the seeds' bias on the first and their fluctuation on the second.

``gram_terms`` splits a point's RMS error over seeds into bias^2 and fluct^2 from the Gram matrix
of its seeds' errors; ``estimator`` fits both terms and gives their shared-seed two-level
bootstrap (``estimate``); ``fit`` turns that into a ``FitResult`` with its guard rails
(``fit_decomposed``, the registry's method "decomposed"); ``term_fit`` fits any law to one term
(``fit_term``) or user laws to both (``fit_terms``) with the same weights and resamples;
``d_axis`` checks the D exponent along D (its local slopes); ``planted`` makes synthetic sweeps of a
known law for the tests and the coverage harness.

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "decompose_gram": "gram_terms",
    "gram_of": "gram_terms",
    "jackknife_se": "gram_terms",
    "terms": "gram_terms",
    "NAMES": "estimator",
    "RESOLVED_SE": "estimator",
    "WEIGHT_FLOOR": "estimator",
    "Design": "estimator",
    "Draw": "estimator",
    "design": "estimator",
    "draws_of": "estimator",
    "effective_entries": "estimator",
    "estimate": "estimator",
    "gram_spread": "estimator",
    "solve": "estimator",
    "standard_errors": "estimator",
    "fit_decomposed": "fit",
    "fit_term": "term_fit",
    "fit_terms": "term_fit",
    "resample_plan": "term_fit",
    "local_d_slopes": "d_axis",
    "solve_all": "estimator",
    "within_fit": "estimator",
    "FULL": "estimator",
    "REGIMES": "planted",
    "Regime": "planted",
    "as_grid": "planted",
    "planted_grams": "planted",
    "planted_pair_partly_shared": "planted",
    "planted_sweeps": "planted",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
