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

from explorer.analysis.data import FIT_METRICS, TERM_METRICS
from explorer.analysis.fitting import FitResult, data_and_fitter, fit, fit_sweep
from explorer.analysis.laws import (DEFAULT_FORM, FORMS, LAW_METHOD, MEAN_OF_RUNS_METHOD, METHODS, TERM_METHODS,
                                    Form, Method, method_of)
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


@pytest.mark.parametrize("name", sorted(TERM_METHODS))
def test_each_method_chosen_by_name_takes_what_the_interfaces_declare(name):
    method = TERM_METHODS[name]
    read, fitter = data_and_fitter("theory", method=name)
    assert method_of("theory", method=name) is method
    inspect.signature(read).bind(object(), "sweep", metric="err_out", step=None, where=None)
    inspect.signature(fitter).bind(pd.DataFrame(), "theory", n_boot=0, seed=0, where=None, floor="quadrature",
                                   per_draw=False, range_check=False)
    assert inspect.signature(fitter).return_annotation in (FitResult, "FitResult")
    assert set(method.metrics) <= set(FIT_METRICS) | set(TERM_METRICS) and method.pooling and method.loss


def test_an_unknown_method_is_refused_with_the_known_ones():
    with pytest.raises(FitError, match="unknown fit method 'pooled'; expected one of: law, decomposed, .*mean_of_runs"):
        method_of("theory", method="pooled")


def test_the_mean_of_runs_fit_through_fit_sweep_is_fit_pooled():
    from explorer.analysis.fitting import fit_pooled

    from tests.explorer.analysis.fitting.test_pooled_fit import scattered_draws

    grid, _ = scattered_draws(4, seed=2)
    direct = fit_pooled(grid, "companion_hidden", n_boot=10, where="L > 50", residuals="err")
    dispatched = fit_sweep(None, "s", "companion_hidden", where="L > 50", n_boot=10, method=MEAN_OF_RUNS_METHOD,
                           rows=grid, options={"residuals": "err"})
    assert dispatched.estimate == direct.estimate and dispatched.bootstrap == direct.bootstrap
    assert dispatched.ci_low == direct.ci_low and dispatched.ci_high == direct.ci_high
    assert dispatched.where == direct.where == "L > 50" and dispatched.held == {}


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


def test_fit_sweep_of_rows_read_already_is_the_fit_of_the_store(gram_store):
    st, sweep = gram_store
    con = st.connect(sweep=sweep, read_only=True)
    try:
        read, _ = data_and_fitter(DEFAULT_FORM)
        rows = read(con, sweep, metric="err_out", step=None, where=None)
        stored = fit_sweep(con, sweep, n_boot=20, seed=1, hold=False, per_draw=False, range_check=False)
    finally:
        con.close()
    given = fit_sweep(None, sweep, rows=rows, n_boot=20, seed=1, per_draw=False, range_check=False)
    assert given.form == stored.form and given.estimate == stored.estimate and given.ci_low == stored.ci_low


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


# The names a module outside the registry must not branch on: every law's, every method's.
LAW_NAMES = frozenset(FORMS) | frozenset(METHODS) | frozenset(TERM_METHODS)
# Where a law's or a method's name may be compared and written: the registry, and the one dispatch.
NAMES_ALLOWED = ("explorer/analysis/laws/", "explorer/analysis/fitting/dispatch.py")
# Mappings keyed by a law's name: a literal key of one is behaviour chosen by the name.
KEYED_BY_LAW = frozenset({"fits", "fit_errors", "FORMS", "METHODS", "TERM_METHODS"})


def _is_name(node, names=LAW_NAMES) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names


def _names_a_law(node) -> bool:
    """A law's or a method's name as a literal, a collection holding one, or a method's ``.name``."""
    if _is_name(node):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_name(e) for e in node.elts)
    if isinstance(node, ast.Attribute) and node.attr == "name":
        owner = node.value
        called = owner.func if isinstance(owner, ast.Call) else None
        return ((isinstance(owner, ast.Name) and "method" in owner.id)
                or (isinstance(called, ast.Name) and called.id == "method_of"))
    return False


def _keyed_by(node) -> str | None:
    """The last name of a mapping expression (``report.fits`` -> fits)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def law_name_branches(source: str) -> list[int]:
    """Lines of ``source`` that branch on a law's or a method's name: a comparison (``==``, ``!=``,
    ``in``, ``not in``) with one written as a literal (or a collection of them) or with a method's
    ``.name``; a name list (a tuple, list or set of literals holding a law's name, assigned to a
    name); a literal law name looked up in a mapping keyed by laws (``fits["joint"]``,
    ``report.fits.get("decomposed")``, ``FORMS["free"]``); the default law's name written out
    instead of ``DEFAULT_FORM``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(_names_a_law(side) for side in (node.left, *node.comparators)):
            lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Tuple, ast.List, ast.Set)):
            if any(_is_name(e, frozenset(FORMS)) for e in node.value.elts):
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _keyed_by(node.value) in KEYED_BY_LAW and _is_name(node.slice):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and _keyed_by(node.func.value) in KEYED_BY_LAW and node.args and _is_name(node.args[0])):
            lines.append(node.lineno)
        elif _is_name(node, frozenset({DEFAULT_FORM})):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_no_module_but_the_registry_and_the_dispatch_branches_on_a_laws_name():
    found = {}
    for path in sorted((ROOT / "explorer").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if not relative.startswith(NAMES_ALLOWED) and (lines := law_name_branches(path.read_text())):
            found[relative] = lines
    assert not found, f"ask the law (explorer.analysis.laws.Form, Method) instead of testing its name: {found}"
    assert law_name_branches((ROOT / "explorer/analysis/laws/registry.py").read_text())  # the check sees some


@pytest.mark.parametrize("source", [
    'if label == "joint":\n    pass',
    'x = "joint" in report.fits',
    'x = form not in ("theory", "free")',
    'REPORT_FORMS = ("decomposed", "theory", "free")',
    'COMPARED_FORMS = ("decomposed",)',
    'x = method_of(label).name != "decomposed"',
    'x = method.name not in str(exc)',
    'x = report.fits.get("theory")',
    'x = fits["output"].r2_log',
    'hints = FORMS["free"].start',
    'def fit(form: str = "decomposed"):\n    pass',
    'x = name == "mean_of_runs"',
])
def test_the_name_check_catches_each_way_of_branching_on_a_laws_name(source):
    assert law_name_branches(source) == [1]


@pytest.mark.parametrize("source", [
    'x = row["theory"]',  # a column that shares a law's name
    'x = {"law": 1, "theory": 2}',
    'x = claim(form="companion_hidden")',  # a law named as data, not a branch
    'x = form == DEFAULT_FORM',
    'x = FORMS[name].rss_twin is not None',
])
def test_the_name_check_lets_a_law_be_named_as_data(source):
    assert law_name_branches(source) == []


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


# Where a method's fitter may be imported by name: the wings that define the fitters (their own
# modules call each other), and the registry that names them.
FITTERS_ALLOWED = ("explorer/analysis/laws/", "explorer/analysis/fitting/", "explorer/analysis/decomposed/")


def fitter_imports(source: str, relative: str) -> list[int]:
    """Lines of ``source`` (the module at ``relative``, a path under the repository) importing a
    method's fitter (``Method.fitter``, "module:name") from its module."""
    fitters = {tuple(m.fitter.split(":")) for m in (*METHODS.values(), *TERM_METHODS.values())}
    package = pathlib.PurePosixPath(relative).with_suffix("").parts[:-1]
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else ()
            module = ".".join((*base, *(node.module.split(".") if node.module else ())))
            if any((module, alias.name) in fitters for alias in node.names):
                lines.append(node.lineno)
    return lines


def test_every_fit_goes_through_fit_sweep():
    """The reproductions, a design's pilot, compare and the report fit through ``fit_sweep``: no
    module outside the fitters' wings imports a method's fitter."""
    found = {}
    for path in sorted((ROOT / "explorer").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if not relative.startswith(FITTERS_ALLOWED) and (lines := fitter_imports(path.read_text(), relative)):
            found[relative] = lines
    assert not found, f"fit through explorer.analysis.fitting.fit_sweep (method=, options=, rows=): {found}"
    # the check sees the imports that fitted past it
    assert fitter_imports("def f():\n    from ..analysis.fitting import fit_pooled", "explorer/reproduce/claims.py") == [2]
    assert fitter_imports("from ..decomposed import fit_decomposed", "explorer/analysis/compare/sides.py") == [1]
    assert fitter_imports("from explorer.analysis.fitting import fit", "explorer/x.py") == [1]
    assert fitter_imports("from .analysis import fit", "explorer/api/__init__.py") == []  # the api's twin
