"""One dispatch: a law names its method in the registry (``Form.method``), the method names its
data and its fitter (``METHODS``), and ``fit_sweep`` is the one place that reads and fits with
them. Every method's reader and fitter do what the declared interfaces say, ``fit_sweep`` gives
what the method's own reader and fitter give, and a law with a method of its own is one registry
entry and its module."""
from __future__ import annotations

import ast
import inspect
import pathlib

import numpy as np
import pandas as pd
import pytest

from explorer.analysis.data import FIT_METRICS
from explorer.analysis.fitting import FitResult, data_and_fitter, fit, fit_sweep
from explorer.analysis.laws import FORMS, LAW_METHOD, METHODS, Form, Method, method_of
from explorer.config.planning import plan
from explorer.errors import FitError
from explorer.sweeps.adaptive import PlantedRunner, TermsLaw
from store import Store

from tests.explorer.analysis_data import connect, law_rows
from tests.explorer.sweeps.adaptive.test_adaptive import GRID, adaptive_spec
from tests.paths import REPO_ROOT

ROOT = REPO_ROOT


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_law_names_a_method_of_the_registry(form):
    assert FORMS[form].method in METHODS
    assert method_of(form) is METHODS[FORMS[form].method]


def test_an_expression_is_fitted_by_the_law_method():
    assert method_of("c1/L + c2") is METHODS[LAW_METHOD]


@pytest.mark.parametrize("name", sorted(METHODS))
def test_each_methods_reader_and_fitter_take_what_the_interfaces_declare(name):
    method = METHODS[name]
    read, fitter = data_and_fitter(next(f for f, form in FORMS.items() if form.method == name))
    inspect.signature(read).bind(object(), "sweep", metric="err_out", step=None, where=None)
    inspect.signature(fitter).bind(pd.DataFrame(), "theory", n_boot=0, seed=0, where=None, floor="quadrature",
                                   per_draw=False, range_check=False)
    assert inspect.signature(fitter).return_annotation in (FitResult, "FitResult")
    assert set(method.metrics) <= set(FIT_METRICS) and method.pooling and method.loss
    assert method.fallback is None or method_of(method.fallback).name == LAW_METHOD


@pytest.fixture(scope="module")
def gram_store(tmp_path_factory):
    """A sweep with the seeds' Gram rows (a planted law, three draws of four seeds)."""
    spec = adaptive_spec(grid={**GRID, "problem_seeds": [1, 2, 3], "seeds": 4}, form="decomposed")
    st = Store(tmp_path_factory.mktemp("dispatch") / "s")
    PlantedRunner(st, TermsLaw(c1=0.5, c2=0.3), entries=60)(spec, frozenset(t.trial_key for t in plan(spec).trials))
    return st, spec.name


@pytest.mark.parametrize("form", ["decomposed", "free_rss", "c1*L**-a + c2"])
def test_fit_sweep_gives_what_the_methods_reader_and_fitter_give(gram_store, form):
    st, sweep = gram_store
    con = st.connect(sweep=sweep, read_only=True)
    try:
        read, fitter = data_and_fitter(form)
        direct = fitter(read(con, sweep, metric="err_out", step=None, where=None), form, n_boot=20, seed=1, where=None,
                        floor="quadrature", per_draw=False, range_check=False)
        dispatched = fit_sweep(con, sweep, form, n_boot=20, seed=1, hold=False, per_draw=False, range_check=False)
    finally:
        con.close()
    assert dispatched.form == direct.form and dispatched.bootstrap == direct.bootstrap
    for name in direct.parameters:
        assert dispatched.estimate[name] == direct.estimate[name], name
        assert dispatched.ci_low[name] == direct.ci_low[name] and dispatched.ci_high[name] == direct.ci_high[name]


def toy_fitter(frame, form, *, n_boot=0, seed=0, where=None, floor="quadrature", per_draw=True, range_check=True):
    """A method of its own for ``test_a_law_with_its_own_method_is_one_registry_entry``: the law
    fitter, told apart by a note."""
    result = fit(frame, "theory", n_boot=n_boot, seed=seed, where=where, floor=floor, per_draw=per_draw,
                 range_check=range_check)
    result.notes.append(f"fitted by the toy method as {form}")
    return result


def test_a_law_with_its_own_method_is_one_registry_entry(monkeypatch):
    law = law_rows(lambda L, M, D: 0.5 / L + 0.3 * np.sqrt(D / (L * M)), Ls=(2, 4, 8, 16), Ms=(1, 4, 16), seeds=3)
    monkeypatch.setitem(METHODS, "toy", Method("toy", "explorer.analysis.data:grid_errors",
                                               f"{__name__}:toy_fitter", "each point a toy", "a toy loss"))
    monkeypatch.setitem(FORMS, "toy", Form("toy", FORMS["theory"].expression, "a test's law", method="toy"))
    result = fit_sweep(connect(law), "law", "toy", n_boot=0)
    assert "fitted by the toy method as toy" in result.notes


def test_the_law_fitter_refuses_a_law_another_method_fits():
    with pytest.raises(FitError, match="decomposed law is fitted by its own method, decomposed .*fit_sweep"):
        fit(pd.DataFrame({"L": [1.0], "M": [1.0], "D": [1.0], "err": [1.0]}), "decomposed")


def test_the_decomposed_fitter_refuses_a_law_of_other_parameters():
    from explorer.analysis.decomposed import fit_decomposed

    with pytest.raises(FitError, match="the decomposed fit measures c1, a .* law 'theory' has c1, c2"):
        fit_decomposed(pd.DataFrame(), "theory")


def method_comparisons(path: pathlib.Path) -> list[int]:
    """Lines of ``path`` that compare something's ``.method`` (a law's method read by hand)."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Compare)
            and any(isinstance(side, ast.Attribute) and side.attr == "method" for side in (node.left, *node.comparators))]


def test_no_module_but_the_registry_reads_a_laws_method():
    allowed = {ROOT / "explorer/analysis/laws/registry.py"}
    found = {str(p.relative_to(ROOT)): lines for p in sorted((ROOT / "explorer").rglob("*.py"))
             if p not in allowed and (lines := method_comparisons(p))}
    assert not found, found
    assert method_comparisons(ROOT / "explorer/analysis/laws/registry.py")  # the check sees one


def test_explorer_fit_in_python_is_the_command_saving_included(tmp_path):
    import math

    from click.testing import CliRunner

    import explorer
    from explorer.cli import main

    from tests.explorer.analysis_data import write_to_store

    store = Store(tmp_path / "results")
    write_to_store(law_rows(lambda L, M, D: 0.5 / L + 0.2 * math.sqrt(D / (L * M)), Ls=(2, 4, 8, 16), Ms=(1, 4, 16),
                            seeds=3, steps=2, sweep="S"), store)
    fitted = explorer.fit("S", "theory", store=store.uri, n_boot=10, budgets=(1e3,))
    assert fitted.written_to == store.uri and fitted.comparison is None and fitted.advice is not None
    rows = store.query("SELECT parameter, estimate FROM fits WHERE sweep = 'S'").to_pylist()
    assert {r["parameter"]: r["estimate"] for r in rows} == fitted.result.estimate
    shown = CliRunner().invoke(main, ["fit", "--sweep", "S", "--store", store.uri, "--form", "theory", "--bootstrap",
                                      "10", "--budget", "1e3"])
    assert shown.exit_code == 0, shown.output
    assert shown.output == "\n".join(fitted.lines()) + "\n"
    assert fitted.lines()[-1] == f"wrote fit {fitted.result.fit_id} (2 rows, kind fits) to {store.uri}"
    unsaved = explorer.fit("S", "theory", store=store.uri, n_boot=10, save=False)
    assert unsaved.written_to is None and not unsaved.lines()[-1].startswith("wrote fit")
