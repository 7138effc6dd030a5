"""``explorer watch`` on a planted lr sweep written to a store: its JSON refresh, the answer equal
to ``explorer optimum``/``transfer`` on the same rows, the rows of new trials alone read at a
refresh, and its end when the last run ends."""
from __future__ import annotations

import datetime as dt
import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from explorer import api
from explorer.analysis.hyper import planted_runs
from explorer.cli import main
from explorer.watch import Watcher
from store import Store, new_run_id

from tests.explorer.analysis_data import write_to_store
from tests.explorer.hyper_data import planted_metrics

NOW = dt.datetime.now(dt.timezone.utc)
KEYS = ("sweep", "ok", "diverged", "failed", "running", "pending", "partial", "ended", "answer")


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    runs, _ = planted_runs(0.0, rng=np.random.default_rng(7), n_draws=2, n_seeds=2, diverge_at=1e9,
                           Ls=(4, 16, 64), grid=2.0 ** np.arange(-2, 4))
    frame = planted_metrics(runs, steps=1)
    root = tmp_path_factory.mktemp("watch") / "results"
    write_to_store(frame, Store(root, durable=False))
    return root, frame, runs


def _record(st, keys, runs, *, ended):
    axes = {"L": [4, 16, 64], "lr": [float(x) for x in runs.grid], "problem_seed": [0, 1]}
    st.write_run("planted", new_run_id(), spec={"name": "planted", "axes": axes}, planned_keys=keys,
                 started_at=dt.datetime.now(dt.timezone.utc), ended_at=ended)


def test_a_refresh_while_the_run_lives_and_after_it_ends(planted, tmp_path):
    root, frame, runs = planted
    shutil.copytree(root, tmp_path / "results")
    st = Store(tmp_path / "results", durable=False)
    keys = sorted(frame["trial_key"].unique())
    _record(st, keys + ["later"], runs, ended=None)
    result = CliRunner().invoke(main, ["watch", "--sweep", "planted", "--store", st.uri, "--once", "--json",
                                       "--bootstrap", "20"])
    assert result.exit_code == 0, result.output
    snap = json.loads(result.output.strip().splitlines()[-1])
    assert set(KEYS) <= set(snap) and snap["ok"] == len(keys) and snap["running"] == 1
    assert snap["partial"] and not snap["ended"] and snap["answer"]["kind"] == "optima"

    watcher = Watcher(st, "planted", n_boot=20)
    first = watcher.refresh()
    again = watcher.refresh()  # nothing new: the same answer, no rows read
    assert again.intervals == first.intervals and again.narrowed == {}
    found = api.optimum("planted", "lr", store=st, n_boot=20, save=False)
    law = api.transfer("planted", "lr", ["L"], store=st, n_boot=20, save=False)
    expected = [float(v) for v in found.table["optimum"]] + [float(law.fits[0].estimate[1])]
    assert np.allclose([i.estimate for i in first.intervals], expected)
    assert np.allclose(first.intervals[-1].low, law.fits[0].low[1]) and first.intervals[-1].name == "gamma"

    _record(st, keys, runs, ended=NOW)  # a later run, ended: the watch ends with the final answer
    done = api.watch("planted", st, n_boot=20, echo=lambda line: None, every=0.5)
    assert done.ended and not done.partial and done.running == 0


def test_the_html_page_is_replaced_whole_and_reloads_until_the_end(tmp_path):
    from explorer.watch import write_page
    from explorer.watch.watcher import Snapshot

    calls = []

    def make_report(folder, reload_s):
        calls.append(reload_s)
        folder.mkdir(parents=True)
        (folder / "index.html").write_text(f"<head></head><h1>x</h1> reload={reload_s}")
        (folder / "charts").mkdir()
        (folder / "charts" / "a.html").write_text("chart")

    snap = Snapshot("s", {}, 1, 0, 2, 1, True, False, None, None, None)
    out = tmp_path / "page"
    assert write_page(make_report, snap, out, 5.0) is None
    assert (out / "index.html").read_text().endswith("reload=5.0") and (out / "charts" / "a.html").exists()
    snap.ended = True
    write_page(make_report, snap, out, 5.0)
    assert calls == [5.0, None] and (out / "index.html").read_text().endswith("reload=None")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page"]  # the staging folder is gone


@pytest.mark.slow
def test_a_refresh_reads_an_s3_store_as_a_local_one(planted, s3_endpoint):
    import uuid

    import pyarrow.fs as pafs

    _, frame, runs = planted
    fs = pafs.S3FileSystem(endpoint_override=s3_endpoint, scheme="http", allow_delayed_open=True,
                           allow_bucket_creation=True, access_key="testing", secret_key="testing", region="us-east-1")
    bucket = f"b-{uuid.uuid4().hex[:12]}"
    fs.create_dir(bucket)
    st = Store(f"s3://{bucket}/results", filesystem=fs)
    write_to_store(frame, st)
    keys = sorted(frame["trial_key"].unique())
    _record(st, keys + ["later"], runs, ended=None)
    snap = Watcher(st, "planted", n_boot=20).refresh()
    assert snap.counts["ok"] == len(keys) and snap.partial and snap.running == 1 and snap.kind == "optima"
    found = api.optimum("planted", "lr", store=st, n_boot=20, save=False)
    assert np.allclose([i.estimate for i in snap.intervals if i.name.startswith("lr*")],
                       found.table["optimum"].to_numpy(dtype=float))


def test_the_live_display_renders_the_status_notes_and_answer():
    import io

    from rich.console import Console

    from explorer.watch import Interval
    from explorer.watch.display import renderable
    from explorer.watch.watcher import Snapshot

    snap = Snapshot("s", {"ok": 3}, 1, 0, 4, 3, True, False, 0.5, 2.0, "optima",
                    [Interval("lr* (L=4)", 1.5, 1.0, 2.0, ""), Interval("gamma", 0.1, -0.2, 0.4, "not measured")],
                    None, {"gamma": 0.25}, ["partial: 3 of 4 trials of the last run; intervals will narrow"])
    console = Console(file=io.StringIO(), width=120)
    console.print(renderable(snap))
    text = console.file.getvalue()
    assert "s: ok 3" in text and "partial: 3 of 4" in text and "lr* (L=4)" in text and "+25%" in text
