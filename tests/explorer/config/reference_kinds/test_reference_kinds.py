"""Reference kinds own their behaviour (``explorer.config.reference_kinds``): the keys of the kinds
that existed before the registry are what they were, no module outside the registry compares a
kind's name, a new kind is one module and one entry, and ``none`` (no reference: the loss alone)
plans, prices and computes nothing, writes null errors, and an analysis that needs an error
refuses its sweep in one line naming the kind."""
from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import hashlib
import json
import math
import pathlib

import pytest

from explorer.config.estimate import estimate_lines, plan_cost
from explorer.config.memory_refusal import check_fits_memory, largest_point
from explorer.config.planning import plan
from explorer.config.reference_kinds import KINDS, kind_named
from explorer.config.spec import parse_spec
from explorer.errors import SweepDataError
from store import SCHEMA_VERSION, Store, trial_row_from_metrics
from store.schema import to_table
from trials import NoReferenceConfig, empty_reference, largest_reference_config

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
REGISTRY = ROOT / "explorer/config/reference_kinds"

BASE = {
    "name": "kinds",
    "problem": {"d_in": 5, "d_out": 5, "samples": 10},
    "model": {"activation": "tanh"},
    "train": {"steps": 10, "lr": 1.0, "dtype": "float64"},
    "grid": {"L": [4, 8], "M": [1, 4], "D": [4, 8], "alpha": [1.0, 2.0], "seeds": 2, "problem_seeds": [1, 2]},
}
SPECS = {
    "mean_ode": {**BASE, "reference": {"kind": "mean_ode", "depth": 16, "width": 8, "replicas": 2},
                 "grid": {**BASE["grid"], "preset": ["mlu", "completep"]}},
    "largest": {**BASE, "reference": {"kind": "largest"}, "grid": {**BASE["grid"], "lr_scaling": ["mean_field", "raw"]}},
    "joint_limit": {**BASE, "model": {"activation": "identity", "preset": "mlu"},
                    "reference": {"kind": "joint_limit", "grid": 8}},
}
# (references, trials, the first 16 hex digits of the SHA-256 of the JSON list [ref keys, trial keys])
# as the code before the registry (commit 094d47f) planned these specs: the keys must never change.
KEYS_BEFORE = {"mean_ode": (16, 64, "db493b5b68db8db5"), "largest": (8, 64, "7b6bcbe104e477d8"),
               "joint_limit": (8, 32, "a2f2c19778040baf")}
NONE_SPEC = {**BASE, "reference": {"kind": "none"}, "train": {"steps": 10, "dtype": "float64"},
             "grid": {**BASE["grid"], "lr": [0.25, 1.0], "lr_scaling": ["mean_field", "raw"]}}


@pytest.mark.parametrize("kind", sorted(KEYS_BEFORE))
def test_the_keys_of_the_kinds_before_the_registry_are_unchanged(kind):
    p = plan(parse_spec(SPECS[kind]))
    text = json.dumps([[r.ref_key for r in p.references], [t.trial_key for t in p.trials]])
    assert (len(p.references), len(p.trials), hashlib.sha256(text.encode()).hexdigest()[:16]) == KEYS_BEFORE[kind]
    assert {r.kind for r in p.references} == {kind} and not p.made_by_workers


def kind_name_comparisons(path: pathlib.Path) -> list[int]:
    """Lines of ``path`` that compare a kind's name, pick by a table keyed by kind names, or tell a
    kind by its configuration's fields (``hasattr(config, "gram")``)."""
    names = set(KINDS)
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = (node.left, *node.comparators)
            constants = {c.value for side in sides for c in ast.walk(side) if isinstance(c, ast.Constant)}
            about_kind = any("kind" in ast.unparse(side) for side in sides if not isinstance(side, ast.Constant))
            # "none" is also a word of other vocabularies (floor = "none"): a kind only where a kind is compared
            if constants & (names - {"none"}) or (about_kind and constants & names):
                lines.append(node.lineno)
        elif isinstance(node, ast.Dict) and len({k.value for k in node.keys if isinstance(k, ast.Constant)} & names) > 1:
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "hasattr" and len(node.args) == 2
              and isinstance(node.args[1], ast.Constant) and node.args[1].value in ("gram", "particle_config", "grid")):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_module_outside_the_registry_compares_a_kinds_name():
    found = {str(p.relative_to(ROOT)): lines for p in sorted((ROOT / "explorer").rglob("*.py"))
             if REGISTRY not in p.parents and (lines := kind_name_comparisons(p))}
    assert not found, found
    # the check sees what it forbids: the code before the registry had such branches
    probe = ROOT / "tests/explorer/kind_branches_probe.txt"
    probe.write_text('if ref.kind == "largest":\n    pass\nx = {"largest": 1, "mean_ode": 2}[k]\n'
                     'y = hasattr(config, "gram")\nz = kind in ("none",)\n')
    try:
        assert kind_name_comparisons(probe) == [1, 3, 4, 5]
    finally:
        probe.unlink()


def test_every_kind_is_one_module_of_the_wing_and_one_entry():
    modules = {p.stem for p in REGISTRY.glob("*.py")} - {"__init__", "kind", "registry"}
    assert {type(k).__module__.rsplit(".", 1)[1] for k in KINDS.values()} == modules
    assert list(KINDS) == ["mean_ode", "largest", "joint_limit", "none"]  # the spec's help order


def test_a_new_kind_is_one_entry_the_planner_and_the_dry_run_ask(monkeypatch):
    class Toy(type(kind_named("none"))):
        name = "toy"

        def dry_run_line(self, spec, count):
            return f"references: {count} toy"

    monkeypatch.setitem(KINDS, "toy", Toy())
    spec = parse_spec(NONE_SPEC)
    spec = dataclasses.replace(spec, reference=dataclasses.replace(spec.reference, kind="toy"))
    the_plan = plan(spec)
    assert {r.kind for r in the_plan.made_by_workers} == {"toy"} and not the_plan.references
    assert "references: 0 toy" in estimate_lines(the_plan)


def test_kind_none_plans_prices_and_computes_no_reference():
    spec = parse_spec(NONE_SPEC)
    assert spec.coupled_embeddings is False
    the_plan = plan(spec)
    assert len(the_plan.trials) == 2 * 2 * 2 * 2 * 2 * 2 * 2 and the_plan.references == ()
    # one empty reference per trial shape (steps, samples, outputs, D), made by the workers
    assert len(the_plan.made_by_workers) == 2
    assert set(the_plan.reference_map()) == {t.ref_key for t in the_plan.trials}
    lines = estimate_lines(the_plan, 8 * 2**30, 2)
    assert any(line.startswith("references: 0 ") for line in lines), lines
    assert "largest reference" not in "\n".join(lines) and "and 0 s of references in all" in lines[3], lines
    assert largest_point(spec)[1] is None and largest_point(the_plan)[1] is None
    check_fits_memory(spec, 2 * 2**30)  # no reference to judge: the trials alone
    cost = plan_cost(the_plan)
    assert cost.references == 0 and cost.reference_seconds == 0


def test_kind_none_refuses_the_reference_keys_it_ignores():
    from explorer.errors import SpecError

    with pytest.raises(SpecError, match=r'\[reference\] depth: not used with kind = "none"'):
        parse_spec({**NONE_SPEC, "reference": {"kind": "none", "depth": 64}})


def small_config(**changes):
    spec = parse_spec({**NONE_SPEC, "grid": {"L": [4], "M": [2], "D": [4], "seeds": 2, "lr": [0.5]}})
    trial = plan(spec).trials[0].config
    return dataclasses.replace(trial, **changes) if changes else trial


def test_a_trial_of_kind_none_writes_null_errors_and_the_loss_a_reference_does_not_change():
    from trials import reference_from_trial, train_trial

    config = small_config()
    rows = train_trial(config, empty_reference(NoReferenceConfig(config)))
    assert rows and all(r["ref_kind"] == "none" and r["ref_key"] == NoReferenceConfig(config).key() for r in rows)
    for name in ("err_out", "err_hidden", "gram_out", "gram_hidden", "ref_loss", "ref_err_out", "ref_err_hidden"):
        assert all(r[name] is None for r in rows), name
    # the loss is the trial's own: trained against a real reference, the same numbers
    largest = largest_reference_config(config, L=config.L, M=config.M, D=config.D)
    against = train_trial(config, reference_from_trial(largest))
    assert [r["loss"] for r in rows] == [r["loss"] for r in against]
    assert all(math.isfinite(r["err_out"]) for r in against)
    to_table("metrics", [dict(r, sweep="s", trial_key="k", node_id="n", error=None, schema_version=SCHEMA_VERSION,
                              package_version="0") for r in rows])  # the schema takes the nulls


@pytest.fixture(scope="module")
def none_store(tmp_path_factory):
    """A loss-only sweep (kind none) of real trials over lr, for two presets, in a store."""
    from trials import train_trial

    spec = parse_spec({**NONE_SPEC, "grid": {"L": [4], "M": [2], "D": [4], "seeds": 2, "lr": [0.125, 0.5, 2.0],
                                             "preset": ["mlu", "standard"]}, "model": {"activation": "tanh"}})
    store = Store(tmp_path_factory.mktemp("none") / "results")
    the_plan = plan(spec)
    refs = the_plan.reference_map()
    for t in the_plan.trials:
        rows = train_trial(t.config, kind_named("none").compute(refs[t.ref_key].config))
        for r in rows:
            r["node_id"], r["error"] = "here", None
        trial = trial_row_from_metrics(rows, config_json="{}", started_at=dt.datetime.now(dt.timezone.utc))
        store.write_trial(spec.name, t.trial_key, rows, trial)
    return store, spec.name


def test_a_fit_of_a_sweep_of_kind_none_refuses_in_one_line_naming_the_kind(none_store):
    from click.testing import CliRunner

    from explorer.analysis.data import grid_errors
    from explorer.cli import main

    store, sweep = none_store
    con = store.connect(sweep=sweep, read_only=True)
    try:
        with pytest.raises(SweepDataError, match="reference kind none, which measures no err_out"):
            grid_errors(con, sweep, "err_out")
    finally:
        con.close()
    done = CliRunner().invoke(main, ["fit", "--sweep", sweep, "--store", store.uri])
    assert done.exit_code != 0 and "Traceback" not in done.output
    assert len(done.output.strip().splitlines()) == 1 and "reference kind none" in done.output, done.output


def test_the_optimum_of_the_loss_of_a_sweep_of_kind_none(none_store):
    from click.testing import CliRunner

    from explorer.cli import main

    store, sweep = none_store
    done = CliRunner().invoke(main, ["optimum", "--sweep", sweep, "--store", store.uri, "--axis", "lr"])
    assert done.exit_code == 0, done.output
    assert "mlu" in done.output and "standard" in done.output
    refused = CliRunner().invoke(main, ["optimum", "--sweep", sweep, "--store", store.uri, "--axis", "lr",
                                        "--metric", "err_out"])
    assert refused.exit_code != 0 and "reference kind none" in refused.output, refused.output


def test_an_adaptive_sweep_refuses_kind_none_in_one_line():
    from explorer.errors import SpecError
    from explorer.sweeps.adaptive import AdaptiveLoop

    spec = parse_spec({**NONE_SPEC, "grid": {"L": [4, 8], "M": [2, 4], "D": [4], "seeds": 2},
                       "train": {"steps": 5, "lr": 0.5}})
    with pytest.raises(SpecError, match=r"\[reference\] kind: none measures no error, and an adaptive sweep fits"):
        AdaptiveLoop(spec, None, None, lambda line: None)
