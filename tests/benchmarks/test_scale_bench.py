"""benchmarks/scale_bench.py: its synthetic store is one the store serves as a sweep's end leaves
it (the store's own column types, every file readable by the views, the trials counted from the
footers), and its ETA parser tells the dry run's estimate from a measured ETA."""
from __future__ import annotations

import sys

from tests.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

import scale_bench  # noqa: E402


def test_the_synthetic_store_is_served_whole_and_counted_from_its_footers(tmp_path, monkeypatch):
    from store import Store
    from store import status_counts

    root = tmp_path / "results"
    scale_bench.write_synthetic(root, 250, steps=2, chunk=100)
    st = Store(root)
    report = st.check("synth")
    assert not report.problems, report.problems
    assert st.query("SELECT count(*) FROM trials").column(0)[0].as_py() == 250
    assert st.query("SELECT count(*) FROM metrics").column(0)[0].as_py() == 250 * 2 * 3

    def no_rows(*args, **kwargs):
        raise AssertionError("rows read: the footers should say it all")

    monkeypatch.setattr(status_counts, "read_tables", no_rows)
    assert st.trial_status_counts("synth") == {"ok": 250, "diverged": 0, "failed": 0}


def test_the_first_eta_and_the_first_measured_eta_are_told_apart():
    lines = [(1.0, "references: 4/4 ready"),
             (2.0, "trials 0/100 | running 0 | failed 0 | 0.0/s | elapsed 1.0s | ETA ~1m00s-2m00s (dry-run estimate)"),
             (9.0, "trials 40/100 | running 2 | failed 0 | 5.0/s | elapsed 8.0s | ETA 12.0s")]
    assert scale_bench.first_trial_eta(lines)[0::2] == (2.0, 90.0)
    assert scale_bench.first_trial_eta(lines, measured=True)[0::2] == (9.0, 12.0)
