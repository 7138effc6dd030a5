"""The Python twin of every command: ``explorer X`` on the command line is ``explorer.api.X`` in a
notebook or a script, with the same arguments and errors (the CLI parses, calls one of these,
prints what it returns).

    import explorer
    result = explorer.sweep("examples/quick.toml", store="results")   # embedded Ray
    result = explorer.sweep(spec, store="s3://bucket/prefix", address="auto")  # join a cluster
    explorer.sweep_status("examples/quick.toml", store="results").counts
    explorer.api.ls("results").lines(); explorer.api.sql("SELECT count(*) FROM trials", "results")

| command | twin |
| --- | --- |
| sweep (--adaptive, --dry-run) | ``sweep``, ``adaptive_sweep``, ``dry_run`` |
| status | ``sweep_status``; with no spec nor sweep ``every_sweep_status_lines`` |
| demo | ``demo`` |
| ray start, stop, status | ``ray_start``, ``ray_stop``, ``ray_status`` |
| ls, check, compact, rm, sql | ``ls``, ``check``, ``compact``, ``rm``, ``sql`` |
| fit, phase, report, compare, design | ``fit``, ``phase``, ``report``, ``compare``, ``design`` |
| optimum, transfer | ``optimum``, ``transfer`` |
| watch | ``watch`` (one refresh: ``explorer.watch.Watcher``) |
| reproduce (--list, --dry-run) | ``reproduce``, ``reproduce_list``, ``reproduce_dry_run`` |

Commands that print as they go (check, compact, phase, demo) take ``echo``, which receives each
line when it is ready; the others return what the command prints (``lines()``). A script that
already called ``ray.init`` (or joined a cluster) keeps its Ray: ``sweep`` uses it and leaves it
running. Ray is imported only when a sweep actually has trials to run.

Size: one function per command, the list a user reads to find a twin; each only calls its wing.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from store import SCHEMA_VERSION, STATUSES, Store

from .config.planning import plan
from .config.sections import SweepSpec
from .config.spec import load_spec
from .formatting import printable_text
from .store_access import check_where, open_store, open_sweep, store_errors
from .sweeps.launch import runnable_spec, sweep  # sweep: beside the Tune driver, which reproduce and demo call too

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from store import CheckReport, CompactionReport

    from .analysis.fitting import FitResult
    from .analysis.phase import PhaseDiagram
    from .report.contents import Report
    from .sweeps.adaptive import AdaptiveResult

Echo = Callable[[str], object]  # receives each line a command prints, as it is ready


def _quiet(line: str) -> None:
    """The default ``echo``: a Python caller reads the returned value instead."""


# --- sweeps: explorer sweep, status, demo ----------------------------------------------------


def ray_start(num_cpus: int | None = None) -> list[str]:
    """Start the session Ray, a local Ray that every later sweep on this machine without an
    ``address`` joins, so that Ray starts once per working session (``explorer ray start``;
    ``explorer.sweeps.session_ray``). Loopback only, no dashboard, as the embedded default.
    Returns what the command prints; one already running is kept.

    Raises:
        ClusterError: Ray could not start (one line).
    """
    from .sweeps.session_ray import start_lines

    return start_lines(num_cpus)


def ray_stop() -> list[str]:
    """Stop the session Ray (``explorer ray stop``): its processes only, never another Ray of this
    machine. Returns what the command prints."""
    from .sweeps.session_ray import stop_lines

    return stop_lines()


def ray_status() -> list[str]:
    """Whether a session Ray is running and where (``explorer ray status``)."""
    from .sweeps.session_ray import status_lines

    return status_lines()


def adaptive_sweep(
    spec_or_path: SweepSpec | Mapping | str | os.PathLike,
    store: Store | str | os.PathLike = "results",
    address: str | None = None,
    max_concurrent: int | None = None,
    overrides: Sequence[str] = (),
    progress: bool = True,
    num_cpus: int | None = None,
) -> "AdaptiveResult":
    """Run (or resume) an adaptive sweep: the spec's [grid] is the candidate set, and rounds of
    points chosen by the [adaptive] rules run on one Ray session's pool of workers until every
    target's CI is narrow enough or the budget is spent (``explorer.sweeps.adaptive``: its
    ``run_adaptive`` and ``SessionRunner``; docs/sweeps.md).

    Args: as ``sweep``.

    Returns:
        An ``AdaptiveResult`` (``summary()``, ``exit_code``: 0 once the loop stopped).

    Raises:
        SpecError, ClusterError, StoreError: as ``sweep``. DriverBusy (a UsageError): another live
        driver runs this adaptive sweep.
    """
    import sys

    from .sweeps.adaptive import SessionRunner, run_adaptive
    from .sweeps.leases import sole_adaptive_driver

    spec = runnable_spec(spec_or_path, overrides, address)
    st = open_store(store)

    def log(line: str) -> None:
        if progress:
            print(line, file=sys.stderr, flush=True)

    # one Ray session and one pool of workers for every round, started at the first trials to run
    with sole_adaptive_driver(st, spec.name), SessionRunner(spec, st, address=address, max_concurrent=max_concurrent,
                                                            num_cpus=num_cpus, progress=progress) as runner:
        return run_adaptive(spec, st, runner, log=log)


def dry_run(spec: SweepSpec, address: str | None = None, adaptive: bool = False,
            store: Store | str | os.PathLike | None = None) -> list[str]:
    """What ``explorer sweep SPEC --dry-run`` prints: the trials, references and estimated memory
    and time (``adaptive``: the candidates, the budget and the initial design); nothing runs.
    With an embedded Ray (``address`` None) this machine's memory and CPUs price the plan, and
    what cannot fit is flagged. With ``store`` (not adaptive): how many trials it has complete and
    references cached, and what is left priced with Ray's start; the store is only read.

    Raises:
        SpecError: (adaptive) a grid the law cannot be fitted on, or a budget that pays for no point.
        StoreError: the store cannot be read.
    """
    from .sweeps.dry_run import dry_run_lines

    with store_errors():
        st = None if store is None or adaptive else open_store(store)
        return dry_run_lines(spec, embedded=address is None, adaptive=adaptive, store=st)


@dataclass
class SweepStatus:
    """Counts of a sweep's trials by status, as the store sees them."""

    sweep: str
    store: str
    counts: dict[str, int] = field(default_factory=dict)  # ok, diverged, failed (+ pending, other with a spec)
    planned: int | None = None  # trials the spec defines (None without a spec)
    adaptive: list[str] = field(default_factory=list)  # an adaptive sweep's rounds (explorer.sweeps.adaptive.adaptive_status)

    def lines(self) -> list[str]:
        head = f"sweep {self.sweep} in {self.store}"
        if self.planned is not None:
            done = sum(self.counts.get(s, 0) for s in ("ok", "diverged"))
            head += f": {done}/{self.planned} trials complete"
        order = list(STATUSES) + (["pending", "other"] if self.planned is not None else [])
        lines = [head]
        for name in order:
            note = {"pending": "  (not run yet, or lost: rerun the sweep)",
                    "other": "  (in the store, not in this spec)"}.get(name, "")
            lines.append(f"  {name:<9}{self.counts.get(name, 0):>8}{note}")
        return lines + self.adaptive


def sweep_status(spec_or_path=None, *, sweep: str | None = None, store: Store | str = "results",
                 overrides: Sequence[str] = ()) -> SweepStatus:
    """Counts by status of a sweep's trials: of the spec's trials (with a spec), or of every
    trial the store holds under the name ``sweep``.

    Raises:
        SpecError: an invalid spec. SweepDataError: a sweep name the store does not have (the
            message lists those it has). StoreAccessError: a store that cannot be opened.
        ValueError: neither or both of a spec and a sweep name.
    """
    if (spec_or_path is None) == (sweep is None):
        raise ValueError("give a spec or a sweep name (not both)")
    if sweep is not None:
        st = open_store(store, sweep=sweep)
        counts = {s: 0 for s in STATUSES}
        for status in st.trial_statuses(sweep).values():
            counts[status] = counts.get(status, 0) + 1
        return SweepStatus(sweep=sweep, store=st.uri, counts=counts, adaptive=_adaptive_lines(st, sweep))
    spec = load_spec(spec_or_path, overrides)
    st = open_store(store)  # a spec not run yet: every trial pending, even in an empty store
    planned = {t.trial_key for t in plan(spec, SCHEMA_VERSION).trials}
    known = st.trial_statuses(spec.name)
    counts = {s: 0 for s in (*STATUSES, "pending", "other")}
    for key in planned:
        counts[known.get(key, "pending")] += 1
    counts["other"] = len(set(known) - planned)
    return SweepStatus(sweep=spec.name, store=st.uri, counts=counts, planned=len(planned),
                       adaptive=_adaptive_lines(st, spec.name))


def _adaptive_lines(st: Store, sweep: str) -> list[str]:
    """The rounds of an adaptive sweep, for the status (none for other sweeps)."""
    if sweep not in st.sweeps():
        return []
    from .sweeps.adaptive import adaptive_status

    return adaptive_status(st, sweep)


def every_sweep_status_lines(store) -> list[str]:
    """``explorer status`` alone: a header and one row per sweep of the store, trials by status.

    Raises:
        StoreAccessError: nothing was written to ``store`` yet.
    """
    st = open_store(store, must_exist=True)
    with store_errors():
        rows = [(name, st.trial_statuses(name)) for name in st.sweeps()]
    lines = [f"{'sweep':<24}" + "".join(f"{s:>10}" for s in STATUSES) + f"{'trials':>10}"]
    for name, statuses in rows:
        counts = [sum(1 for v in statuses.values() if v == s) for s in STATUSES]
        lines.append(f"{name:<24}" + "".join(f"{c:>10}" for c in counts) + f"{len(statuses):>10}")
    return lines


def demo(store: Store | str | os.PathLike = "results", out: str | os.PathLike = "report", echo: Echo = print) -> int:
    """``explorer demo``: a small built-in sweep, its error table, report and fit, each line through
    ``echo`` (``explorer.demo.run_demo``). Returns the sweep's exit code."""
    from .demo import run_demo

    return run_demo(store=store, out=out, echo=echo)


# --- the store: explorer ls, check, compact, rm, sql -----------------------------------------


@dataclass
class SweepListing:
    """The sweeps of a store (``explorer ls``): ``rows`` as ``Store.sweeps_summary`` gives them."""

    store: str
    rows: list = field(default_factory=list)

    def lines(self) -> list[str]:
        if not self.rows:  # an empty or new store is an answer, not an error
            return [f"no sweeps in {printable_text(self.store)}"]
        lines = [f"{'sweep':<24} {'trials':>7} {'ok':>7} {'diverged':>8} {'failed':>7} {'MiB':>9}  last write"]
        for r in self.rows:
            when = r.last_write.strftime("%Y-%m-%d %H:%M:%S") if r.last_write else "-"
            lines.append(f"{r.sweep:<24} {r.trials:>7} {r.ok:>7} {r.diverged:>8} {r.failed:>7} "
                         f"{r.bytes / 2**20:>9.2f}  {when}")
        return lines


def ls(store: Store | str | os.PathLike = "results") -> SweepListing:
    """The store's sweeps with their trials by status, size on disk (MiB) and last write (UTC);
    none for an empty or new store."""
    st = open_store(store)
    with store_errors():
        rows = st.sweeps_summary() if st.exists() else []
    return SweepListing(store=st.uri, rows=rows)


def check(store: Store | str | os.PathLike = "results", sweep: str | None = None, *, quarantine: bool = False,
          repair: bool = False, echo: Echo = _quiet) -> CheckReport:
    """Check the store (one sweep, or every sweep) for damaged files, stale locks and bad rows.

    Args:
        quarantine: first move unreadable files to ``<store>/quarantine/<their path>`` (each
            move a line through ``echo``). repair: first remove stale reference locks, old
            temporaries and lapsed leases (what it removed, through ``echo``).

    Returns:
        The store's ``CheckReport`` (``ok``; ``lines(limit_per_category=...)``).

    Raises:
        StoreAccessError: nothing was written to ``store`` yet. SweepDataError: an unknown sweep.
    """
    from store import printable

    st = open_store(store, must_exist=True, sweep=sweep)
    with store_errors():
        if quarantine:
            for source, target in st.quarantine(sweep):
                echo(f"quarantined {printable(source)} -> {printable(target)}")
        if repair:
            for line in st.repair(sweep).lines():
                echo(line)
        return st.check(sweep)


def compact(store: Store | str | os.PathLike = "results", sweep: str | None = None, *,
            rows_per_file: int = 4_000_000, kinds: Sequence[str] = (), echo: Echo = _quiet) -> list[CompactionReport]:
    """Merge small result files into large ones, rows unchanged, for one sweep or every sweep
    (``kinds``: only these kinds, default all, ``references`` being the store's reference cache,
    merged once, with the first sweep); each report's lines go through ``echo`` as it is done. Streams
    (memory does not grow with the store); safe to interrupt and rerun."""
    from store import DATA_KINDS

    st = open_store(store, must_exist=True, sweep=sweep)
    chosen = tuple(kinds) or DATA_KINDS + ("references",)
    data_kinds = tuple(k for k in chosen if k != "references")
    references = ("references",) if "references" in chosen else ()
    reports = []
    with store_errors():
        names = ([sweep] if sweep else st.sweeps()) if data_kinds else []
        if not names and references:  # the reference cache alone
            reports.append(st.compact(None, rows_per_file=rows_per_file, kinds=references))
        for i, name in enumerate(names):  # the (shared) reference cache with the first sweep
            reports.append(st.compact(name, rows_per_file=rows_per_file, kinds=data_kinds + (references if i == 0 else ())))
            for line in reports[-1].lines():
                echo(line)
        if not names and references:
            for line in reports[-1].lines():
                echo(line)
    return reports


def rm(sweep: str, store: Store | str | os.PathLike = "results", *,
       confirm: Callable[[str], object] | None = None) -> int:
    """Delete every file of one sweep (the shared reference cache stays); returns how many.
    ``confirm`` is called with the question first, and may raise to refuse (the CLI asks)."""
    st = open_store(store, must_exist=True, sweep=sweep)
    with store_errors():
        if confirm is not None:
            confirm(f"delete sweep {sweep} from {st.uri}?")
        return st.remove_sweep(sweep)


def sql(query: str, store: Store | str | os.PathLike = "results", *, sweep: str | None = None,
        timeout_s: float | None = None, memory_limit: str | None = None) -> pa.Table:
    """One read-only SQL query over the store's views (``explorer sql``): a pyarrow Table. Files
    that are not store data are left out, with a ``store.LeftOutFilesWarning``.

    Raises:
        QueryError: a query that is not read-only, fails, or outlasts ``timeout_s``.
        StoreAccessError, SweepDataError: no store there, an unknown ``sweep``.
    """
    st = open_store(store, must_exist=True, sweep=sweep)  # a sweep it lacks: the error names those it has
    with store_errors():
        return st.query(query, sweep=sweep, timeout_s=timeout_s, memory_limit=memory_limit)


# --- analysis: explorer phase, report, compare, design ---------------------------------------


def phase(sweep: str, store: Store | str | os.PathLike = "results", *, x: str = "alpha", y: str = "D",
          step: int | None = None, where: str | None = None, out: str | os.PathLike | None = None, force: bool = False,
          n_boot: int = 200, seed: int = 0, echo: Echo = _quiet) -> PhaseDiagram:
    """The phase diagram of a sweep over (``x``, ``y``) (``explorer.analysis.phase``): its table
    through ``echo``; where one axis is alpha, the boundary too (``phase_boundary``: alpha* per
    slice with its interval from ``n_boot`` resamples, its exponents in L, M, D beside the theory's;
    ``diagram.boundary``, not stored: the store has no kind for it); then with ``out`` the chart
    saved as ``out``/phase.png, .svg and .html (``force``: replace files there that explorer did not
    write) and their paths."""
    from .analysis.phase import BOUNDARY_AXIS, format_boundary, format_phase, phase_boundary, phase_diagram
    from .errors import SweepDataError

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
            from .report.diagnostic_charts import phase_chart
            from .report.output_folder import OutputFolder
            from .report.page import save_chart

            paths = save_chart(phase_chart(diagram), out, "phase", output=OutputFolder(out, force=force))
            echo("chart: " + ", ".join(str(p) for p in paths))
    return diagram


def report(sweep: str, store: Store | str | os.PathLike = "results", out: str | os.PathLike = "report", *,
           metric: str = "err_out", step: int | None = None, where: str | None = None, form: str = "decomposed",
           n_boot: int = 200, save: bool = True, force: bool = False, compare_with: str | None = None,
           export: str | Sequence[str] = (), reload_s: float | None = None) -> Report:
    """A sweep's offline HTML report in ``out`` (``explorer.report.page.build_report``), its fits
    also written to the store unless ``save`` is False (or the store is read-only:
    ``Report.fits_not_saved`` says why); ``compare_with``: add the comparison with that sweep, as
    ``compare`` makes it; ``export``: also render every chart as these files (``"png,svg"``,
    ``["png"]``; vl-convert, most of a report's time: none by default). The page's header says
    when the data is partial or holds trials outside the last run's grid (``Report.data_notes``);
    ``reload_s``: the page reloads itself that often (``explorer watch --html``). Fits and the model
    comparison of rows and options seen before are read back from the user's fit cache
    (``explorer.report.fit_cache``: the same numbers)."""
    from .analysis.data import code_mix_line, data_notes
    from .report.fit_cache import FitCache
    from .report.page import build_report
    from .report.page_header import rewrite_with_header

    with store_errors():
        st, con = open_sweep(store, sweep, where)
        comparison = None
        if compare_with is not None:
            comparison = compare(sweep, compare_with, store=st, metric=metric, step=step, where=where,
                                 n_boot=max(n_boot, 2), save=save)
        report = build_report(con, sweep, out, store=st if save else None, metric=metric, step=step, where=where,
                              form=form, n_boot=n_boot, force=force, comparison=comparison, exports=export,
                              cache=FitCache())
        report.code_note = code_mix_line(con, sweep)
        notes = data_notes(st, sweep, con=con, where=where)
        rewrite_with_header(report.path, notes, reload_s)
        report.data_notes = notes
        return report


def compare(sweep_a: str, sweep_b: str | None = None, *, by: str | None = None, store: Store | str = "results",
            form: str = "decomposed", metric: str = "err_out", step: int | None = None, where: str | None = None,
            n_boot: int = 200, seed: int = 0, save: bool = True, at: dict | None = None):
    """Compare two sweeps' fitted laws on the grid points, problem draws and seeds they share,
    with paired intervals of the differences (``explorer.analysis.compare``; docs/analysis.md).

        explorer.compare("lr10", "lr08", store="results").lines()
        explorer.compare("presets", by="preset", store="results")   # two values of one sweep's axis

    Args:
        sweep_a, sweep_b: the sweeps A and B (B - A is reported); with ``by``, give ``sweep_a`` only.
        by: a configuration column (preset, activation, ...) whose two values in ``sweep_a`` are A and B.
        at: column -> value (``--at lr=0.5``): the slice compared where the sweeps vary other axes
            besides L, M, D (and ``by``); without it such a comparison is refused.
        save: write the rows to the store (kind ``comparisons``, filed under A's sweep).

    Returns:
        A ``Comparison`` (``rows``, ``lines()``, ``comparison_id``, ``fit``, ``paired``).

    Raises:
        FitError: incomparable sides, nothing shared, an unsupported form, a bad ``by``, other varying
            axes not fixed by ``at`` or ``where``, an ``at`` value a sweep does not hold.
        SweepDataError: an unknown sweep. QueryError: a bad ``where``.
    """
    from .analysis.compare import Side, at_where, compare as compare_sides, sides_by
    from .errors import FitError

    if (sweep_b is None) == (by is None):
        raise FitError("compare needs two sweeps, or one sweep and --by COLUMN (not both)")
    st = open_store(store, sweep=sweep_a)
    if sweep_b is not None:
        open_store(st, sweep=sweep_b)
    con = st.connect(read_only=True)
    try:
        if where is not None:
            check_where(con, where)
        where = at_where(con, [s for s in (sweep_a, sweep_b) if s is not None], at, where)
        a, b = sides_by(con, sweep_a, by, where) if by else (Side(sweep_a), Side(sweep_b))
        result = compare_sides(con, a, b, form=form, metric=metric, step=step, where=where, n_boot=n_boot,
                               seed=seed, by=by)
    finally:
        con.close()
    if save:
        st.write_comparison(sweep_a, result.comparison_id, result.store_rows())
    return result


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
        from .analysis.fitting import additive_warning, format_comparison, format_table
        from .analysis.shapes import format_advice
        from .experiment_design.design_record import design_target_lines

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


def fit(sweep: str, form: str = "decomposed", *, store: Store | str = "results", metric: str = "err_out",
        step: int | None = None, where: str | None = None, n_boot: int = 200, seed: int = 0,
        floor: str = "quadrature", save: bool = True, compare: bool = False, budgets: Sequence[float] = (),
        bias: str | None = None, fluct: str | None = None) -> SweepFit:
    """Fit a scaling law to a sweep's errors with 95% intervals, as ``explorer fit`` does, and
    write it to the store (kind ``fits``; docs/analysis.md).

        explorer.fit("demo", store="results").result.estimate
        explorer.fit("demo", "free_rss", where="problem_seed = 2", save=False).lines()

    Args:
        sweep: the sweep. form: a law of the registry (``explorer.analysis.laws.FORMS``, each fitted
            with its own method) or an expression over L, M, D, P.
        metric, step, where: the rows fitted (step None: each trial's final step); axes the sweep
            varies besides L, M, D are held at their most common values (``FitResult.held``). A
            term metric (``bias_out``, ``fluct_hidden``, ...) fits ``form`` to that term alone.
        bias, fluct: with ``form="decomposed"``, the user's laws of the two terms, fitted together.
        n_boot, seed, floor: the bootstrap's resamples and seed; the reference's error removed in
            quadrature ("quadrature") or not ("none").
        save: write the fit's rows to the store. compare: also rank every registry law by
            cross-validated log error. budgets: also the shape advice at these parameter budgets.

    Returns:
        A ``SweepFit`` (``result``, the ``FitResult``; ``lines()``, what the command prints).

    Raises:
        FitError: an unknown form or metric, a law the sweep cannot fit (the decomposed law without
            its Gram rows names the law that fits the RMS errors instead). SweepDataError: an
            unknown sweep. QueryError: a bad ``where``. ExpressionError: an invalid expression.
    """
    from .analysis.data import code_mix_line, data_notes
    from .analysis.fitting import compare_laws, fit_sweep
    from .analysis.laws import method_of, resolve_form
    from .analysis.shapes import shape_advice
    from .errors import FitError, NoDecompositionError
    from .experiment_design.design_record import read_targets
    from .store_access import open_sweep

    with store_errors():
        label, _ = resolve_form(form)  # a bad form fails before the store is opened
        st, con = open_sweep(store, sweep, where)
        try:
            result = fit_sweep(con, sweep, form, metric=metric, step=step, where=where, n_boot=n_boot, seed=seed,
                               floor=floor, bias=bias, fluct=fluct)
            targets = read_targets(con, sweep)
            code_note = code_mix_line(con, sweep)
            notes = data_notes(st, sweep, con=con, where=where)
        except (NoDecompositionError, FitError) as exc:
            method = method_of(label, metric)
            if method.fallback is None or not isinstance(exc, NoDecompositionError) and method.name not in str(exc):
                raise
            raise type(exc)(f"{exc}; --form {method.fallback} fits the RMS errors instead") from None
        finally:
            con.close()
        done = SweepFit(result, compare_laws(result.grid, floor=floor, seed=seed) if compare else None,
                        shape_advice(result, budgets) if budgets else None, targets=targets, code_note=code_note,
                        data_notes=notes)
        if save:
            st.write_fit(result.sweep, result.fit_id, result.rows().to_dict("records"))
            done.written_to = st.uri
    return done


def design(sweep: str, targets, store: Store | str | os.PathLike = "results", **options):
    """The cheapest sweep predicted to measure each target exponent, from the pilot ``sweep``
    (``explorer.experiment_design.designer.design``: its arguments, its ``DesignResult``); for the
    transfer law's gamma or delta (``["delta=0.15"]``), the problem draws that reach them
    (``explorer.experiment_design.transfer_design``: out, name, force; a ``TransferDesign``)."""
    from .experiment_design.transfer_design import design_transfer, wants_transfer

    if wants_transfer(targets):
        return design_transfer(sweep, targets, store, **{k: v for k, v in options.items()
                                                         if k in ("out", "name", "force") and v is not None})
    from .experiment_design.designer import design as designed

    return designed(sweep, targets, store=store, **options)


# --- hyperparameters: explorer optimum, transfer ---------------------------------------------


def optimum(sweep: str, axis: str = "lr", *, store: Store | str = "results", metric: str = "loss",
            by: Sequence[str] | None = None, step: int | None = None, where: str | None = None, n_boot: int = 200,
            seed: int = 0, save: bool = True):
    """Each slice's best value of ``axis`` (``explorer.analysis.hyper``; docs/hyperparameters.md):
    the minimum of ``metric`` along the axis at ``step``, located on the log axis between grid values,
    with its 95% seed-and-draw interval; "below"/"above" the grid at an edge, never a value.

        explorer.api.optimum("lrxfer", "lr", store="results").lines()

    Args:
        by: the columns defining a slice (default: every other axis the sweep varies; any varying
            column left out must be held with ``where``). step: None reads each trial's last step.
        save: write the rows to the store (kind ``optima``).

    Returns:
        An ``Optima`` (``table``, ``lines()``, ``store_rows()``).

    Raises:
        FitError: the sweep does not vary ``axis`` (or it is not a positive number), a bad ``by`` or
            metric. SweepDataError: an unknown sweep, a step past the last. QueryError: a bad ``where``.
    """
    from .analysis.data import data_notes
    from .analysis.hyper import axis_runs, optima
    from .experiment_design.design_record import read_targets

    with store_errors():
        st, con = open_sweep(store, sweep, where)
        try:
            runs = axis_runs(con, sweep, axis, metric=metric, step=step, by=by, where=where)
            notes = data_notes(st, sweep, con=con, where=where)
            designed = read_targets(con, sweep)
        finally:
            con.close()
        result = optima(runs, n_boot=n_boot, seed=seed)
        result.sweep, result.where, result.data_notes = sweep, where, notes
        result.design_targets = designed
        if save:
            st.write_optima(sweep, result.request_id("optimum"), result.store_rows())
    return result


def transfer(sweep: str, axis: str = "lr", across: Sequence[str] = ("L",), *, store: Store | str = "results",
             metric: str = "loss", step: int | None = None, where: str | None = None, n_boot: int = 200,
             seed: int = 0, drop_edges: bool = False, save: bool = True, pairs=None):
    """Whether the optimum of ``axis`` transfers across ``across`` (L, M, or both): the law log
    axis* = c + gamma log L + delta log M (the terms of the axes asked) fitted per preset (every
    other varying column) to the optima of ``optimum``, intervals from the same bootstrap,
    verdicts, and the paired differences of the exponents between groups that share draws and
    seeds (docs/hyperparameters.md).

        explorer.api.transfer("lrxfer", "lr", across=["L"], store="results").lines()

    Args:
        drop_edges: fit a group without its slices whose optimum sits at a grid edge (they are named
            either way; without this such a group is not fitted). save: write the rows (kind ``optima``).
        pairs: the paired differences: None (each group against the first, the baseline), "all",
            or ``"A:B"`` texts naming two groups by their values (``"standard/raw:mlu/mean_field"``:
            the difference B - A).

    Returns:
        A ``Transfer`` (``fits``, ``differences``, ``lines()``, ``store_rows()``).

    Raises:
        FitError: no such axis, an ``across`` axis the sweep does not vary. As ``optimum`` otherwise.
    """
    from .analysis.hyper import transfer as fit_transfer

    found = optimum(sweep, axis, store=store, metric=metric, step=step, where=where, n_boot=n_boot, seed=seed,
                    save=False)
    result = fit_transfer(found, across, drop_edges=drop_edges, pairs=pairs)
    from .experiment_design.transfer_design import transfer_target_lines

    result.data_notes = found.data_notes + transfer_target_lines(found.design_targets, result)
    if save:
        with store_errors():
            st = open_store(store, sweep=sweep)
            st.write_optima(sweep, found.request_id("transfer-" + "-".join(result.across) + ("-dropped" if drop_edges else "")),
                            result.store_rows())
    return result


def coordcheck(sweep: str, *, store: Store | str = "results", step: int | None = None, where: str | None = None,
               n_boot: int = 200, seed: int = 0):
    """The coordinate check (docs/hyperparameters.md): per preset (and every other varying column
    but L and M), the sizes of the hidden-state update and of the residual branch's output per
    quarter of depth, and ``feature_update``, against M and L at ``step`` (None: the last), and
    each one's exponent in M and in L with 95% seed-and-draw intervals.

        explorer.api.coordcheck("coords", store="results").lines()

    Returns:
        A ``CoordCheck`` (``sizes.table()``, ``fits``, ``lines()``).

    Raises:
        SweepDataError: an unknown sweep, a bad step, rows without the coordinate-check columns.
        FitError: a sweep varying neither M nor L. QueryError: a bad ``where``.
    """
    from .analysis.data import data_notes
    from .analysis.hyper import coord_exponents, coord_sizes

    with store_errors():
        st, con = open_sweep(store, sweep, where)
        try:
            sizes = coord_sizes(con, sweep, step=step, where=where)
            notes = data_notes(st, sweep, con=con, where=where)
        finally:
            con.close()
    result = coord_exponents(sizes, n_boot=n_boot, seed=seed)
    result.data_notes = notes
    return result


def watch(sweep: str, store: Store | str | os.PathLike = "results", *, every: float = 10.0, once: bool = False,
          as_json: bool = False, html: str | os.PathLike | None = None, n_boot: int = 200, seed: int = 0,
          echo: Echo = print, live: bool | None = False):
    """Follow a sweep while it runs (``explorer watch``; ``explorer.watch``): every ``every``
    seconds its trials by status, rate and ETA, and the answer so far (each slice's optimum and the
    transfer law for a sweep with an lr or alpha axis, else the default fit), with how much each
    interval narrowed; until its last run ends (or ``once``), reading the store without a lock.

        snap = explorer.api.watch("lrwidth", "results", once=True, echo=lambda line: None)
        snap.as_dict()["answer"]

    Args:
        as_json: one JSON object per refresh (``Snapshot.as_dict``). html: also rewrite the report
            page in that folder at each refresh with new rows, reloading itself until the end.
        live: a rich live display (the CLI's default on a terminal); else plain lines to ``echo``.

    Returns:
        The last ``Snapshot``.

    Raises:
        SweepDataError: an unknown sweep. StoreAccessError: an unreachable store.
    """
    from .watch import Watcher, watch_loop

    with store_errors():
        st = open_store(store, sweep=sweep)

        def page(out, reload_s):
            return report(sweep, st, out, save=False, force=True, n_boot=n_boot, reload_s=reload_s)

        return watch_loop(Watcher(st, sweep, n_boot=n_boot, seed=seed), every=every, once=once, as_json=as_json,
                          html=html, make_report=page, echo=echo, live=live)


# --- the papers: explorer reproduce ----------------------------------------------------------


@dataclass
class Reproduction:
    """What ``reproduce`` did: the claims table, graded, and the report folder."""

    exit_code: int  # 0, or 1 when some trial failed
    claims: pd.DataFrame
    folder: Path

    def lines(self) -> list[str]:
        from .reproduce.run import markdown_table

        return markdown_table(self.claims).splitlines() + [f"report: {self.folder.resolve() / 'index.html'}"]


def reproduce(name: str, scale: str = "laptop", store: Store | str | os.PathLike = "results", *,
              address: str | None = None, out: str | os.PathLike | None = None, force: bool = False) -> Reproduction:
    """Run (or resume) one of the papers' experiments at ``scale`` and grade its claims
    (``explorer.reproduce.run.reproduce``: its errors; the report goes to ``out``, by default
    reproduce-NAME-SCALE)."""
    from .reproduce.run import reproduce as run_experiment

    with store_errors():
        code, claims, folder = run_experiment(name, scale, store=store, address=address, out=out, force=force)
    return Reproduction(exit_code=code, claims=claims, folder=folder)


def reproduce_list() -> list[str]:
    """``explorer reproduce --list``: the experiments with their trials, references and estimated
    compute per scale."""
    from .reproduce.run import list_lines

    with store_errors():
        return list_lines()


def reproduce_dry_run(name: str, scale: str = "laptop", *, address: str | None = None,
                      out: str | os.PathLike | None = None) -> list[str]:
    """``explorer reproduce NAME --dry-run``: each sweep's trials, references and estimated memory
    and time, priced by this machine's memory and CPUs with an embedded Ray (``address`` None),
    and where the report would go."""
    from .config.estimate import available_memory_bytes
    from .reproduce.run import dry_run_lines

    embedded = address is None
    return dry_run_lines(name, scale, out, available_memory_bytes() if embedded else None,
                         os.cpu_count() if embedded else None)
