"""Writing trials, fits and rounds: validate everything first, then one atomic file per trial.

A trial is written as two files, metrics first, then its one-row ``trials`` file; the trials file
is the mark of completion (``Store.completed_trial_keys``). A crash between the two leaves metrics
without a trials row: the trial counts as not done and is simply rerun, and the rerun replaces
the same file names, so nothing is duplicated; a driver that stops cleanly deletes such rows of
the trials it held (``cleanup.remove_unfinished``).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import SchemaError
from .files import Files
from .layout import check_key, check_sweep, key_file
from .fingerprint import code_fingerprint
from .schema import CONFIG_COLUMNS, SCHEMA_VERSION, STATUSES, package_version, to_table

ROW_GROUP_ROWS = 256 * 1024


def parquet_bytes(table: pa.Table, metadata: Mapping[str, str] | None = None, compression: str = "snappy") -> pa.Buffer:
    """Serialize a table to Parquet in memory, with optional file-level metadata.

    Small per-trial files use snappy (twice as fast to write as zstd, same size at this scale);
    compaction writes zstd.
    """
    if metadata:
        merged = dict(table.schema.metadata or {})
        merged.update({k.encode(): v.encode() for k, v in metadata.items()})
        table = table.replace_schema_metadata(merged)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression, row_group_size=ROW_GROUP_ROWS)
    return sink.getvalue()


def provenance(sweep: str, key_column: str, key: str) -> dict:
    """The columns the store sets itself on every row it writes."""
    fill = {"sweep": sweep, key_column: key, "schema_version": SCHEMA_VERSION, "package_version": package_version()}
    if key_column == "trial_key":  # metrics and trials rows: the code that computed them
        fill["code_fingerprint"] = code_fingerprint()
    return fill


def write_trial(files: Files, sweep: str, trial_key: str, metric_rows: Sequence[Mapping], trial_row: Mapping) -> None:
    """Validate and write one trial: its metric rows, then its trials row (see module docstring).

    Raises:
        InvalidNameError: a sweep name or trial key that cannot be a file name.
        SchemaError: rows that do not match the schema, or a (seed, step) given twice; nothing
            is written.
        StoreError: the store cannot be written.
    """
    check_sweep(sweep)
    check_key(trial_key)
    fill = provenance(sweep, "trial_key", trial_key)
    metrics = to_table("metrics", metric_rows, fill)
    _check_unique_steps(metric_rows)
    if not isinstance(trial_row, Mapping):
        raise SchemaError(f"the trials row must be a dict, got {type(trial_row).__name__}")
    trial = to_table("trials", [trial_row], fill)
    files.put(key_file(files.root, sweep, "metrics", trial_key), parquet_bytes(metrics))
    files.put(key_file(files.root, sweep, "trials", trial_key), parquet_bytes(trial))


def _check_unique_steps(rows: Sequence[Mapping]) -> None:
    seen: set[tuple] = set()
    for row in rows:
        pair = (row["seed"], row["step"])
        if pair in seen:
            raise SchemaError(f"metric rows repeat seed={pair[0]} step={pair[1]}; each (seed, step) must appear once")
        seen.add(pair)


def write_fit(files: Files, sweep: str, fit_id: str, rows: Sequence[Mapping]) -> None:
    """Validate and write the rows of one fit to ``sweep=<sweep>/kind=fits/<fit_id>.parquet``.

    Writing the same fit id again replaces the fit.

    Raises:
        InvalidNameError, SchemaError, StoreError: as for ``write_trial``.
    """
    _write_rows(files, sweep, "fits", "fit_id", fit_id, rows)


def write_round(files: Files, sweep: str, round_id: str, rows: Sequence[Mapping]) -> None:
    """Validate and write the rows of one adaptive round to ``sweep=<sweep>/kind=rounds/<round_id>.parquet``.

    Writing the same round id again replaces the round (planned, then done).

    Raises:
        InvalidNameError, SchemaError, StoreError: as for ``write_trial``.
    """
    _write_rows(files, sweep, "rounds", "round_id", round_id, rows)


def write_comparison(files: Files, sweep: str, comparison_id: str, rows: Sequence[Mapping]) -> None:
    """Validate and write the rows of one comparison to ``sweep=<sweep>/kind=comparisons/<comparison_id>.parquet``.

    Writing the same comparison id again replaces it.

    Raises:
        InvalidNameError, SchemaError, StoreError: as for ``write_trial``.
    """
    _write_rows(files, sweep, "comparisons", "comparison_id", comparison_id, rows)


def write_optima(files: Files, sweep: str, optima_id: str, rows: Sequence[Mapping]) -> None:
    """Validate and write the rows of one optimum or transfer request to
    ``sweep=<sweep>/kind=optima/<optima_id>.parquet``. Writing the same id again replaces it.

    Raises:
        InvalidNameError, SchemaError, StoreError: as for ``write_trial``.
    """
    _write_rows(files, sweep, "optima", "optima_id", optima_id, rows)


def _write_rows(files: Files, sweep: str, kind: str, key_column: str, key: str, rows: Sequence[Mapping]) -> None:
    """Validate ``rows`` of ``kind`` and write them as the one file of ``key`` (fits, rounds, comparisons, optima)."""
    check_sweep(sweep)
    check_key(key, key_column.replace("_", " "))
    table = to_table(kind, rows, provenance(sweep, key_column, key))
    files.put(key_file(files.root, sweep, kind, key), parquet_bytes(table))


_SEVERITY = {status: rank for rank, status in enumerate(STATUSES)}  # STATUSES lists the worst last


def _rms(values: list[float]) -> float:
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    return math.sqrt(sum(v * v for v in finite) / len(finite)) if finite else math.nan


def trial_row_from_metrics(
    metric_rows: Sequence[Mapping],
    *,
    config_json: str,
    started_at,
    seeds: Sequence[int] | None = None,
    error: str | None = None,
    node_id: str | None = None,
) -> dict:
    """Build a trial's ``trials`` row from its metric rows.

    Args:
        metric_rows: the rows of one trial (as given to ``write_trial``), non-empty.
        config_json: the resolved trial config as JSON text.
        started_at: timezone-aware datetime the trial started.
        seeds: the trial's seeds (default: the distinct seeds of the rows, sorted).
        error: the failure message (default: the first non-null ``error`` of the rows).
        node_id: where it ran (default: the rows' ``node_id``, else this host).

    Returns:
        A dict with the trials columns except those the store fills (sweep, trial_key, versions).
        status is the worst over seeds (failed > diverged > ok); final_err_out and
        final_err_hidden are the RMS, over the seeds whose row at step == steps has status ok,
        of their finite values there (NaN when no seed ended ok). A seed that diverged at the
        last step has a finite but meaningless error there (e.g. 3.5e6): it never counts.

    Raises:
        SchemaError: no rows, or rows without the metric columns used here.
    """
    if not metric_rows:
        raise SchemaError("a trial needs at least one metric row (a failed trial writes one row per seed at step 0)")
    first = metric_rows[0]
    try:
        row = {c.name: first[c.name] for c in CONFIG_COLUMNS if not c.optional or c.name in first}
        for name in ("ref_key", "ref_kind", "device", "wall_s"):
            row[name] = first[name]
        status = max((r["status"] for r in metric_rows), key=lambda s: _SEVERITY.get(s, 3))
        last = [r for r in metric_rows if r["step"] == first["steps"] and r["status"] == "ok"]
        seed_list = sorted({r["seed"] for r in metric_rows}) if seeds is None else list(seeds)
        errors = [r.get("error") for r in metric_rows if r.get("error")]
        row.update(
            seeds=seed_list,
            n_seeds=len(seed_list),
            status=status,
            error=error if error is not None else (errors[0] if errors else None),
            started_at=started_at,
            final_err_out=_rms([r["err_out"] for r in last]),
            final_err_hidden=_rms([r["err_hidden"] for r in last]),
            config_json=config_json,
        )
    except KeyError as exc:
        raise SchemaError(f"metric rows lack column {exc.args[0]!r}; cannot summarize the trial") from None
    node = node_id if node_id is not None else first.get("node_id")
    if node is not None:
        row["node_id"] = node
    return row
