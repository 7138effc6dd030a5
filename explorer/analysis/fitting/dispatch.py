"""The one place a law becomes its data and its fitter: ``fit_sweep`` reads one slice of a sweep
with the reader the law's method names (``explorer.analysis.laws.METHODS``) and fits it with the
method's fitter.

``explorer fit`` (through ``explorer.api.fit``), the report, the adaptive loop, ``explorer
compare`` (each side's warnings), a design's pilot and the reproductions all fit through here
(a reproduction's mean of runs is the ``mean_of_runs`` method, asked for by name), so a law with a way of fitting of its own is a ``Method``
entry of the registry and the module that fits it; nothing here changes. What a reader and a
fitter must do is declared below (``SweepReader``, ``Fitter``).
"""
from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Protocol

import pandas as pd

from ...bounds import MAX_RESAMPLES
from ...errors import FitError
from ..data import held_axes, held_where, require_sweep_rows
from ..laws import DEFAULT_FORM, TERM_METHOD, method_of, parse_expression, resolve_form
from .result import FitResult
from .solver import check_single_slice


class SweepReader(Protocol):
    """Reads the frame a method fits: one slice of a sweep at one step (``grid_errors``, ``seed_grams``).

    Raises:
        SweepDataError, QueryError, FitError: no such sweep or rows, a bad ``where``, an unknown metric.
    """

    def __call__(self, con, sweep: str, metric: str = ..., step: int | None = ...,
                 where: str | None = ...) -> pd.DataFrame: ...


class Fitter(Protocol):
    """Fits a law to the frame its method's reader gives, with 95% intervals and guard rails
    (``fit``, ``explorer.analysis.decomposed.fit_decomposed``).

    Args:
        frame: one slice, as the reader returns it. form: the registry name or expression.
        n_boot: resamples of the intervals (0: none). seed: seeds them (the result is deterministic).
        where: recorded in the result. floor: "quadrature" or "none" (the reference's error).
        per_draw: also fit each problem draw alone. range_check: the pre-asymptotic checks.
    Raises:
        FitError: a law or a frame it cannot fit.
    """

    def __call__(self, frame: pd.DataFrame, form: str, *, n_boot: int = ..., seed: int = ...,
                 where: str | None = ..., floor: str = ..., per_draw: bool = ...,
                 range_check: bool = ...) -> FitResult: ...


def data_and_fitter(form: str, metric: str | None = None, terms: bool = False,
                    method: str | None = None) -> tuple[SweepReader, Fitter]:
    """The reader and the fitter of the method that fits ``form`` on ``metric`` (``terms``: the
    user's laws of both terms; ``method``: a method asked for by name; ``explorer.analysis.laws.method_of``),
    imported on this first use (the fitting stack: scipy)."""
    found = method_of(form, metric, terms, method)
    return _imported(found.data), _imported(found.fitter)


def _imported(target: str):
    """The object a ``"module:name"`` of the registry names."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def fit_sweep(con, sweep: str, form: str = DEFAULT_FORM, *, metric: str = "err_out", step: int | None = None,
              where: str | None = None, n_boot: int = 200, seed: int = 0, hold: bool = True,
              floor: str = "quadrature", per_draw: bool = True, range_check: bool = True,
              select: Callable[[pd.DataFrame], pd.DataFrame] | None = None, bias: str | None = None,
              fluct: str | None = None, cache=None, method: str | None = None, options: dict | None = None,
              rows: pd.DataFrame | None = None) -> FitResult:
    """A law fitted to one slice of a sweep: its method's reader, then its fitter (``data_and_fitter``).

    Args:
        con: a DuckDB connection with the store's views (``metrics``, ``trials``).
        form: a name of ``explorer.analysis.laws.FORMS`` or an expression over L, M, D, P.
        metric, step, where: the rows read (see ``explorer.analysis.data.grid_errors``).
        hold: when the sweep varies axes besides L, M, D (alpha, lr, ...), fit the slice at
            ``held_axes`` (their most common values) instead of failing; the slice is recorded
            in the result's ``where`` and ``held``. Problem draws are pooled, not held: select
            one with ``where="problem_seed = 2"``.
        n_boot, seed, floor, per_draw, range_check: as the ``Fitter``'s.
        select: a function of the frame read, before the fit (the adaptive loop keeps the trials
            of its rounds so far).
        bias, fluct: with the decomposed law, the user's laws of its two terms (expressions),
            fitted together from the seeds' Gram rows (``explorer.analysis.decomposed.fit_terms``).
        cache: an ``explorer.report.fit_cache.FitCache`` (its ``computed(kind, inputs, compute)``):
            a fit of the same rows and options is read back from it, not fitted again (not with ``select``).
        method: a method asked for by name rather than the law's own (``explorer.analysis.laws.TERM_METHODS``:
            ``mean_of_runs``, the mean error over every run of a point with a bootstrap over the draws).
        options: more keyword arguments of the method's fitter (``mean_of_runs``: ``residuals``, ``pool``).
        rows: the frame to fit, read already as the method's reader reads it (a design's pilot,
            each side of a comparison, a reproduction's runs with their blow-ups): nothing is
            read, no slice is held (``hold`` is not used) and ``con`` may be None.
        A term metric (``bias_out``, ``fluct_hidden``, ...) fits ``form`` to that term alone
        (``explorer.analysis.decomposed.fit_term``).
    Returns:
        The method's ``FitResult``.
    Raises:
        FitError: an unknown form, n_boot out of range, several slices, a law the grid cannot fit.
        ExpressionError: an invalid expression. SweepDataError, QueryError, NoDecompositionError:
        as the method's reader.
    """
    label, _ = resolve_form(form)  # a bad form fails before any query
    if not 0 <= n_boot <= MAX_RESAMPLES:
        raise FitError(f"n_boot must be from 0 to {MAX_RESAMPLES:,} bootstrap resamples, got {n_boot}")
    terms = bias is not None or fluct is not None
    if terms:
        _check_term_laws(label, metric, bias, fluct)
    read, fitter = data_and_fitter(label, metric, terms, method)
    if terms:
        fitter = functools.partial(fitter, bias=bias, fluct=fluct)
    if options:
        fitter = functools.partial(fitter, **options)
    if rows is not None:
        held, frame = {}, rows
    else:
        require_sweep_rows(con, sweep, where)  # a filter matching nothing says so, in the user's words
        held = held_axes(con, sweep, ("L", "M", "D"), where) if hold else {}
        if hold:
            where = held_where(held, where)
        frame = read(con, sweep, metric=metric, step=step, where=where)
    if select is not None:
        frame = select(frame)
    if rows is None:  # rows given are the caller's slice, checked as it needs
        check_single_slice(frame)
    def fit() -> FitResult:
        return fitter(frame, form, n_boot=n_boot, seed=seed, where=where, floor=floor, per_draw=per_draw,
                      range_check=range_check)

    if cache is None or select is not None:
        result = fit()
    else:  # keyed by the rows read and every option the fitter is given
        result = cache.computed("fit", {"frame": frame, "form": form, "method": label, "metric": metric, "step": step,
                                        "n_boot": n_boot, "seed": seed, "where": where, "floor": floor,
                                        "per_draw": per_draw, "range_check": range_check, "bias": bias,
                                        "fluct": fluct, **_named(method, options)}, fit)
    result.held = held
    return result


def _named(method: str | None, options: dict | None) -> dict:
    """The cache's inputs for a method asked for by name and its fitter's options (none: none, so
    that the keys of the fits cached before them stay the same)."""
    named = {"by_name": method} if method is not None else {}
    if options:
        named["options"] = {k: getattr(v, "__qualname__", v) for k, v in sorted(options.items())}
    return named


def _check_term_laws(label: str, metric: str, bias: str | None, fluct: str | None) -> None:
    """User laws of the two terms go with a law whose method fits the two terms on their own (the
    decomposed law) and an error metric; each must parse."""
    if not method_of(label).fits_terms:
        raise FitError(f"--bias and --fluct are the user's laws of the decomposed law's two terms: use them with "
                       f"--form {DEFAULT_FORM}, not {label!r}")
    if method_of(label, metric).name == TERM_METHOD:
        raise FitError(f"--bias and --fluct fit both terms of an error; {metric!r} is one term: fit it with "
                       "--form EXPR alone")
    for text in (bias, fluct):
        if text is not None:
            parse_expression(text)  # a bad law fails before any query


__all__ = ["Fitter", "SweepReader", "data_and_fitter", "fit_sweep"]
