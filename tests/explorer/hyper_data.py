"""Metric rows of planted surfaces (``explorer.analysis.hyper.planted_runs``) shaped like the
store's ``metrics`` view, for the hyperparameter tests. Used only by tests."""
from __future__ import annotations

import numpy as np
import pandas as pd

from tests.explorer.analysis_data import law_rows


def planted_metrics(runs, *, sweep: str = "planted", steps: int = 3, extra: dict | None = None) -> pd.DataFrame:
    """One row per (slice, draw, seed, grid value, step): the run's value at the last step, a
    diverged run's rows ending at step 1 with status diverged (as the engine writes them)."""
    rows = []
    template = law_rows(lambda L, M, D: 0.1, Ls=(4,), Ms=(16,), seeds=1, steps=steps).iloc[0].to_dict()
    extra = dict(extra or {})
    for j, slice_row in enumerate(runs.slices.to_dict("records")):
        for g in range(runs.values.shape[1]):
            for s in range(runs.values.shape[2]):
                for i, x in enumerate(runs.grid):
                    value = runs.values[j, g, s, i]
                    if np.isnan(value):
                        continue
                    key = f"t{j}-{g}-{i}"
                    base = dict(template, sweep=sweep, trial_key=key, L=16, M=16, D=8, preset="mlu", alpha=1.0,
                                lr=1.0, problem_seed=int(g), seed=int(s), steps=steps, error=None)
                    base.update(extra)
                    base.update(slice_row)
                    base[runs.axis] = float(x)
                    base = {k: (int(v) if k in ("L", "M", "D") else v) for k, v in base.items()}
                    last = 1 if np.isinf(value) else steps
                    for step in range(last + 1):
                        status = "diverged" if np.isinf(value) and step == last else "ok"
                        level = 1e6 if np.isinf(value) and step == last else float(value) * (1 + (steps - step))
                        rows.append(dict(base, step=step, status=status, loss=level, err_out=level / 10))
    return pd.DataFrame(rows)
