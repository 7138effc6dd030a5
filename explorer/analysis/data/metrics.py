"""The error metrics a law may be fitted to: the one registry of their names (``ERROR_METRICS``).

Each is a column of the store's metrics rows (store/schema.py says what it measures) and names the
columns a fit reads beside it: the reference's own error estimate for it (removed in quadrature:
the floor) and, where the store keeps them, each seed's row of the error Gram matrix (what the
decomposed law is fitted from). The queries, the laws' methods and the CLI's ``--metric`` help
read this table; ``FIT_METRICS`` is its names.
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

# metric -> its reference's error column, for the metrics whose reference estimates one
REFERENCE_ERROR = {m.name: m.reference for m in ERROR_METRICS.values() if m.reference is not None}


def check_metric(metric: str) -> None:
    """Raises FitError naming the valid metrics when ``metric`` is not one of them."""
    if metric not in ERROR_METRICS:
        raise FitError(f"unknown metric {metric!r}; expected one of: {', '.join(FIT_METRICS)}")


__all__ = ["ERROR_METRICS", "FIT_METRICS", "REFERENCE_ERROR", "ErrorMetric", "check_metric"]
