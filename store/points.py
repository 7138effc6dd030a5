"""The ``points`` view: one row per measured point and step, the seeds' errors split into bias and
fluctuation.

A point is one trial (a grid point and problem draw, all its seeds, against one reference) at one
step k. Over its R seeds with status ok and no stability flag, with e_s = f_s - f_ref (n entries)
and G[s, t] = <e_s, e_t> / n (the ``gram_out`` / ``gram_hidden`` rows of ``metrics``):

- ``err``: the RMS over those seeds of the metric, sqrt(mean_s G[s, s]);
- ``bias2`` = (sum_{s,t} G[s, t] - sum_s G[s, s]) / (R (R - 1)): an unbiased estimate of the
  squared distance of the seeds' mean from the reference (it pairs distinct seeds only, so the
  seeds' own spread drops out; it may come out negative when the bias is small against the
  spread). Needs R >= 2;
- ``bias`` = sqrt(max(bias2, 0)); ``fluct`` = sqrt(max(mean_s G[s, s] - bias2, 0)), the seeds'
  spread around their mean, so that err^2 = bias2 + fluct^2;
- ``bias2_se``: the standard error of bias2 over the draw of the seeds. bias2 is a mean over
  pairs of distinct seeds of h(s, t) = G[s, t], so its variance is estimated without bias by
  bias2^2 - P4, P4 the mean of h(s, t) h(u, v) over four distinct seeds (an unbiased estimate of
  the squared bias). That estimate is floored at the part of the variance the pairs' own spread
  makes alone, 2 (P2 - P4) / (R (R - 1)) with P2 the mean of h(s, t)^2 over pairs (a variance
  is never below it), which keeps the error positive when few seeds make it noisy. Needs R >= 4;
  with R = 3 it is the jackknife over seeds instead (which overstates the error by up to about
  1.5 times when the bias is small against the spread). Over planted errors the root mean
  square of bias2_se is 1.0 - 1.4 times the actual spread of bias2 (the most with 4 seeds and no
  bias), the jackknife's 1.1 - 1.7 times;
- ``bias_se`` = bias2_se / (2 bias), the same for bias to first order: meaningful where bias2
  is several times bias2_se (NULL where bias2 <= 0).

Columns are NULL where they cannot be computed: a point with one seed (no pair), or rows written
before the Gram rows were stored. The reference's own error (``ref_err_*``, common to all seeds)
is part of the bias. Rows with a flag are left out, as the fits leave them out.
"""
from __future__ import annotations

POINTS_VIEW = "points"
POINT_METRICS = {"out": ("err_out", "gram_out", "ref_err_out"),
                 "hidden": ("err_hidden", "gram_hidden", "ref_err_hidden")}
# Constant within a trial: carried to the point's row as they are.
TRIAL_COLUMNS = ("ref_key", "ref_kind", "L", "M", "D", "d_in", "d_out", "samples", "problem_seed", "coupled_dim",
                 "activation", "block", "preset", "alpha", "sigma_u", "sigma_v", "lr", "steps", "dtype",
                 "antithetic", "residual_scale")


def _per_row(suffix: str, gram: str) -> str:
    """Each ok row's own entry, the sum of its Gram row over the other ok seeds and the sum of
    their squares (G[s, t] for the ok t != s)."""
    chosen = f'list_select("{gram}", ok_positions)'
    return (f'"{gram}"[pos] AS diag_{suffix}, '
            f'list_sum({chosen}) - "{gram}"[pos] AS pairs_{suffix}, '
            f'list_inner_product({chosen}, {chosen}) - "{gram}"[pos] * "{gram}"[pos] AS squares_{suffix}')


def _leave_one_out(suffix: str) -> str:
    """bias2 without this row's seed (for the jackknife of a 3-seed point)."""
    return (f"CASE WHEN n_ok = 3 THEN (sum(pairs_{suffix}) OVER point - 2 * pairs_{suffix}) "
            f"/ ((n_ok - 1) * (n_ok - 2)) END AS loo_{suffix}")


def _bias2_variance(suffix: str) -> str:
    """The variance of bias2 (module docstring): unbiased (U^2 - P4), floored at the pairs' own
    part 2 (P2 - P4) / (R (R - 1)); from R >= 4 seeds (P4 needs four distinct ones)."""
    R, S = "count(*)", f"sum(pairs_{suffix})"
    pairs = f"({R} * ({R} - 1))"
    p4 = (f"(({S}) * ({S}) - 4 * sum(pairs_{suffix} * pairs_{suffix}) + 2 * sum(squares_{suffix})) "
          f"/ ({pairs} * ({R} - 2) * ({R} - 3))")
    u = f"({S}) / {pairs}"
    return f"greatest({u} * {u} - {p4}, 2 * (sum(squares_{suffix}) / {pairs} - {p4}) / {pairs})"


def _aggregates(suffix: str, metric: str, gram: str, ref: str) -> str:
    """The point's columns for one metric (every one guarded: DuckDB's greatest skips NULLs)."""
    complete = f'count("{gram}") = count(*)'
    decomposed = f"count(*) >= 2 AND {complete}"
    bias2 = f"CASE WHEN {decomposed} THEN sum(pairs_{suffix}) / (count(*) * (count(*) - 1)) END"
    se = (f"CASE WHEN count(*) >= 4 AND {complete} THEN sqrt(greatest({_bias2_variance(suffix)}, 0)) "
          f"WHEN count(*) = 3 AND {complete} THEN sqrt(2 * var_pop(loo_{suffix})) END")
    return f""",
        sqrt(avg("{metric}" * "{metric}")) AS "{metric}",
        {bias2} AS bias2_{suffix},
        CASE WHEN {decomposed} THEN sqrt(greatest({bias2}, 0)) END AS bias_{suffix},
        CASE WHEN {decomposed} THEN sqrt(greatest(avg(diag_{suffix}) - ({bias2}), 0)) END AS fluct_{suffix},
        {se} AS bias2_{suffix}_se,
        CASE WHEN {bias2} > 0 THEN ({se}) / (2 * sqrt({bias2})) END AS bias_{suffix}_se,
        avg("{ref}") AS "{ref}\""""


def points_sql(source: str = "metrics") -> str:
    """The SELECT behind the ``points`` view, over a table or view ``source`` with the metrics
    columns (store/schema.py). ``source`` must hold some row of every seed of each trial it
    holds (every seed has a step-0 row): a seed's place in the Gram rows is its rank there."""
    carried = ", ".join(f'any_value("{c}") AS "{c}"' for c in TRIAL_COLUMNS)
    per_row = ", ".join(_per_row(s, gram) for s, (_, gram, _) in POINT_METRICS.items())
    leave_one_out = ", ".join(_leave_one_out(s) for s in POINT_METRICS)
    aggregates = "".join(_aggregates(s, *cols) for s, cols in POINT_METRICS.items())
    # A Gram row lists every seed of its trial in ascending order: pos is a seed's place there
    # (1-based, as DuckDB indexes lists); ok_positions those of the point's ok seeds.
    return f"""
        WITH positions AS (
            SELECT trial_key, seed, row_number() OVER (PARTITION BY trial_key ORDER BY seed) AS pos
            FROM (SELECT DISTINCT trial_key, seed FROM {source})),
        ok AS (
            SELECT *, list(pos ORDER BY pos) OVER point AS ok_positions, count(*) OVER point AS n_ok
            FROM {source} JOIN positions USING (trial_key, seed)
            WHERE status = 'ok' AND isfinite(err_out) AND coalesce(trim(flags), '') = ''
            WINDOW point AS (PARTITION BY sweep, trial_key, step)),
        summed AS (SELECT *, {per_row} FROM ok),
        jackknifed AS (SELECT *, {leave_one_out} FROM summed WINDOW point AS (PARTITION BY sweep, trial_key, step))
        SELECT sweep, trial_key, {carried}, step, count(*) AS n_seeds{aggregates}
        FROM jackknifed
        GROUP BY sweep, trial_key, step
    """


def create_points_view(con, source: str = "metrics") -> None:
    """Define the ``points`` view on a DuckDB connection that has ``source`` (module docstring)."""
    con.execute(f'CREATE OR REPLACE VIEW "{POINTS_VIEW}" AS {points_sql(source)}')
