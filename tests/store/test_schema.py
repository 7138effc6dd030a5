"""The schema is declared once and every write goes through it: mismatches are refused whole."""
from __future__ import annotations

import datetime as dt
import math
import os

import numpy as np
import pyarrow as pa
import pytest
import store_testkit as kit

from store import COLUMNS, SCHEMA_VERSION, SchemaError, schema, trial_row_from_metrics
from store.schema import column_names, to_table

CONTRACT_METRIC_COLUMNS = {
    "sweep", "trial_key", "ref_key", "ref_kind", "L", "M", "D", "d_in", "d_out", "samples", "problem_seed",
    "coupled_dim", "activation", "block", "preset", "alpha", "sigma_u", "sigma_v", "lr", "steps", "dtype",
    "antithetic", "residual_scale", "lr_scaling", "optimizer", "momentum", "beta1", "beta2", "eps", "weight_decay",
    "seed", "step", "err_out", "err_hidden", "loss", "ref_loss", "ref_err_out",
    "ref_err_hidden", "test_loss", "test_err_out", "feature_update", "lin_ratio", "output_change", "weight_change", "status", "flags",
    "gram_out", "gram_hidden", "err_hidden_depthmax", "err_hidden_depthmean", "err_backward", "error",
    "device", "node_id", "wall_s", "schema_version", "package_version", "code_fingerprint",
    *(f"coord_{kind}_b{b}" for kind in ("update", "branch") for b in range(4)),
}


def test_metric_columns_are_exactly_the_contract():
    assert set(column_names("metrics")) == CONTRACT_METRIC_COLUMNS
    assert len(column_names("metrics")) == len(CONTRACT_METRIC_COLUMNS)


@pytest.mark.parametrize("kind", sorted(COLUMNS))
def test_every_column_is_typed_and_documented(kind):
    import io

    import pyarrow.parquet as pq

    sch = schema(kind)
    buffer = io.BytesIO()  # every declared type survives Parquet as it is (no coercion on read)
    pq.write_table(sch.empty_table(), buffer)
    assert pq.read_schema(io.BytesIO(buffer.getvalue())).remove_metadata() == sch.remove_metadata()
    assert sch.metadata[b"explorer.schema_version"] == str(SCHEMA_VERSION).encode()
    for column in COLUMNS[kind]:
        assert column.meaning, column.name


def test_unknown_kind_lists_the_kinds():
    with pytest.raises(ValueError, match="expected one of: metrics, trials, fits, references"):
        schema("metric")


def test_valid_rows_become_a_typed_table():
    _, rows, _ = kit.trial(seeds=(0, 1, 2), steps=4)
    table = to_table("metrics", rows, {"sweep": "s", "trial_key": "k", "schema_version": 1, "package_version": "x"})
    assert table.schema.equals(schema("metrics"))
    assert table.num_rows == 15
    assert table.column("node_id")[0].as_py() == os.uname().nodename
    assert table.column("error").null_count == 15


def _write_refused(store, match, mutate=None, mutate_trial=None):
    key, rows, trial = kit.trial()
    if mutate:
        mutate(rows)
    if mutate_trial:
        mutate_trial(trial)
    with pytest.raises(SchemaError, match=match):
        store.write_trial("s", key, rows, trial)
    assert not store.exists(), "a refused write left files behind"


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda rows: rows[3].update(L=4.0), r"'L' \(int64\) got 4.0 \(float\) in row 3; expected an integer"),
        (lambda rows: rows[0].update(L=True), r"'L' .* got True \(bool\)"),
        (lambda rows: rows[2].update(err_out="0.1"), r"'err_out' .* got '0.1' \(str\)"),
        # a non-nullable float (the errors are nullable: reference kind none measures none)
        (lambda rows: rows[1].update(loss=None), r"'loss' is null in row 1"),
        (lambda rows: rows[0].update(antithetic=0), r"'antithetic' .* expected a bool"),
        (lambda rows: rows[0].update(status="exploded"), r"got 'exploded'; expected one of: ok, diverged, failed"),
        (lambda rows: [r.pop("lin_ratio") for r in rows], r"missing column\(s\) lin_ratio"),
        (lambda rows: [r.update(lin_ratios=1.0) for r in rows], r"unknown column\(s\) lin_ratios; declare"),
        (lambda rows: rows[1].pop("loss"), r"row 1 is missing column\(s\) loss"),
        (lambda rows: [r.update(sweep="other") for r in rows], r"'sweep' is 'other' in a row but the write is for 's'"),
        (lambda rows: rows[2].update(node_id="n1"), r"row 2 has columns \['node_id'\] that row 0 does not have"),
        (lambda rows: rows.append(dict(rows[0])), r"repeat seed=0 step=0"),
        (lambda rows: rows.clear(), r"no metrics rows given"),
    ],
)
def test_wrong_metric_rows_are_refused_and_nothing_is_written(local_store, mutate, match):
    _write_refused(local_store, match, mutate=mutate)


@pytest.mark.parametrize(
    "mutate_trial, match",
    [
        (lambda t: t.update(started_at=dt.datetime(2026, 1, 1)), r"'started_at' .* timezone-aware"),
        (lambda t: t.update(seeds=[0, 1.5]), r"'seeds' must hold lists of integers"),
        (lambda t: t.pop("config_json"), r"missing column\(s\) config_json"),
        (lambda t: t.update(n_seeds="2"), r"'n_seeds'"),
    ],
)
def test_a_wrong_trials_row_refuses_the_whole_trial(local_store, mutate_trial, match):
    _write_refused(local_store, match, mutate_trial=mutate_trial)


def test_numpy_scalars_are_accepted():
    _, rows, _ = kit.trial()
    rows[0].update(L=np.int64(4), err_out=np.float32(0.5), antithetic=np.bool_(False))
    table = to_table("metrics", rows, {"sweep": "s", "trial_key": "k", "schema_version": 1, "package_version": "x"})
    assert table.column("err_out")[0].as_py() == 0.5


def test_trial_row_summarizes_seeds_and_status():
    rows = kit.metric_rows(steps=3, seeds=(0, 1, 2), diverge_at=2)
    row = trial_row_from_metrics(rows, config_json="{}", started_at=kit.STARTED)
    assert row["status"] == "diverged" and row["seeds"] == [0, 1, 2] and row["n_seeds"] == 3
    finals = [r["err_out"] for r in rows if r["step"] == 3]
    assert len(finals) == 2  # the diverged seed never reached the last step
    assert row["final_err_out"] == pytest.approx(math.sqrt(sum(v * v for v in finals) / 2))
    to_table("trials", [row], {"sweep": "s", "trial_key": "k", "schema_version": 1, "package_version": "x"})


def test_final_errors_count_only_seeds_that_ended_ok():
    # Seed 2 diverges at the last step with a finite but huge error (past the divergence
    # threshold): its row is there, at step == steps, but it must not count.
    rows = kit.metric_rows(steps=3, seeds=(0, 1, 2))
    last_of_seed_2 = next(r for r in rows if r["seed"] == 2 and r["step"] == 3)
    last_of_seed_2.update(status="diverged", err_out=3.5e6, err_hidden=4.1e6)
    row = trial_row_from_metrics(rows, config_json="{}", started_at=kit.STARTED)
    ok_finals = [r for r in rows if r["step"] == 3 and r["seed"] in (0, 1)]
    assert row["status"] == "diverged"
    assert row["final_err_out"] == pytest.approx(math.sqrt(sum(r["err_out"] ** 2 for r in ok_finals) / 2))
    assert row["final_err_hidden"] == pytest.approx(math.sqrt(sum(r["err_hidden"] ** 2 for r in ok_finals) / 2))

    for r in rows:
        if r["step"] == 3:
            r["status"] = "diverged"
    nothing_ok = trial_row_from_metrics(rows, config_json="{}", started_at=kit.STARTED)
    assert math.isnan(nothing_ok["final_err_out"]) and math.isnan(nothing_ok["final_err_hidden"])


def test_fits_rows_fill_created_at_and_accept_null_intervals():
    row = {"form": "power", "metric": "err_out", "step": None, "parameter": "a", "estimate": -1.02,
           "ci_low": None, "ci_high": None, "r2_log": 0.97, "n_points": 12, "n_excluded": 1,
           "extrapolation_error": math.nan}
    table = to_table("fits", [row], {"sweep": "s", "fit_id": "f", "schema_version": 1, "package_version": "x"})
    assert table.column("created_at").type == pa.timestamp("us", tz="UTC")
    assert table.column("created_at")[0].as_py().tzinfo is not None
