"""What the commands that read one stored sweep make of it: ``sweep_fit`` (``explorer fit``: the
law with its intervals, as asked the laws ranked and the shape advice, a designed sweep's targets
met or missed, written to the store; ``SweepFit.lines``, what the command prints), ``sweep_phase``
(``explorer phase``: the table, the boundary and the chart) and ``sweep_report`` (``explorer
report``: the HTML page with its header). Their twins are ``explorer.api.fit``, ``phase`` and
``report``; errors are the wings' (``explorer.store_access.store_errors`` words the store's)."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..analysis.laws import DEFAULT_FORM
from ..store_access import open_sweep, store_errors

if TYPE_CHECKING:
    import pandas as pd

    from store import Store

    from ..analysis.fitting import FitResult
    from ..analysis.phase import PhaseDiagram
    from .contents import Report


@dataclass
class SweepFit:
    """What ``fit`` made: the fit, and as asked the laws ranked and the shape advice."""

    result: "FitResult"
    comparison: "pd.DataFrame | None" = None  # compare_laws' table (compare=True)
    advice: dict | None = None  # shape_advice at the budgets asked
    written_to: str | None = None  # the store the fit was written to (None: not saved)
    targets: dict = field(default_factory=dict)  # a designed sweep's targets: name -> (half-width, predicted)
    code_note: str | None = None  # the sweep's trials come from several versions of the code
    data_notes: list[str] = field(default_factory=list)  # partial data, trials outside the last run's grid (one line each)

    def lines(self) -> list[str]:
        """What ``explorer fit`` prints: the fit's table, the ranking, the advice, where it was written."""
        from ..analysis.fitting import additive_warning, format_comparison, format_table
        from ..analysis.shapes import format_advice
        from ..experiment_design.design_record import design_target_lines

        out = format_table(self.result).split("\n")
        if self.comparison is not None:
            out += format_comparison(self.comparison).split("\n")
            out += [f"warning: {line}" for line in additive_warning(self.comparison, self.result.form)]
        if self.advice is not None:
            out += format_advice(self.advice).split("\n")
        out += design_target_lines(self.targets, self.result)
        if self.code_note is not None:
            out.append(f"warning: {self.code_note}")
        if self.written_to is not None:
            out.append(f"wrote fit {self.result.fit_id} ({len(self.result.parameters)} rows, kind fits) to {self.written_to}")
        return out


def sweep_fit(sweep: str, form: str = DEFAULT_FORM, *, store: Store | str = "results", metric: str = "err_out",
              step: int | None = None, where: str | None = None, n_boot: int = 200, seed: int = 0,
              floor: str = "quadrature", save: bool = True, compare: bool = False, budgets: Sequence[float] = (),
              bias: str | None = None, fluct: str | None = None) -> SweepFit:
    """A law fitted to a stored sweep, as ``explorer.api.fit`` documents (its arguments and errors)."""
    from ..analysis.data import code_mix_line, data_notes
    from ..analysis.fitting import compare_laws, fit_stored_sweep
    from ..analysis.laws import resolve_form
    from ..analysis.shapes import shape_advice
    from ..experiment_design.design_record import read_targets

    with store_errors():
        resolve_form(form)  # a bad form fails before the store is opened
        st, con = open_sweep(store, sweep, where)
        try:
            result = fit_stored_sweep(con, sweep, form, metric=metric, step=step, where=where, n_boot=n_boot,
                                      seed=seed, floor=floor, bias=bias, fluct=fluct)
            targets = read_targets(con, sweep)
            code_note = code_mix_line(con, sweep)
            notes = data_notes(st, sweep, con=con, where=where)
        finally:
            con.close()
        done = SweepFit(result, compare_laws(result.grid, floor=floor, seed=seed) if compare else None,
                        shape_advice(result, budgets) if budgets else None, targets=targets, code_note=code_note,
                        data_notes=notes)
        if save:
            st.write_fit(result.sweep, result.fit_id, result.rows().to_dict("records"))
            done.written_to = st.uri
    return done


def sweep_phase(sweep: str, store: Store | str | os.PathLike = "results", *, x: str = "alpha", y: str = "D",
                step: int | None = None, where: str | None = None, out: str | os.PathLike | None = None,
                force: bool = False, n_boot: int = 200, seed: int = 0, echo: Callable[[str], object]) -> PhaseDiagram:
    """The phase diagram of a stored sweep, as ``explorer.api.phase`` documents."""
    from ..analysis.phase import BOUNDARY_AXIS, format_boundary, format_phase, phase_boundary, phase_diagram
    from ..errors import SweepDataError

    with store_errors():
        _, con = open_sweep(store, sweep, where)
        try:
            diagram = phase_diagram(con, sweep, x, y, step=step, where=where)
            if BOUNDARY_AXIS in (x, y):
                try:
                    diagram.boundary = phase_boundary(con, sweep, y if x == BOUNDARY_AXIS else x, step=step,
                                                      where=where, n_boot=n_boot, seed=seed)
                except SweepDataError as exc:
                    diagram.notes.append(f"no phase boundary: {exc}")
        finally:
            con.close()
        echo(format_phase(diagram))
        if diagram.boundary is not None:
            echo(format_boundary(diagram.boundary))
        if out:
            from .diagnostic_charts import phase_chart
            from .output_folder import OutputFolder
            from .page import save_chart

            paths = save_chart(phase_chart(diagram), out, "phase", output=OutputFolder(out, force=force))
            echo("chart: " + ", ".join(str(p) for p in paths))
    return diagram


def sweep_report(sweep: str, store: Store | str | os.PathLike = "results", out: str | os.PathLike = "report", *,
                 metric: str = "err_out", step: int | None = None, where: str | None = None, form: str = DEFAULT_FORM,
                 n_boot: int = 200, save: bool = True, force: bool = False, compare_with: str | None = None,
                 export: str | Sequence[str] = (), reload_s: float | None = None) -> Report:
    """A stored sweep's offline HTML report, as ``explorer.api.report`` documents."""
    from ..analysis.compare import compare_stored
    from ..analysis.data import code_mix_line, data_notes
    from .fit_cache import FitCache
    from .page import build_report
    from .page_header import rewrite_with_header

    with store_errors():
        st, con = open_sweep(store, sweep, where)
        comparison = None
        if compare_with is not None:
            comparison = compare_stored(sweep, compare_with, store=st, metric=metric, step=step, where=where,
                                        n_boot=max(n_boot, 2), save=save)
        report = build_report(con, sweep, out, store=st if save else None, metric=metric, step=step, where=where,
                              form=form, n_boot=n_boot, force=force, comparison=comparison, exports=export,
                              cache=FitCache())
        report.code_note = code_mix_line(con, sweep)
        notes = data_notes(st, sweep, con=con, where=where)
        rewrite_with_header(report.path, notes, reload_s)
        report.data_notes = notes
        return report


__all__ = ["SweepFit", "sweep_fit", "sweep_phase", "sweep_report"]
