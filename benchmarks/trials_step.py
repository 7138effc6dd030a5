"""Speed of one gradient-descent step of the trial engine, against its bounds and a naive loop.

    python benchmarks/trials_step.py [--device cpu|cuda] [--repeats 3] [--json out.json]

For each shape (L, M, D, N, reps) and dtype it reports, measured in the same run on the same
device:
- step: one batched GD step (forward + backward + in-place update) of all reps, and per seed;
- step+metrics: the same plus every metric of docs/model.md section 4 (what a trial does per step), and
  its ratio to the bare step (target <= 1.3), the two timed in turns on twin networks, at the
  last steps of a K = 10 step trial (where the metrics cost most);
- init: drawing the units of all reps (``init_units``), in seconds and in bare steps (target <= 2);
- memory bound: the weights' bytes read and written three times (three copies) at the measured
  copy bandwidth; compute bound: the step's 12 * L * M * D * N flops per seed at the measured
  large-matrix-product speed;
- naive: a per-layer numpy loop, one seed at a time, like the papers' scripts (float64 and
  float32 alike, numpy on the CPU).
And the cost of one reference with L_ref * M_ref = 2^19 particles at D = 8.

    python benchmarks/trials_step.py --whole [--steps 10 50] [--repeats 3]

times instead a whole trial (``train_trial``: draw, K + 1 forward passes with their metrics, K
steps, rows) against K warm bare steps of the same shape, the two in turns: "warm" is a trial
after one of the same shape in the same process (a worker's pack, whose spare tensors it
reuses), "cold" the first of its shape (``release_spares`` before it). Where the warm trial's
time goes, from a cProfile run, in bare steps: unit draw, forward/step, metrics (the metric
functions, the baseline and the step's observer), rows; first touch is cold - warm.
"""
from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import torch

import cProfile
import pstats

from trials import ReferenceConfig, TrialConfig, compute_reference, train_trial
from trials.metrics import GRAMS, METRICS, Baseline, Snapshot
from trials.model import ResNet, init_units
from trials.reference import Reference
from trials.train import release_spares, trial_rows

SHAPES = [(256, 256, 32, 10, 4), (64, 1024, 256, 10, 4)]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def best_of(fn, repeats: int, device: torch.device) -> float:
    """Fastest of ``repeats`` timed calls, after one untimed warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return min(times)


def best_of_alternated(fns, repeats: int, device: torch.device) -> list[float]:
    """Fastest of ``repeats`` timed calls of each function, the functions taking turns (one
    untimed warm-up call each first): on a shared machine their ratio then sees one load."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, t in zip(fns, times):
            _sync(device)
            start = time.perf_counter()
            fn()
            _sync(device)
            t.append(time.perf_counter() - start)
    return [min(t) for t in times]


def copy_bandwidth(device: torch.device, dtype: torch.dtype, nbytes: int, repeats: int) -> float:
    """Bytes copied per second (each byte read once and written once) for a large tensor."""
    n = nbytes // torch.tensor([], dtype=dtype).element_size()
    src = torch.randn(n, dtype=torch.float32, device=device).to(dtype)
    dst = torch.empty_like(src)
    return nbytes / best_of(lambda: dst.copy_(src), repeats, device)


def matmul_flops(device: torch.device, dtype: torch.dtype, repeats: int) -> float:
    n = 2048
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    return 2 * n**3 / best_of(lambda: a @ b, repeats, device)


def naive_seed_step(L, M, D, N, dtype, repeats) -> float:
    """One seed's GD step as a plain per-layer numpy loop (new arrays, no fusion)."""
    rng = np.random.default_rng(0)
    U = [rng.standard_normal((D, M)).astype(dtype) * np.sqrt(D) for _ in range(L)]
    V = [rng.standard_normal((D, M)).astype(dtype) * np.sqrt(D) for _ in range(L)]
    x = rng.standard_normal((D, N)).astype(dtype)
    y = rng.standard_normal((D, N)).astype(dtype)
    c, lr = 1.0 / (L * M), 1.0

    def step():
        hs, ps = [x], []
        for l in range(L):
            p = U[l].T @ hs[-1] / D
            ps.append(p)
            hs.append(hs[-1] + c * V[l] @ np.tanh(p))
        b = (hs[-1] - y) / N
        for l in reversed(range(L)):
            t = np.tanh(ps[l])
            q = V[l].T @ b / D
            g = (1 - t * t) * q
            b_below = b + c * U[l] @ g
            U[l] = U[l] - lr * hs[l] @ g.T
            V[l] = V[l] - lr * b @ t.T
            b = b_below

    return best_of(step, repeats, torch.device("cpu"))


def measure_shape(shape, dtype_name, device, repeats, naive) -> dict:
    L, M, D, N, reps = shape
    cfg = TrialConfig(L=L, M=M, D=D, dtype=dtype_name, device=device.type, seeds=tuple(range(reps)))
    cfg = cfg.replace(problem=cfg.problem.__class__(d_in=5, d_out=5, samples=N, seed=1))
    net = ResNet(cfg)
    measured = ResNet(cfg)  # a twin that carries the metrics' baseline, so the bare step stays bare
    base = Baseline(measured, measured.forward().out.clone())

    def step_with_metrics():
        fwd = measured.forward()
        snap = Snapshot(measured, fwd, base, base.out0[0], fwd.hidden[-1, 0])
        [fn(snap).cpu() for fn in METRICS.values()]
        measured.step(fwd)

    # the timed steps (a warm-up and the repeats) are the last ones of a K-step trial: with the
    # update history (metrics.Baseline) a step's metrics cost grows with k, so this is the worst
    for _ in range(max(0, cfg.steps - repeats - 1)):
        step_with_metrics()

    # alternated, so that both see the same load on a shared machine; best of each
    step, with_metrics = best_of_alternated([lambda: net.step(net.forward()), step_with_metrics], repeats, device)
    del base, measured
    init = best_of(lambda: init_units(cfg, cfg.seeds, device, net.dtype), max(1, repeats - 1), device)
    weight_bytes = net.units.u.numel() * 2 * net.units.u.element_size()
    bandwidth = copy_bandwidth(device, net.dtype, min(weight_bytes, 1 << 30), repeats)
    flops_rate = matmul_flops(device, net.dtype, repeats)
    result = {
        "shape": {"L": L, "M": M, "D": D, "N": N, "reps": reps}, "dtype": dtype_name, "device": device.type,
        "step_s": step, "step_per_seed_s": step / reps, "step_metrics_per_seed_s": with_metrics / reps,
        "metrics_ratio": with_metrics / step, "init_s": init, "init_in_steps": init / step,
        "weight_bytes": weight_bytes, "copy_GBps": bandwidth / 1e9, "matmul_GFLOPs": flops_rate / 1e9,
        "memory_bound_per_seed_s": 3 * weight_bytes / bandwidth / reps,
        "compute_bound_per_seed_s": 12 * L * M * D * N / flops_rate,
    }
    if naive:
        result["naive_per_seed_s"] = naive_seed_step(L, M, D, N, np.dtype(dtype_name), max(1, repeats - 1))
        result["speedup_vs_naive"] = result["naive_per_seed_s"] / result["step_per_seed_s"]
    result["x_memory_bound"] = result["step_per_seed_s"] / result["memory_bound_per_seed_s"]
    del net
    return result


def synthetic_reference(cfg: TrialConfig) -> Reference:
    """A reference of the right shapes for ``cfg``: a trial's work does not depend on its values."""
    p, K = cfg.problem, cfg.steps
    rng = np.random.default_rng(0)
    arrays = {"out": rng.standard_normal((K + 1, p.samples, p.d_out)),
              "hidden": rng.standard_normal((K + 1, p.samples, cfg.D))}
    arrays.update({name: rng.random(K + 1) for name in ("loss", "err_out", "err_hidden")})
    return Reference("synthetic", "mean_ode", arrays, {})


def _cumulative(stats: pstats.Stats, functions) -> float:
    """Seconds spent in (and under) the given functions, from a cProfile run."""
    codes = {(f.__code__.co_filename, f.__code__.co_firstlineno, f.__name__) for f in functions}
    return sum(entry[3] for key, entry in stats.stats.items() if key in codes)


def trial_breakdown(cfg: TrialConfig, ref: Reference) -> dict:
    """Seconds of one (warm) trial by part, from cProfile: draw, forward/step, metrics, rows."""
    profile = cProfile.Profile()
    profile.enable()
    train_trial(cfg, ref)
    profile.disable()
    stats = pstats.Stats(profile)
    total = _cumulative(stats, [train_trial])
    draw = _cumulative(stats, [init_units])
    observer = _cumulative(stats, [Baseline.__call__])
    forward_step = _cumulative(stats, [ResNet.forward, ResNet.step]) - observer
    metrics = observer + _cumulative(stats, [Baseline.__init__, *METRICS.values(), *GRAMS.values()])
    rows = _cumulative(stats, [trial_rows])
    return {"total_s": total, "draw_s": draw, "forward_step_s": forward_step, "metrics_s": metrics, "rows_s": rows,
            "other_s": total - draw - forward_step - metrics - rows}


def measure_trial(shape, dtype_name, steps: int, device, repeats: int) -> dict:
    """A whole trial against K warm bare steps, in turns (module docstring)."""
    L, M, D, N, reps = shape
    cfg = TrialConfig(L=L, M=M, D=D, dtype=dtype_name, device=device.type, seeds=tuple(range(reps)), steps=steps)
    cfg = cfg.replace(problem=cfg.problem.__class__(d_in=5, d_out=5, samples=N, seed=1))
    ref = synthetic_reference(cfg)
    net = ResNet(cfg)

    def bare():
        for _ in range(steps):
            net.step(net.forward())

    def cold():
        release_spares()
        train_trial(cfg, ref)

    bare_s, warm_s, cold_s = best_of_alternated([bare, lambda: train_trial(cfg, ref), cold], repeats, device)
    train_trial(cfg, ref)  # leaves spares: the profiled trial is a warm one
    parts = trial_breakdown(cfg, ref)
    release_spares()
    del net
    step_s = bare_s / steps
    return {"shape": {"L": L, "M": M, "D": D, "N": N, "reps": reps}, "dtype": dtype_name, "steps": steps,
            "device": device.type, "bare_steps_s": bare_s, "trial_warm_s": warm_s, "trial_cold_s": cold_s,
            "ratio_warm": warm_s / bare_s, "ratio_cold": cold_s / bare_s,
            "in_steps": {name: value / step_s for name, value in parts.items()},
            "first_touch_in_steps": (cold_s - warm_s) / step_s}


def main_whole(args, device) -> None:
    results = []
    print(f"# whole trial vs K warm bare steps, {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, device {device}")
    print("| L | M | D | dtype | K | K bare steps | trial, warm | warm / bare | cold / bare | "
          "in bare steps: draw | first touch | forward/step | metrics | rows | other |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for shape in SHAPES:
        for dtype_name in args.dtypes:
            for steps in args.steps:
                r = measure_trial(shape, dtype_name, steps, device, args.repeats)
                results.append(r)
                p = r["in_steps"]
                print(f"| {' | '.join(map(str, shape[:3]))} | {dtype_name} | {steps} | {r['bare_steps_s']:.2f} s | "
                      f"{r['trial_warm_s']:.2f} s | {r['ratio_warm']:.2f} | {r['ratio_cold']:.2f} | {p['draw_s']:.1f} | "
                      f"{r['first_touch_in_steps']:.1f} | {p['forward_step_s']:.1f} | {p['metrics_s']:.1f} | "
                      f"{p['rows_s']:.2f} | {p['other_s']:.1f} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-naive", action="store_true", help="skip the numpy baseline")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--whole", action="store_true", help="time whole trials against K bare steps instead")
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 50], help="K of the whole trials")
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"], choices=["float64", "float32"])
    parser.add_argument("--shapes", type=int, nargs="+", help="indices into SHAPES (default: all)")
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.shapes:
        SHAPES[:] = [SHAPES[i] for i in args.shapes]
    if args.whole:
        main_whole(args, device)
        return
    results = []
    print(f"# trial engine step, {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, device {device}")
    print("| L | M | D | N | reps | dtype | step/seed | +metrics/seed | (step+metrics)/step | init (in steps) | naive/seed | speedup | memory bound | compute bound | x mem bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for shape in SHAPES:
        for dtype_name in ("float64", "float32"):
            r = measure_shape(shape, dtype_name, device, args.repeats, not args.no_naive)
            results.append(r)
            ms = lambda s: f"{s * 1e3:.1f} ms"
            naive = ms(r["naive_per_seed_s"]) if "naive_per_seed_s" in r else "-"
            speed = f"{r['speedup_vs_naive']:.1f}x" if "speedup_vs_naive" in r else "-"
            print(f"| {' | '.join(map(str, shape))} | {dtype_name} | {ms(r['step_per_seed_s'])} | "
                  f"{ms(r['step_metrics_per_seed_s'])} | {r['metrics_ratio']:.2f} | {r['init_s']:.2f} s ({r['init_in_steps']:.1f}) | {naive} | {speed} | {ms(r['memory_bound_per_seed_s'])} "
                  f"({r['copy_GBps']:.1f} GB/s) | {ms(r['compute_bound_per_seed_s'])} ({r['matmul_GFLOPs']:.0f} GFLOP/s) | "
                  f"{r['x_memory_bound']:.2f} |", flush=True)
    limit = TrialConfig(L=2, M=2, D=8, steps=10, device=device.type)
    ref_cfg = ReferenceConfig(limit=limit, depth=1024, width=512, replicas=2, device=device.type)
    start = time.perf_counter()
    compute_reference(ref_cfg)
    ref_s = time.perf_counter() - start
    print(f"\nreference: L_ref * M_ref = 1024 * 512 = 2^19 particles, D = 8, K = 10, 2 replicas + their half-depth twins, "
          f"float64: {ref_s:.2f} s")
    results.append({"reference_s": ref_s, "particles": 1024 * 512, "device": device.type})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
