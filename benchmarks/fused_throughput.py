"""Throughput of fused points: the points of one shape trained as one program (trials.train_fused).

    python benchmarks/fused_throughput.py [--device cpu|cuda] [--threads 1] [--clock cpu|wall]
        [--dtypes float64 float32] [--shapes 0 1] [--points 1 2 4 8] [--large-points 1 2 4]
        [--steps 10] [--seeds 4] [--vary alpha|lr|draw] [--repeats 2] [--json out.json]

Three tables, every time in one process, each ratio from timings taken back to back:

1. Points per second against points per pack: ``train_fused`` of P points (whole trials: draw,
   K + 1 passes with their metrics, K steps, rows; synthetic references of the right shapes, as
   benchmarks/trials_step.py --whole) at the small shape (256, 256, 32) for ``--points`` and the
   large one (64, 1024, 256) for ``--large-points`` (its points hold a GB each in float64), in
   both of its modes: batched (one batch axis) and one after another (one draw).
2. The issue's cost target: a fused whole trial's cost per point (8 points, K = ``--steps``)
   against K bare steps of one point alone (``ResNet.step`` of its seeds; target <= 1.3), in
   both modes, and the same for one point trained alone (``train_trial``) for comparison.
3. Seed-steps per second of 8 fused points against the naive per-layer numpy loop (one seed at
   a time, benchmarks/trials_step.py): the pack's batched bare training step (forward, backward
   sweep, update of all 8 x seeds, no metrics), one point's bare step alone, and whole trials
   (with metrics) in both modes; targets >= 3x at (256, 256, 32) and >= 2x at (64, 1024, 256).

The points of a pack differ by ``--vary``: alpha (2^0 .. 2^3, a phase diagram's row: every
point its own residual scale and step size, so the scaled products run point by point), lr
(2^-2 .. 2^1 at alpha = 1: one residual scale, the update point by point) or draw (problem seeds
1..P: everything batched). Torch runs ``--threads`` threads (default 1, a sweep's worker);
``--clock cpu`` times by the process's CPU time (a one-thread process on a shared machine), the
default ``wall`` by the wall clock (GPU: wall, with the device synchronised).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import torch

from trials import ProblemConfig, TrialConfig, train_fused, train_trial
from trials.model import ResNet
from trials_step import check_device, naive_seed_step, sync, synthetic_reference

SMALL, LARGE = (256, 256, 32), (64, 1024, 256)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def pack(shape, dtype: str, device: str, steps: int, seeds: int, points: int, vary: str) -> list[TrialConfig]:
    """``points`` configurations of one shape that differ as ``--vary`` says (module docstring)."""
    L, M, D = shape
    base = TrialConfig(L=L, M=M, D=D, dtype=dtype, device=device, steps=steps, seeds=tuple(range(seeds)),
                       problem=ProblemConfig(d_in=5, d_out=5, samples=10, seed=1))
    spread = np.linspace(0.0, 1.0, points) if points > 1 else np.zeros(1)
    if vary == "alpha":
        return [base.replace(alpha=float(2 ** (3 * t))) for t in spread]
    if vary == "lr":
        return [base.replace(lr=float(2 ** (3 * t - 2))) for t in spread]
    return [base.replace(problem=ProblemConfig(d_in=5, d_out=5, samples=10, seed=1 + i)) for i in range(points)]


def timed(fn, clock, device) -> float:
    sync(device)
    start = clock()
    fn()
    sync(device)
    return clock() - start


def fused_trials(configs, batched: bool):
    """A function running ``train_fused`` on the pack against synthetic references, first run
    once here, checking that every point ran its K steps (a diverged point would do less work)."""
    refs = [synthetic_reference(c) for c in configs]
    rows = train_fused(configs, refs, batched=batched)
    full = [len(c.seeds) * (c.steps + 1) for c in configs]
    if [len(r) for r in rows] != full:
        raise SystemExit(f"a point of the pack diverged ({[len(r) for r in rows]} rows, {full} expected): choose other points")
    return lambda: train_fused(configs, refs, batched=batched)


def fused_trial_s(configs, clock, device, repeats: int, batched: bool) -> float:
    """Fastest of ``repeats`` fused trials of the pack, after one untimed."""
    run = fused_trials(configs, batched)
    return min(timed(run, clock, device) for _ in range(repeats))


def bare_steps(configs):
    """A function taking one bare step (forward, backward, update, no metrics) of the pack as one
    network (one config: that point alone), first taken once here."""
    net = ResNet.fused(configs) if len(configs) > 1 else ResNet(configs[0])
    step = lambda: net.step(net.forward())
    step()
    return step


def bare_step_s(configs, clock, device, repeats: int) -> float:
    step = bare_steps(configs)
    return min(timed(step, clock, device) for _ in range(repeats))


def heading(title: str, columns: list[str]) -> None:
    """A table's title and header, after the shape and dtype columns every table starts with."""
    columns = ["L", "M", "D", "dtype", *columns]
    print(f"\n## {title}\n\n| {' | '.join(columns)} |\n|{'---|' * len(columns)}")


def points_per_second(args, clock, device) -> list[dict]:
    heading("Points per second against points per pack (whole fused trials)",
            ["points per pack", "batched: points per second", "x one point alone", "one after another: points per second",
             "x one point alone"])
    results = []
    for shape, counts in ((SMALL, args.points), (LARGE, args.large_points)):
        if shape not in args.shape_list:
            continue
        for dtype in args.dtypes:
            alone = None
            for points in counts:
                configs = pack(shape, dtype, device.type, args.steps, args.seeds, points, args.vary)
                rates = [points / fused_trial_s(configs, clock, device, args.repeats, batched) for batched in (True, False)]
                alone = rates[0] if points == 1 else alone  # a pack of one is one point alone, either mode
                print(f"| {' | '.join(map(str, shape))} | {dtype} | {points} | {rates[0]:.3f} | {rates[0] / alone:.2f} | "
                      f"{rates[1]:.3f} | {rates[1] / alone:.2f} |", flush=True)
                results.append({"table": "points_per_second", "shape": shape, "dtype": dtype, "points": points,
                                "batched_points_per_s": rates[0], "sequential_points_per_s": rates[1]})
    return results


def cost_per_point(args, clock, device) -> list[dict]:
    heading(f"Fused whole-trial cost per point against K = {args.steps} bare steps of one point, 8 points",
            ["bare step, one point", "batched trial per point / K bare steps", "one after another, per point / K bare steps",
             "one trial alone / K bare steps"])
    results = []
    for dtype in args.dtypes:
        configs = pack(SMALL, dtype, device.type, args.steps, args.seeds, 8, args.vary)
        ref = synthetic_reference(configs[0])
        step, batched, sequential = bare_steps(configs[:1]), fused_trials(configs, True), fused_trials(configs, False)
        alone = lambda: train_trial(configs[0], ref)
        rounds = []
        for _ in range(args.repeats):  # the four timed back to back: each round's ratios see one load
            bare = timed(lambda: [step() for _ in range(args.steps)], clock, device) / args.steps
            batched_s = timed(batched, clock, device) / len(configs)
            sequential_s = timed(sequential, clock, device) / len(configs)
            alone_s = timed(alone, clock, device)
            rounds.append((bare, *(s / (args.steps * bare) for s in (batched_s, sequential_s, alone_s))))
        bare, batched_ratio, sequential_ratio, alone_ratio = (float(np.median(x)) for x in zip(*rounds))
        print(f"| {' | '.join(map(str, SMALL))} | {dtype} | {bare * 1e3:.1f} ms | {batched_ratio:.2f} | {sequential_ratio:.2f} | "
              f"{alone_ratio:.2f} |", flush=True)
        results.append({"table": "cost_per_point", "shape": SMALL, "dtype": dtype, "bare_step_s": bare,
                        "batched_per_point_in_bare_steps": batched_ratio, "sequential_per_point_in_bare_steps": sequential_ratio,
                        "alone_in_bare_steps": alone_ratio})
    return results


def against_naive(args, clock, device) -> list[dict]:
    heading("8 fused points against the naive per-layer numpy loop, seed-steps per second",
            ["naive", "batched bare step", "x naive", "one point's bare step", "x naive", "batched whole trials", "x naive",
             "one after another, whole trials", "x naive"])
    results = []
    for shape in args.shape_list:
        seeds = args.seeds if shape == SMALL else args.large_seeds
        for dtype in args.dtypes:
            configs = pack(shape, dtype, device.type, args.steps, seeds, 8, args.vary)
            seed_steps = 8 * seeds
            naive = 1.0 / naive_seed_step(*shape, 10, np.dtype(dtype), max(1, args.repeats))
            rates = [seed_steps / bare_step_s(configs, clock, device, args.repeats),
                     seeds / bare_step_s(configs[:1], clock, device, args.repeats),
                     *(seed_steps * args.steps / fused_trial_s(configs, clock, device, 1, batched) for batched in (True, False))]
            print(f"| {' | '.join(map(str, shape))} | {dtype} | {naive:.1f} | "
                  + " | ".join(f"{rate:.1f} | {rate / naive:.2f}" for rate in rates) + " |", flush=True)
            results.append({"table": "against_naive", "shape": shape, "dtype": dtype, "seeds_per_point": seeds,
                            "naive_seed_steps_per_s": naive, "batched_bare_seed_steps_per_s": rates[0],
                            "alone_bare_seed_steps_per_s": rates[1], "batched_whole_seed_steps_per_s": rates[2],
                            "sequential_whole_seed_steps_per_s": rates[3]})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=1, help="torch's intra-op threads (a sweep's worker: 1)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"], choices=["float64", "float32"])
    parser.add_argument("--shapes", type=int, nargs="+", default=[0, 1], help="0: (256, 256, 32), 1: (64, 1024, 256)")
    parser.add_argument("--points", type=int, nargs="+", default=[1, 2, 4, 8], help="pack sizes at the small shape")
    parser.add_argument("--large-points", type=int, nargs="+", default=[1, 2, 4], help="pack sizes at the large shape")
    parser.add_argument("--steps", type=int, default=10, help="K of the whole trials")
    parser.add_argument("--seeds", type=int, default=4, help="seeds per point")
    parser.add_argument("--large-seeds", type=int, default=2, help="seeds per point of the 8-point large pack (table 3)")
    parser.add_argument("--vary", choices=["alpha", "lr", "draw"], default="alpha")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tables", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    check_device(parser, args.device, args.clock)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    args.shape_list = [(SMALL, LARGE)[i] for i in args.shapes]
    clock = CLOCKS[args.clock]
    print(f"# fused points, {platform.processor() or platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} "
          f"threads, {args.clock} clock, device {device}, points vary by {args.vary}, K = {args.steps}, "
          f"{time.strftime('%Y-%m-%d')}, load {os.getloadavg()[0]:.1f}")
    results = []
    for table, run in ((1, points_per_second), (2, cost_per_point), (3, against_naive)):
        if table in args.tables:
            results += run(args, clock, device)
    print(f"\n# load at the end {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
