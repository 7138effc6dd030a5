"""What the report, the diagnostics and ``explorer compare`` ask a law (``Form``) and a method
(``Method``) instead of testing its name: each field points at laws of the registry, says what
the modules that read it did when they kept name lists, and the default law needs no imports."""
from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from explorer.analysis.laws import (DEFAULT_FORM, FORMS, METHODS, TERM_METHODS, compared_forms, law_forms, method_of,
                                    needed_axes, report_forms, resolve_form)
from explorer.errors import NoDecompositionError, FitError

from tests.paths import REPO_ROOT


def test_the_default_law_is_a_registry_law_read_without_imports():
    assert DEFAULT_FORM in FORMS
    tree = ast.parse((REPO_ROOT / "explorer/analysis/laws/default.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    code = ("import sys; from explorer.analysis.laws import DEFAULT_FORM; "
            "print(sorted(m for m in ('pandas', 'numpy', 'scipy') if m in sys.modules))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert shown.stdout.strip() == "[]"


def test_the_report_fits_its_laws_in_the_order_it_always_has():
    # the order the report's REPORT_FORMS tuple kept before the laws said it themselves
    assert report_forms() == ["decomposed", "theory", "free", "free_rss", "output", "joint"]
    assert report_forms()[0] == DEFAULT_FORM


@pytest.mark.parametrize("name", sorted(FORMS))
def test_each_laws_fields_name_laws_and_axes_of_the_registry(name):
    form = FORMS[name]
    assert set(form.needs) <= {"L", "M", "D"}
    assert needed_axes(name) >= set(form.needs)
    if form.rss_twin is not None:  # an additive law of the two terms: its twin adds them in quadrature
        twin = FORMS[form.rss_twin]
        assert twin.expression.startswith("sqrt(") and twin.rss_twin is None
        assert method_of(name).from_rms_errors and method_of(form.rss_twin).from_rms_errors
        assert set(resolve_form(name)[1].parameters) == set(resolve_form(form.rss_twin)[1].parameters)
    if form.comparable:  # compare pairs the seeds' Gram rows of the law's own method
        assert method_of(name).fits_terms
    if form.shape_advice:  # the advice chooses D too: the law must vary with it
        assert "D" in needed_axes(name)
    if form.report_law is not None:  # every constant filled in, none left over
        constants = resolve_form(name)[1].parameters
        filled = form.report_law.format(**{c: f"<{c}>" for c in constants})
        assert all(f"<{c}>" in filled for c in constants)
    if form.contrast is not None:
        rival, words = form.contrast
        assert rival in FORMS and rival != name and words


def test_the_fields_say_what_the_name_lists_said():
    # diagnostics' ADDITIVE_FORMS and RSS_FORMS, compare's COMPARED_FORMS, the report's "joint"
    assert [n for n, f in FORMS.items() if f.rss_twin] == ["theory", "free"]
    assert [f.rss_twin for f in FORMS.values() if f.rss_twin] == ["theory_rss", "free_rss"]
    assert compared_forms() == ["decomposed"]
    assert [n for n, f in FORMS.items() if f.shape_advice] == ["joint"]
    assert [n for n, f in FORMS.items() if f.needs] == ["joint"]
    assert [n for n, f in FORMS.items() if f.report_law] == ["theory"]
    assert {n: f.contrast[0] for n, f in FORMS.items() if f.contrast} == {"output": "theory"}


def test_the_laws_compare_laws_ranks_are_those_fitted_from_rms_errors():
    assert law_forms() == [n for n in FORMS if method_of(n).from_rms_errors]
    assert not method_of(DEFAULT_FORM).from_rms_errors


def test_a_method_knows_when_an_error_is_its_missing_data():
    method = method_of(DEFAULT_FORM)
    assert method.fallback in FORMS and method.fits_terms
    assert method.missing_data(NoDecompositionError("no Gram rows"))
    assert method.missing_data(FitError(f"one seed per point: the {method.name} fit needs two"))
    assert not method.missing_data(FitError("n_boot must be from 0 to 10,000"))
    assert [m.name for m in (*METHODS.values(), *TERM_METHODS.values()) if m.fits_terms] == [method.name]
