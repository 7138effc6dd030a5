"""The report of a demo-sized sweep, as a reader sees the page: no library warning text on it, no
legend longer than a reader can match to the marks, and single charts as wide as the page.

The sweep is ``explorer demo``'s own spec (L 4..32 x M 1..1024, D = 8, 4 draws of 4 seeds, 10
steps: 96 trials), its rows planted by the planted runner (no Ray, no training), and the report is written
by the same ``write_report`` call the demo makes. The rendered page is checked in Chromium (slow).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from explorer.config.planning import plan
from explorer.config.spec import load_spec
from explorer.demo import DEMO_SPEC
from explorer.report.page import page_spec, write_report
from explorer.sweeps.adaptive import PlantedRunner, TermsLaw
from store import Store

MAX_LEGEND = 12
LEGEND_CHANNELS = ("color", "fill", "stroke", "shape", "size", "opacity", "strokeDash")
SPEC = re.compile(r'<script type="application/json" id="spec-([^"]+)">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo_report")
    store = Store(str(root / "results"))
    spec = load_spec(DEMO_SPEC)
    PlantedRunner(store, TermsLaw(), entries=200, draw_sd=0.02, seed=0)(spec, {t.trial_key for t in plan(spec).trials})
    # the tests read the page and one chart page: PNG and SVG (most of a report's time) are not drawn
    write_report(sweep=spec.name, store=store, out=root / "report")  # no export: the default
    return root / "report" / "index.html"


def specs_of(html: str) -> dict[str, dict]:
    return {name: json.loads(text) for name, text in SPEC.findall(html)}


def visible_text(html: str) -> str:
    """The page without its scripts and styles (the inline Vega libraries name "WARN" in their code)."""
    return re.sub(r"<(script|style)\b[^>]*>.*?</\1>", "", html, flags=re.S | re.I)


def views(node, data=None):
    """(view, its data name or inline rows) for every view of a Vega-Lite spec, with layers and
    panels inheriting their parent's data."""
    if isinstance(node, dict):
        data = node.get("data", data)
        if "encoding" in node:
            yield node, data
        for key in ("layer", "hconcat", "vconcat", "concat"):
            for child in node.get(key, ()):
                yield from views(child, data)
        if "spec" in node:
            yield from views(node["spec"], data)


def legends(spec: dict) -> list[tuple[str, str, int]]:
    """(channel, field, entries) of every legend a discrete (nominal, ordinal) encoding draws."""
    found = []
    for view, data in views(spec):
        rows = spec.get("datasets", {}).get(data.get("name"), []) if data else []
        rows = rows or (data or {}).get("values", [])
        for channel in LEGEND_CHANNELS:
            enc = view["encoding"].get(channel)
            if not isinstance(enc, dict) or enc.get("type") not in ("nominal", "ordinal") or enc.get("legend", {}) is None:
                continue
            values = {json.dumps(row.get(enc["field"])) for row in rows if enc.get("field") in row}
            domain = enc.get("scale", {}).get("domain")
            found.append((channel, enc.get("field"), len(domain) if isinstance(domain, list) else len(values)))
    return found


def single_view(spec: dict) -> bool:
    return not any(k in spec for k in ("hconcat", "vconcat", "concat", "facet"))


@pytest.mark.slow  # the demo's whole report (fits and charts)
def test_the_demo_report_page_has_no_warning_text(demo_page):
    html = demo_page.read_text(encoding="utf-8")
    assert "WARN" not in visible_text(html)
    assert "WARN" in html  # the check sees the page: the inline Vega library does name it


@pytest.mark.slow  # the demo's whole report (fits and charts)
def test_no_chart_of_the_demo_report_has_a_legend_over_12_entries(demo_page):
    specs = specs_of(demo_page.read_text(encoding="utf-8"))
    assert "error_vs_step" in specs and len(specs) >= 8
    long = {name: [lg for lg in legends(spec) if lg[2] > MAX_LEGEND] for name, spec in specs.items()}
    assert not any(long.values()), long
    # the check counts: the per-depth curves have one legend entry per M of the demo
    assert ("color", "M", len(DEMO_SPEC["grid"]["M"])) in legends(specs["error_vs_depth"])


@pytest.mark.slow  # the demo's whole report (fits and charts)
def test_single_charts_of_the_page_fill_its_width_and_the_chart_files_keep_their_size(demo_page):
    specs = specs_of(demo_page.read_text(encoding="utf-8"))
    single = [name for name, spec in specs.items() if single_view(spec)]
    assert "error_vs_step" in single and "error_vs_depth" in single
    assert all(specs[name]["width"] == "container" for name in single), {n: specs[n].get("width") for n in single}
    standalone = (demo_page.parent / "error_vs_step.html").read_text(encoding="utf-8")
    assert re.search(r'"width":\s*\d+', standalone)  # a chart file has a fixed size


def test_page_spec_leaves_panels_and_the_original_alone():
    single, panels = {"width": 320, "mark": "point"}, {"hconcat": [{"width": 320}]}
    assert page_spec(single) == {"width": "container", "mark": "point"} and single["width"] == 320
    assert page_spec(panels) is panels


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_the_rendered_demo_report_shows_no_warning_and_wide_charts(demo_page, tmp_path):
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--no-first-run", "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path}",
           "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,900",
           "--virtual-time-budget=20000", "--dump-dom", demo_page.as_uri()]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=180).stdout
    specs = specs_of(demo_page.read_text(encoding="utf-8"))
    assert f'data-charts-done="{len(specs)}"' in dom
    assert re.search(r'<pre id="render-errors">\s*</pre>', dom), dom[:2000]
    assert "WARN" not in visible_text(dom)
    # each single chart drawn wider than its fixed 320 px (the page is 1200 px at most)
    for name in (n for n, spec in specs.items() if single_view(spec)):
        div = re.search(rf'<div[^>]*data-chart="{name}"[^>]*>.*?<svg[^>]*width="(\d+(?:\.\d+)?)"', dom, re.S)
        assert div and float(div.group(1)) > 600, (name, div and div.group(1))


def test_the_legend_check_counts_a_long_discrete_legend_and_skips_continuous_ones():
    rows = [{"point": f"L{i}", "err": i} for i in range(30)]
    spec = {"datasets": {"d": rows}, "data": {"name": "d"}, "layer": [
        {"mark": "line", "encoding": {"color": {"field": "point", "type": "nominal"}}},
        {"mark": "point", "encoding": {"color": {"field": "err", "type": "quantitative"}}},
        {"mark": "rule", "encoding": {"color": {"field": "point", "type": "nominal", "legend": None}}}]}
    assert legends(spec) == [("color", "point", 30)]
