"""Whether a fit measured each of its parameters: the one rule every fitter's ``FitResult`` goes
through (``judge``, applied by ``result.fit_warnings``), and the law stated with its measured
terms alone (``measured_law``).

A fitted parameter is **not measured** when any of these holds (docs/analysis.md, "What is
printed"):

- it sits at the fit's search bound (``solver``: +-``FREE_BOUND`` for an exponent, exp(+-
  ``LOG_BOUND``) for a positive constant), its estimate or an end of its interval: the grid does
  not hold it, and an interval cut at the bound has no known width;
- its 95% interval has width zero (every resample gave the same value);
- its 95% interval spans more than a factor ``CONSTANT_FACTOR`` (a positive constant) or is
  wider than ``EXPONENT_WIDTH`` (any other parameter: an exponent);
- the fit's Jacobian leaves it unidentified: the law does not change with it, or one
  combination of it and other parameters fits equally well.

Its estimate and interval are then no result: ``FitResult.table``, the fit's rows in the store,
``explorer fit`` and the report show "not measured" with the reason instead. A parameter the
grid cannot reach at all (a D term on a single-D sweep) was never fitted (``FitResult.unidentified``).
"""
from __future__ import annotations

import ast
import math

import numpy as np

from ...formatting import fmt
from .solver import FREE_BOUND, LOG_BOUND

CONSTANT_FACTOR = 10.0  # a positive constant whose 95% interval spans more than this factor is not measured
EXPONENT_WIDTH = 1.0  # an exponent whose 95% interval is wider than this is not measured
ZERO_WIDTH = 1e-9  # an interval narrower than this (relative to the estimate) has width zero
BOUND_SLACK = 1e-6  # this close to a search bound (in the fit's parametrization) is at it
RANK_TOLERANCE = 1e-6  # a singular value below this share of the largest: the Jacobian is rank deficient
NULL_SHARE = 0.2  # parameters with at least this weight in the null direction are the ones not determined
NOT_MEASURED = "not measured"


def at_search_bound(value: float, positive: bool) -> bool:
    """Whether ``value`` sits at the fit's search bound (``solver.Problem.bounds``)."""
    if not np.isfinite(value) or positive and value <= 0:
        return False
    if positive:
        return abs(math.log(value)) > LOG_BOUND - BOUND_SLACK
    return abs(abs(value) - FREE_BOUND) < BOUND_SLACK


def zero_width(est: float, lo: float, hi: float) -> bool:
    """Whether the interval [lo, hi] has width zero relative to the estimate."""
    return hi - lo <= ZERO_WIDTH * max(abs(est), 1e-300)


def interval_reason(est: float, lo: float, hi: float, positive: bool, width: bool = True) -> str | None:
    """Why a fitted parameter's estimate and 95% interval do not measure it, or None (the rule of
    the module docstring without the Jacobian; ``width`` False leaves out the test of the
    interval's width, which an adaptive target sets itself). No interval (no resamples) is no
    reason: the estimate is then stated without one."""
    where = "its estimate" if at_search_bound(est, positive) else None
    if where is None and np.isfinite(lo) and np.isfinite(hi):
        where = next((f"its interval's {end} end" for end, v in (("lower", lo), ("upper", hi))
                      if at_search_bound(v, positive)), None)
    if where is not None:
        bound = f"exp(+-{LOG_BOUND:g})" if positive else f"+-{FREE_BOUND:g}"
        return f"{NOT_MEASURED}: {where} sits at the fit's search bound ({bound}): the grid does not determine it"
    if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(est)):
        return None
    if zero_width(est, lo, hi):
        return (f"{NOT_MEASURED}: its 95% interval has width zero (every resample gave the same value: a parameter "
                "at its bound or fixed by the law's form)")
    if not width:
        return None
    if positive and not hi <= CONSTANT_FACTOR * lo:
        factor = f"a factor {fmt(hi / lo, '.2g')}" if lo > 0 else "down to zero"
        return (f"{NOT_MEASURED}: its 95% interval spans {factor} (a measured constant's spans at most a factor "
                f"{fmt(CONSTANT_FACTOR, 'g')})")
    if not positive and hi - lo > EXPONENT_WIDTH:
        return (f"{NOT_MEASURED}: its 95% interval is {fmt(hi - lo, '.2g')} wide (a measured exponent's is at most "
                f"{fmt(EXPONENT_WIDTH, 'g')})")
    return None


def jacobian_reasons(names, jac) -> dict[str, str]:
    """Parameter -> why the Jacobian of the fit at its estimate (one column per parameter, in
    ``names``' order) leaves it undetermined: a zero column, or a weight of at least ``NULL_SHARE``
    in the direction of a (nearly) zero singular value."""
    if jac is None:
        return {}
    jac = np.asarray(jac.toarray() if hasattr(jac, "toarray") else jac, dtype=float)
    if jac.size == 0 or not np.all(np.isfinite(jac)):
        return {}
    scale = np.linalg.norm(jac, axis=0)
    if np.any(scale == 0):
        still = [n for n, s in zip(names, scale) if s == 0]
        why = f"{NOT_MEASURED}: {', '.join(still)} do{'es' if len(still) == 1 else ''} not change the fit: not determined"
        return dict.fromkeys(still, why)
    _, sv, vt = np.linalg.svd(jac / scale, full_matrices=False)
    if sv[-1] > RANK_TOLERANCE * sv[0]:
        return {}
    involved = [n for n, w in zip(names, np.abs(vt[-1])) if w > NULL_SHARE]
    why = (f"{NOT_MEASURED}: {', '.join(involved)} are not separately determined by this grid (one combination of "
           "them fits equally well)")
    return dict.fromkeys(involved, why)


def judge(result, jac=None) -> dict[str, str]:
    """Apply the rule to every fitted parameter of ``result`` (a ``FitResult``) and record why in
    ``result.unmeasured`` (added to what an earlier judgement found: a refit's new intervals keep
    its Jacobian's verdict). Returns ``result.unmeasured``."""
    law = result.law
    found = jacobian_reasons(law.parameters, jac)
    for name in law.parameters:
        if name in found or name in result.unmeasured:
            continue
        why = interval_reason(float(result.estimate[name]), float(result.ci_low[name]), float(result.ci_high[name]),
                              name in law.positive)
        if why:
            found[name] = why
    result.unmeasured.update(found)
    return result.unmeasured


# ----------------------------------------------------------------------------- the law as stated


def _drop_terms(tree: ast.AST, names: set[str]) -> ast.AST | None:
    """The expression without its summands (at any depth) that hold one of ``names``; None when
    nothing is left. A product or power holding such a name outside a sum goes whole;
    ``sqrt(t**2)`` left by a dropped sibling is ``t``."""
    def holds(node):
        return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))

    def visit(node):
        if isinstance(node, ast.BinOp):
            left, right = visit(node.left), visit(node.right)
            if isinstance(node.op, (ast.Add, ast.Sub)) and (left is None or right is None):
                if left is None and right is not None and isinstance(node.op, ast.Sub):
                    return ast.UnaryOp(ast.USub(), right)
                return right if left is None else left
            if left is None or right is None:
                return None
            return ast.BinOp(left, node.op, right)
        if isinstance(node, ast.UnaryOp):
            operand = visit(node.operand)
            return None if operand is None else ast.UnaryOp(node.op, operand)
        if isinstance(node, ast.Call) and len(node.args) == 1:
            inner = visit(node.args[0])
            if inner is None:
                return None
            square = (isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Pow) and isinstance(inner.right, ast.Constant)
                      and inner.right.value == 2)
            if getattr(node.func, "id", "") == "sqrt" and square and holds(node.args[0]):
                return inner.left
            return ast.Call(node.func, [inner], [])
        return None if holds(node) else node

    return visit(tree)


def law_text(text: str, values: dict, drop=()) -> str | None:
    """``text`` (a law) without the summands holding a parameter in ``drop``, each other parameter
    written as its value (3 significant digits); None when nothing is left."""
    kept = _drop_terms(ast.parse(text, mode="eval").body, set(drop))
    if kept is None:
        return None

    class _Values(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in values:
                shown = fmt(float(values[node.id]), ".3g")
                return ast.Name(id=f"({shown})" if shown.startswith("-") else shown, ctx=node.ctx)
            return node

    return ast.unparse(_Values().visit(kept))


def measured_law(result) -> str | None:
    """The fitted law with its measured terms alone, each measured parameter written as its
    estimate (``err ~ 0.202*sqrt(D/(L*M))`` when c1 of ``c1/L + c2*sqrt(D/(L*M))`` is not
    measured); None when no term is measured."""
    law = result.law
    dropped = set(result.unmeasured) & set(law.parameters)
    if set(law.parameters) <= dropped:
        return None
    values = {n: result.estimate[n] for n in law.parameters if n not in dropped}
    return law_text(law.text, values, dropped)


def stated_law(result) -> list[str]:
    """The lines that state a fit's law with numbers: its own surfaces (the decomposed fit's
    additive and RSS surfaces) when every fitted parameter is measured; else the law with its
    measured terms alone (``measured_law``), naming the parameters left out (their reasons are
    the fit's warnings)."""
    surfaces = list(getattr(result, "surfaces", None) or [])
    left_out = [n for n in result.law.parameters if n in result.unmeasured]
    if not left_out:
        return surfaces
    names = ", ".join(left_out)
    law = measured_law(result)
    if law is None:
        return [f"law: not stated, no term of it is measured ({names} not measured: see the warnings)"]
    return [f"law, its measured terms alone ({names} not measured: see the warnings): err ~ {law}"]


__all__ = ["CONSTANT_FACTOR", "EXPONENT_WIDTH", "NOT_MEASURED", "ZERO_WIDTH", "at_search_bound", "interval_reason",
           "jacobian_reasons", "judge", "law_text", "measured_law", "stated_law", "zero_width"]
