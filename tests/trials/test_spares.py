"""A worker's trials of one shape reuse the last trial's tensors (``trials.train`` spares): the rows
stay exactly those of a trial in fresh memory, and a trial of another shape keeps none of them."""
from __future__ import annotations

import math

import numpy as np
import pytest

from trials import TrialConfig
from trials.reference import Reference
from trials.train import keep_spares, release_spares, take_spares, train_trial


def _reference(cfg: TrialConfig) -> Reference:
    p, K = cfg.problem, cfg.steps
    rng = np.random.default_rng(5)
    arrays = {"out": rng.standard_normal((K + 1, p.samples, p.d_out)), "hidden": rng.standard_normal((K + 1, p.samples, cfg.D))}
    arrays.update({name: rng.random(K + 1) for name in ("loss", "err_out", "err_hidden")})
    return Reference("test", "mean_ode", arrays, {})


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def _rows_equal(first: list[dict], second: list[dict]) -> bool:
    strip = lambda rows: [{k: v for k, v in row.items() if k != "wall_s"} for row in rows]
    return all(list(x) == list(y) and all(_same(x[k], y[k]) for k in x) for x, y in zip(strip(first), strip(second))) \
        and len(first) == len(second)


@pytest.mark.parametrize("steps, dtype", [(4, "float64"), (2, "float32")], ids=["units0-f64", "history-f32"])
def test_a_trial_after_one_of_its_shape_gives_the_rows_of_a_fresh_one(steps, dtype):
    # steps 4 keeps a copy of u_0 (K N (D + M) > D M), steps 2 the update history instead
    cfg = TrialConfig(L=6, M=64, D=16, steps=steps, dtype=dtype, seeds=(4, 1, 2), lr=3.0)
    other = cfg.replace(L=3, M=32)
    ref, other_ref = _reference(cfg), _reference(other)
    release_spares()
    fresh = train_trial(cfg, ref)
    first = take_spares()
    assert first  # the trial left its tensors behind
    copy = {key: list(ts) for key, ts in first.items()}  # a trial takes its spares out of the dict
    held = [t for ts in first.values() for t in ts]  # references, so that no id is recycled
    lent = {id(t) for t in held}
    keep_spares(first)
    again = train_trial(cfg, ref)
    assert {id(t) for ts in take_spares().values() for t in ts} == lent  # the second ran in the first's memory
    assert _rows_equal(fresh, again)

    keep_spares(copy)
    train_trial(other, other_ref)
    kept = take_spares()
    assert kept and not lent & {id(t) for ts in kept.values() for t in ts}  # none of the first shape's kept
    assert _rows_equal(train_trial(cfg, ref), fresh)
    release_spares()
