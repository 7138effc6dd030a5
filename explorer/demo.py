"""``explorer demo``: a small built-in sweep end to end, then its analysis and report.

The sweep: depth L in 4..32 times hidden width M in 1..1024 at D = 8, four problem draws (data
and embeddings) of four seeds each, 10 GD steps, each draw compared with its own Mean ODE
reference of 512 x 256 particles (two replicas). It is sized so that the decomposed fit measures
both of the theory's exponents: the depth exponent a needs the bias (the seeds' mean error)
resolved above the seeds' noise at two depths or more of a column, which only M = 256 and 1024
give at L = 4..16, and an interval over several draws (with one draw it covers the seeds' noise
only; four give t(3)); the width exponent b comes from the seeds' spread at every point. L starts
at 4: at L = 2 with one unit per layer a network is far outside the ODE picture (its error grows
along training). It takes about a minute on a 2-core CPU with an embedded Ray (the README gives the
measured times); rerunning reuses the trials already in the store.
The sweep's end compacts its metric files into one (rows unchanged), so that the report and every
rerun read one file. After the sweep it prints the final err_out per (L, M) from the
store, writes the report (its fits kept in the user's fit cache: a rerun reads them back), and
ends with the decomposed fit, led by a and b against the theory's 1 and 1/2 (each with its 95%
CI, or why the grid does not measure it), then the law, its constants and warnings, and the path
of the report.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable

from .analysis.laws import DEFAULT_FORM
from .formatting import shell_word
from .report.fit_cache import FitCache
from .report.page import write_report
from .store_access import open_store
from .sweeps import sweep

DEMO_SPEC = {
    "name": "demo",
    "problem": {"d_in": 5, "d_out": 5, "samples": 10},
    "model": {"activation": "tanh", "preset": "mlu"},
    "train": {"steps": 10, "lr": 1.0, "dtype": "float64"},
    "reference": {"kind": "mean_ode", "depth": 512, "width": 256, "replicas": 2},
    "grid": {"L": [4, 8, 16, 32], "M": [1, 4, 16, 64, 256, 1024], "D": [8], "alpha": [1.0],
             "problem_seeds": [1, 2, 3, 4], "seeds": 4},
    "resources": {"cpus_per_trial": 1, "gpus_per_trial": 0},
}


def error_table(store, sweep: str = "demo") -> list[str]:
    """Lines of a text table: RMS over seeds of err_out at the last step, L down, M across.

    The numbers are ``explorer.analysis.data.grid_errors``'s (the errors the fits use); axes other than
    L and M that the sweep varies are held at ``held_axes`` values, said in the title line.
    """
    from .errors import MixedReferencesError, SweepDataError
    from .analysis.data import grid_errors, held_axes
    from .analysis.data import held_where

    con = store.connect(sweep=sweep, read_only=True)
    try:
        held = held_axes(con, sweep, ("L", "M"))
        grid = grid_errors(con, sweep, "err_out", where=held_where(held))
    except MixedReferencesError:
        raise
    except SweepDataError:  # no trial ended ok (yet)
        return []
    finally:
        con.close()
    cells = {(int(L), int(M)): float(e) for L, M, e in zip(grid["L"], grid["M"], grid["err"])}
    Ls = sorted({L for L, _ in cells})
    Ms = sorted({M for _, M in cells})
    at = "".join(f", {k} = {v}" for k, v in held.items())
    lines = [f"err_out at the last step (RMS over seeds); rows L, columns M{at}",
             "L \\ M " + "".join(f"{M:>10}" for M in Ms)]
    for L in Ls:
        row = "".join(f"{cells[(L, M)]:>10.2e}" if (L, M) in cells and math.isfinite(cells[(L, M)]) else f"{'-':>10}"
                      for M in Ms)
        lines.append(f"{L:>5} " + row)
    return lines + [f"note: {note}" for note in grid.attrs.get("notes", ())]


# The theory's exponents of the decomposed law (docs/model.md section 5): bias ~ L^-a, fluctuation
# ~ (D/(LM))^b; the demo leads its fit with them.
THEORY_EXPONENTS = {"a": (1.0, "1"), "b": (0.5, "1/2")}
EXPONENT_NAMES = {"a": "depth exponent a (bias ~ L^-a)", "b": "width exponent b (fluctuation ~ (D/(LM))^b)"}


def exponent_lines(result) -> list[str]:
    """One line per theory exponent: its estimate and 95% CI against the theory's value, or "not
    measured" with the fit's reason (a parameter the fit left out, or an interval that measures
    nothing: ``explorer.analysis.fitting.unmeasured_in``)."""
    from .analysis.fitting import unmeasured_in
    from .formatting import fmt

    lines = []
    for name, (theory, said) in THEORY_EXPONENTS.items():
        why = result.unidentified.get(name) or unmeasured_in(result, name)
        if why:  # the fit's reason may already open with "not measured on this grid: ..."
            said_why = why.removeprefix("not measured").lstrip(" :")
            lines.append(f"{EXPONENT_NAMES[name]}: not measured ({said_why})")
            continue
        est, lo, hi = (float(d[name]) for d in (result.estimate, result.ci_low, result.ci_high))
        holds = "holds" if lo <= theory <= hi else "leaves out"
        lines.append(f"{EXPONENT_NAMES[name]} = {fmt(est)} [{fmt(lo)}, {fmt(hi)}]: the 95% CI {holds} "
                     f"the theory's {said}")
    return lines


def fit_lines(store, sweep: str = "demo", form: str = DEFAULT_FORM, n_boot: int = 200, cache=None) -> list[str]:
    """The fit of ``form`` to the sweep's final err_out: the theory's exponents a and b first
    (``exponent_lines``), then the fit as ``explorer fit`` prints it (law, constants with 95% CIs,
    warnings); or one line saying why there is none. ``cache``: a ``FitCache`` (the report's, whose
    fit of the same rows is then read back, not fitted a second time)."""
    from .errors import UsageError
    from .analysis.fitting import fit_sweep, format_table

    con = store.connect(sweep=sweep, read_only=True)
    try:
        result = fit_sweep(con, sweep, form, n_boot=n_boot, cache=cache)
    except UsageError as exc:
        return [f"fit: none ({exc})"]
    finally:
        con.close()
    return exponent_lines(result) + format_table(result).rstrip("\n").splitlines()


def run_demo(store="results", out: str | os.PathLike = "report", address: str | None = None,
             echo: Callable[[str], object] = print) -> int:
    """Run the demo sweep, print its summary and error table, write its report, then print the
    fit (law, constants with CIs, warnings) and where the report is, each line through ``echo``.

    Returns:
        The sweep's exit code (0 when every trial ended ok or diverged; 130/143 when interrupted).
    """
    st = open_store(store)
    result = sweep(DEMO_SPEC, store=st, address=address)
    echo(result.summary())
    if result.interrupted is not None:
        return result.exit_code
    for line in error_table(st, DEMO_SPEC["name"]):
        echo(line)
    cache = FitCache()  # the report's fits, read back for the lines printed
    where = write_report(sweep=DEMO_SPEC["name"], store=st, out=out, cache=cache)
    for line in fit_lines(st, DEMO_SPEC["name"], cache=cache):
        echo(line)
    echo(f"report: {shell_word(os.path.join(os.fspath(where), 'index.html'))}")
    return result.exit_code
