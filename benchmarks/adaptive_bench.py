"""Adaptive sweep on the rates grid against the full grid: compute spent and the CIs reached.

    python benchmarks/adaptive_bench.py --full-store STORE [--store DIR] [--synthetic]

The full grid (examples/rates.toml, sweep ``rates``) must already be in --full-store, references
included: they are copied into the adaptive run's store (--store, default a fresh temporary
folder) so that the adaptive run does not recompute them (reference keys do not depend on the
sweep name). The adaptive run is ``explorer sweep examples/rates_adaptive.toml --adaptive``
(free law, targets a and b, half-width 0.1, budget 0.5, batch 8) in a subprocess, resumable:
rerunning with the same --store continues it. Prints the rounds, the compute fraction (proxy
L*M*D*seeds and the sum of the trials' wall_s, each against the full grid's), and a and b with
their 95% CIs next to the full grid's, and whether each adaptive estimate lies in the full CI.

--synthetic instead runs the loop on the same candidate grid with a fake runner writing a known
law (c1 L^-1 + c2 (D/(LM))^0.5, both exponents identifiable, no Ray): the targets are reached,
and it prints with how much of the grid's compute.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.analysis.fit import fit  # noqa: E402
from explorer.config.spec import load_spec  # noqa: E402
from explorer.analysis.sweep_data import grid_errors  # noqa: E402
from store import Store  # noqa: E402

SPEC = ROOT / "examples" / "rates_adaptive.toml"


def _fit(store: Store, sweep: str):
    con = store.connect(sweep=sweep, views=("metrics",))
    try:
        return fit(grid_errors(con, sweep), "free", n_boot=200, seed=0)
    finally:
        con.close()


def _proxy_and_wall(store: Store, sweep: str) -> tuple[float, float, int]:
    row = store.query("SELECT sum(L * M * D * n_seeds) AS proxy, sum(wall_s) AS wall, count(*) AS n FROM trials",
                      sweep=sweep).to_pylist()[0]
    return float(row["proxy"] or 0), float(row["wall"] or 0), int(row["n"])


def real(args) -> None:
    full_store = Store(args.full_store)
    target = Path(args.store or tempfile.mkdtemp(prefix="adaptive-bench-"))
    refs = target / "references"
    if not refs.exists():
        shutil.copytree(Path(args.full_store) / "references", refs)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "explorer.cli", "sweep", str(SPEC), "--adaptive", "--store",
                           str(target)], env=env, text=True, capture_output=True)
    driver_s = time.perf_counter() - started
    print(proc.stderr[-4000:] if proc.returncode else "", end="")
    print(proc.stdout)
    spec = load_spec(SPEC)
    st = Store(target)
    proxy, wall, n = _proxy_and_wall(st, spec.name)
    full_proxy, full_wall, full_n = _proxy_and_wall(full_store, "rates")
    rounds = st.query("SELECT max(round) AS r FROM rounds", sweep=spec.name).to_pylist()[0]["r"]
    print(f"store {target}; driver wall clock {driver_s:.0f} s (Ray start, fits, scheduling included)")
    print(f"rounds: {rounds + 1} (0..{rounds}); trials {n}/{full_n}")
    print(f"compute: proxy L*M*D*seeds {proxy:.4g}/{full_proxy:.4g} = {proxy / full_proxy:.1%}; "
          f"sum of trials' wall_s {wall:.1f}/{full_wall:.1f} s = {wall / full_wall:.1%}")
    adaptive, full = _fit(st, spec.name), _fit(full_store, "rates")
    for name in ("a", "b"):
        e, lo, hi = adaptive.estimate[name], adaptive.ci_low[name], adaptive.ci_high[name]
        fe, flo, fhi = full.estimate[name], full.ci_low[name], full.ci_high[name]
        inside = flo <= e <= fhi
        print(f"{name}: adaptive {e:.3f} [{lo:.3f}, {hi:.3f}] half-width {(hi - lo) / 2:.3f}; "
              f"full grid {fe:.3f} [{flo:.3f}, {fhi:.3f}] half-width {(fhi - flo) / 2:.3f}; "
              f"adaptive estimate inside the full grid's CI: {'yes' if inside else 'no'}")


def synthetic(args) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "explorer"))
    from adaptive_fake import FakeRunner, free_law

    from explorer.sweeps.adaptive import run_adaptive

    spec = load_spec(SPEC, ["adaptive.halfwidth=0.05"])
    st = Store(tempfile.mkdtemp(prefix="adaptive-synthetic-"))
    started = time.perf_counter()
    result = run_adaptive(spec, st, FakeRunner(st, free_law()))
    print(result.summary())
    print(f"(synthetic law 0.5 L^-1 + 0.3 (D/(LM))^0.5, half-width target 0.05; loop {time.perf_counter() - started:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full-store", help="a store holding the full rates grid (sweep rates) and its references")
    parser.add_argument("--store", default=None, help="the adaptive run's store (default: a new temporary folder)")
    parser.add_argument("--synthetic", action="store_true", help="the fake-runner benchmark on a known law instead")
    args = parser.parse_args()
    if args.synthetic:
        synthetic(args)
    elif not args.full_store:
        parser.error("--full-store is required (or --synthetic)")
    else:
        real(args)


if __name__ == "__main__":
    main()
