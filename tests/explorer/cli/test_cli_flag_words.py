"""The library raises a wing's error as it is; the command line words it in its flags: a fit whose
law lacks its data ends with the ``--form`` that fits the sweep's RMS errors instead, as it always
did, and only that error does."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from explorer import api
from explorer.analysis.fitting import fit_stored_sweep
from explorer.cli import main
from explorer.cli.flag_words import fit_flag_words
from explorer.errors import FitError, NoDecompositionError, SweepDataError
from store import Store
from tests.explorer.analysis_data import law_rows, write_to_store

INSTEAD = "; --form free_rss fits the RMS errors instead"


@pytest.fixture(scope="module")
def no_grams(tmp_path_factory):
    """A sweep written without the seeds' Gram rows: the decomposed law cannot be fitted on it."""
    store = Store(tmp_path_factory.mktemp("flags") / "store")
    write_to_store(law_rows(lambda L, M, D: 1 / L + (D / (L * M)) ** 0.5, Ls=(2, 4, 8), Ms=(1, 4), seeds=2, steps=2,
                            sweep="law"), store)
    return store


def test_fit_names_the_form_that_fits_instead_in_its_flag(no_grams):
    done = CliRunner().invoke(main, ["fit", "--sweep", "law", "--store", no_grams.uri, "--no-save"])
    assert done.exit_code == 2, done.output
    assert done.output.startswith("error: ") and done.output.rstrip().endswith(INSTEAD), done.output
    assert len(done.output.strip().splitlines()) == 1 and "Traceback" not in done.output


def test_the_python_twin_raises_the_wings_error_naming_the_law(no_grams):
    with pytest.raises(NoDecompositionError) as raised:
        api.fit("law", store=no_grams, save=False)
    assert raised.value.fallback_form == "free_rss" and "--form" not in str(raised.value)


def test_an_error_of_another_law_or_sweep_is_not_reworded(no_grams):
    done = CliRunner().invoke(main, ["fit", "--sweep", "nosuch", "--store", no_grams.uri, "--no-save"])
    assert done.exit_code == 2 and "--form" not in done.output, done.output
    with pytest.raises(SweepDataError) as raised:
        api.fit("nosuch", store=no_grams, save=False)
    assert getattr(raised.value, "fallback_form", None) is None


@pytest.mark.parametrize("message, named", [
    ("the decomposed law needs at least 2 seeds per point to tell the bias from the fluctuation; this grid has 1",
     "free_rss"),
    ("no grid points to fit", None),
])
def test_a_fit_error_names_the_fallback_only_when_it_names_the_law(monkeypatch, message, named):
    from explorer.analysis.fitting import stored_sweep

    def failing(*args, **kwargs):
        raise FitError(message)

    monkeypatch.setattr(stored_sweep, "fit_sweep", failing)
    with pytest.raises(FitError) as raised:
        fit_stored_sweep(None, "law", "decomposed")
    assert getattr(raised.value, "fallback_form", None) == named and str(raised.value) == message


def test_a_law_without_a_fallback_names_none(monkeypatch):
    from explorer.analysis.fitting import stored_sweep

    def failing(*args, **kwargs):
        raise NoDecompositionError("free_rss has no decomposition")

    monkeypatch.setattr(stored_sweep, "fit_sweep", failing)
    with pytest.raises(NoDecompositionError) as raised:
        fit_stored_sweep(None, "law", "free_rss")
    assert getattr(raised.value, "fallback_form", None) is None


def test_the_words_end_the_message_and_keep_the_errors_type():
    error = NoDecompositionError("this store predates the per-seed decomposition")
    error.fallback_form = "free_rss"
    with pytest.raises(NoDecompositionError) as raised, fit_flag_words():
        raise error
    assert str(raised.value) == "this store predates the per-seed decomposition" + INSTEAD
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    with pytest.raises(FitError, match="^no grid points to fit$"), fit_flag_words():
        raise FitError("no grid points to fit")
