"""The reference phase without Ray: references the store holds, whole and sound, are found on the
driver and start no task; a missing, unsound or foreign copy goes to a task (whose worker
quarantines it and computes it again). Tasks are replaced by a recorder: no Ray here."""
from __future__ import annotations

import io
import shutil
import signal as signal_module
import time

import numpy as np
import pytest

from explorer.config.planning import plan
from explorer.config.spec import parse_spec
from explorer.sweeps.references import cache as reference_cache
from explorer.sweeps.references import phase as reference_phase
from explorer.signals import SweepInterrupted
from explorer.sweeps.tracking.progress import Progress
from store import SCHEMA_VERSION, Store, StoreUnreachable
from store.layout import reference_file

SPEC = {
    "name": "refs",
    "train": {"steps": 2},
    "reference": {"depth": 8, "width": 4},
    "grid": {"L": [2], "M": [1], "D": [4, 8, 16], "seeds": 1},
}


@pytest.fixture
def setting(tmp_path, monkeypatch):
    """(store, plan, run): ``run()`` runs the phase over every trial and returns (what it sent to
    tasks, its result, its messages); sending no task at all is recorded as ``None``."""
    the_plan = plan(parse_spec(SPEC), SCHEMA_VERSION)
    assert len(the_plan.references) == 3
    store = Store(tmp_path)
    sent: dict = {"refs": None}

    def submit(spec, store_, refs):
        sent["refs"] = [r.ref_key for r in refs]
        return {}  # no futures: the phase's wait loop has nothing to wait for

    monkeypatch.setattr(reference_phase, "_submit", submit)

    def run():
        log = io.StringIO()
        bar = Progress(total=len(the_plan.trials), stream=log, interactive=False)
        result = reference_phase.run_references(the_plan.spec, store, the_plan, list(the_plan.trials), bar,
                                                lambda: None)
        return sent["refs"], result, log.getvalue()

    return store, the_plan, run


def cache(store: Store, planned, record=None) -> None:
    """Store the reference of ``planned`` (its real numbers unless ``record`` is given)."""
    store.get_or_compute_reference(planned.ref_key, lambda: record or reference_cache.compute(planned).to_record())


def test_references_the_store_holds_start_no_task(setting):
    store, the_plan, run = setting
    for planned in the_plan.references:
        cache(store, planned)
    sent, (diverged, broken), log = run()
    assert sent is None and diverged == {} and broken == {}
    assert "references: 3/3 found in the store" in log


def test_only_missing_unsound_or_foreign_copies_go_to_tasks(setting):
    store, the_plan, run = setting
    sound, unsound, foreign = the_plan.references
    cache(store, sound)
    arrays, meta = reference_cache.compute(unsound).to_record()
    arrays = dict(arrays, out=np.full_like(arrays["out"], np.nan))  # a reference never computes NaN
    cache(store, unsound, (arrays, meta))
    shutil.copy(reference_file(store.uri, sound.ref_key), reference_file(store.uri, foreign.ref_key))
    sent, _, log = run()
    assert sent == [unsound.ref_key, foreign.ref_key]
    assert "references: 2 to compute (1 found in the store)" in log

    shutil.rmtree(store.uri + "/references")  # none cached: every one is a task
    assert run()[0] == [r.ref_key for r in the_plan.references]


def test_a_store_that_cannot_be_read_leaves_every_reference_to_a_task(setting):
    store, the_plan, run = setting
    with open(store.uri + "/references", "w") as handle:  # a file where the folder goes: reads fail
        handle.write("not a folder")
    sent, _, log = run()
    assert sent == [r.ref_key for r in the_plan.references]  # the tasks' workers say what is wrong
    assert "references: 3 to compute" in log


def test_a_store_that_stops_answering_stops_the_phase_and_a_signal_stops_the_reads(setting, monkeypatch):
    store, the_plan, run = setting

    def gone(ref_key):
        raise StoreUnreachable(f"store {store.uri} did not answer")

    monkeypatch.setattr(store, "read_reference", gone)
    with pytest.raises(StoreUnreachable):  # as from a task: every group would stop on it
        run()

    def signal():
        raise SweepInterrupted(signal_module.SIGINT)

    monkeypatch.setattr(store, "read_reference", lambda ref_key: time.sleep(0.5))
    bar = Progress(total=1, stream=io.StringIO(), interactive=False)
    started = time.monotonic()
    with pytest.raises(SweepInterrupted):
        reference_phase.run_references(the_plan.spec, store, the_plan, list(the_plan.trials), bar, signal)
    assert time.monotonic() - started < 0.4  # the reads running were not waited for
