"""The fit cache and the report cache (``explorer.report.fit_cache``, ``report_cache``): a report
of a sweep that did not change is read back with the very numbers a fresh build gives, and a
sweep that gained rows is fitted and drawn again.

The store is a real one (``store.Store``), written with planted rows of a known law; the
reports go through ``explorer.api.report``, the twin of ``explorer report``."""
from __future__ import annotations

import math
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from explorer import api
from explorer.analysis.data import cached_queries, query_cache, query_table
from explorer.analysis.fitting import T95, fit_sweep
from explorer.analysis.laws import parse_expression
from explorer.errors import QueryError
from explorer.report import page
from explorer.report.fit_cache import FitCache
from explorer.report.report_cache import results_digest
from explorer.store_access import open_sweep
from store import Store

from tests.explorer.analysis_data import connect, law_rows, write_to_store

LAW = lambda L, M, D: 0.5 / L + 0.2 * math.sqrt(D / (L * M))  # noqa: E731
N_BOOT = 10


def _draw(problem_seed: int) -> pd.DataFrame:
    rows = law_rows(LAW, Ls=(2, 4, 8, 16), Ms=(1, 4, 16), seeds=3, steps=2, sweep="S",
                    rng=np.random.default_rng(problem_seed))
    rows["problem_seed"] = problem_seed
    rows["trial_key"] = rows["trial_key"] + f"-p{problem_seed}"
    return rows


@pytest.fixture
def user_cache(tmp_path, monkeypatch) -> Path:
    """The user's cache folder, in the test's own directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "resnet-scaling-explorer" / "fits"


def read_back(report) -> bool:
    """Whether the report was written from the report cache: its charts are then their specs (a
    build draws Altair charts)."""
    return bool(report.charts) and all(isinstance(chart, dict) for chart in report.charts.values())


def _fresh(store: Store, out: Path):
    """The report built with no cache at all."""
    _, con = open_sweep(store, "S")
    return page.build_report(con, "S", out, n_boot=N_BOOT)


def assert_same_fits(a, b) -> None:
    """Every number of every fit of two reports, bit for bit."""
    assert list(a.fits) == list(b.fits) and a.fit_errors == b.fit_errors
    for form, x in a.fits.items():
        y = b.fits[form]
        for field in ("estimate", "ci_low", "ci_high", "unmeasured", "unidentified"):
            assert getattr(x, field) == getattr(y, field), (form, field)
        assert (x.r2_log, x.n_points, x.n_excluded, x.warnings, x.notes) == (y.r2_log, y.n_points, y.n_excluded,
                                                                              y.warnings, y.notes)
        assert np.array_equal(x.samples, y.samples) and x.fit_id == y.fit_id
        pd.testing.assert_frame_equal(x.grid, y.grid, check_exact=True)
        pd.testing.assert_frame_equal(x.per_draw, y.per_draw, check_exact=True)
    pd.testing.assert_frame_equal(a.comparison, b.comparison, check_exact=True)


def test_a_rerun_report_is_read_back_with_the_numbers_of_a_fresh_build_and_a_grown_sweep_is_refitted(
        tmp_path, user_cache):
    store = Store(tmp_path / "results")
    write_to_store(_draw(1), store)
    first = api.report("S", store, tmp_path / "first", n_boot=N_BOOT, save=False)
    again = api.report("S", store, tmp_path / "again", n_boot=N_BOOT, save=False)
    assert not read_back(first) and read_back(again)  # the second was written from the first: not fitted, not drawn
    assert len(list(user_cache.glob("*.pickle"))) > 2
    fresh = _fresh(store, tmp_path / "fresh")
    assert_same_fits(again, fresh)
    assert_same_fits(first, fresh)
    for name in ["index.html"] + [f"{chart}.html" for chart in first.charts]:
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "first" / name).read_bytes(), name
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes(), name
    assert set(again.charts) == set(fresh.charts)

    write_to_store(_draw(2), store)  # the sweep gains a problem draw
    grown = api.report("S", store, tmp_path / "grown", n_boot=N_BOOT, save=False)
    assert not read_back(grown)
    assert grown.fits["theory"].n_points == 2 * first.fits["theory"].n_points
    assert grown.fits["theory"].estimate != first.fits["theory"].estimate
    assert (tmp_path / "grown" / "index.html").read_bytes() != (tmp_path / "first" / "index.html").read_bytes()
    assert_same_fits(grown, _fresh(store, tmp_path / "fresh_grown"))


def test_a_report_with_its_fits_saved_is_read_back_too_and_saves_them_again(tmp_path, user_cache):
    store = Store(tmp_path / "results")
    write_to_store(_draw(1), store)
    api.report("S", store, tmp_path / "first", n_boot=N_BOOT)
    saved = store.query("SELECT DISTINCT fit_id FROM fits ORDER BY fit_id").to_pylist()
    again = api.report("S", store, tmp_path / "again", n_boot=N_BOOT)
    assert read_back(again) and again.fits_not_saved is None
    assert store.query("SELECT DISTINCT fit_id FROM fits ORDER BY fit_id").to_pylist() == saved


def test_a_cached_fit_is_keyed_by_every_row_and_option(tmp_path):
    con = connect(law_rows(LAW, Ls=(2, 4, 8), Ms=(1, 4), seeds=3, steps=2, sweep="S"))
    cache = FitCache(tmp_path / "fits")
    kept = fit_sweep(con, "S", "theory", n_boot=N_BOOT, cache=cache)
    assert (cache.hits, cache.misses) == (0, 1)
    read = fit_sweep(con, "S", "theory", n_boot=N_BOOT, cache=FitCache(tmp_path / "fits"))  # from the file
    plain = fit_sweep(con, "S", "theory", n_boot=N_BOOT)
    for result in (kept, read):
        assert result.estimate == plain.estimate and np.array_equal(result.samples, plain.samples)
    fit_sweep(con, "S", "theory", n_boot=N_BOOT, seed=1, cache=cache)  # another option
    fit_sweep(con, "S", "free", n_boot=N_BOOT, cache=cache)  # another law
    assert (cache.hits, cache.misses) == (0, 3)
    changed = law_rows(LAW, Ls=(2, 4, 8), Ms=(1, 4), seeds=3, steps=2, sweep="S")
    changed.loc[len(changed) - 1, "err_out"] *= 1.5  # one seed's last error
    other = fit_sweep(connect(changed), "S", "theory", n_boot=N_BOOT, cache=cache)
    assert (cache.hits, cache.misses) == (0, 4) and other.estimate != plain.estimate


def _table_of(rows) -> "duckdb.DuckDBPyConnection":
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE t (a INTEGER, b DOUBLE, keys VARCHAR[])")
    for row in rows:
        con.execute("INSERT INTO t VALUES (?, ?, ?)", list(row))
    return con


def _digest(con, sql="SELECT * FROM t") -> str | None:
    with query_cache(con):
        return results_digest(con, [sql])


def test_the_results_digest_is_one_set_of_rows_in_any_order_and_nothing_else():
    rows = [(1, 2.0, ["x"]), (3, 4.0, ["y", "z"]), (5, float("nan"), [])]
    assert _digest(_table_of(rows)) == _digest(_table_of(rows[::-1]))  # DuckDB may return either order
    assert _digest(_table_of(rows)) != _digest(_table_of(rows[:2]))  # a row fewer
    assert _digest(_table_of(rows)) != _digest(_table_of([(1, 2.0000001, ["x"])] + rows[1:]))  # a value
    assert _digest(_table_of(rows)) != _digest(_table_of([(1, 2.0, ["w"])] + rows[1:]))  # a list's value
    assert _digest(_table_of(rows)) != _digest(_table_of(rows), "SELECT a, b, keys FROM t")  # another query
    failing = _digest(_table_of(rows), "SELECT nope FROM t")  # an error is an input too
    assert failing == _digest(_table_of(rows[:1]), "SELECT nope FROM t") and failing != _digest(_table_of(rows))


def test_a_query_that_failed_in_a_block_is_among_its_queries_with_its_error():
    con = _table_of([(1, 2.0, ["x"])])
    with query_cache(con):
        with pytest.raises(QueryError):
            query_table(con, "SELECT nope FROM t")
        query_table(con, "SELECT a FROM t")
        queries = cached_queries(con)
    assert list(queries) == ["SELECT nope FROM t", "SELECT a FROM t"] and "nope" in queries["SELECT nope FROM t"]


def test_every_chart_of_a_report_is_a_valid_vega_lite_spec(tmp_path, user_cache):
    """The report writes its specs without validating them (a second of each report): here every
    chart a demo-like report draws is validated against Vega-Lite's schema."""
    store = Store(tmp_path / "results")
    write_to_store(pd.concat([_draw(1), _draw(2)], ignore_index=True), store)
    report = _fresh(store, tmp_path / "fresh")
    assert len(report.charts) >= 8
    for name, chart in report.charts.items():
        assert chart.to_dict() == chart.to_dict(validate=False), name  # to_dict() raises on an invalid spec


def test_the_t_quantile_table_is_scipys_to_the_last_bit():
    from scipy import stats

    assert T95 == tuple(float(stats.t.ppf(0.975, k)) for k in range(1, 31))


def test_a_law_pickles_as_its_text_and_evaluates_the_same():
    law = parse_expression("c1*L**(-a) + c2*sqrt(D/(L*M)) + k", positive=("k",))
    back = pickle.loads(pickle.dumps(law))
    assert (back.text, back.parameters, back.positive, back.variables) == (law.text, law.parameters, law.positive,
                                                                           law.variables)
    params = {"c1": 0.5, "a": 1.1, "c2": 0.2, "k": 0.01}
    L, M, D = np.array([2.0, 8.0]), np.array([4.0, 16.0]), np.array([8.0, 8.0])
    assert np.array_equal(back(params, L, M, D), law(params, L, M, D))


def test_the_cache_keeps_at_most_its_entries_and_bytes_the_oldest_going_first(tmp_path, monkeypatch):
    from explorer.report import fit_cache

    import os

    cache = FitCache(tmp_path / "fits")
    for n in range(3):
        cache.keep("value", {"n": n}, n)
        os.utime(tmp_path / "fits" / f"{cache.key('value', {'n': n})}.pickle", (1e9 + n, 1e9 + n))  # n older first
    monkeypatch.setattr(fit_cache, "MAX_ENTRIES", 2)
    cache.keep("value", {"n": 3}, 3)
    files = sorted(p.name for p in (tmp_path / "fits").glob("*.pickle"))
    assert files == sorted(f"{cache.key('value', {'n': n})}.pickle" for n in (2, 3))
    monkeypatch.setattr(fit_cache, "MAX_BYTES", 1)  # less than one file: the one just written stays
    cache.keep("value", {"n": 4}, 4)
    assert [p.name for p in (tmp_path / "fits").glob("*.pickle")] == [f"{cache.key('value', {'n': 4})}.pickle"]
    assert FitCache(tmp_path / "fits").read("value", {"n": 4}) == (True, 4)
    assert FitCache(tmp_path / "fits").read("value", {"n": 2}) == (False, None)


def _bundle(n: int) -> str:
    return f"window.vegaEmbed={n};" + "/* a bundle's size */" * 5000  # vl-convert's is about 0.9 MB


def test_a_page_kept_with_another_vega_bundle_is_never_replayed(tmp_path, user_cache, monkeypatch):
    import vl_convert as vlc

    from explorer.report import chart_files

    bundle = {"text": _bundle(1)}
    monkeypatch.setattr(vlc, "javascript_bundle", lambda vl_version: bundle["text"])
    store = Store(tmp_path / "results")
    write_to_store(_draw(1), store)
    chart_files.vega_bundle.cache_clear()
    try:
        first = api.report("S", store, tmp_path / "first", n_boot=N_BOOT, save=False)
        bundle["text"] = _bundle(2)  # another bundle (vl-convert upgraded, the kept one made again)
        chart_files.bundle_cache_path(vlc.__version__, chart_files.vega_lite_version()).unlink()
        chart_files.vega_bundle.cache_clear()
        second = api.report("S", store, tmp_path / "second", n_boot=N_BOOT, save=False)
    finally:
        chart_files.vega_bundle.cache_clear()
    assert not read_back(first) and not read_back(second)  # built again: its page holds the new bundle
    assert "window.vegaEmbed=1;" in (tmp_path / "first" / "index.html").read_text()
    page = (tmp_path / "second" / "index.html").read_text()
    assert "window.vegaEmbed=2;" in page and "window.vegaEmbed=1;" not in page


@pytest.mark.parametrize("damage", ["emptied", "cut", "one byte changed"])
def test_a_damaged_cache_file_is_a_miss_removed_and_computed_again(tmp_path, damage):
    cache = FitCache(tmp_path / "fits")
    value = np.linspace(0.0, 1.0, 64)
    cache.keep("fit", {"n": 1}, value)
    path = tmp_path / "fits" / f"{cache.key('fit', {'n': 1})}.pickle"
    good = path.read_bytes()
    at = good.index(value.tobytes()) + 8 * 10 + 6  # a byte of value[10]: a pickle that still loads, altered
    path.write_bytes({"emptied": b"", "cut": good[:len(good) // 2],
                      "one byte changed": good[:at] + bytes([good[at] ^ 0x01]) + good[at + 1:]}[damage])
    computed = []
    again = FitCache(tmp_path / "fits").computed("fit", {"n": 1}, lambda: computed.append(1) or value.copy())
    assert computed == [1] and np.array_equal(again, value)  # never the altered numbers
    assert path.read_bytes() == good  # written again whole
    assert FitCache(tmp_path / "fits").read("fit", {"n": 1})[0]


@pytest.mark.slow  # vl-convert's JavaScript engine makes the real bundle (seconds)
def test_an_emptied_kept_bundle_gives_a_whole_page_and_restoring_it_never_replays_a_broken_one(tmp_path, user_cache):
    import vl_convert as vlc

    from explorer.report import chart_files

    store = Store(tmp_path / "results")
    write_to_store(_draw(1), store)
    kept = chart_files.bundle_cache_path(vlc.__version__, chart_files.vega_lite_version())
    whole = vlc.javascript_bundle(vl_version=chart_files.vega_lite_version())  # independently of the cache
    chart_files.vega_bundle.cache_clear()
    try:
        chart_files.vega_bundle()  # made and kept
        saved = kept.read_bytes()
        # emptied before the first report (whose page the report cache keeps), then put back
        for step in ("emptied", "restored"):
            kept.write_bytes(b"" if step == "emptied" else saved)
            chart_files.vega_bundle.cache_clear()  # a new process
            api.report("S", store, tmp_path / step, n_boot=N_BOOT, save=False)
            page = (tmp_path / step / "index.html").read_text(encoding="utf-8")
            assert whole in page and len(page.encode()) > 900_000, (step, len(page))
    finally:
        chart_files.vega_bundle.cache_clear()
