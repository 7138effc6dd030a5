"""Whether a hyperparameter's optimum transfers across depth and width (``explorer transfer``):
the law log axis* = c + gamma log L (+ delta log M) fitted to the slices' optima, per preset (per
every other slice column), with intervals from the same seed-and-draw bootstrap as the optima.

Each resample locates every slice's minimum on the same draws and seed indices and refits the
law, so the law's interval carries the optima's joint noise; two groups (presets, scalings) read
on the same draws and seeds give a paired difference of their exponents from the same resamples
(as ``explorer compare`` pairs exponents): by default each group against one baseline group (the
first), or the pairs asked (``--pairs A:B``, ``choose_pairs``). The exponent of L is gamma, that
of M delta, whichever is asked first (``EXPONENT_NAMES``). Verdicts: "transfers across L" when gamma's interval lies
inside +-``TRANSFER_BAND`` (decades per decade), "drifts as L^gamma" when it excludes 0, "not
measured" otherwise. A group with a slice whose optimum sits at a grid edge is not fitted unless
asked (``drop_edges``): the slices are named, and a fit without them is a fit of other slices.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...errors import FitError
from ...formatting import fmt
from ..data import plain_value
from .optimum import Optima
from .resample import interval

TRANSFER_BAND = 0.1  # |gamma| below this, interval and all, is transfer
EXPONENT_NAMES = {"L": "gamma", "M": "delta"}  # the exponent of each --across axis, in rows and text


def exponent_name(axis: str) -> str:
    """gamma for L, delta for M (docs/hyperparameters.md)."""
    return EXPONENT_NAMES[axis]


@dataclass
class GroupFit:
    """The law fitted to one group's slices: estimates and intervals per parameter, the replicates."""

    label: str
    values: dict  # the group's columns -> value
    slices: list  # indices of the slices fitted
    left_out: list  # indices of the slices left out (an edge)
    parameters: tuple
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    outer: np.ndarray  # (replicates, parameters); NaN where some slice was not measured
    inner: np.ndarray
    cells: frozenset  # the (draw, seed) cells its runs hold: pairing needs the same
    note: str = ""

    @property
    def measured(self) -> bool:
        return bool(np.isfinite(self.estimate).all())


@dataclass
class Transfer:
    """The transfer law of every group, its verdicts and the paired differences between groups."""

    optima: Optima
    across: tuple
    fits: list
    differences: pd.DataFrame
    drop_edges: bool = False
    notes: list = field(default_factory=list)

    def verdict(self, fit: GroupFit, k: int) -> tuple[str, str]:
        """(stored verdict, words) of exponent k of a group."""
        name, axis = self.optima_parameter(k)
        lo, hi, est = fit.low[k + 1], fit.high[k + 1], fit.estimate[k + 1]
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return "not measured", "not measured"
        if -TRANSFER_BAND <= lo and hi <= TRANSFER_BAND:
            return "transfers", f"transfers across {axis}"
        if lo > 0 or hi < 0:
            return "drifts", f"drifts as {axis}^{fmt(est, '.2g')}"
        return "not measured", f"not measured (the interval holds 0 and reaches past +-{TRANSFER_BAND})"

    def optima_parameter(self, k: int) -> tuple[str, str]:
        return exponent_name(self.across[k]), self.across[k]

    def lines(self) -> list[str]:
        """What ``explorer transfer`` prints: the law, a line per group and exponent, the paired
        differences, what was left out."""
        axis = self.optima.runs.axis
        law = f"log {axis}* = c + " + " + ".join(f"{exponent_name(a)} log {a}" for a in self.across)
        out = [f"transfer of {axis} for {self.optima.runs.metric}: {law}, per "
               f"{', '.join(self.group_columns) or 'sweep'} (95% intervals: {self.optima.n_boot} resamples of "
               f"draws, then seeds; transfer: the interval inside +-{TRANSFER_BAND})"]
        for fit in self.fits:
            for k in range(len(self.across)):
                name, _ = self.optima_parameter(k)
                _, words = self.verdict(fit, k)
                value = (f"{name} = {fmt(fit.estimate[k + 1], '.3g')} [{fmt(fit.low[k + 1], '.3g')}, "
                         f"{fmt(fit.high[k + 1], '.3g')}]" if fit.measured else f"{name} not fitted")
                out.append(f"  {fit.label}: {value}: {words}")
            if fit.note:
                out.append(f"    {fit.note}")
        for _, row in self.differences.iterrows():
            out.append(f"  paired difference {row['parameter']} ({row['b']}) - ({row['a']}): "
                       f"{fmt(row['difference'], '.3g')} [{fmt(row['ci_low'], '.3g')}, {fmt(row['ci_high'], '.3g')}]"
                       f" on the same draws and seeds: {row['verdict']}")
        out += [f"note: {line}" for line in self.optima.runs.notes + self.notes]
        return out

    @property
    def group_columns(self) -> list[str]:
        return [c for c in self.optima.slice_columns if c not in self.across]

    def store_rows(self) -> list[dict]:
        """The rows of kind ``optima``: one per group and parameter (c, gamma, delta)."""
        runs, table = self.optima.runs, self.optima.table
        out = []
        for fit in self.fits:
            fitted = table.iloc[fit.slices] if fit.slices else table.iloc[fit.left_out]
            for p, name in enumerate(fit.parameters):
                verdict = self.verdict(fit, p - 1)[0] if p else None
                record = {c: plain_value(v) for c, v in fit.values.items()}
                record.update(axis=runs.axis, metric=runs.metric, step=runs.step, parameter=name,
                              across=",".join(self.across), optimum=float(fit.estimate[p]),
                              ci_low=_or_none(fit.low[p]), ci_high=_or_none(fit.high[p]), edge=None,
                              grid_low=float(fitted["grid_low"].min()), grid_high=float(fitted["grid_high"].max()),
                              verdict=verdict, n_draws=int(fitted["n_draws"].max()),
                              n_runs=int(fitted["n_runs"].sum()), n_diverged=int(fitted["n_diverged"].sum()),
                              n_boot=int(self.optima.n_boot), note=fit.note)
                out.append(record)
        return out


def _or_none(value) -> float | None:
    return float(value) if np.isfinite(value) else None


def _design(slices: pd.DataFrame, across) -> np.ndarray:
    return np.column_stack([np.ones(len(slices))] + [np.log(slices[a].astype(float).to_numpy()) for a in across])


def _edge_label(row, columns, axis) -> str:
    where = "below " + fmt(row["grid_low"], "g") if row["edge"] == "below" else "above " + fmt(row["grid_high"], "g")
    return ", ".join(f"{c}={fmt(plain_value(row[c]), 'g')}" for c in columns) + f" ({axis}* {where})"


def fit_group(optima: Optima, label: str, values: dict, members: list, across, drop_edges: bool) -> GroupFit:
    """The law fitted to one group's slices (``members``: their indices in ``optima.table``)."""
    table, runs = optima.table, optima.runs
    names = ("c",) + tuple(exponent_name(a) for a in across)
    edges = [j for j in members if isinstance(table.iloc[j]["edge"], str)]
    unmeasured = [j for j in members if j not in edges and not np.isfinite(float(table.iloc[j]["optimum"]))]
    kept = [j for j in members if j not in edges and j not in unmeasured]
    cells = frozenset(map(tuple, np.argwhere((~np.isnan(runs.values[members])).any(axis=(0, 3)))))
    nan = np.full(len(names), np.nan)
    empty = GroupFit(label, values, [], members, names, nan, nan, nan, np.empty((0, len(names))),
                     np.empty((0, len(names))), cells)
    notes = []
    if edges:
        listed = "; ".join(_edge_label(table.iloc[j], across, runs.axis) for j in edges)
        if not drop_edges:
            empty.note = (f"not fitted: the optimum sits at a grid edge for {listed}; --drop-edges fits "
                          "the other slices")
            return empty
        notes.append(f"left out at a grid edge: {listed}")
    if unmeasured:
        notes.append(f"{len(unmeasured)} slice(s) without a finite level left out")
    design = _design(table.iloc[kept], across)
    if len(kept) < len(names) or np.linalg.matrix_rank(design) < len(names):
        empty.note = "; ".join(notes + [f"not fitted: {len(kept)} slice(s) cannot fix {len(names)} parameters"])
        return empty
    pinv = np.linalg.pinv(design)
    observed = np.log(table.iloc[kept]["optimum"].astype(float).to_numpy())
    estimate = pinv @ observed
    # a resample where some slice has no finite level gives NaN parameters (``interval`` drops them)
    reps = [replicates[kept].T @ pinv.T for replicates in (optima.outer, optima.inner)]
    n_seeds = int(max(runs.seeds_per_draw().max(), 1))
    low, high = interval(estimate, reps[0], reps[1], runs.n_draws, n_seeds)
    return GroupFit(label, values, kept, edges + unmeasured, names, estimate, low, high, reps[0], reps[1], cells,
                    "; ".join(notes))


def _group_words(fit: GroupFit) -> set[str]:
    """The ways a group can be named in ``--pairs``: its label, its values joined by "/", and each
    of those with column=value parts (``mlu/mean_field``, ``preset=mlu/lr_scaling=mean_field``)."""
    values = [fmt(v, "g") for v in fit.values.values()]
    named = [f"{c}={v}" for c, v in zip(fit.values, values)]
    return {fit.label, "/".join(values), "/".join(named), ",".join(named), ", ".join(named)}


def _find_group(word: str, fits: list, pair: str) -> GroupFit:
    """The group ``word`` names: a whole name, else the one group whose values include every
    "/"-separated part of it (FitError: none or several, with the groups and a "did you mean")."""
    word = word.strip()
    exact = [f for f in fits if word in _group_words(f)]
    if len(exact) == 1:
        return exact[0]
    parts = [p.strip() for p in word.split("/") if p.strip()]
    loose = [f for f in fits if parts and all(p in {fmt(v, "g") for v in f.values.values()}
                                               | {f"{c}={fmt(v, 'g')}" for c, v in f.values.items()} for p in parts)]
    if len(loose) == 1:
        return loose[0]
    names = ["/".join(fmt(v, "g") for v in f.values.values()) or "all" for f in fits]
    guess = difflib.get_close_matches(word, names, n=1, cutoff=0.5)
    hint = f"; did you mean {guess[0]!r}?" if guess else ""
    what = "names several groups" if len(loose) > 1 else "names no group"
    raise FitError(f"--pairs {pair}: {word!r} {what}; the groups are {', '.join(names)}{hint}")


def choose_pairs(fits: list, pairs=None) -> list[tuple[GroupFit, GroupFit]]:
    """The (a, b) pairs whose difference b - a is read: ``pairs`` None: each group against the
    first (the baseline); ``"all"``: every two groups; else ``A:B`` texts (or (A, B) tuples)
    naming the groups as ``_find_group`` reads them.

    Raises:
        FitError: a pair that is not ``A:B``, or names no group, several, or the same one twice.
    """
    if pairs is None:
        return [(fits[0], b) for b in fits[1:]] if fits else []
    if pairs == "all" or pairs == ["all"] or pairs == ("all",):
        return [(a, b) for i, a in enumerate(fits) for b in fits[i + 1:]]
    chosen = []
    for pair in ([pairs] if isinstance(pairs, str) else pairs):
        words = pair.split(":") if isinstance(pair, str) else list(pair)
        if len(words) != 2 or not all(str(w).strip() for w in words):
            raise FitError(f"--pairs {pair}: write a pair as A:B (two groups, e.g. standard/raw:mlu/mean_field)")
        a, b = (_find_group(str(w), fits, pair if isinstance(pair, str) else ":".join(map(str, pair))) for w in words)
        if a is b:
            raise FitError(f"--pairs {pair}: names the group {a.label} twice")
        chosen.append((a, b))
    return chosen


def paired_differences(fits: list, across, n_draws: int, n_seeds: int, pairs=None) -> pd.DataFrame:
    """The difference of each exponent between the groups of each pair (``choose_pairs``: by
    default each group against the first), read on the same draws and seeds, from the same
    resamples (replicate by replicate). A pair with a group not measured, or not read on the same
    draws and seeds, has no row."""
    rows = []
    for a, b in choose_pairs(fits, pairs):
        if not (a.measured and b.measured) or a.cells != b.cells:  # nothing pairs
            continue
        for k, axis in enumerate(across):
            d = b.estimate[k + 1] - a.estimate[k + 1]
            low, high = interval(np.array([d]), (b.outer - a.outer)[:, [k + 1]], (b.inner - a.inner)[:, [k + 1]],
                                 n_draws, n_seeds)
            verdict = "differs" if low[0] > 0 or high[0] < 0 else "no difference measured"
            rows.append({"a": a.label, "b": b.label, "parameter": exponent_name(axis), "difference": d,
                         "ci_low": low[0], "ci_high": high[0], "verdict": verdict})
    return pd.DataFrame(rows, columns=["a", "b", "parameter", "difference", "ci_low", "ci_high", "verdict"])


def transfer(optima: Optima, across=("L",), drop_edges: bool = False, pairs=None) -> Transfer:
    """Fit the transfer law per group of slices.

    Args:
        pairs: the paired differences to read (``choose_pairs``): None, each group against the
            first; "all"; or ``A:B`` texts.

    Raises:
        FitError: an ``across`` axis that is not L or M, or not a slice column (the sweep does not
            vary it), or more than two of them; a ``pairs`` entry that names no group.
    """
    across = tuple(across)
    if not across or len(across) > len(EXPONENT_NAMES) or len(set(across)) != len(across) \
            or any(a not in EXPONENT_NAMES for a in across):
        raise FitError(f"--across takes one or two distinct axes (L, M); got {', '.join(across) or 'none'}")
    missing = [a for a in across if a not in optima.slice_columns]
    if missing:
        raise FitError(f"--across {missing[0]}: the slices of {optima.runs.axis} do not vary {missing[0]} "
                       f"(they vary {', '.join(optima.slice_columns) or 'nothing'})")
    table = optima.table
    groups = [c for c in optima.slice_columns if c not in across]
    keys = [tuple(plain_value(v) for v in row) for row in table[groups].itertuples(index=False)] if groups \
        else [()] * len(table)
    fits = []
    for key in dict.fromkeys(keys):
        members = [j for j, k in enumerate(keys) if k == key]
        values = dict(zip(groups, key))
        label = ", ".join(f"{c}={fmt(v, 'g')}" for c, v in values.items()) or "all"
        fits.append(fit_group(optima, label, values, members, across, drop_edges))
    n_seeds = int(max(optima.runs.seeds_per_draw().max(), 1))
    differences = paired_differences(fits, across, optima.runs.n_draws, n_seeds, pairs)
    return Transfer(optima, across, fits, differences, drop_edges)


__all__ = ["EXPONENT_NAMES", "TRANSFER_BAND", "GroupFit", "Transfer", "choose_pairs", "exponent_name", "fit_group",
           "paired_differences", "transfer"]
