"""The report: files beside index.html, numbers that match the fit rows, and a page that renders
every chart in headless Chromium with no network."""
import math
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from explorer.cli import main
from explorer.report.page import CHART_FORMATS
from store import Store

from tests.explorer.analysis_data import connect, law_rows, mark_trial, rerun_with_new_reference, write_to_store
from tests.paths import REPO_ROOT

LAW = lambda L, M, D: 0.5 / L + 0.2 * math.sqrt(D / (L * M)) + 0.3 / math.sqrt(D)  # noqa: E731
CHARTS = ("error_vs_depth", "error_vs_units", "error_heatmap", "parity", "residuals", "local_slopes",
          "error_vs_step", "error_vs_params", "error_vs_D", "error_vs_alpha", "phase", "hyper_curves_alpha")


@pytest.fixture(scope="module")
def rep_store(tmp_path_factory):
    """A sweep over L, M, D and alpha (one trial diverged, one failed) in a store."""
    root = tmp_path_factory.mktemp("report")
    rows = law_rows(LAW, Ls=(2, 4, 8, 16), Ms=(1, 4, 16), Ds=(2, 8), alphas=(1.0, 16.0), seeds=3, sweep="rep")
    rows = mark_trial(rows, "L2-M1-D2-a16", "diverged", seeds=[0], from_step=5)
    rows = mark_trial(rows, "L4-M1-D8-a16", "failed")
    store = Store(root / "store")
    write_to_store(rows, store)
    return store


@pytest.fixture(scope="module")
def made(rep_store, tmp_path_factory):
    """``rep_store`` and its report, written by the CLI (write_report with the defaults, every
    chart format): one report serves both the file tests and test_cli_report_fit_and_phase_on_the_store,
    instead of two. Drawing every chart as PNG and SVG is most of its time: the tests that read it
    run with the slow set."""
    out = tmp_path_factory.mktemp("report_out") / "out"
    cli = CliRunner().invoke(main, ["report", "--sweep", "rep", "--store", rep_store.uri, "--out", str(out),
                                    "--bootstrap", "200", "--export", "png,svg"])
    assert cli.exit_code == 0, cli.output
    return {"store": rep_store, "out": out, "html": (out / "index.html").read_text(encoding="utf-8"), "cli": cli}


@pytest.mark.slow
def test_report_writes_index_and_every_chart_as_png_svg_html(made):
    out = made["out"]
    for name in CHARTS:
        for fmt in CHART_FORMATS:
            assert (out / f"{name}.{fmt}").stat().st_size > 1000, (name, fmt)
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (out / f"{name}.svg").read_text()[:500]
        assert f'data-chart="{name}"' in made["html"]


@pytest.mark.slow
def test_report_needs_no_network(made):
    html = made["html"]
    assert not re.search(r"<script[^>]+src=", html) and not re.search(r"<link[^>]+href=", html)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "window.vegaEmbed=" in html.replace(" ", "")


@pytest.mark.slow
def test_summary_numbers_match_the_fit_rows_in_the_store(made):
    fits = made["store"].connect().execute("SELECT * FROM fits").df()
    assert set(fits["form"]) == {"theory", "free", "free_rss", "output", "joint"}  # no Gram rows: no decomposed
    assert len(pd.read_csv(made["out"] / "fits.csv")) == len(fits)
    spans = re.findall(r'<span class="num" ([^>]*)>([^<]*)</span>', made["html"])
    checked = 0
    for attrs, text in spans:
        data = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', attrs))
        rows = fits[fits["fit_id"] == data["fit-id"]]
        assert len(rows), data
        if data["field"] == "r2_log":
            expected = rows["r2_log"].iloc[0]
            assert text == f"{expected:.3f}"
        else:
            row = rows[rows["parameter"] == data["parameter"]].iloc[0]
            expected = row[data["field"]]  # estimate, ci_low, ci_high
            assert text == f"{expected:.3f}", (data, text)
        assert float(data["value"]) == pytest.approx(expected, rel=1e-12)
        checked += 1
    assert checked == 7  # R^2 of the theory fit, a and b of free_rss with their CIs
    assert ("Exponents a (depth) and b (units) from the decomposed fit: not measured on this grid: this store "
            "predates the per-seed decomposition") in made["html"]
    assert "Depth exponent a (bias ~ c1 L<sup>-a</sup>, free_rss fit to the RMS errors)" in made["html"]
    assert ("the sd from the spread of 200 refits, each resampling the seeds within each grid point; they cover "
            "the seeds&#39; noise only") in made["html"]  # the page escapes the apostrophe


@pytest.mark.slow
def test_report_states_floor_counts_config_and_phase(made):
    html = made["html"]
    assert "Reference error floor" in html and "0 of 24 grid points" in html
    assert "diverged: 1 trials (1 seeds); failed: 1 trials" in html
    assert "Fits and error charts hold alpha = 1" in html
    assert "Phase diagram over alpha and D" in html and 'class="dataframe config-table"' in html


def test_a_grid_under_the_reference_floor_still_gets_a_report_that_says_why(tmp_path):
    from explorer.report.page import build_report

    rows = law_rows(LAW, Ls=(2, 4), Ms=(1, 4), seeds=2, ref_err=10.0, sweep="floor")
    report = build_report(connect(rows), "floor", tmp_path, n_boot=10, exports=("svg",))
    assert report.fits == {} and "theory" in report.fit_errors
    assert "parity" not in report.charts and (tmp_path / "error_vs_depth.svg").exists()
    html = report.path.read_text()
    assert "The theory form was not fitted: only 0 grid points above the reference floor" in html
    assert "4 of 4 grid points within 3&times; of it were left out" in html


def test_a_report_writes_the_page_and_each_charts_page_and_renders_exports_only_when_asked(tmp_path):
    from explorer.errors import UsageError
    from explorer.report.page import build_report

    rows = law_rows(LAW, Ls=(2, 4, 8), Ms=(1, 4, 16), seeds=2, sweep="plain")
    report = build_report(connect(rows), "plain", tmp_path / "page", n_boot=10)
    written = {p.suffix for p in (tmp_path / "page").iterdir() if not p.name.startswith(".")}  # not its own record
    assert written == {".html", ".csv"}  # index.html, each chart's own page, fits.csv: nothing rendered
    html = report.path.read_text()
    assert all((tmp_path / "page" / f"{name}.html").exists() and f'data-chart="{name}"' in html for name in report.charts)
    assert 'href="error_vs_depth.html"' in html and 'href="error_vs_depth.png"' not in html  # links to what exists
    exported = build_report(connect(rows), "plain", tmp_path / "both", n_boot=10, exports="svg,png")
    assert all((tmp_path / "both" / f"{name}.{f}").exists() for name in exported.charts for f in ("png", "svg"))
    assert 'href="error_vs_depth.png"' in exported.path.read_text()
    with pytest.raises(UsageError, match=r"unknown chart export 'pdf'; expected one or more of: png, svg"):
        build_report(connect(rows), "plain", tmp_path / "bad", n_boot=10, exports=("pdf",))
    assert not (tmp_path / "bad" / "index.html").exists()  # refused before any work


FAKE_BUNDLE = "window.vegaEmbed=1;" + "/* a bundle's size */" * 5000  # vl-convert's is about 0.9 MB


def test_the_vega_bundle_is_kept_between_reports_and_read_back_whole(tmp_path, monkeypatch):
    import hashlib

    import vl_convert as vlc

    from explorer.report import chart_files

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    made = []
    monkeypatch.setattr(vlc, "javascript_bundle", lambda vl_version: made.append(vl_version) or FAKE_BUNDLE)
    chart_files.vega_bundle.cache_clear()
    try:
        assert chart_files.vega_bundle() == FAKE_BUNDLE and made == [chart_files.vega_lite_version()]
        kept = chart_files.bundle_cache_path(vlc.__version__, chart_files.vega_lite_version())
        first, body = kept.read_text().split("\n", 1)
        assert body == FAKE_BUNDLE and kept.parent == tmp_path / "cache" / "resnet-scaling-explorer"
        # its first line: the bundle's size and sha256, computed here independently
        assert f"bytes={len(FAKE_BUNDLE.encode())} sha256={hashlib.sha256(FAKE_BUNDLE.encode()).hexdigest()}" in first
        assert not [p for p in kept.parent.iterdir() if p != kept]  # no temporary left beside it
        chart_files.vega_bundle.cache_clear()  # a new process: the kept bundle, not vl-convert's engine
        assert chart_files.vega_bundle() == FAKE_BUNDLE and len(made) == 1
    finally:
        chart_files.vega_bundle.cache_clear()


@pytest.mark.parametrize("damage", ["emptied", "cut", "one byte changed", "no size line", "not a bundle"])
def test_a_damaged_kept_bundle_is_dropped_and_made_again(tmp_path, monkeypatch, damage):
    import vl_convert as vlc

    from explorer.report import chart_files

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    made = []
    monkeypatch.setattr(vlc, "javascript_bundle", lambda vl_version: made.append(vl_version) or FAKE_BUNDLE)
    chart_files.vega_bundle.cache_clear()
    try:
        chart_files.vega_bundle()
        kept = chart_files.bundle_cache_path(vlc.__version__, chart_files.vega_lite_version())
        good = kept.read_bytes()
        header = good[:good.index(b"\n") + 1]
        kept.write_bytes({"emptied": b"", "cut": good[:len(good) // 2],
                          "one byte changed": good[:-2] + b"X" + good[-1:], "no size line": FAKE_BUNDLE.encode(),
                          "not a bundle": header.replace(header[header.index(b"bytes="):header.index(b" */")],
                                                         b"bytes=0 sha256=" + b"e3b0c44298fc1c149afbf4c8996fb924"
                                                         b"27ae41e4649b934ca495991b7852b855")}[damage])
        chart_files.vega_bundle.cache_clear()  # a new process reads the damaged file
        assert chart_files.vega_bundle() == FAKE_BUNDLE and len(made) == 2  # made again, not served
        assert kept.read_bytes() == good  # and kept whole again
    finally:
        chart_files.vega_bundle.cache_clear()


def test_a_bundle_vl_convert_makes_without_vega_fails_the_report_in_one_line(tmp_path, monkeypatch):
    import vl_convert as vlc

    from explorer.report import chart_files

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(vlc, "javascript_bundle", lambda vl_version: "")
    rows = law_rows(LAW, Ls=(2, 4, 8), Ms=(1, 4), seeds=2, sweep="plain")
    store = Store(tmp_path / "store")
    write_to_store(rows, store)
    chart_files.vega_bundle.cache_clear()
    try:
        done = CliRunner().invoke(main, ["report", "--sweep", "plain", "--store", store.uri, "--out",
                                         str(tmp_path / "out"), "--bootstrap", "10", "--no-save"])
    finally:
        chart_files.vega_bundle.cache_clear()
    assert done.exit_code == 1, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: vl-convert") and "without the Vega libraries" in lines[0]
    assert not (tmp_path / "out" / "index.html").exists()  # never a page without Vega
    assert not chart_files.bundle_cache_path(vlc.__version__, chart_files.vega_lite_version()).exists()


def test_a_cache_that_cannot_be_written_still_gives_the_bundle(tmp_path, monkeypatch):
    import vl_convert as vlc

    from explorer.report import chart_files

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(vlc, "javascript_bundle", lambda vl_version: FAKE_BUNDLE)
    chart_files.vega_bundle.cache_clear()
    try:
        assert chart_files.vega_bundle() == FAKE_BUNDLE
    finally:
        chart_files.vega_bundle.cache_clear()


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_report_renders_every_chart_in_headless_chromium_offline(made, tmp_path):
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--no-first-run", "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path}",
           "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000", "--dump-dom",
           (made["out"] / "index.html").as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    dom = done.stdout
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    assert re.search(r'<pre id="render-errors">\s*</pre>', dom), dom[:2000]
    assert f'data-charts-done="{len(CHARTS)}"' in dom
    assert dom.count('data-rendered="true"') == len(CHARTS)
    # each chart's root SVG, drawn by Vega with its marks group
    assert len(re.findall(r'<svg[^>]*class="marks"', dom)) == len(CHARTS)
    assert dom.count('role="graphics-symbol"') > 100  # the points, lines, cells themselves


@pytest.mark.slow
def test_cli_report_fit_and_phase_on_the_store(made, tmp_path):
    runner = CliRunner()
    uri = made["store"].uri
    done = made["cli"]  # the `report` command wrote the fixture's report
    assert done.exit_code == 0, done.output
    assert done.output.strip() == f"report: {made['out'] / 'index.html'}"
    done = runner.invoke(main, ["fit", "--sweep", "rep", "--store", uri, "--form", "free", "--no-save"])
    assert done.exit_code == 0 and "slice alpha = 1.0" in done.output and "95% CI" in done.output
    done = runner.invoke(main, ["phase", "--sweep", "rep", "--store", uri, "--out", str(tmp_path / "p")])
    assert done.exit_code == 0 and "mlu" in done.output and (tmp_path / "p" / "phase.svg").exists()
    # The grid's largest P is 2048: budgets within 100x are advised (flagged as extrapolation) ...
    done = runner.invoke(main, ["fit", "--sweep", "rep", "--store", uri, "--form", "joint", "--budget", "1e4",
                                "--budget", "1e5"])
    assert done.exit_code == 0 and "best error ~ P^" in done.output and "wrote fit joint-" in done.output
    # ... and one far beyond the data is refused rather than answered.
    done = runner.invoke(main, ["fit", "--sweep", "rep", "--store", uri, "--form", "joint", "--budget", "1e9"])
    assert "best error ~ P^" not in done.output and "refused beyond 100x" in done.output


@pytest.mark.parametrize("args, message", [
    (["fit", "--sweep", "nope"], "error: unknown sweep 'nope'; the store"),
    (["fit", "--sweep", "rep", "--metric", "loss"], "error: unknown metric 'loss'; expected one of: err_out, err_hidden"),
    (["fit", "--sweep", "rep", "--form", "c1*L**-a + __import__('os')"], "error: character '_' at column 12 is not part of a law"),
    (["fit", "--sweep", "rep", "--form", "powr"], "error: unknown fit form 'powr'"),
    (["fit", "--sweep", "rep", "--where", "alpha = 3"], "error: no rows match --where 'alpha = 3' in sweep 'rep'"),
    (["report", "--sweep", "rep", "--where", "alpha = 3"], "error: no rows match --where 'alpha = 3' in sweep 'rep'"),
    (["fit", "--sweep", "rep", "--where", "alpa = 3"],
     "error: --where 'alpa = 3': the rows have no column 'alpa'; did you mean 'alpha'?"),
    (["fit", "--sweep", "rep", "--where", "(SELECT count(*) FROM read_csv('/etc/hostname')) > 0"],
     "error: --where \"(SELECT count(*) FROM read_csv('/etc/hostname')) > 0\": Permission Error: Cannot access file"),
    # read-only, as explorer sql
    # A filter is one condition: it cannot close the parenthesis that keeps the sweep and status guards.
    (["fit", "--sweep", "rep", "--where", "1=1) OR (1=1"], "error: filter '1=1) OR (1=1': a ')' closes a parenthesis the filter did not open"),
    (["phase", "--sweep", "rep", "--where", "1=1) OR (1=1"], "error: filter '1=1) OR (1=1': a ')' closes a parenthesis the filter did not open"),
    (["report", "--sweep", "rep", "--where", "1=1) OR (1=1"], "error: filter '1=1) OR (1=1': a ')' closes a parenthesis the filter did not open"),
    (["phase", "--sweep", "rep", "--y", "foo"], "error: unknown phase axis 'foo'"),
    (["report", "--sweep", "nope"], "error: unknown sweep 'nope'"),
])
def test_cli_bad_input_is_one_line_and_exit_2(rep_store, args, message):
    done = CliRunner().invoke(main, args + ["--store", rep_store.uri])
    assert done.exit_code == 2, done.output
    assert done.output.startswith(message) and done.output.count("\n") == 1, done.output


@pytest.mark.parametrize("command", ["fit", "phase", "report"])
def test_analysis_commands_have_help(command):
    done = CliRunner().invoke(main, [command, "--help"])
    assert done.exit_code == 0 and f"Example: explorer {command}" in " ".join(done.output.split())


def test_a_report_of_a_rerun_against_a_new_reference_says_which_reference_it_reads(tmp_path):
    from explorer.report.page import build_report

    rows = rerun_with_new_reference(lambda L, M, D: 3 * LAW(L, M, D), LAW, Ls=(2, 4, 8), Ms=(1, 4, 16), seeds=2,
                                    sweep="mix")
    report = build_report(connect(rows), "mix", tmp_path, n_boot=10)  # the page is what is read (no export: the default)
    html = report.path.read_text()
    assert "References: 9 of 9 grid points have trials against several references" in html
    assert "Trials: 9 (18 seeds)" in html  # the older run's 9 trials are not counted
    assert all(result.notes[0].startswith("9 of 9 grid points") for result in report.fits.values())


def _store_with_a_corrupt_metrics_file(root):
    store = Store(root / "store")
    write_to_store(law_rows(LAW, Ls=(2, 4, 8), Ms=(1, 4), seeds=2, steps=2, sweep="bad"), store)
    path = sorted((root / "store").rglob("*.parquet"))
    path = [p for p in path if "kind=metrics" in str(p)][0]
    path.write_bytes(path.read_bytes()[:100])
    return store


@pytest.mark.parametrize("command", [["fit"], ["phase", "--x", "L", "--y", "M"], ["report", "--out", "OUT"]])
def test_a_corrupt_store_file_is_the_one_line_of_explorer_sql_and_exit_2(tmp_path, command):
    uri = _store_with_a_corrupt_metrics_file(tmp_path).uri
    runner = CliRunner()
    sql = runner.invoke(main, ["sql", "SELECT * FROM metrics", "--store", uri])
    assert sql.exit_code == 2 and "explorer check" in sql.output and sql.output.count("\n") == 1, sql.output
    command = [str(tmp_path / "out") if arg == "OUT" else arg for arg in command]
    done = runner.invoke(main, command + ["--sweep", "bad", "--store", uri])
    assert done.exit_code == 2, done.output
    assert done.output == sql.output  # one line, the store's message and its `explorer check` hint
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["fit", "phase", "report"])
@pytest.mark.parametrize("case, message", [
    ("missing", "error: unknown sweep 'rep': there is no results store at"),
    ("empty", "error: unknown sweep 'rep': there is no results store at"),
    ("unknown", "error: unknown sweep 'nope'; the store"),
])
def test_analysis_commands_without_the_sweep_are_one_line_and_exit_2(rep_store, tmp_path, command, case, message):
    (tmp_path / "empty").mkdir()
    uri = {"missing": str(tmp_path / "missing"), "empty": str(tmp_path / "empty"), "unknown": rep_store.uri}[case]
    sweep = "nope" if case == "unknown" else "rep"
    extra = ["--out", str(tmp_path / "out")] if command == "report" else []
    done = CliRunner().invoke(main, [command, "--sweep", sweep, "--store", uri] + extra)
    assert done.exit_code == 2, done.output
    assert done.output.startswith(message) and done.output.count("\n") == 1, done.output
    assert not (tmp_path / "missing").exists() and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_demo_error_table_prints_the_fits_errors(made):
    from explorer.demo import error_table
    from explorer.analysis.data import grid_errors

    lines = error_table(made["store"], "rep")
    assert lines[0] == "err_out at the last step (RMS over seeds); rows L, columns M, D = 8, alpha = 1.0"
    assert lines[1].split() == ["L", "\\", "M", "1", "4", "16"] and len(lines) == 2 + 4
    grid = grid_errors(made["store"].connect(sweep="rep"), "rep", where="D = 8 AND alpha = 1")
    table = {int(line.split()[0]): [float(v) for v in line.split()[1:]] for line in lines[2:]}
    for row in grid.itertuples():
        assert table[row.L][[1, 4, 16].index(row.M)] == pytest.approx(row.err, rel=5e-3)
    assert error_table(made["store"], "nope") == []


# ----------------------------------------------------------------------------- the template's escaping

PAYLOAD = "<img src=x onerror=document.title='PWNED'><script>document.title='PWNED'</script>"


def _chromium_dom(page, tmp_path) -> tuple[str, list[str]]:
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--no-first-run", "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'chrome'}",
           "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000", "--dump-dom", page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return done.stdout, [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A report whose sweep name, a configuration value and the --where filter carry a script."""
    from explorer.report.page import build_report

    rows = law_rows(LAW, Ls=(2, 4, 8), Ms=(1, 4), seeds=2, sweep=PAYLOAD)
    rows["activation"] = PAYLOAD
    where = "activation = '" + PAYLOAD.replace("'", "''") + "'"
    out = tmp_path_factory.mktemp("hostile")
    # the tests read index.html; the chart pages (html) carry the charts' script-safe JSON too
    report = build_report(connect(rows), PAYLOAD, out, where=where, n_boot=10)
    return report


def test_user_strings_reach_the_page_escaped(hostile):
    html = hostile.path.read_text()
    assert PAYLOAD not in html and "<img src=x" not in html and "<script>document" not in html
    assert html.count("&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;") >= 3  # title, h1, filter, config
    for script in re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', html, flags=re.S):
        assert "</" not in script and "<!--" not in script and "<" not in script


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_a_report_of_hostile_strings_runs_no_script_in_chromium(hostile, tmp_path):
    dom, console = _chromium_dom(hostile.path, tmp_path)
    assert console == []
    assert "<title>PWNED</title>" not in dom and re.search(r"<title>Sweep &lt;img src=x", dom), dom[:500]
    assert '<img src="x"' not in dom and "<script>document.title" not in dom  # no element made from user text
    assert f'data-charts-done="{len(hostile.charts)}"' in dom


def test_chart_json_is_safe_inside_a_script_element(tmp_path):
    import altair as alt

    from explorer.report.page import save_chart

    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "s": ["</script><!--", "a & b"]})).mark_point().encode(
        x="x:Q", tooltip="s:N")
    (path,) = save_chart(chart, tmp_path, "c", formats=("html",))
    text = path.read_text()
    assert "</script><!--" not in text and "\\u003c/script\\u003e\\u003c!--" in text


def test_the_vega_bundle_is_the_vega_lite_version_of_altairs_schema():
    import altair as alt
    import vl_convert as vlc

    from explorer.report.chart_files import vega_lite_version, vega_bundle

    assert alt.SCHEMA_VERSION.lstrip("v").startswith(vega_lite_version() + ".")
    assert vega_lite_version() in vlc.get_vegalite_versions()
    assert "window.vegaEmbed=" in vega_bundle().replace(" ", "")


def test_one_number_formatter():
    import numpy as np

    from explorer.report.page import fmt

    assert [fmt(0.123456), fmt(np.float64(2.0), "g"), fmt(None), fmt(float("nan")), fmt(np.int64(3)), fmt("a")] == [
        "0.1235", "2", "n/a", "n/a", "3", "a"]


# ----------------------------------------------------------------------------- reports adapt to the sweep


def _adapted(tmp_path, **grid):
    from explorer.report.page import build_report

    rows = law_rows(LAW, seeds=2, sweep="s", **grid)
    return build_report(connect(rows), "s", tmp_path, n_boot=10)  # the tests read the page and charts: no export (the default)


def _chart_values(chart, column):
    spec = chart.to_dict()
    return {row[column] for rows in spec["datasets"].values() for row in rows if column in row}


def test_an_l_m_sweep_fits_the_laws_of_l_and_m_and_skips_the_d_term(tmp_path):
    report = _adapted(tmp_path, Ls=(2, 4, 8, 16), Ms=(1, 4, 16))
    assert report.varying == ["L", "M"] and set(report.fits) == {"theory", "free", "free_rss", "output"}
    assert report.skipped == {"joint": ("D",)} and list(report.fit_errors) == ["decomposed"]  # no Gram rows
    assert {"error_vs_depth", "error_vs_units", "error_heatmap", "local_slopes"} <= set(report.charts)
    assert not [name for name in report.charts if name in ("error_vs_D", "error_vs_alpha")]
    assert report.phase.x == "L" and report.phase.y == "M"
    assert "Not fitted (joint): it needs D to vary; this sweep varies L, M." in report.path.read_text()


def test_an_alpha_sweep_gets_charts_over_alpha_not_empty_l_m_charts(tmp_path):
    report = _adapted(tmp_path, Ls=(8,), Ms=(4,), alphas=(1.0, 2.0, 4.0, 16.0))
    assert report.varying == ["alpha"] and report.fits == {} and report.fit_errors == {}
    assert set(report.skipped) == set(("decomposed", "theory", "free", "free_rss", "output", "joint"))
    # an alpha axis adds the hyperparameter section's curves (explorer.report.hyper_report)
    assert set(report.charts) == {"error_vs_step", "error_vs_alpha", "phase", "hyper_curves_alpha"}
    assert _chart_values(report.charts["error_vs_alpha"], "alpha") == {1.0, 2.0, 4.0, 16.0}
    assert report.phase.x == "alpha"
    html = report.path.read_text()
    assert "form was not fitted" not in html and html.count("Not fitted (") == 2  # the L, M laws; joint
    assert ("Not fitted (decomposed, theory, free, free_rss, output): they need L and M to vary; this sweep varies "
            "alpha.") in html
    assert "Not fitted (joint): it needs L, M and D to vary" in html


def test_a_d_sweep_gets_charts_over_d(tmp_path):
    report = _adapted(tmp_path, Ls=(8,), Ms=(4,), Ds=(2, 4, 8, 16))
    assert report.varying == ["D"] and report.fits == {}
    assert set(report.charts) == {"error_vs_step", "error_vs_params", "error_vs_D", "phase"}
    assert _chart_values(report.charts["error_vs_D"], "D") == {2, 4, 8, 16}
    assert report.phase.x == "D" and "form was not fitted" not in report.path.read_text()


def test_needed_axes_of_the_laws():
    from explorer.report.page import needed_axes

    assert needed_axes("theory") == {"L", "M"} and needed_axes("joint") == {"L", "M", "D"}
    assert needed_axes("c1/L + c2") == {"L"} and needed_axes("c1/sqrt(D) + c2") == {"D"}


# ----------------------------------------------------------------------------- sections of newer fits


def test_sections_for_fit_fields_and_model_comparison_when_fit_offers_them(tmp_path, monkeypatch):
    import explorer.report.page as report_module
    from explorer.analysis.laws import LAW_METHOD, method_of

    real_fit = report_module.fit_sweep

    def richer_fit(con, sweep, form, **kwargs):
        result = real_fit(con, sweep, form, **kwargs)
        if method_of(form).name != LAW_METHOD:  # the laws fitted to RMS errors offer the fields
            return result
        result.warnings = ["c2 hit its bound <b>"]
        result.per_draw = pd.DataFrame({"problem_seed": [1, 2] * len(result.parameters),
                                        "parameter": [p for p in result.parameters for _ in (1, 2)],
                                        "estimate": 1.0, "ci_low": 0.5, "ci_high": 1.5})
        result.bootstrap = "problem draws and seeds"
        result.unidentified = {"c1": "trades off with c2"}
        result.n_flagged = 3
        result.flag_counts, result.n_flagged_points = {"init_noise": 2, "chaotic": 1}, 1
        result.pre_asymptotic = ["L = 2 is pre-asymptotic"]
        return result

    comparison = pd.DataFrame({"law": ["theory", "free"], "n_params": [2, 4], "cv_loo": [0.1, 0.2],
                               "cv_extrap": [0.3, 0.4], "rank": [1, 2]})
    monkeypatch.setattr(report_module, "fit_sweep", richer_fit)
    monkeypatch.setattr(report_module, "compare_laws", lambda grid, forms=None: comparison)
    report = _adapted(tmp_path, Ls=(2, 4, 8), Ms=(1, 4))
    html = report.path.read_text()
    assert '<p class="warn">Warning: c2 hit its bound &lt;b&gt;.</p>' in html
    assert "Not identified" not in html and "Pre-asymptotic:" not in html  # said once, by the fit's warnings
    assert "95% intervals: estimate +- 1.96 x sd" in html
    assert ("3 rows were left out for stability flags (init_noise 2, chaotic 1; 1 point with every seed flagged "
            "not fitted)") in html and 'class="dataframe per-draw-table"' in html
    assert 'class="dataframe comparison-table"' in html and "cv_extrap" in html
    assert "per_draw" in report.charts


@pytest.mark.slow
def test_shape_advice_beyond_the_sweep_is_marked_as_extrapolation(made):
    html = made["html"]
    assert "Extrapolation:</span> the joint law, read at budgets" in html
    assert "<th>extrapolated</th>" in html and "<td>yes</td>" in html


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_a_standalone_chart_page_renders_offline_in_chromium(made, tmp_path):
    dom, console = _chromium_dom(made["out"] / "error_vs_depth.html", tmp_path)
    assert console == []
    assert re.search(r'<svg[^>]*class="marks"', dom) and dom.count('role="graphics-symbol"') > 10


def test_the_page_template_is_packaged():
    import tomllib

    root = REPO_ROOT
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["explorer.report"]
    templates = sorted((root / "explorer" / "report" / "templates").iterdir())
    assert templates and all(any(t.match(f"explorer/report/{p}") for p in patterns) for t in templates)
    assert "jinja2" in " ".join(tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"])


def test_each_warning_is_shown_once_counted_right_and_notes_are_notes(tmp_path, monkeypatch):
    """The summary's count of a fit's warnings is the number of red items in its block, no
    sentence is repeated, the fit's notes are shown as notes, and the interval is described by
    the one sentence ``explorer fit`` prints (``interval_description``)."""
    from explorer.analysis.fitting import format_table
    from explorer.analysis.fitting import interval_description

    import explorer.report.page as report_module

    monkeypatch.setattr(report_module, "compare_laws", lambda grid, forms=None: pd.DataFrame())  # cost, not under test
    monkeypatch.setattr(report_module, "vega_bundle", lambda: "")
    build_report = report_module.build_report
    rows = law_rows(lambda L, M, D: 0.2 * math.sqrt(D / (L * M)), Ls=(2, 4, 8, 16), Ms=(1, 4, 16), seeds=2, sweep="s")
    report = build_report(connect(rows), "s", tmp_path, n_boot=10)  # no 1/L term: c1 ~ 0 is a note
    html = report.path.read_text()
    assert "q bootstrap standard deviations" not in html and "The 95% CI covers" not in html
    noted = 0
    for name, result in report.fits.items():
        block = html[html.index(f"<h3>{name}: err ~"):]
        block = block[:block.index("</div>", block.index('class="interval"'))]
        red = re.findall(r'<p class="warn">Warning: (.*?)\.</p>', block)
        assert len(red) == len(result.warnings) == len(set(red)), name
        count = re.search(rf"The {name} fit has (\d+) warning", html)
        assert (int(count.group(1)) if count else 0) == len(red), name
        notes = re.findall(r'<p class="note">Note: (.*?)\.</p>', block)
        assert len(notes) == len(result.notes) and not set(notes) & set(red), name
        noted += len(notes)
        sentence = interval_description(result)
        assert f'<p class="interval">{sentence}.</p>' in block.replace("&#39;", "'")
        printed = format_table(result).splitlines()
        assert printed.count(sentence) == 1 and not any(line.startswith("note: intervals") for line in printed)
    assert noted  # the grid leaves some term without evidence: a note, not a warning


def test_parameters_unmeasured_for_one_reason_are_one_warning():
    from explorer.analysis.fitting import fit_warnings
    from explorer.analysis.decomposed import fit_decomposed
    from explorer.analysis.decomposed import REGIMES

    from tests.explorer.compare_data import planted_pair

    frame, _ = planted_pair(REGIMES["easy"], np.random.default_rng(3))
    frame = frame[frame["problem_seed"] == frame["problem_seed"].iloc[0]].reset_index(drop=True)
    frame["gram"] = [np.eye(len(g)) * 1e-2 + 1e-9 * g for g in frame["gram"]]  # no bias: c1 and a unmeasured
    result = fit_decomposed(frame, n_boot=20)
    assert set(result.unidentified) == {"c1", "a"}
    unmeasured = [w for w in result.warnings if "not measured" in w]
    assert unmeasured == [f"c1, a {result.unidentified['a']}"]
    assert fit_warnings(result, True, None).count(unmeasured[0]) == 1


def test_shape_advice_beyond_the_data_is_no_finding_in_the_summary():
    """The summary states a best shape as a finding only inside the data (a measured budget, L,
    M, D in their measured ranges); the shape at the largest budget read carries its factor
    beyond the largest measured P and the axes it leaves, as `explorer fit --budget` says them."""
    from explorer.analysis.fitting import fit
    from explorer.analysis.shapes import beyond_data, shape_advice
    from explorer.analysis.data import grid_errors
    from explorer.report.summary import advice_sentence

    rows = law_rows(LAW, Ls=(2, 4, 8, 16), Ms=(1, 4, 16), Ds=(2, 8), seeds=3, sweep="c")
    result = fit(grid_errors(connect(rows), "c"), "joint", n_boot=20)
    advice = shape_advice(result, n_samples=5)
    last = advice["frontier"].iloc[-1]
    assert last["extrapolation"] > 50 and last["L_int"] > 16  # the law's advice far beyond the data
    text = str(advice_sentence(advice))
    far = f"At P = {last['P']:.3g}, {beyond_data(last.to_dict())}, the law would advise L = {last['L_int']},"
    assert far in text and f"{last['extrapolation']:.3g}x beyond the largest measured P" in text
    assert f"L = {last['L_int']} outside the measured 2..16" in text
    inside = [r for r in advice["frontier"].to_dict("records") if not beyond_data(r)]
    if inside:
        r = inside[-1]
        assert f"Within the data, at P = {r['P']:.3g} its best shape is L = {r['L_int']}, M = {r['M_int']}" in text
    assert text.count("best shape is") == (1 if inside else 0)
