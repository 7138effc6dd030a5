"""The science checks of docs/model.md section 6 on the trial engine, printed as a table.

    python benchmarks/trials_rates.py [--device auto]

Same measurements as tests/trials/test_rates.py and test_regimes.py, with the numbers shown.
"""
from __future__ import annotations

import argparse

import numpy as np

from trials import ProblemConfig, ReferenceConfig, TrialConfig, compute_reference, train_trial


def final(rows, name, steps):
    return [r[name] for r in rows if r["step"] == steps]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    limit = TrialConfig(L=1, M=2, D=8, steps=10, device=args.device)
    ref = compute_reference(ReferenceConfig(limit=limit, depth=1024, width=512, device=args.device))
    print(f"reference 1024 x 512, 2 replicas: ref_err_out at K = {ref.arrays['err_out'][-1]:.2e} "
          f"(sampling {ref.arrays['err_out_sampling'][-1]:.2e}, discretization {ref.arrays['err_out_discretization'][-1]:.2e})")

    def err(**shape):
        rows = train_trial(limit.replace(**shape), ref)
        return float(np.sqrt(np.mean(np.square(final(rows, "err_out", limit.steps)))))

    def slope(x, y):
        return float(np.polyfit(np.log(x), np.log(y), 1)[0])

    for label, M, depths, extra in [
        ("L, M = 4096 antithetic", 4096, [2, 4, 8, 16], dict(antithetic=True, seeds=(0, 1))),
        ("L M, M = 1", 1, [8, 32, 128, 512], dict(seeds=tuple(range(8)))),
        ("L M, M = 64", 64, [4, 16, 64], dict(seeds=tuple(range(8)))),
    ]:
        errors = [err(L=L, M=M, **extra) for L in depths]
        x = depths if label.startswith("L,") else [L * M for L in depths]
        print(f"slope of err_out in {label}: {slope(x, errors):+.3f}   errors {['%.2e' % e for e in errors]}")
    deep, wide = err(L=256, M=1, seeds=tuple(range(8))), err(L=16, M=16, seeds=tuple(range(8)))
    print(f"same L M = 256: (256, 1) {deep:.3e} vs (16, 16) {wide:.3e}: ratio {deep / wide:.2f}")
    for seed in (1, 2, 3):
        parts = []
        for alpha in (1.0, 4.0, 16.0):
            cfg = TrialConfig(L=64, M=64, D=8, steps=10, alpha=alpha, preset="mlu" if alpha == 1 else "lazy",
                              seeds=(0, 1), device=args.device, problem=ProblemConfig(seed=seed))
            small_ref = compute_reference(ReferenceConfig(limit=cfg, depth=16, width=8, device=args.device))
            rows = train_trial(cfg, small_ref)
            means = {n: np.mean(final(rows, n, 10)) for n in ("feature_update", "lin_ratio", "output_change", "weight_change")}
            parts.append(f"alpha {alpha:>4}: fu {means['feature_update']:.3f} lin {means['lin_ratio']:.3f} "
                         f"out {means['output_change']:.2f} w {means['weight_change']:.3f}")
        print(f"problem seed {seed}, L = M = 64: " + " | ".join(parts))


if __name__ == "__main__":
    main()
