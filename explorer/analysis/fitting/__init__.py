"""Fitting a law: a sweep's errors to a law of the registry, with intervals and guard rails.

``dispatch.fit_sweep`` reads one slice of a sweep and fits a law with the method the registry
names for it (the one place a law becomes its data and fitter; ``Fitter`` declares what a fitter
does); ``rms_fit.fit`` fits a law to each point's RMS error over seeds (the least squares
in ``solver``, the two-level bootstrap in ``bootstrap``); ``result.FitResult`` is a fitted law
with its rows and guard rails, ``text`` says it in words; ``diagnostics`` judges laws and grids
(cross-validated comparison, local slopes, the range check); ``mean_of_runs`` fits the mean error
over every run with a bootstrap over draws (the companion paper's pooling; the registry's
``mean_of_runs`` method, asked for by name through ``fit_sweep``); ``targets`` reads an
adaptive sweep's targets from a fit; ``stored_sweep`` fits a stored sweep for ``explorer fit``,
naming the law that fits it instead where the law's data is missing; ``tie`` tests the theory's tie of two exponents (g = b).

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "Fitter": "dispatch",
    "SweepReader": "dispatch",
    "data_and_fitter": "dispatch",
    "fit_sweep": "dispatch",
    "fit_stored_sweep": "stored_sweep",
    "fit": "rms_fit",
    "spread": "bootstrap",
    "FITS_COLUMNS": "result",
    "R2_WARNING": "result",
    "Z95": "result",
    "T95": "result",
    "FitResult": "result",
    "data_hash": "result",
    "fit_warnings": "result",
    "spread": "bootstrap",
    "TIE_HALF_WIDTH": "tie",
    "TieTest": "tie",
    "tie_verdict": "tie",
    "flag_summary": "text",
    "format_table": "text",
    "interval_description": "text",
    "check_single_slice": "solver",
    "Problem": "solver",
    "solve_batch": "solver",
    "additive_warning": "diagnostics",
    "compare_laws": "diagnostics",
    "fittable_forms": "diagnostics",
    "format_comparison": "diagnostics",
    "local_slopes": "diagnostics",
    "MIN_DRAWS": "mean_of_runs",
    "fit_pooled": "mean_of_runs",
    "least_squares_on_err": "mean_of_runs",
    "pooled_mean": "mean_of_runs",
    "halfwidth_of": "targets",
    "positive_parameters": "targets",
    "target_halfwidth": "targets",
    "target_lines": "targets",
    "targets_of": "targets",
    "unmeasured": "targets",
    "unmeasured_in": "targets",
    "judge": "measured",
    "measured_law": "measured",
    "stated_law": "measured",
    "CONSTANT_FACTOR": "measured",
    "EXPONENT_WIDTH": "measured",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
