"""Predicted against achieved half-widths of designed sweeps (docs/design.md, "Calibration").

For each designed sweep of a store: the half-widths ``explorer design`` predicts for its grid,
seeds and draws from the pilot, and those its decomposed fit gives. One-draw sweeps are predicted
from the seeds alone; sweeps over several draws add the spread of the exponents between draws,
measured from the pilot's per-draw fits where it has two draws or more, else the documented
default (``DEFAULT_DRAW_SPREAD``): the "spread" column says which.

    python benchmarks/design_calibration.py --pilot demo --pilot-store results \\
        --store results demo_design demo_g4 ...
"""
from __future__ import annotations

import argparse

import numpy as np

from explorer.experiment_design.design_model import pilot_model
from explorer.experiment_design.design_search import draw_spread, grid_terms, halfwidths
from explorer.analysis.fitting import fit_sweep
from store import Store


def measured(store: Store, sweep: str) -> dict:
    """The designed sweep's grid, seeds, draws and its fit's half-widths of a and b."""
    con = store.connect(sweep=sweep, read_only=True)
    try:
        shape = con.execute(f"SELECT list(DISTINCT L), list(DISTINCT M), list(DISTINCT D), max(n_seeds), "
                            f"count(DISTINCT problem_seed), sum(wall_s) FROM trials WHERE sweep = '{sweep}'").fetchall()[0]
        result = fit_sweep(con, sweep, n_boot=200)
    finally:
        con.close()
    Ls, Ms, Ds, seeds, draws, wall = shape
    half = {n: (result.ci_high[n] - result.ci_low[n]) / 2 for n in ("a", "b")}
    return {"Ls": tuple(sorted(Ls)), "Ms": tuple(sorted(Ms)), "D": int(Ds[0]), "seeds": int(seeds),
            "draws": int(draws), "trials_wall_s": float(wall), "achieved": half,
            "estimate": {n: result.estimate[n] for n in ("a", "b")},
            "ci": {n: (result.ci_low[n], result.ci_high[n]) for n in ("a", "b")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pilot", required=True)
    parser.add_argument("--pilot-store", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("sweeps", nargs="+")
    args = parser.parse_args()
    model = pilot_model(Store(args.pilot_store), args.pilot)
    model.tau, model.tau_measured = draw_spread(model)
    print("| sweep | grid | seeds x draws | spread between draws | a: estimate [95% CI] | a predicted | a achieved "
          "| ratio | b: estimate [95% CI] | b predicted | b achieved | ratio | trials' wall |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for sweep in args.sweeps:
        m = measured(Store(args.store), sweep)
        terms = grid_terms(model, m["Ls"], m["Ms"], m["D"], m["seeds"])
        predicted = halfwidths(model, terms, m["seeds"], m["draws"])[0]
        cells = []
        for n in ("a", "b"):
            lo, hi = m["ci"][n]
            ratio = m["achieved"][n] / predicted[n] if np.isfinite(predicted[n]) else float("nan")
            cells += [f"{m['estimate'][n]:.3f} [{lo:.3f}, {hi:.3f}]", f"{predicted[n]:.3g}",
                      f"{m['achieved'][n]:.3g}", f"{ratio:.2f}"]
        grid = f"L {m['Ls'][0]}..{m['Ls'][-1]} x M {m['Ms'][0]}..{m['Ms'][-1]}"
        spread = "none (one draw)" if m["draws"] == 1 else ", ".join(
            f"{n} {model.tau[n]:.3g} ({'measured' if model.tau_measured[n] else 'default'})" for n in ("a", "b"))
        print(f"| {sweep} | {grid} | {m['seeds']} x {m['draws']} | {spread} | " + " | ".join(cells)
              + f" | {m['trials_wall_s']:.0f} s |")


if __name__ == "__main__":
    main()
