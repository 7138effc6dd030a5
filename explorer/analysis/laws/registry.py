"""The law registry: the named scaling laws a fit, a spec or the report may ask for, how each is
fitted, and which part of a law a grid can measure. No scipy: a spec reads the registry without
the fitting stack.

Each law names its method (``Form.method``), and the method (``METHODS``) names the data it reads
and the function that fits it; ``explorer.analysis.fitting.fit_sweep`` is the one place that
turns them into a read and a fit. A law with a way of fitting of its own is one ``Method`` entry
here and the module that fits it (a ``Fitter`` of ``explorer.analysis.fitting``).

Laws (``FORMS``; any other text is parsed as a user expression by ``expression``):

- ``theory``: err ~ c1/L + c2 sqrt(D/(L M)). Chizat, "The Hidden Width of Deep ResNets"
  (arXiv:2509.10167), the 2LP-block bound: Euler discretization O(1/L) plus Monte-Carlo
  sampling over the L*M units O(sqrt(D/(L M))) (docs/model.md section 3).
- ``free``: err ~ c1 L^-a + c2 (D/(L M))^b. The same two terms with free exponents; theory says
  a = 1 and b = 1/2.
- ``theory_rss``, ``free_rss``: the same terms in quadrature, sqrt((c1 L^-a)^2 + (c2 (D/(LM))^b)^2):
  the RMS over seeds of a point is sqrt(bias^2 + fluct^2), so this is the form the errors are
  measured in (an additive law fitted to them biases a upwards).
- ``decomposed`` (the default of ``fit_sweep``): the free_rss law fitted term by term, c1 and a on
  each point's bias, c2 and b on its fluctuation, from the seeds' Gram rows
  (``explorer.analysis.decomposed``).
- Where a slice varies D, ``free``, ``free_rss`` and ``decomposed`` fit their ``untied`` law, an
  exponent per varied axis in each term: c1 D^h L^-a and c2 D^g (LM)^-b; the theory's tie g = b
  is tested (``explorer.analysis.fitting.tie``) and the tied law fitted beside it.
- Any law may be fitted to one term (``TERM_METHOD``, a metric of ``TERM_METRICS``), and the
  user's laws to both terms together (``TERMS_METHOD``).
- ``joint``: err ~ c1/L + c2 sqrt(D/(L M)) + c3/sqrt(D). Chaintron, Chizat, Maass, "ResNets of All
  Shapes and Sizes" (arXiv:2603.18168): the large-D term of the joint limit.
- ``output``: err ~ c1/L + c2 D/(L M). The companion paper's output errors decay like D/(L M)
  rather than its square root.
- ``companion_hidden``: err^2 ~ a D/(L M) + b/D + c/L^2, and ``companion_output``:
  err^2 ~ a (D/(L M))^2 + b/D + c/L^2: the companion paper's bounds as a root sum of squares
  (hidden state, output); a, b, c are positive constants.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ...errors import FitError
from ...formatting import fmt
from ..data import ERROR_METRICS, FIT_METRICS, TERM_METRICS
from .expression import Expression, constant_terms, parse_expression

DEFAULT_FORM = "decomposed"  # of explorer fit, the report and the adaptive loop

RSS_FALLBACK = "free_rss"  # what the CLI suggests when the decomposed law cannot run

LAW_METHOD = "law"  # the method of a user expression and of every law that names no other

TERM_METHOD = "term"  # any law fitted to one term of the decomposition (a term metric)

TERMS_METHOD = "terms"  # the user's laws of both terms (``--form decomposed --bias EXPR --fluct EXPR``)


@dataclass(frozen=True)
class Method:
    """How a law is fitted: the data it reads, the function that fits it, and what a table says of it.

    ``data`` and ``fitter`` are ``"module:name"`` of a wing's face, imported when a fit first needs
    them (``explorer.analysis.fitting.data_and_fitter``): the fitters read this registry, so it
    cannot import them, and a spec reads it without the fitting stack.
    """

    name: str
    data: str  # a SweepReader: (con, sweep, *, metric, step, where) -> the frame the fitter reads
    fitter: str  # a Fitter: (frame, form, *, n_boot, seed, where, floor, per_draw, range_check) -> FitResult
    pooling: str  # how the runs of a point become what is fitted, in words (the reproductions' table)
    loss: str  # what the fit minimises, in words
    metrics: tuple[str, ...] = FIT_METRICS  # the metrics it can fit
    fallback: str | None = None  # the law that fits the same terms from RMS errors when this one's data is missing


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(LAW_METHOD, "explorer.analysis.data:grid_errors", "explorer.analysis.fitting:fit",
               "none: every draw's RMS over seeds, each a point", "soft-L1 on log residuals"),
        Method("decomposed", "explorer.analysis.data:seed_grams", "explorer.analysis.decomposed:fit_decomposed",
               "none: each seed's Gram rows (decomposed fit)", "the decomposed fit's (bias and fluctuation)",
               metrics=tuple(m.name for m in ERROR_METRICS.values() if m.gram), fallback=RSS_FALLBACK),
    )
}


# The methods a metric or an option chooses rather than a law (any law may be fitted with them).
TERM_METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(TERM_METHOD, "explorer.analysis.data:term_grams", "explorer.analysis.decomposed:fit_term",
               "none: each seed's Gram rows, one term of the decomposition", "weighted least squares on the log term",
               metrics=tuple(TERM_METRICS)),
        Method(TERMS_METHOD, "explorer.analysis.data:seed_grams", "explorer.analysis.decomposed:fit_terms",
               "none: each seed's Gram rows (the user's law of each term)", "weighted least squares on each log term",
               metrics=tuple(m.name for m in ERROR_METRICS.values() if m.gram)),
    )
}


@dataclass(frozen=True)
class Form:
    """A named scaling law of the registry."""

    name: str
    expression: str  # parsed by the expression module of this wing
    source: str  # where the law comes from
    start: dict = field(default_factory=dict)  # first start of the free parameters
    theory: dict = field(default_factory=dict)  # exponents the theory predicts
    positive: tuple = ()  # parameters besides c1, c2, ... constrained positive
    method: str = LAW_METHOD  # the name of its ``Method`` (how it is fitted)
    # the law with an exponent per varied axis in each term, fitted where the slice varies D: the
    # theory ties the fluctuation's D and L*M exponents (g = b), which the fit then tests
    untied: str | None = None

    @property
    def summary(self) -> str:
        """The law in a help text's words: its expression, or where it comes from when a method
        of its own fits it (the expression alone would not say how)."""
        return self.expression if self.method == LAW_METHOD else self.source


FORMS: dict[str, Form] = {
    f.name: f
    for f in (
        Form("theory", "c1/L + c2*sqrt(D/(L*M))", "Chizat 2025 (arXiv:2509.10167), 2LP-block bound"),
        Form("free", "c1*L**(-a) + c2*(D/(L*M))**b", "theory's two terms with free exponents",
             start={"a": 1.0, "b": 0.5, "g": 0.5, "h": 0.0}, theory={"a": 1.0, "b": 0.5},
             untied="c1*D**h*L**(-a) + c2*D**g*(L*M)**(-b)"),
        Form("theory_rss", "sqrt((c1/L)**2 + c2**2*D/(L*M))",
             "theory's two terms as the RMS over seeds combines them (bias and fluctuation in quadrature)"),
        Form("free_rss", "sqrt((c1*L**(-a))**2 + (c2*(D/(L*M))**b)**2)",
             "free's two terms in quadrature, as the RMS over seeds combines them",
             start={"a": 1.0, "b": 0.5, "g": 0.5, "h": 0.0}, theory={"a": 1.0, "b": 0.5},
             untied="sqrt((c1*D**h*L**(-a))**2 + (c2*D**g*(L*M)**(-b))**2)"),
        Form("decomposed", "sqrt((c1*L**(-a))**2 + (c2*(D/(L*M))**b)**2)",
             "each term on its own: c1, a on the seeds' bias, c2, b on their fluctuation (docs/analysis.md)",
             start={"a": 1.0, "b": 0.5}, theory={"a": 1.0, "b": 0.5}, method="decomposed",
             untied="sqrt((c1*D**h*L**(-a))**2 + (c2*D**g*(L*M)**(-b))**2)"),
        Form("joint", "c1/L + c2*sqrt(D/(L*M)) + c3/sqrt(D)",
             "Chaintron, Chizat, Maass 2026 (arXiv:2603.18168), joint limit in L, M, D"),
        Form("output", "c1/L + c2*D/(L*M)", "Chaintron, Chizat, Maass 2026: output error ~ D/(L M)"),
        Form("companion_hidden", "sqrt(a*D/(L*M) + b/D + c/L**2)",
             "Chaintron, Chizat, Maass 2026: hidden-state error^2 ~ D/(LM) + 1/D + 1/L^2", positive=("a", "b", "c")),
        Form("companion_output", "sqrt(a*(D/(L*M))**2 + b/D + c/L**2)",
             "Chaintron, Chizat, Maass 2026: output error^2 ~ (D/(LM))^2 + 1/D + 1/L^2", positive=("a", "b", "c")),
    )
}


def method_of(form: str, metric: str | None = None, terms: bool = False) -> Method:
    """The method that fits ``form``: ``TERM_METHOD`` for any law on a term metric, ``TERMS_METHOD``
    for user laws of both terms (``terms``), else a registry law's own, ``LAW_METHOD`` for an
    expression."""
    if metric in TERM_METRICS:
        return TERM_METHODS[TERM_METHOD]
    if terms:
        return TERM_METHODS[TERMS_METHOD]
    return METHODS[FORMS[form].method] if form in FORMS else METHODS[LAW_METHOD]


def law_forms() -> list[str]:
    """The registry laws fitted to RMS errors (``LAW_METHOD``): those ``compare_laws`` ranks."""
    return [name for name, form in FORMS.items() if form.method == LAW_METHOD]


def resolve_form(form: str) -> tuple[str, Expression]:
    """A registry name or a user expression -> (label, parsed expression).

    Raises:
        FitError: an identifier that is not a registry name.
        ExpressionError: the text is neither a registry name nor a valid expression.
    """
    if form in FORMS:
        return form, parse_expression(FORMS[form].expression, FORMS[form].positive)
    if form.strip().isidentifier():
        raise FitError(f"unknown fit form {form!r}; expected one of: {', '.join(FORMS)}, or an expression over L, M, D")
    expr = parse_expression(form)
    return expr.text, expr


def _fixed_variables(grid: pd.DataFrame) -> set[str]:
    """Which of L, M, D, P hold a single value on the grid."""
    fixed = {v for v in ("L", "M", "D") if grid[v].nunique() <= 1}
    if (grid["L"] * grid["M"] * grid["D"]).nunique() <= 1:
        fixed.add("P")
    return fixed


def unidentified_terms(expr: Expression, grid: pd.DataFrame) -> tuple[Expression, dict[str, str]]:
    """The part of a law a grid can measure, and why the rest is not fitted.

    Args:
        expr: a parsed law. grid: a table with columns L, M, D (the points to fit).
    Returns:
        (the law to fit: ``expr`` itself or it without the unmeasurable summands, see
        ``expression.constant_terms``; parameter -> reason it is not fitted).
    Raises:
        FitError: no summand of the law varies on the grid.
    """
    fixed = _fixed_variables(grid)
    reduced, dropped = constant_terms(expr, fixed)
    if not dropped:
        return expr, {}

    def held(term):
        names = sorted(v for v in fixed if v in term and v != "P")
        values = ", ".join(f"{v} = {fmt(grid[v].iloc[0], 'g')}" for v in names)
        return f"its term {term} varies only with {', '.join(names)}, which this grid holds at {values}"

    reasons = {p: "not fitted: " + held(t) for p, t in dropped.items()}
    if reduced is None:
        raise FitError(f"no term of {expr.text!r} varies on this grid ({'; '.join(reasons.values())})")
    positive = tuple(n for n in expr.positive)
    return parse_expression(reduced, positive), reasons


__all__ = ["DEFAULT_FORM", "FORMS", "LAW_METHOD", "METHODS", "TERM_METHOD", "TERM_METHODS", "TERMS_METHOD", "RSS_FALLBACK", "Form", "Method", "law_forms", "method_of",
           "resolve_form", "unidentified_terms"]
