"""``Report``: what a sweep's report holds (its fits, charts, phase diagram, summary and counts),
built by ``explorer.report.page.build_report`` and read by the summary (``report.summary``) and
the commands that print where it went."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..analysis.fitting import FITS_COLUMNS

if TYPE_CHECKING:
    from ..analysis.phase import PhaseDiagram


@dataclass
class Report:
    """What ``build_report`` made.

    Attributes:
        path: the index.html. fits: form -> FitResult (forms that could be fitted).
        fit_errors: form -> why its fit failed. skipped: form -> the axes it uses that the sweep
        does not vary (so it was not tried). phase: the PhaseDiagram (or None).
        advice: shape advice of the joint fit (or None). charts: name -> Altair chart (its Vega-Lite
        spec, a dict, in a report written from the report cache).
        summary: the summary sentences (Markup). counts: status_counts. fixed: axes held for the
        fits. varying: the swept columns with more than one value. comparison: ``compare_laws``
        table (or None). slopes: ``diagnostic_charts.local_slopes`` table. hyper: the
        ``hyper_report.HyperAnswer`` of each lr or alpha axis (the optima and the transfer law).
        not_made: what part of the report could not be made (a held slice, a chart) -> why, one
        line each in the summary; the rest renders.
    """

    path: Path
    fits: dict = field(default_factory=dict)
    fit_errors: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    phase: PhaseDiagram | None = None
    advice: dict | None = None
    charts: dict = field(default_factory=dict)
    summary: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)
    varying: list = field(default_factory=list)
    comparison: pd.DataFrame | None = None
    slopes: pd.DataFrame | None = None
    fits_not_saved: str | None = None  # why the fits were not written to the store (read-only store)
    code_note: str | None = None  # the sweep's trials come from several versions of the code (api.report)
    hyper: list = field(default_factory=list)
    not_made: dict = field(default_factory=dict)

    def fit_rows(self) -> pd.DataFrame:
        """All fit rows (FITS_COLUMNS) of the report."""
        frames = [f.rows() for f in self.fits.values()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(FITS_COLUMNS))

    def optima_rows(self) -> pd.DataFrame:
        """The rows of ``optima.csv``: each lr or alpha axis's optima, transfer law and paired
        differences, as the page shows them (the columns of kind optima; none: a header)."""
        from ..analysis.hyper import OPTIMUM_COLUMNS

        rows = [row for answer in self.hyper for row in answer.rows()]
        frame = pd.DataFrame(rows)
        head = ["axis", "metric", "step", "parameter", "across"]
        columns = head + [c for c in frame.columns if c not in head + list(OPTIMUM_COLUMNS) + ["verdict", "n_boot", "note"]]
        columns += list(OPTIMUM_COLUMNS) + ["verdict", "n_boot", "note"]
        frame = frame.reindex(columns=columns)
        for column in ("L", "M", "D", "step", "n_draws", "n_runs", "n_diverged", "n_boot"):  # no 16.0 for 16
            if column in frame and frame[column].map(lambda v: v is None or isinstance(v, (int, float))).all():
                frame[column] = pd.to_numeric(frame[column]).round().astype("Int64")
        return frame
