"""Data for the analysis tests (explorer.analysis.fitting, phase, charts, report): metric rows shaped like
the store's ``metrics`` view, from the real trial engine or from a known law, on a DuckDB
connection. Used only by tests."""
from __future__ import annotations

import itertools

import duckdb
import numpy as np
import pandas as pd

from trials import ReferenceConfig, TrialConfig, compute_reference, train_trial


def connect(metrics: pd.DataFrame) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with ``metrics`` (and a one-row-per-trial ``trials``) registered.

    A ``started_at`` column of ``metrics`` (one value per trial) goes to ``trials`` only, as in
    the store; without it ``trials`` has no start times."""
    con = duckdb.connect()
    per_trial = {"L": ("L", "first"), "M": ("M", "first"), "D": ("D", "first")}
    if "started_at" in metrics:
        per_trial["started_at"] = ("started_at", "first")
    con.register("trials", metrics.groupby(["sweep", "trial_key"], as_index=False).agg(**per_trial))
    con.register("metrics", metrics.drop(columns=["started_at"], errors="ignore"))
    return con


def run_trials(configs, *, sweep: str = "analysis", ref_depth: int = 64, ref_width: int = 32) -> pd.DataFrame:
    """Metric rows of real trials (trials.train_trial, no Ray), one reference per limit group."""
    references, rows = {}, []
    for cfg in configs:
        rc = ReferenceConfig(limit=cfg, depth=ref_depth, width=ref_width, replicas=2, device="cpu")
        if rc.key() not in references:
            references[rc.key()] = compute_reference(rc)
        for row in train_trial(cfg, references[rc.key()]):
            row.update(sweep=sweep, trial_key=cfg.key(), error=None)
            rows.append(row)
    return pd.DataFrame(rows)


def grid_configs(base: TrialConfig, **axes) -> list[TrialConfig]:
    """The full factorial of ``axes`` (name -> values) around ``base``."""
    names = list(axes)
    return [base.replace(**dict(zip(names, values))) for values in itertools.product(*(axes[n] for n in names))]


def law_rows(law, *, Ls=(2, 4, 8, 16, 32, 64), Ms=(1, 4, 16, 64), Ds=(8,), alphas=(1.0,), seeds: int = 5,
             entries: int = 50, steps: int = 10, ref_err: float = 1e-5, sweep: str = "law", rng=None) -> pd.DataFrame:
    """Synthetic metric rows with every column of the store's schema.

    The per-seed error is an RMS over ``entries`` Gaussian errors of mean square law(L, M, D)^2:
    err_seed = law * sqrt(chi2_entries / entries), so the RMS over seeds estimates the law itself
    (as a trial's error estimates its expected error); errors grow along the steps to reach it
    at the last one. The phase metrics follow the measured pattern (docs/model.md section 4):
    feature_update = 0.5 / alpha, lin_ratio = 0.4 / alpha, output_change = 0.6, initial loss 1.6.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    rows = []
    for L, M, D, alpha in itertools.product(Ls, Ms, Ds, alphas):
        true = float(law(L, M, D))
        key = f"L{L}-M{M}-D{D}-a{alpha:g}"
        for seed in range(seeds):
            noise = np.sqrt(rng.chisquare(entries, size=steps + 1) / entries)
            for step in range(steps + 1):
                grown = (step + 1) / (steps + 1)
                moved = step / steps
                err = true * grown * noise[step]
                rows.append(dict(
                    sweep=sweep, trial_key=key, ref_key="ref-" + str(D), ref_kind="mean_ode", L=L, M=M, D=D, d_in=5,
                    d_out=5, samples=10, problem_seed=1, coupled_dim=None, activation="tanh", block="2lp",
                    preset="mlu", alpha=float(alpha), sigma_u=1.0, sigma_v=1.0, lr=1.0, steps=steps, dtype="float64",
                    antithetic=False, residual_scale=alpha / (L * M), seed=seed, step=step, err_out=err,
                    err_hidden=err, loss=1.6 * (1 - 0.5 * moved), ref_loss=1.6 * (1 - 0.5 * moved),
                    ref_err_out=ref_err, ref_err_hidden=ref_err, feature_update=moved * 0.5 / alpha,
                    lin_ratio=moved * 0.4 / alpha, output_change=moved * 0.6, weight_change=moved * 0.3 / alpha,
                    status="ok", error=None, device="cpu", node_id="test", wall_s=0.01))
    return pd.DataFrame(rows)


def law_grid(law, *, Ls=(2, 4, 8, 16, 32, 64), Ms=(1, 4, 16, 64), Ds=(8,), seeds: int = 5, entries: int = 50,
             rng=None) -> pd.DataFrame:
    """The table ``grid_errors`` would return for ``law_rows`` at the last step, built directly
    (no DuckDB): for tests that fit hundreds of grids."""
    rng = rng if rng is not None else np.random.default_rng(0)
    points = list(itertools.product(Ls, Ms, Ds))
    true = np.array([float(law(L, M, D)) for L, M, D in points])
    per_seed = true[:, None] * np.sqrt(rng.chisquare(entries, size=(len(points), seeds)) / entries)
    grid = pd.DataFrame(points, columns=["L", "M", "D"])
    grid["err"] = np.sqrt((per_seed**2).mean(axis=1))
    grid["ref_err"] = 1e-5
    grid["n_seeds"] = seeds
    grid["seed_errs"] = list(per_seed)
    grid["floor_limited"] = False
    return grid


def rerun_with_new_reference(old_law, new_law, *, started: bool = True, **kwargs) -> pd.DataFrame:
    """Rows of a sweep run twice, as after changing its ``[reference]`` and running it again: every
    grid point has trials against reference ``old-<D>`` (errors ``old_law``, started on day 1) and
    against ``new-<D>`` (errors ``new_law``, day 2). ``started=False`` leaves out the start
    times. ``kwargs`` go to ``law_rows``."""
    import datetime as dt

    runs = []
    for name, law, day in (("old", old_law, 1), ("new", new_law, 2)):
        rows = law_rows(law, **kwargs)
        rows["ref_key"] = name + "-" + rows["D"].astype(str)
        rows["trial_key"] = rows["trial_key"] + "-" + name
        if started:
            rows["started_at"] = pd.Timestamp(dt.datetime(2026, 1, day, tzinfo=dt.timezone.utc))
        runs.append(rows)
    return pd.concat(runs, ignore_index=True)


def mark_trial(frame: pd.DataFrame, trial_key: str, status: str, seeds=None, from_step: int = 0) -> pd.DataFrame:
    """A copy of ``frame`` where a trial (some seeds) diverged at ``from_step`` (rows after it
    dropped, that row NaN) or failed (one NaN row per seed at step 0, with an error)."""
    hit = (frame["trial_key"] == trial_key) & (frame["seed"].isin(seeds) if seeds is not None else True)
    metrics = ["err_out", "err_hidden", "loss", "feature_update", "lin_ratio", "output_change", "weight_change"]
    if status == "failed":
        out = frame[~hit | (frame["step"] == 0)].copy()
        rows = hit[out.index]
        out.loc[rows, metrics] = np.nan
        out.loc[rows, "status"] = "failed"
        out.loc[rows, "error"] = "RuntimeError: simulated failure"
        return out.reset_index(drop=True)
    out = frame[~hit | (frame["step"] <= from_step)].copy()
    rows = hit[out.index] & (out["step"] == from_step)
    out.loc[rows, ["err_out", "err_hidden", "loss"]] = np.nan
    out.loc[rows, "status"] = "diverged"
    return out.reset_index(drop=True)


def write_to_store(frame: pd.DataFrame, store) -> None:
    """Write metric rows into a ``store.Store``, one trial per trial_key (sweep from the rows);
    a ``started_at`` column gives the trials' start times (default: now)."""
    import datetime as dt

    from store import trial_row_from_metrics

    for (sweep, key), rows in frame.groupby(["sweep", "trial_key"]):
        started = rows["started_at"].iloc[0].to_pydatetime() if "started_at" in rows else dt.datetime.now(dt.timezone.utc)
        rows = rows.drop(columns=["started_at"], errors="ignore")
        records = rows.drop(columns=["sweep", "trial_key"]).astype(object).where(rows.notna(), None)
        records = [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()}
                   for r in records.to_dict("records")]
        for r in records:
            for k in ("err_out", "err_hidden", "loss", "feature_update", "lin_ratio", "output_change", "weight_change",
                      "ref_loss", "ref_err_out", "ref_err_hidden", "wall_s"):
                if r.get(k) is None:
                    r[k] = float("nan")
        trial = trial_row_from_metrics(records, config_json="{}", started_at=started)
        store.write_trial(sweep, key, records, trial)


def draws_grid(law_of_draw, draws=(1, 2, 3, 4), rng=None, **kwargs) -> pd.DataFrame:
    """``law_grid`` for several problem draws, one law per draw (``law_of_draw(draw)`` returns
    law(L, M, D)): the table ``grid_errors`` gives for a sweep run at several problem seeds."""
    rng = rng if rng is not None else np.random.default_rng(0)
    parts = []
    for draw in draws:
        part = law_grid(law_of_draw(draw), rng=rng, **kwargs)
        part.insert(0, "problem_seed", draw)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def random_effect_laws(rng, sd_a: float = 0.1, sd_b: float = 0.03, sd_log_c: float = 0.2,
                       a: float = 1.0, b: float = 0.5, c1: float = 0.8, c2: float = 0.3):
    """A law per draw of err = c1 L^-a + c2 (D/(LM))^b whose exponents and constants are shifted
    per draw (a random effect, like the real draws of data and embeddings); the population
    values are the arguments. Returns law_of_draw for ``draws_grid``."""
    shifts = {}

    def law_of_draw(draw):
        if draw not in shifts:
            shifts[draw] = (a + sd_a * rng.standard_normal(), b + sd_b * rng.standard_normal(),
                            c1 * np.exp(sd_log_c * rng.standard_normal()), c2 * np.exp(sd_log_c * rng.standard_normal()))
        ad, bd, c1d, c2d = shifts[draw]
        return lambda L, M, D: c1d * L ** -ad + c2d * (D / (L * M)) ** bd

    return law_of_draw
