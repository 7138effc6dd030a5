"""The ``latest_fits`` view: the newest fit of each question asked of a sweep.

Every fit is kept under its own ``fit_id`` (one file per id): a refit of a sweep whose trials
changed (a grown grid, more draws or seeds) is a new fit beside the earlier one, so ``fits`` holds
the history. A question is one ``fit_key`` (sweep, law, metric, step, filter, resamples, seed);
files written before ``fit_key`` was stored are their own question under their ``fit_id``, which is
what their ``fit_key`` would have been. The view keeps, per sweep and question, the rows of the fit
with the latest ``created_at`` (ties: the largest ``fit_id``), with every column of ``fits``.
"""
from __future__ import annotations

LATEST_FITS_VIEW = "latest_fits"

_SQL = f"""
CREATE VIEW "{LATEST_FITS_VIEW}" AS
SELECT * EXCLUDE (fit_rank) FROM (
    SELECT *, dense_rank() OVER (PARTITION BY sweep, coalesce(fit_key, fit_id)
                                 ORDER BY created_at DESC, fit_id DESC) AS fit_rank
    FROM fits)
WHERE fit_rank = 1
"""


def create_latest_fits_view(con) -> None:
    """Define ``latest_fits`` over the connection's ``fits`` view."""
    con.execute(_SQL)


__all__ = ["LATEST_FITS_VIEW", "create_latest_fits_view"]
