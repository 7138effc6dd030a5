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

    python benchmarks/trials_step.py --whole [--steps 10 50] [--repeats 3] [--shapes 0] [--threads 1] [--depth-errors] [--coordcheck]

times instead a whole trial (``train_trial``: draw, K + 1 forward passes with their metrics, K
steps, rows) against K warm bare steps of the same shape. Each of ``--repeats`` rounds times,
back to back, K bare steps, a warm trial and a cold trial, and times one more warm trial by
parts; the table gives the medians over rounds of each round's ratios: "warm" is a trial
after one of the same shape in the same process (a worker's pack, whose spare tensors it
reuses), "cold" the first of its shape (``release_spares`` before it). Where the warm trial's
time goes, in bare steps, from one more warm trial whose main functions are timed by wrappers
(``PartTimer``): unit draw, forward/step, metrics (the metric functions, the baseline and the
step's observer; of them dp, observer and local sums apart), rows; first touch is cold - warm.
With --whole torch runs one thread unless ``--threads`` says otherwise: a sweep's worker gets one
CPU and runs one thread (explorer/sweeps/ray/threads.py), and one-thread ratios hold on a loaded
machine, where two threads of one process wait on each other. ``--clock cpu`` times by the
process's CPU time instead of the wall clock: on a shared machine a one-thread process's wall
time also counts the time other processes held its core, its CPU time does not.
``--depth-errors`` runs the whole trials with the identity activation and times, in each round, one
more warm trial against a joint_limit reference (synthetic, with its depth paths): the difference
with the warm trial against a reference without them is the cost of the errors along depth
(``trials.metrics.DEPTH_METRICS``), in bare steps. ``--coordcheck`` adds the coordinate check's part
of the warm trial timed by parts (``trials.coordcheck.CoordCheck``: keeping h_l(0), and per step the
RMS of h_l(k) - h_l(0) and of each branch's output in depth bins), in bare steps per trial and as
a share of the trial; the table's other parts leave it out (it is timed apart).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import torch

from trials import ReferenceConfig, TrialConfig, compute_reference, train_trial
from trials.coordcheck import CoordCheck
from trials.metrics import GRAMS, METRICS, Baseline, Snapshot
from trials import metrics, model, train
from trials.model import ResNet, init_units
from trials.joint_limit import KIND as JOINT_LIMIT, JointLimitConfig
from trials.reference import Reference
from trials.train import release_spares

SHAPES = [(256, 256, 32, 10, 4), (64, 1024, 256, 10, 4)]
# The whole-trial timings' clock (--clock): wall time, or the process's CPU time (user + system,
# page faults included), which for one thread is the wall time the process would take alone.
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = "wall"


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def check_device(parser: argparse.ArgumentParser, device: str, clock_name: str) -> None:
    """One line and exit 2 for a device this machine lacks, or a CPU clock on a GPU (it would
    time kernel launches, not kernels)."""
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here (torch.cuda.is_available() is False)")
    if device == "cuda" and clock_name == "cpu":
        parser.error("--clock cpu times this process's CPU, not the GPU's kernels: use the wall clock with --device cuda")


def best_of(fn, repeats: int, device: torch.device) -> float:
    """Fastest of ``repeats`` timed calls, after one untimed warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        fn()
        sync(device)
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
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
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


def synthetic_reference(cfg: TrialConfig, depth_paths: bool = False) -> Reference:
    """A reference of the right shapes for ``cfg``: a trial's work does not depend on its values.
    With ``depth_paths``, a joint_limit one with its hidden and backward states along depth (the
    default grid of 256 steps), which the errors along depth read (identity activation only)."""
    p, K = cfg.problem, cfg.steps
    rng = np.random.default_rng(0)
    arrays = {"out": rng.standard_normal((K + 1, p.samples, p.d_out)),
              "hidden": rng.standard_normal((K + 1, p.samples, cfg.D))}
    arrays.update({name: rng.random(K + 1) for name in ("loss", "err_out", "err_hidden")})
    if not depth_paths:
        return Reference("synthetic", "mean_ode", arrays, {})
    grid = JointLimitConfig(cfg).grid
    for name in ("path", "backward_path"):
        arrays[name] = rng.standard_normal((K + 1, grid + 1, p.samples, p.d_in + p.d_out))
    return Reference("synthetic", JOINT_LIMIT, arrays, {"grid": grid, "gram": "expected"})


class PartTimer:
    """Wall seconds spent inside given functions, by part, while installed: each function is
    replaced by a wrapper that times its calls (a few per step, so no profiler overhead on the
    thousands of tensor operations underneath). A part's time excludes the time of the parts
    nested inside it."""

    def __init__(self, parts: dict[str, list[tuple[object, str]]], device: torch.device = torch.device("cpu")):
        self.parts = parts
        self.device = device  # on a GPU each timed call waits for its kernels (``sync``), else it times their launch
        self.seconds = dict.fromkeys(parts, 0.0)
        self._stack: list[list[float]] = []  # per open call: [start, time of nested parts]
        self._saved: list[tuple[object, str, object]] = []

    def _wrap(self, part: str, fn):
        def timed(*args, **kwargs):
            sync(self.device)
            self._stack.append([CLOCKS[clock](), 0.0])
            try:
                return fn(*args, **kwargs)
            finally:
                sync(self.device)
                start, nested = self._stack.pop()
                spent = CLOCKS[clock]() - start
                self.seconds[part] += spent - nested
                if self._stack:
                    self._stack[-1][1] += spent
        return timed

    def __enter__(self) -> "PartTimer":
        for part, targets in self.parts.items():
            for owner, name in targets:
                fn = owner[name] if isinstance(owner, dict) else getattr(owner, name)
                self._saved.append((owner, name, fn))
                wrapped = self._wrap(part, fn)
                if isinstance(owner, dict):
                    owner[name] = wrapped
                else:
                    setattr(owner, name, wrapped)
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, fn in reversed(self._saved):
            if isinstance(owner, dict):
                owner[name] = fn
            else:
                setattr(owner, name, fn)
        self._saved.clear()


def trial_breakdown(cfg: TrialConfig, ref: Reference) -> dict:
    """Seconds of one (warm) trial by part: draw, forward/step, metrics, rows (``PartTimer``)."""
    parts = {
        "draw_s": [(model, "draw_units")],  # a trial is a pack of one (trials.train.train_fused)
        "forward_step_s": [(ResNet, "forward"), (ResNet, "backprop"), (ResNet, "update")],
        "metrics_s": [(Baseline, "__init__"), *[(METRICS, name) for name in METRICS], *[(GRAMS, name) for name in GRAMS]],
        # the metrics' main parts, apart: the displacement dp (P0 = H u_0 / D), the step's
        # observer (the displacement sums), lin_ratio's and feature_update's sums
        "metrics_dp_s": [(Baseline, "moves")],
        "metrics_observer_s": [(Baseline, "__call__")],
        "metrics_local_s": [(metrics, "local_sums")],
        "rows_s": [(train, "trial_rows")],
        "coordcheck_s": [(CoordCheck, "__init__"), (CoordCheck, "__call__")],  # the coordinate-check columns
    }
    device = torch.device(cfg.device)
    with PartTimer(parts, device) as timer:
        sync(device)
        start = CLOCKS[clock]()
        train_trial(cfg, ref)
        sync(device)
        total = CLOCKS[clock]() - start
    parts = dict(timer.seconds)
    other = total - sum(parts.values())
    for name in ("metrics_dp_s", "metrics_observer_s", "metrics_local_s"):
        parts["metrics_s"] += parts[name]
    return {"total_s": total, **parts, "other_s": other}


def measure_trial(shape, dtype_name, steps: int, device, repeats: int, depth_errors: bool = False) -> dict:
    """A whole trial against K warm bare steps, in turns (module docstring)."""
    L, M, D, N, reps = shape
    cfg = TrialConfig(L=L, M=M, D=D, dtype=dtype_name, device=device.type, seeds=tuple(range(reps)), steps=steps,
                      activation="identity" if depth_errors else "tanh")
    cfg = cfg.replace(problem=cfg.problem.__class__(d_in=5, d_out=5, samples=N, seed=1))
    ref = synthetic_reference(cfg)
    along = synthetic_reference(cfg, depth_paths=True) if depth_errors else None
    net = ResNet(cfg)

    def bare():
        for _ in range(steps):
            net.step(net.forward())

    def cold():
        release_spares()
        train_trial(cfg, ref)

    # rounds of (K bare steps, warm trial, cold trial, warm trial timed by parts), back to back:
    # each round's ratios see one load; the medians over rounds are reported
    bare(), train_trial(cfg, ref)  # warm-up, and leaves spares
    rounds, depth_in_steps = [], []
    for _ in range(repeats):
        times = []
        for fn in (bare, lambda: train_trial(cfg, ref), cold):
            sync(device)
            start = CLOCKS[clock]()
            fn()
            sync(device)
            times.append(CLOCKS[clock]() - start)
        train_trial(cfg, ref)  # leaves spares: the timed-by-parts trial is a warm one
        rounds.append((*times, trial_breakdown(cfg, ref)))
        if along is not None:  # a warm trial with the errors along depth, against the one just made without
            warm_pair = []
            for reference in (along, ref):
                sync(device)
                start = CLOCKS[clock]()
                train_trial(cfg, reference)
                sync(device)
                warm_pair.append(CLOCKS[clock]() - start)
            depth_in_steps.append((warm_pair[0] - warm_pair[1]) / (times[0] / steps))
    release_spares()
    del net
    median = lambda values: float(np.median(values))
    in_steps = {name: median([parts[name] / (bare_s / steps) for bare_s, _, _, parts in rounds]) for name in rounds[0][3]}
    return {"shape": {"L": L, "M": M, "D": D, "N": N, "reps": reps}, "dtype": dtype_name, "steps": steps,
            "device": device.type, "rounds": len(rounds),
            "bare_steps_s": median([r[0] for r in rounds]), "trial_warm_s": median([r[1] for r in rounds]),
            "ratio_warm": median([warm / bare_s for bare_s, warm, _, _ in rounds]),
            "ratio_warm_range": [min(w / b_ for b_, w, _, _ in rounds), max(w / b_ for b_, w, _, _ in rounds)],
            "ratio_cold": median([cold_s / bare_s for bare_s, _, cold_s, _ in rounds]),
            "in_steps": in_steps,
            "first_touch_in_steps": median([(cold_s - warm) / (bare_s / steps) for bare_s, warm, cold_s, _ in rounds]),
            "activation": cfg.activation,
            "coordcheck": {"in_steps": in_steps["coordcheck_s"],
                           "in_steps_range": [min(p["coordcheck_s"] / (b_ / steps) for b_, _, _, p in rounds),
                                              max(p["coordcheck_s"] / (b_ / steps) for b_, _, _, p in rounds)],
                           "share": median([p["coordcheck_s"] / p["total_s"] for _, _, _, p in rounds]),
                           "share_range": [min(p["coordcheck_s"] / p["total_s"] for _, _, _, p in rounds),
                                           max(p["coordcheck_s"] / p["total_s"] for _, _, _, p in rounds)]},
            **({"depth_errors_in_steps": median(depth_in_steps),
                "depth_errors_range": [min(depth_in_steps), max(depth_in_steps)]} if depth_in_steps else {})}


def main_whole(args, device) -> None:
    results = []
    print(f"# whole trial vs K warm bare steps, {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {clock} clock, device {device}, load {os.getloadavg()[0]:.1f}, medians of {args.repeats} rounds")
    depth = " | depth errors (range)" if args.depth_errors else ""
    depth += " | coordinate check, bare steps per trial (range) | share of the trial" if args.coordcheck else ""
    print("| L | M | D | dtype | K | bare step | warm / bare (range) | cold / bare | in bare steps: draw | first touch | "
          f"forward/step | metrics (dp, observer, local sums) | rows | other{depth} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + "---|" * depth.count(" | "))
    for shape in SHAPES:
        for dtype_name in args.dtypes:
            for steps in args.steps:
                r = measure_trial(shape, dtype_name, steps, device, args.repeats, args.depth_errors)
                results.append(r)
                p, (low, high) = r["in_steps"], r["ratio_warm_range"]
                extra = (f" | {r['depth_errors_in_steps']:.2f} ({r['depth_errors_range'][0]:.2f} - {r['depth_errors_range'][1]:.2f})"
                         if args.depth_errors else "")
                if args.coordcheck:
                    c = r["coordcheck"]
                    extra += (f" | {c['in_steps']:.2f} ({c['in_steps_range'][0]:.2f} - {c['in_steps_range'][1]:.2f}) | "
                              f"{100 * c['share']:.1f} % ({100 * c['share_range'][0]:.1f} - {100 * c['share_range'][1]:.1f})")
                print(f"| {' | '.join(map(str, shape[:3]))} | {dtype_name} | {steps} | {r['bare_steps_s'] / steps * 1e3:.1f} ms | "
                      f"{r['ratio_warm']:.2f} ({low:.2f} - {high:.2f}) | {r['ratio_cold']:.2f} | {p['draw_s']:.1f} | "
                      f"{r['first_touch_in_steps']:.1f} | {p['forward_step_s']:.1f} | {p['metrics_s']:.1f} "
                      f"({p['metrics_dp_s']:.1f}, {p['metrics_observer_s']:.1f}, {p['metrics_local_s']:.1f}) | "
                      f"{p['rows_s']:.2f} | {p['other_s']:.1f}{extra} |", flush=True)
    print(f"# load at the end {os.getloadavg()[0]:.1f}")
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
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="--whole: time by wall clock or by the process's CPU time (one thread on a shared machine)")
    parser.add_argument("--depth-errors", action="store_true",
                        help="--whole: identity activation, and the cost of the errors along depth (a joint_limit reference)")
    parser.add_argument("--coordcheck", action="store_true",
                        help="--whole: also print the coordinate check's cost (coord_update_b*, coord_branch_b*)")
    parser.add_argument("--threads", type=int,
                        help="torch's intra-op threads (default: 1 with --whole, as a sweep's worker runs; else torch's)")
    args = parser.parse_args()
    check_device(parser, args.device, args.clock)
    device = torch.device(args.device)
    threads = args.threads or (1 if args.whole else None)
    if threads:
        torch.set_num_threads(threads)
    global clock
    clock = args.clock
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
