"""The adaptive loop's refits read the store incrementally (``explorer.sweeps.adaptive.row_cache``) and
reuse a draw's terms per seed resample within a bootstrap: what they report must be what a
refit from scratch on the same store gives, to the last bit."""
from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pandas as pd
import pytest

from explorer.analysis.decomposed import draws_of, estimate
from explorer.sweeps.adaptive import AdaptiveLoop, PlantedRunner, SweepRows, TermsLaw, read_rounds, run_adaptive
from explorer.analysis.data import seed_grams
from explorer.config.planning import plan
from store import Store, trial_row_from_metrics

from tests.explorer.sweeps.adaptive.test_adaptive import GRID, adaptive_spec

GRAM_GRID = {**GRID, "problem_seeds": [1, 2, 3], "seeds": 4}


def planted(tmp_path, keys=None):
    """A store with a decomposed-law sweep ``ad`` (Gram rows), the trials of ``keys`` (default all)."""
    spec = adaptive_spec(grid=GRAM_GRID, form="decomposed", halfwidth=0.05, budget=0.6, batch=4, initial=10)
    st = Store(tmp_path / "s")
    runner = PlantedRunner(st, TermsLaw(c1=0.5, c2=0.3), entries=60)
    all_keys = [t.trial_key for t in plan(spec).trials]
    runner(spec, frozenset(all_keys if keys is None else keys(all_keys)))
    return spec, st, runner


def from_store(st, sweep="ad") -> pd.DataFrame:
    con = st.connect(sweep=sweep, views=("metrics",))
    try:
        return seed_grams(con, sweep)
    finally:
        con.close()


def stamps(st, sweep="ad") -> dict:
    """The stamps the loop gives: each trial's status and wall time."""
    walls = st.trial_column(sweep, "wall_s")
    return {k: (v, walls.get(k)) for k, v in st.trial_statuses(sweep).items()}


def kept(rows: SweepRows, given: dict, sweep="ad") -> pd.DataFrame:
    con = rows.connection(given)
    try:
        return seed_grams(con, sweep)
    finally:
        con.close()


def assert_same_frames(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    assert a.drop(columns=["gram", "seeds"]).equals(b.drop(columns=["gram", "seeds"]))
    assert [tuple(s) for s in a["seeds"]] == [tuple(s) for s in b["seeds"]]
    assert all(np.array_equal(x, y) for x, y in zip(a["gram"], b["gram"]))


def test_kept_rows_read_only_new_trials_and_give_the_stores_frame(tmp_path):
    spec, st, runner = planted(tmp_path, keys=lambda keys: keys[:20])
    rows = SweepRows(st, "ad")
    assert_same_frames(kept(rows, stamps(st)), from_store(st))
    assert len(rows.tables) == 20 and rows.reads == 1
    runner(spec, frozenset(t.trial_key for t in plan(spec).trials[20:35]))  # a round's worth more
    assert len(rows.update(stamps(st))) == 15  # only the new trials are read
    assert_same_frames(kept(rows, stamps(st)), from_store(st))
    assert rows.reads == 2  # nothing new since: no read


def test_a_rewritten_trial_is_read_again_and_a_removed_one_dropped(tmp_path):
    _, st, _ = planted(tmp_path, keys=lambda keys: keys[:12])
    rows = SweepRows(st, "ad")
    before = kept(rows, stamps(st))
    key = sorted(st.trial_statuses("ad"))[3]
    metric_rows = []
    for r in st.query(f"SELECT * FROM metrics WHERE trial_key = '{key}'", sweep="ad").to_pylist():
        # a rerun: other errors (Gram rows doubled), another wall time
        r = {k: v for k, v in r.items() if k not in ("sweep", "trial_key", "schema_version", "package_version")}
        r.update(gram_out=[2 * v for v in r["gram_out"]], err_out=r["err_out"] * np.sqrt(2), wall_s=r["wall_s"] + 1.0)
        metric_rows.append(r)
    st.write_trial("ad", key, metric_rows, trial_row_from_metrics(metric_rows, config_json=json.dumps({}),
                                                                    started_at=dt.datetime.now(dt.timezone.utc)))
    after = kept(rows, stamps(st))
    assert rows.reads == 2
    assert_same_frames(after, from_store(st))
    old, new = (f.loc[f["trial_key"] == key, "gram"].iloc[0] for f in (before, after))
    assert np.array_equal(new, 2 * old)
    without = {k: v for k, v in stamps(st).items() if k != key}  # its trials row gone
    frame = kept(rows, without)
    assert key not in set(frame["trial_key"]) and len(frame) == len(after) - 1 and rows.reads == 2


def test_the_bootstrap_gives_the_same_numbers_with_a_draws_terms_reused(tmp_path, monkeypatch):
    import explorer.analysis.decomposed.estimator as decomposed

    _, st, _ = planted(tmp_path)
    frame = from_store(st)
    draws = draws_of(frame[frame["n_seeds"] >= 2].reset_index(drop=True))
    reused = estimate(draws, n_boot=60, seed=3)
    solve = decomposed.solve
    monkeypatch.setattr(decomposed, "solve", lambda *args, memo=None, **kwargs: solve(*args, **kwargs))
    fresh = estimate(draws, n_boot=60, seed=3)
    assert np.array_equal(reused.theta, fresh.theta, equal_nan=True)
    assert np.array_equal(reused.sd, fresh.sd, equal_nan=True)
    assert np.array_equal(reused.samples, fresh.samples, equal_nan=True)


@pytest.mark.slow  # a whole loop, refitted from scratch after every round: the fast set keeps the kept-rows checks
@pytest.mark.parametrize("form", ["decomposed", "free"])
def test_every_rounds_recorded_targets_are_a_refit_from_scratch_of_its_trials(tmp_path, form):
    from tests.explorer.sweeps.adaptive.adaptive_fake import FakeRunner, free_law

    spec = adaptive_spec(grid=GRAM_GRID, form=form, halfwidth=0.05, budget=0.6, batch=4, initial=10)
    st = Store(tmp_path / "s")
    runner = (PlantedRunner(st, TermsLaw(c1=0.5, c2=0.3), entries=60) if form == "decomposed"
              else FakeRunner(st, free_law()))
    result = run_adaptive(spec, st, runner)
    assert result.done >= 3, result.summary()
    rounds = read_rounds(st, "ad")
    scratch = AdaptiveLoop(spec, st, None, lambda line: None)
    scratch.rows = None  # the store's views, every row read again
    points = rounds[rounds["entry"] == "point"]
    for number in sorted(rounds["round"].unique()):
        targets = rounds[(rounds["round"] == number) & (rounds["entry"] == "target")].set_index("parameter")
        fitted = scratch.fit(set(points.loc[points["round"] <= number, "trial_key"]))
        if isinstance(fitted, str):
            assert targets.empty or targets["estimate"].isna().all()
            continue
        for name in ("a", "b"):
            row = targets.loc[name]
            for column, values in (("estimate", fitted.estimate), ("ci_low", fitted.ci_low),
                                   ("ci_high", fitted.ci_high)):
                assert (row[column] == values[name]) or (np.isnan(row[column]) and np.isnan(values[name])), \
                    (number, name, column, row[column], values[name])


def test_rows_beyond_the_cap_are_let_go_and_the_store_read_instead(tmp_path, monkeypatch):
    import explorer.sweeps.adaptive.row_cache as row_cache

    _, st, _ = planted(tmp_path, keys=lambda keys: keys[:6])
    monkeypatch.setattr(row_cache, "MAX_KEPT_BYTES", 1000)
    rows = SweepRows(st, "ad")
    assert_same_frames(kept(rows, stamps(st)), from_store(st))
    assert rows.too_large and not rows.tables
