"""The adaptive loop's runners declare their interfaces (``explorer.sweeps.adaptive.runners``):
the Tune runner and the planted runner are ``TrialRunner``s, the session runner and the adapter
the driver wraps a ``TrialRunner`` in are ``RoundRunner``s, each member with the declared
parameters; and the Tune runner is a ``run_sweep`` of the keys it is given."""
from __future__ import annotations

import inspect

import pytest

from explorer.config.spec import parse_spec
from explorer.sweeps.adaptive import PlantedRunner, RoundRunner, SessionRunner, TrialRunner, free_law
from explorer.sweeps.adaptive.driver import BlockingRunner
from explorer.sweeps.run.runner import TuneRunner
from store import Store

SPEC = {"name": "r", "grid": {"L": [4, 8], "M": [1], "D": [8], "seeds": 1}, "train": {"steps": 2},
        "reference": {"depth": 8, "width": 4}}


def members(protocol) -> dict:
    """name -> the parameters (self left out) of each method the protocol declares."""
    return {name: list(inspect.signature(value).parameters)[1:] for name, value in vars(protocol).items()
            if callable(value) and not name.startswith("_") or name == "__call__"}


def runners(tmp_path) -> dict:
    st = Store(tmp_path / "s")
    spec = parse_spec(SPEC)
    planted = PlantedRunner(st, free_law())
    return {"planted": (planted, TrialRunner), "tune": (TuneRunner(st), TrialRunner),
            "session": (SessionRunner(spec, st, progress=False), RoundRunner),
            "blocking": (BlockingRunner(planted, spec, dict), RoundRunner)}


def test_the_round_runner_declares_what_the_driver_calls():
    assert set(members(RoundRunner)) == {"submit", "wait", "pending", "room", "drop_queued", "close"}
    assert {"lookahead", "interrupted"} <= set(RoundRunner.__annotations__)
    assert set(members(TrialRunner)) == {"__call__"}


@pytest.mark.parametrize("name", ["planted", "tune", "session", "blocking"])
def test_each_runner_implements_its_interface_with_the_declared_parameters(tmp_path, name):
    runner, protocol = runners(tmp_path)[name]
    assert isinstance(runner, protocol)
    for member, parameters in members(protocol).items():
        assert list(inspect.signature(getattr(runner, member)).parameters) == parameters, (name, member)
    if protocol is RoundRunner:
        assert isinstance(runner.lookahead, bool) and runner.interrupted is None


def test_a_round_runner_is_not_taken_for_a_trial_runner(tmp_path):
    session = runners(tmp_path)["session"][0]
    assert not isinstance(session, TrialRunner)  # run_adaptive wraps only runners without lookahead


def test_the_tune_runner_runs_the_given_keys_through_run_sweep(tmp_path, monkeypatch):
    import explorer.sweeps.run.runner as ray_runner

    calls = []
    monkeypatch.setattr(ray_runner, "run_sweep", lambda spec, store, **kw: calls.append((spec, store, kw)) or "result")
    spec = parse_spec(SPEC)
    runner = TuneRunner("somewhere", address="auto", max_concurrent=3, progress=False, num_cpus=2)
    assert runner(spec, frozenset({"k1", "k2"})) == "result"
    assert calls == [(spec, "somewhere", {"address": "auto", "max_concurrent": 3, "progress": False, "num_cpus": 2,
                                          "only_keys": frozenset({"k1", "k2"})})]
