"""A small, safe parser for scaling-law expressions over L, M, D and P = L*M*D.

Users write a law as text, e.g. ``c1/L + c2*sqrt(D/(L*M))`` or ``c1*L**-a + c2*(L*M)**-b``.
The text is parsed with Python's ``ast`` module and only a whitelist of nodes is accepted:
numbers, the variables ``L M D P``, parameters, ``+ - * / **``, unary minus, and the functions
``sqrt log exp``. The tree is compiled into numpy closures; nothing is ever passed to ``eval``.

Parameter names: ``c1, c2, ...`` (the letter c followed by digits) are positive constants and are
fitted through their logarithm; any other name (``a``, ``b``, ``gamma``...) is a free real number,
typically an exponent. ``pi`` is the number pi. A lower-case ``l``, ``m``, ``d`` or ``p`` is
refused rather than fitted: it is almost always a mistyped variable (``sqrt(D/(L*m))``).
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from ...errors import ExpressionError

VARIABLES = ("L", "M", "D", "P")
FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"sqrt": np.sqrt, "log": np.log, "exp": np.exp}
NAMED_NUMBERS = {"pi": math.pi}
MAX_LENGTH = 500  # characters: a law is a line, not a program
MAX_PARAMETERS = 8
POSITIVE = re.compile(r"^c\d+$")
_PARAMETER = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,15}$")
_BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide, ast.Pow: np.power}
# The grammar's alphabet: letters and digits (names, numbers), '.', the operators + - * / (and
# ** as two *), parentheses and spaces. Anything else (a '#' comment, which Python's parser
# drops silently, '<', quotes, ',', '_', '@', '%' ...) is refused before parsing.
_ALPHABET = re.compile(r"[A-Za-z0-9. +\-*/()]*")
# A number is decimal: digits, an optional fraction, an optional exponent (no 0x, no 1_000, no 1j).
_DECIMAL = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_ALLOWED_HINT = "allowed: numbers, L, M, D, P, parameters (c1, c2, a, b, ...), + - * / **, sqrt(), log(), exp()"

_Node = Callable[[Mapping[str, np.ndarray]], np.ndarray]


def _natural_key(name: str) -> tuple:
    """c1 < c2 < c10, then the other parameters alphabetically."""
    match = POSITIVE.match(name)
    return (0, int(name[1:]), "") if match else (1, 0, name)


@dataclass(frozen=True)
class Expression:
    """A parsed scaling law: evaluate it with ``expr(params, L=..., M=..., D=...)``.

    Attributes:
        text: the expression as the user wrote it (whitespace normalized).
        parameters: the fitted names, constants c1, c2, ... first.
        positive: the subset of ``parameters`` constrained positive (the c-constants).
        variables: which of L, M, D, P the expression uses.
    """

    text: str
    parameters: tuple[str, ...]
    positive: frozenset[str]
    variables: frozenset[str]
    _compiled: _Node = field(repr=False, compare=False)

    def __reduce__(self):
        """Pickled as its text and positive names, parsed again when read (its compiled function
        is made of closures; the fit cache keeps fits with their laws)."""
        return parse_expression, (self.text, tuple(sorted(self.positive)))

    def __call__(self, params: Mapping[str, float] | np.ndarray, L, M, D) -> np.ndarray:
        """Evaluate the law.

        Args:
            params: a mapping name -> value, or an array in the order of ``parameters``.
            L, M, D: scalars or broadcastable arrays (float64).
        Returns:
            The law's value, a float64 array of the broadcast shape (may hold NaN/inf where the
            law is undefined, e.g. sqrt of a negative number).
        """
        if not isinstance(params, Mapping):
            params = dict(zip(self.parameters, np.asarray(params, dtype=float)))
        return self._evaluate({name: float(params[name]) for name in self.parameters}, L, M, D)

    def batch(self, values: np.ndarray, L, M, D) -> np.ndarray:
        """Evaluate B parameter vectors at once.

        Args:
            values: (B, n_parameters) float64, in the order of ``parameters``.
            L, M, D: (n,) arrays shared by every vector, or (B, n) arrays, one row per vector.
        Returns:
            (B, n) float64.
        """
        values = np.asarray(values, dtype=float)
        params = {name: values[:, i: i + 1] for i, name in enumerate(self.parameters)}
        L, M, D = (np.atleast_2d(np.asarray(v, dtype=float)) for v in (L, M, D))
        return self._evaluate(params, L, M, D, shape=(values.shape[0], L.shape[1]))

    def _evaluate(self, params: dict, L, M, D, shape=None) -> np.ndarray:
        L, M, D = (np.asarray(v, dtype=float) for v in (L, M, D))
        env = {"L": L, "M": M, "D": D, "P": L * M * D}
        env.update(params)
        shape = np.broadcast(L, M, D).shape if shape is None else shape
        with np.errstate(all="ignore"):
            return np.broadcast_to(np.asarray(self._compiled(env), dtype=float), shape).copy()


def parse_expression(text: str, positive=()) -> Expression:
    """Parse a scaling-law expression safely.

    Args:
        text: e.g. ``"c1/L + c2*sqrt(D/(L*M))"``.
        positive: other parameter names to constrain positive like the c-constants (the
            registry's companion laws name theirs a, b, c).
    Returns:
        An :class:`Expression`.
    Raises:
        ExpressionError: for a syntax error, a construct outside the whitelist, an unknown
            function, a law with no parameter or none of L, M, D, P, or one too long.
    """
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("empty scaling-law expression; write e.g. 'c1/L + c2*sqrt(D/(L*M))'")
    text = " ".join(text.split())
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"scaling-law expression is {len(text)} characters long; at most {MAX_LENGTH} allowed")
    bad = _ALPHABET.match(text).end()
    if bad < len(text):
        raise ExpressionError(f"character {text[bad]!r} at column {bad + 1} is not part of a law; {_ALLOWED_HINT}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        where = f" at column {exc.offset}" if exc.offset else ""
        raise ExpressionError(f"cannot parse expression {text!r}: {exc.msg}{where}") from None
    names: set[str] = set()
    variables: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            literal = ast.get_source_segment(text, node) or ""
            if not _DECIMAL.fullmatch(literal):
                raise ExpressionError(f"number {literal!r} in law is not a decimal number (digits, '.', e.g. 0.5 or 1e-3)")
            try:
                finite = math.isfinite(float(node.value))
            except OverflowError:  # an int beyond a float's range (a 400-digit integer)
                finite = False
            if not finite:
                shown = literal if len(literal) <= 24 else f"{literal[:12]}...{literal[-4:]} ({len(literal)} characters)"
                raise ExpressionError(f"number {shown} in law does not fit a float (at most about 1.8e308)")
    compiled = _compile(tree.body, text, names, variables)
    if not names:
        raise ExpressionError(f"expression {text!r} has no parameter to fit; name constants c1, c2, ... or exponents a, b")
    if not variables:
        raise ExpressionError(f"expression {text!r} uses none of L, M, D, P")
    if len(names) > MAX_PARAMETERS:
        raise ExpressionError(f"expression {text!r} has {len(names)} parameters; at most {MAX_PARAMETERS} can be fitted")
    parameters = tuple(sorted(names, key=_natural_key))
    positive = frozenset(n for n in parameters if POSITIVE.match(n) or n in positive)
    parameters = tuple(sorted(parameters, key=lambda n: (n not in positive, _natural_key(n))))
    return Expression(text, parameters, positive, frozenset(variables), compiled)


def _compile(node: ast.AST, text: str, names: set[str], variables: set[str]) -> _Node:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"unsupported constant {node.value!r} in {text!r}; {_ALLOWED_HINT}")
        value = float(node.value)  # finite: parse_expression checked every literal
        return lambda env: value
    if isinstance(node, ast.Name):
        name = node.id
        if name in FUNCTIONS:
            raise ExpressionError(f"function {name!r} used without parentheses in {text!r}")
        if name in NAMED_NUMBERS:
            value = NAMED_NUMBERS[name]
            return lambda env: value
        if name in VARIABLES:
            variables.add(name)
        elif name.upper() in VARIABLES:
            raise ExpressionError(f"unknown name {name!r} in law; did you mean {name.upper()}? (variables: "
                                  f"{', '.join(VARIABLES)}; constants c1, c2, ...; other names are free exponents)")
        elif _PARAMETER.match(name):
            names.add(name)
        else:
            raise ExpressionError(f"bad parameter name {name!r} in {text!r}; use letters and digits, e.g. c1, a, beta")
        return lambda env: env[name]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        op = _BINARY[type(node.op)]
        left = _compile(node.left, text, names, variables)
        right = _compile(node.right, text, names, variables)
        return lambda env: op(left(env), right(env))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _compile(node.operand, text, names, variables)
        if isinstance(node.op, ast.USub):
            return lambda env: np.negative(inner(env))
        return inner
    if isinstance(node, ast.Call):
        func = node.func.id if isinstance(node.func, ast.Name) else None
        if func not in FUNCTIONS:
            shown = func or ast.unparse(node.func)
            raise ExpressionError(f"unknown function {shown!r} in {text!r}; expected one of: {', '.join(FUNCTIONS)}")
        if node.keywords or len(node.args) != 1:
            raise ExpressionError(f"function {func!r} takes exactly one argument in {text!r}")
        fn = FUNCTIONS[func]
        arg = _compile(node.args[0], text, names, variables)
        return lambda env: fn(arg(env))
    what = type(node.op).__name__ if isinstance(node, (ast.BinOp, ast.UnaryOp)) else type(node).__name__
    raise ExpressionError(f"unsupported syntax {what!r} in {text!r}; {_ALLOWED_HINT}")


def constant_terms(expr: Expression, fixed: set[str] | frozenset[str]) -> tuple[str | None, dict[str, str]]:
    """The law without the summands a grid cannot measure.

    A summand (an operand of a sum or difference, at any depth: the terms inside
    ``sqrt(a*D/(L*M) + b/D + c/L**2)`` count) that holds parameters and whose variables are all
    in ``fixed`` (axes with a single value on the grid) is a constant on that grid: its
    parameters cannot be told from the other terms' (``c3/sqrt(D)`` on a single-D sweep,
    ``c1*L**(-a)`` on a single-L one). It is replaced by 0. A summand with no variable at all
    (an explicit floor such as ``+ c2``) is kept.

    Args:
        expr: a parsed law. fixed: variable names (of L, M, D, P) constant on the grid.
    Returns:
        (text of the reduced law, or None when nothing is dropped or nothing would remain;
        parameter -> the summand that holds it, for the dropped parameters only).
    """
    fixed = set(fixed)
    tree = ast.parse(expr.text, mode="eval")
    dropped: dict[str, str] = {}

    def info(node):
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        return names & set(VARIABLES), {n for n in names if n in expr.parameters}

    class _Drop(ast.NodeTransformer):
        def visit_BinOp(self, node):
            if isinstance(node.op, (ast.Add, ast.Sub)):
                for side in ("left", "right"):
                    child = getattr(node, side)
                    if isinstance(child, ast.BinOp) and isinstance(child.op, (ast.Add, ast.Sub)):
                        continue  # a nested sum: its operands are visited on their own
                    variables, params = info(child)
                    if params and variables and variables <= fixed:
                        for p in params:
                            dropped[p] = ast.unparse(child)
                        setattr(node, side, ast.Constant(0.0))
            self.generic_visit(node)
            return node

    reduced = _Drop().visit(tree)
    if not dropped:
        return None, {}
    # A parameter that also appears in a kept term is still fitted there.
    kept = {n.id for n in ast.walk(reduced) if isinstance(n, ast.Name)}
    dropped = {p: t for p, t in dropped.items() if p not in kept}
    text = ast.unparse(reduced)
    remaining = {n.id for n in ast.walk(reduced) if isinstance(n, ast.Name)}
    if not remaining & set(expr.parameters) or not remaining & set(VARIABLES):
        return None, dropped
    return text, dropped
