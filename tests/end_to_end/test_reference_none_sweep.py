"""A real loss-only sweep with ``[reference] kind = "none"`` on Ray: a learning-rate axis for two
presets across two depths. Its dry run says 0 references, the sweep computes and stores none, its
rows hold the loss and null errors, ``optimum`` and ``transfer`` read the loss, and ``fit``
refuses it in one line naming the kind."""
from __future__ import annotations

import math
import pathlib

import pytest
from click.testing import CliRunner

import explorer
from explorer.api import optimum, transfer
from explorer.cli import main
from store import Store

pytestmark = pytest.mark.slow

SPEC = """
name = "loss_only"

[problem]
d_in = 5
d_out = 5
samples = 10

[model]
activation = "tanh"

[train]
steps = 10
dtype = "float64"
lr_scaling = "raw"

[reference]
kind = "none"

[grid]
L = [4, 16]
M = [8]
D = [8]
preset = ["standard", "mlu"]
lr = [0.0625, 0.125, 0.25, 0.5, 1.0, 2.0]
seeds = 2

[resources]
cpus_per_trial = 1
gpus_per_trial = 0
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory, local_ray):
    folder = tmp_path_factory.mktemp("none_sweep")
    spec = folder / "spec.toml"
    spec.write_text(SPEC)
    st = Store(folder / "store")
    dry = CliRunner().invoke(main, ["sweep", str(spec), "--dry-run", "--store", st.uri])
    result = explorer.sweep(str(spec), store=st, progress=False)
    assert result.exit_code == 0, result.summary()
    return st, dry, result


def test_the_dry_run_prices_no_reference(swept):
    _, dry, _ = swept
    assert dry.exit_code == 0, dry.output
    lines = dry.output.splitlines()
    assert any(line.startswith("references: 0 ") for line in lines), dry.output
    assert "and 0 s of references in all" in dry.output and "largest reference" not in dry.output


def test_the_sweep_computes_and_stores_no_reference(swept):
    st, _, result = swept
    assert result.ok + result.diverged == result.total == 2 * 2 * 6 and not result.reference_errors
    folder = pathlib.Path(st.uri.removeprefix("file://")) / "references"
    assert not folder.exists() or not any(folder.iterdir())
    rows = st.query("SELECT DISTINCT ref_kind, count(err_out) AS errors, count(ref_loss) AS ref_losses, "
                    "count(gram_out) AS grams, count(loss) AS losses FROM metrics GROUP BY ref_kind",
                    sweep="loss_only").to_pylist()
    assert len(rows) == 1 and rows[0]["ref_kind"] == "none"
    assert rows[0]["errors"] == rows[0]["ref_losses"] == rows[0]["grams"] == 0 and rows[0]["losses"] > 0


def test_optimum_and_transfer_read_the_loss(swept):
    st, _, _ = swept
    found = optimum("loss_only", "lr", store=st, n_boot=50).table
    assert set(found["preset"]) == {"standard", "mlu"} and set(found["L"]) == {4, 16}
    rows = st.query("SELECT preset, L, lr, avg(loss) AS loss FROM metrics WHERE step = steps AND status = 'ok' "
                    "GROUP BY ALL", sweep="loss_only").to_pandas()
    for _, row in found.iterrows():  # an optimum inside the grid lies within a grid step of the plain argmin
        if isinstance(row["edge"], str) or not math.isfinite(row["optimum"]):
            continue
        mine = rows[(rows["preset"] == row["preset"]) & (rows["L"] == row["L"])]
        argmin = float(mine.loc[mine["loss"].idxmin(), "lr"])
        assert abs(math.log2(row["optimum"]) - math.log2(argmin)) <= 1.0
    law = transfer("loss_only", "lr", ("L",), store=st, n_boot=50)
    assert law.lines()
    shown = CliRunner().invoke(main, ["transfer", "--sweep", "loss_only", "--store", st.uri, "--axis", "lr",
                                      "--across", "L", "--bootstrap", "20"])
    assert shown.exit_code == 0, shown.output


def test_fit_refuses_in_one_line_naming_the_kind(swept):
    st, _, _ = swept
    done = CliRunner().invoke(main, ["fit", "--sweep", "loss_only", "--store", st.uri])
    assert done.exit_code != 0
    assert len(done.output.strip().splitlines()) == 1, done.output
    assert "reference kind none" in done.output and "err_out" in done.output


def test_the_report_leads_with_the_optima_and_leaves_the_errors_out_in_one_line(swept, tmp_path):
    """A loss-only study's report: its summary opens with the optima and the transfer verdicts,
    the fits and error charts it cannot make are one line naming the kind, optima.csv holds the
    optima (the same as ``optimum``)."""
    import csv
    import html
    import re

    st, _, _ = swept
    out = tmp_path / "report"
    done = CliRunner().invoke(main, ["report", "--sweep", "loss_only", "--store", st.uri, "--out", str(out),
                                     "--bootstrap", "50"])
    assert done.exit_code == 0, done.output
    notes = [line for line in done.output.splitlines() if line.startswith("note: not made")]
    assert len(notes) == 1 and "reference kind none" in notes[0], done.output
    page = re.sub(r"<script.*?</script>|<style.*?</style>", "", (out / "index.html").read_text(), flags=re.S)
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))
    summary = text[text.index("Summary"):]
    assert summary.index("Optimum of lr") < summary.index("Transfer of lr across L") < summary.index("Not made")
    with open(out / "optima.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["axis"] == "lr" and not r["parameter"]]
    found = optimum("loss_only", "lr", store=st, n_boot=50, save=False).table
    assert len(rows) == len(found) == 4
    shown = {(r["preset"], int(r["L"])): float(r["optimum"] or "nan") for r in rows}
    for _, row in found.iterrows():
        mine = shown[(row["preset"], int(row["L"]))]
        assert mine == pytest.approx(row["optimum"]) or (math.isnan(mine) and math.isnan(row["optimum"]))
