"""Is a learning rate at the edge of stability of a problem draw's training? (docs/measurements.md,
"Comparing sweeps").

Trains many seeds of one (L, M) at D = 8 on one problem draw (the compare test's problem: 5 -> 5,
10 samples, tanh, mlu) for K full-batch GD steps at each learning rate, with no reference: the
limit is stood in for by the mean output over the seeds. Prints, per learning rate, how many
seeds' losses rise at some step (gradient descent past its edge of stability; below it the loss
falls at every step), and how far each seed ends from the seeds' mean relative to where it
started (the median and the largest over seeds).

    python benchmarks/lr_stability.py --L 16 --M 16 --draw 1 --steps 40     # docs/measurements.md
    python benchmarks/lr_stability.py --L 16 --M 16 --draw 2 --steps 40
"""
from __future__ import annotations

import argparse
import platform
from datetime import datetime, timezone

import numpy as np

from trials.config import ProblemConfig, TrialConfig
from trials.model import ResNet


def run(L: int, M: int, draw: int, steps: int, seeds: int, lr: float) -> tuple[int, np.ndarray]:
    """(seeds whose loss rose at some step, each seed's final / initial distance from the seeds' mean)."""
    config = TrialConfig(L=L, M=M, D=8, problem=ProblemConfig(d_in=5, d_out=5, samples=10, seed=draw), lr=lr,
                         steps=steps, seeds=tuple(range(seeds)), dtype="float64", device="cpu")
    net = ResNet(config)
    outputs, losses = [], []
    for _, forward in net.trajectory():
        outputs.append(forward.out.detach().double().cpu().numpy())
        losses.append(net.loss(forward.out).double().cpu().numpy())
    outputs, losses = np.array(outputs), np.array(losses)  # (K + 1, R, N, d_out), (K + 1, R)
    distance = np.sqrt(((outputs - outputs.mean(axis=1, keepdims=True)) ** 2).mean(axis=(2, 3)))  # (K + 1, R)
    rose = int((np.diff(losses, axis=0) > 0).any(axis=0).sum())
    return rose, distance[-1] / distance[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--L", type=int, default=16)
    parser.add_argument("--M", type=int, default=16)
    parser.add_argument("--draw", type=int, default=1, help="the problem seed")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=64)
    parser.add_argument("--lr", type=float, nargs="+", default=[0.8, 1.0])
    args = parser.parse_args()
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}; L = {args.L}, M = {args.M}, "
          f"D = 8, problem_seed {args.draw}, {args.steps} steps, {args.seeds} seeds")
    for lr in args.lr:
        rose, growth = run(args.L, args.M, args.draw, args.steps, args.seeds, lr)
        print(f"lr {lr:g}: loss rose at some step in {rose} of {args.seeds} seeds; distance from the seeds' mean, "
              f"final / initial: median {np.median(growth):.2f}, largest {growth.max():.2f}")


if __name__ == "__main__":
    main()
