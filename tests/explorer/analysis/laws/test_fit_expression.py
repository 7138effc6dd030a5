"""The scaling-law expression parser: arithmetic over L, M, D, P and parameters, nothing else."""
import math

import numpy as np
import pytest

from explorer.errors import ExpressionError, UsageError
from explorer.analysis.laws import FORMS, parse_expression


def test_expression_evaluates_like_the_formula():
    expr = parse_expression("c1/L + c2*sqrt(D/(L*M))")
    L, M, D = np.array([2.0, 8.0]), np.array([4.0, 1.0]), np.array([8.0, 8.0])
    expected = 0.5 / L + 0.25 * np.sqrt(D / (L * M))
    np.testing.assert_allclose(expr({"c1": 0.5, "c2": 0.25}, L, M, D), expected, rtol=1e-15)
    np.testing.assert_allclose(expr([0.5, 0.25], L, M, D), expected, rtol=1e-15)


def test_parameters_are_ordered_constants_first_and_constants_are_positive():
    expr = parse_expression("c10*L**-a + c2*(D/(L*M))**b + c1")
    assert expr.parameters == ("c1", "c2", "c10", "a", "b")
    assert expr.positive == {"c1", "c2", "c10"}
    assert expr.variables == {"L", "M", "D"}


def test_p_is_the_parameter_count_and_functions_work():
    expr = parse_expression("c1 * P**-a + log(exp(c2)) * 0 + pi*0")
    assert float(expr({"c1": 2.0, "c2": 1.0, "a": 0.5}, 2, 3, 6)) == pytest.approx(2.0 / 6.0)


def test_batch_evaluation_matches_one_at_a_time():
    expr = parse_expression("c1*L**-a + c2*(D/(L*M))**b")
    L, M, D = np.array([2.0, 4.0, 8.0]), np.array([1.0, 4.0, 16.0]), np.full(3, 8.0)
    values = np.array([[0.8, 0.3, 1.0, 0.5], [1.0, 0.1, 0.9, 0.4]])
    batch = expr.batch(values, L, M, D)
    for row, params in zip(batch, values):
        np.testing.assert_allclose(row, expr(params, L, M, D), rtol=1e-15)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_registry_form_parses(name):
    expr = parse_expression(FORMS[name].expression, FORMS[name].positive)
    assert expr.positive, "every registry form has positive constants"
    assert set(FORMS[name].theory) <= set(expr.parameters)


@pytest.mark.parametrize("text, fragment", [
    # characters outside the grammar's alphabet are refused before Python's parser sees them
    ('__import__("os").system("true")', "character '_' at column 1 is not part of a law"),
    ('__import__("os")', "character '_' at column 1"),
    ("L.__class__", "character '_' at column 3"),
    ("L.real*c1", "unsupported syntax 'Attribute'"),
    ("c1 if L else c2", "unsupported syntax 'IfExp'"),
    ("c1*[L][0]", "character '['"),
    ("(lambda: c1)()", "character ':'"),
    ("(c1)(L)", "unknown function"),
    ("c1 * L % 2", "character '%'"),
    ("c1 * L // 2", "unsupported syntax 'FloorDiv'"),
    ("c1 < L", "character '<'"),
    ("c1 is L", "unsupported syntax 'Compare'"),
    ("c1*'L'", "character \"'\""),
    ("c1*L +", "cannot parse"),
    ("c1*open(L)", "unknown function 'open'"),
    ("sqrt(L, M)*c1", "character ','"),
    ("c1*sqrt", "without parentheses"),
    ("2*L", "no parameter"),
    ("c1 + c2", "none of L, M, D, P"),
    ("c1*L**__x", "character '_'"),
    ("", "empty"),
    ("c1*L" + " + c1*L" * 100, "characters long"),
    (" + ".join(f"c{i}*L" for i in range(1, 11)), "at most 8"),
])
def test_forbidden_or_broken_expressions_are_refused_with_a_clear_message(text, fragment):
    with pytest.raises(ExpressionError, match=None) as info:
        parse_expression(text)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, UsageError)


def test_undefined_values_become_nan_not_exceptions():
    expr = parse_expression("c1*sqrt(L - 4) + c2*L**1000")
    out = expr({"c1": 1.0, "c2": 1.0}, np.array([2.0, 9.0]), 1.0, 1.0)
    assert math.isnan(out[0]) and math.isinf(out[1])


@pytest.mark.parametrize("text, name, meant", [
    ("c1/L + c2*sqrt(D/(L*m))", "m", "M"),
    ("c1/l + c2", "l", "L"),
    ("c1*d**-a", "d", "D"),
    ("c1*p**-a + c2/L", "p", "P"),
])
def test_a_lower_case_variable_is_refused_not_fitted_as_a_free_parameter(text, name, meant):
    with pytest.raises(ExpressionError) as info:
        parse_expression(text)
    message = str(info.value)
    assert f"unknown name {name!r} in law; did you mean {meant}?" in message
    assert "variables: L, M, D, P" in message and "\n" not in message


def test_other_lower_case_names_stay_free_exponents():
    expr = parse_expression("c1*L**-a + c2*(D/(L*M))**b + c3*D**-gamma")
    assert expr.parameters == ("c1", "c2", "c3", "a", "b", "gamma")
