"""The error metrics a law may be fitted to: the one registry of their names (``ERROR_METRICS``).

Each is a column of the store's metrics rows (store/schema.py says what it measures) and names the
columns a fit reads beside it: the reference's own error estimate for it (removed in quadrature:
the floor) and, where the store keeps them, each seed's row of the error Gram matrix (what the
decomposed law is fitted from). The queries, the laws' methods and the CLI's ``--metric`` help
read this table; ``FIT_METRICS`` is its names.

``TERM_METRICS`` are the two terms of an error with Gram rows (``bias_out``, ``fluct_out``, ...):
each point's bias and fluctuation over seeds, read from the error's Gram rows. Any law may be
fitted to one of them (``explorer.analysis.decomposed.fit_term``), weighted and resampled as the
decomposed fit weights and resamples that term.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import FitError


@dataclass(frozen=True)
class ErrorMetric:
    """An error metric a law may be fitted to, and the columns read with it."""

    name: str
    reference: str | None  # the reference's own error estimate for this metric (None: the reference gives none)
    gram: str | None = None  # each seed's row of the error Gram matrix (None: the store keeps none)


ERROR_METRICS: dict[str, ErrorMetric] = {
    m.name: m
    for m in (
        ErrorMetric("err_out", "ref_err_out", "gram_out"),
        ErrorMetric("err_hidden", "ref_err_hidden", "gram_hidden"),
        # the companion paper's measures (joint_limit references only; store/schema.py): the hidden
        # error's max and mean over depth, bounded by the reference's hidden-state error, and the
        # backward states' error, for which the reference estimates no error of its own
        ErrorMetric("err_hidden_depthmax", "ref_err_hidden"),
        ErrorMetric("err_hidden_depthmean", "ref_err_hidden"),
        ErrorMetric("err_backward", None),
    )
}

FIT_METRICS = tuple(ERROR_METRICS)


@dataclass(frozen=True)
class TermMetric:
    """One term of an error metric's decomposition over seeds, as a metric a law may be fitted to."""

    name: str
    error: str  # the error metric whose Gram rows it is read from
    term: str  # "bias" (the seed-mean's distance to the reference) or "fluct" (the seeds' spread)


TERMS = ("bias", "fluct")
TERM_METRICS: dict[str, TermMetric] = {
    f"{term}_{m.name.removeprefix('err_')}": TermMetric(f"{term}_{m.name.removeprefix('err_')}", m.name, term)
    for m in ERROR_METRICS.values() if m.gram for term in TERMS
}

# every metric ``explorer fit --metric`` accepts: the errors, then their terms
ALL_METRICS = FIT_METRICS + tuple(TERM_METRICS)

# metric -> its reference's error column, for the metrics whose reference estimates one
REFERENCE_ERROR = {m.name: m.reference for m in ERROR_METRICS.values() if m.reference is not None}


def check_metric(metric: str) -> None:
    """Raises FitError naming the valid metrics when ``metric`` is not one of them (a term
    metric is read through its error's Gram rows: ``term_grams``, not here)."""
    if metric not in ERROR_METRICS:
        terms = f"; the terms {', '.join(TERM_METRICS)} are fitted by explorer fit" if metric in TERM_METRICS else ""
        raise FitError(f"unknown metric {metric!r}; expected one of: {', '.join(FIT_METRICS)}{terms}")


__all__ = ["ALL_METRICS", "ERROR_METRICS", "FIT_METRICS", "REFERENCE_ERROR", "TERMS", "TERM_METRICS", "ErrorMetric",
           "TermMetric", "check_metric"]
