"""A scaling law is the documented grammar and nothing else: Python's parser drops '#' comments,
so "c1/L + c2*sqrt(D/(L*M)) #<img src=x onerror=...>" used to pass the whitelist; a 400-digit
integer ended in an OverflowError traceback. Both are one-line refusals now (exit 2)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from explorer.cli import main
from explorer.errors import ExpressionError
from explorer.analysis.laws import parse_expression
from store import Store

from tests.explorer.analysis_data import law_rows, write_to_store

PAYLOAD = "c1/L + c2*sqrt(D/(L*M)) #<img src=x onerror=alert(1)>"


@pytest.mark.parametrize("text, message", [
    (PAYLOAD, "character '#' at column 25 is not part of a law"),
    ("c1/L #", "character '#' at column 6"),
    ("c1/L + c2*sqrt(D/(L*M)) <img>", "character '<'"),
    ("c1/L + 'x'", "character \"'\""),
    ("c1*L**-a; c2", "character ';'"),
    ("c1/L + 1_000", "character '_'"),
    ("c1 * L @ M", "character '@'"),
    ("c1/L + c2 % D", "character '%'"),
    ("c1/L + \u00b5", "character '\u00b5'"),
    ("c1/L + 0x10", "number '0x10' in law is not a decimal number"),
    ("c1/L + 0b1", "number '0b1' in law is not a decimal number"),
    ("c1/L + 2j", "number '2j' in law is not a decimal number"),
    ("c1/L + " + "9" * 400, "number 999999999999...9999 (400 characters) in law does not fit a float"),
    ("c1/L * 1e400", "number 1e400 in law does not fit a float"),
    ("c1/L if M else D", "unsupported syntax 'IfExp'"),
    ("c1/L + L.real", "unsupported syntax 'Attribute'"),
])
def test_anything_outside_the_grammar_is_one_line(text, message):
    with pytest.raises(ExpressionError) as caught:
        parse_expression(text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("text", ["c1/L + c2*sqrt(D/(L*M))", "c1*L**-a + c2*(D/(L*M))**b", "1.5e-3*c1/L + .5*c2/D",
                                  "c1 * exp(-a*L) + c2*log(P)/P + 2.*pi*c3/M", "c1/L + 1E+3*c2/M", "c1*L**(-1) + 1e300*c2"])
def test_the_documented_grammar_still_parses(text):
    assert parse_expression(text).parameters


@pytest.fixture(scope="module")
def law_store(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("law") / "store")
    write_to_store(law_rows(lambda L, M, D: 1 / L + (D / (L * M)) ** 0.5, Ls=(2, 4, 8), Ms=(1, 4), seeds=2, steps=2,
                            sweep="law"), store)
    return store


@pytest.mark.parametrize("form, message", [
    (PAYLOAD, "error: character '#' at column 25 is not part of a law"),
    ("c1/L + " + "9" * 400, "error: number 999999999999...9999 (400 characters) in law does not fit a float"),
])
def test_explorer_fit_refuses_a_law_outside_the_grammar_with_one_line(law_store, form, message):
    done = CliRunner().invoke(main, ["fit", "--sweep", "law", "--store", law_store.uri, "--form", form, "--no-save"])
    assert done.exit_code == 2, done.output
    assert done.output.startswith(message) and done.output.count("\n") == 1, done.output
    assert "Traceback" not in done.output and "<img" not in done.output.split(";")[0]


def test_explorer_fit_takes_a_law_of_the_grammar(law_store):
    done = CliRunner().invoke(main, ["fit", "--sweep", "law", "--store", law_store.uri, "--form",
                                     "c1/L + c2*sqrt(D/(L*M))", "--no-save", "--bootstrap", "5"])
    assert done.exit_code == 0, done.output
