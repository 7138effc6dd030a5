"""Analysis speed: fits with 200 bootstrap resamples on growing grids, and a whole report.

    python benchmarks/analysis_bench.py [--out DIR]

Synthetic errors from a known law (the noise of an RMS over 50 Gaussian entries, 5 seeds),
on an in-memory DuckDB: prints one line per measurement (seconds, wall clock).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import explorer.analysis.data.queries as queries  # noqa: E402
from explorer.analysis.fitting import fit  # noqa: E402
from explorer.analysis.data import grid_errors  # noqa: E402
from explorer.report.page import build_report, vega_bundle  # noqa: E402
from tests.explorer.analysis_data import connect, law_grid, law_rows  # noqa: E402

LAW = lambda L, M, D: 0.5 / L + 0.2 * math.sqrt(D / (L * M)) + 0.3 / math.sqrt(D)  # noqa: E731


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="report folder (default: a temporary one)")
    args = parser.parse_args()
    for n_L, n_M, n_D in ((6, 4, 1), (8, 8, 2), (10, 10, 4)):
        Ls = [2**i for i in range(1, n_L + 1)]
        Ms = [2**i for i in range(n_M)]
        Ds = [2 ** (i + 1) for i in range(n_D)]
        grid = law_grid(LAW, Ls=Ls, Ms=Ms, Ds=Ds)
        for form in ("theory", "free", "joint"):
            started = time.perf_counter()
            fit(grid, form, n_boot=200)
            print(f"fit {form:<6} {len(grid):>4} points, 200 resamples: {time.perf_counter() - started:6.2f} s")
    rows = law_rows(LAW, Ls=(2, 4, 8, 16, 32), Ms=(1, 4, 16, 64), Ds=(2, 8, 32), alphas=(1.0, 4.0), seeds=3,
                    sweep="bench")
    con = connect(rows)
    started = time.perf_counter()
    grid_errors(con, "bench", where="alpha = 1")
    print(f"grid_errors over {len(rows)} metric rows: {time.perf_counter() - started:6.2f} s")
    started = time.perf_counter()
    vega_bundle()
    print(f"vega bundle (once per process): {time.perf_counter() - started:6.2f} s")
    out = Path(args.out or tempfile.mkdtemp())
    asked = []  # every store query of a report build (they all go through queries.run_query)
    run_query = queries.run_query
    queries.run_query = lambda con, sql: asked.append(sql) or run_query(con, sql)
    try:
        started = time.perf_counter()
        build_report(con, "bench", out / "data", formats=())
        print(f"report without chart files: {len(asked)} store queries: {time.perf_counter() - started:6.2f} s")
    finally:
        queries.run_query = run_query
    started = time.perf_counter()
    report = build_report(con, "bench", out)
    print(f"report: {len(report.fits)} fits, {len(report.charts)} charts x PNG/SVG/HTML: "
          f"{time.perf_counter() - started:6.2f} s -> {report.path}")


if __name__ == "__main__":
    main()
