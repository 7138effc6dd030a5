"""Bias and fluctuation against depth at one width, measured with the engine and the ``points`` view.

    python benchmarks/bias_by_depth.py [--M 1024] [--D 8] [--seeds 16] [--steps 10]
                                       [--ref-depth 2048] [--ref-width 2048] [--L 4,8,16,32,64,128]

Trains every depth's seeds against one Mean ODE reference (``trials``, no Ray, no store files),
puts the metric rows under the ``points`` view (``store.points``) and prints, at the final step,
per L: err_out, bias_out with its standard error, fluct_out and the reference's own error, then
the slopes of log bias and log fluct against log L (least squares). The depth discretisation
makes the bias fall like 1/L, the sampling of units the fluctuation like (L M)^-1/2.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from store.points import create_points_view  # noqa: E402
from trials import ProblemConfig, ReferenceConfig, TrialConfig, compute_reference, train_trial  # noqa: E402


def measure(args) -> pd.DataFrame:
    base = TrialConfig(L=args.L[0], M=args.M, D=args.D, steps=args.steps, seeds=tuple(range(args.seeds)),
                       device=args.device, problem=ProblemConfig(seed=args.problem_seed))
    started = time.perf_counter()
    reference = compute_reference(ReferenceConfig(limit=base, depth=args.ref_depth, width=args.ref_width,
                                                  replicas=2, device=args.device))
    print(f"reference {args.ref_depth} x {args.ref_width}: {time.perf_counter() - started:.0f} s", flush=True)
    rows = []
    for L in args.L:
        started = time.perf_counter()
        for row in train_trial(base.replace(L=L), reference):
            rows.append(dict(row, sweep="bias_by_depth", trial_key=f"L{L}"))
        print(f"L = {L}: {time.perf_counter() - started:.0f} s", flush=True)
    con = duckdb.connect()
    con.register("measured", pd.DataFrame(rows))
    create_points_view(con, "measured")
    return con.sql(f"SELECT L, n_seeds, err_out, bias_out, bias_out_se, bias2_out, fluct_out, ref_err_out "
                   f"FROM points WHERE step = {args.steps} ORDER BY L").df()


def slope(x, y) -> float:
    """The least-squares slope of log y in log x (NaN with fewer than two points)."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0]) if len(x) >= 2 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--M", type=int, default=1024)
    parser.add_argument("--D", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--ref-depth", type=int, default=2048)
    parser.add_argument("--ref-width", type=int, default=2048)
    parser.add_argument("--problem-seed", type=int, default=1)
    parser.add_argument("--L", type=lambda s: [int(v) for v in s.split(",")], default=[4, 8, 16, 32, 64, 128])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    table = measure(args)
    with pd.option_context("display.width", 200, "display.float_format", "{:.3e}".format):
        print(table.to_string(index=False))
    positive = table[table["bias2_out"] > 0]
    print(f"slope of log bias_out in log L: {slope(positive['L'], positive['bias_out']):.3f} "
          f"(L = {', '.join(map(str, positive['L']))})")
    print(f"slope of log fluct_out in log L: {slope(table['L'], table['fluct_out']):.3f}")


if __name__ == "__main__":
    main()
