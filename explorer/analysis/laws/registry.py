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
- Any law may be fitted to one term (``TERM_METHOD``, a metric of ``TERM_METRICS``), the user's
  laws to both terms together (``TERMS_METHOD``), and any law to the mean error over every run of
  a point with a bootstrap over the draws (``MEAN_OF_RUNS_METHOD``, the companion paper's pooling,
  which a reproduction asks for by name).
- ``joint``: err ~ c1/L + c2 sqrt(D/(L M)) + c3/sqrt(D). Chaintron, Chizat, Maass, "ResNets of All
  Shapes and Sizes" (arXiv:2603.18168): the large-D term of the joint limit.
- ``output``: err ~ c1/L + c2 D/(L M). The companion paper's output errors decay like D/(L M)
  rather than its square root.
- ``companion_hidden``: err^2 ~ a D/(L M) + b/D + c/L^2, and ``companion_output``:
  err^2 ~ a (D/(L M))^2 + b/D + c/L^2: the companion paper's bounds as a root sum of squares
  (hidden state, output); a, b, c are positive constants.

What the rest of the house asks a law (``Form``) instead of testing its name: whether the report
fits it (``report``) and the axes it needs varied (``needs``, ``needed_axes``), the law that adds
the same terms in quadrature (``rss_twin``: the diagnostics' warning on additive laws), whether it
gives the shape advice (``shape_advice``) and whether ``explorer compare`` fits it
(``comparable``), and the report's words for it (``report_law``, ``contrast``). What it asks a
method (``Method``): its fallback law, whether it fits the two terms on their own
(``fits_terms``), whether the law fitter fits it from RMS errors (``from_rms_errors``), and
whether an error is its data's (``missing_data``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ...errors import FitError, NoDecompositionError
from ...formatting import fmt
from ..data import ERROR_METRICS, FIT_METRICS, TERM_METRICS
from .default import DEFAULT_FORM
from .expression import Expression, constant_terms, parse_expression

RSS_FALLBACK = "free_rss"  # what the CLI suggests when the decomposed law cannot run

LAW_METHOD = "law"  # the method of a user expression and of every law that names no other

TERM_METHOD = "term"  # any law fitted to one term of the decomposition (a term metric)

TERMS_METHOD = "terms"  # the user's laws of both terms (``--form decomposed --bias EXPR --fluct EXPR``)

MEAN_OF_RUNS_METHOD = "mean_of_runs"  # any law fitted to each point's mean error over every run (a reproduction's)

# where the free exponents start (free, free_rss and the fits of one term): the theory's a, b, the
# D exponents g (tied to b) and h (none)
EXPONENT_START = {"a": 1.0, "b": 0.5, "g": 0.5, "h": 0.0}


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
    # it fits the two terms of the decomposition on their own (bias and fluctuation): its result
    # draws the terms' charts, and the user's laws of the terms (--bias, --fluct) go with its laws
    fits_terms: bool = False

    @property
    def from_rms_errors(self) -> bool:
        """Whether the law fitter fits its laws from each point's RMS error (``LAW_METHOD``): a
        fitter of another method's data refuses them."""
        return self.name == LAW_METHOD

    def missing_data(self, exc: Exception) -> bool:
        """Whether ``exc`` says this method's data is missing (no decomposition, or an error that
        names the method: one seed a point), so that its ``fallback`` would fit the sweep."""
        return isinstance(exc, NoDecompositionError) or self.name in str(exc)


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(LAW_METHOD, "explorer.analysis.data:grid_errors", "explorer.analysis.fitting:fit",
               "none: every draw's RMS over seeds, each a point", "soft-L1 on log residuals"),
        Method("decomposed", "explorer.analysis.data:seed_grams", "explorer.analysis.decomposed:fit_decomposed",
               "none: each seed's Gram rows (decomposed fit)", "the decomposed fit's (bias and fluctuation)",
               metrics=tuple(m.name for m in ERROR_METRICS.values() if m.gram), fallback=RSS_FALLBACK,
               fits_terms=True),
    )
}


# The methods a metric or an option chooses rather than a law (any law may be fitted with them;
# ``method_of(..., method=NAME)`` or ``fit_sweep(..., method=NAME)`` asks for one by name).
TERM_METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(TERM_METHOD, "explorer.analysis.data:term_grams", "explorer.analysis.decomposed:fit_term",
               "none: each seed's Gram rows, one term of the decomposition", "weighted least squares on the log term",
               metrics=tuple(TERM_METRICS)),
        Method(TERMS_METHOD, "explorer.analysis.data:seed_grams", "explorer.analysis.decomposed:fit_terms",
               "none: each seed's Gram rows (the user's law of each term)", "weighted least squares on each log term",
               metrics=tuple(m.name for m in ERROR_METRICS.values() if m.gram)),
        Method(MEAN_OF_RUNS_METHOD, "explorer.analysis.data:grid_errors", "explorer.analysis.fitting:fit_pooled",
               "each point's mean error over every run (seeds x draws); bootstrap over the draws",
               "soft-L1 on log residuals, or unweighted least squares on err (option residuals='err')"),
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
    report: int | None = None  # its place among the laws every report fits (None: fitted when asked for)
    needs: tuple[str, ...] = ()  # axes it needs varied besides the L and M it uses (joint: D, for c3/sqrt(D))
    # an additive law of the two terms: its twin adding them in quadrature, as the RMS over seeds
    # does (the diagnostics warn when the twin ranks ahead: the additive law biases a upwards)
    rss_twin: str | None = None
    shape_advice: bool = False  # the report's shape advice (the best L, M, D at a budget) reads its fit
    comparable: bool = False  # ``explorer compare`` fits it (its intervals resample the shared draws and seeds)
    # the report summary's sentence of its fit: the law with its constants ({c1}, ... filled in, markup)
    report_law: str | None = None
    # the law the report summary sets its fit against (by R^2), and how the two differ, in words
    contrast: tuple[str, str] | None = None

    @property
    def summary(self) -> str:
        """The law in a help text's words: its expression, or where it comes from when a method
        of its own fits it (the expression alone would not say how)."""
        return self.expression if self.method == LAW_METHOD else self.source


FORMS: dict[str, Form] = {
    f.name: f
    for f in (
        Form("theory", "c1/L + c2*sqrt(D/(L*M))", "Chizat 2025 (arXiv:2509.10167), 2LP-block bound", report=1,
             rss_twin="theory_rss", report_law="{c1}/L + {c2}&middot;sqrt(D/(L M))"),
        Form("free", "c1*L**(-a) + c2*(D/(L*M))**b", "theory's two terms with free exponents",
             start=dict(EXPONENT_START), theory={"a": 1.0, "b": 0.5},
             untied="c1*D**h*L**(-a) + c2*D**g*(L*M)**(-b)", report=2, rss_twin="free_rss"),
        Form("theory_rss", "sqrt((c1/L)**2 + c2**2*D/(L*M))",
             "theory's two terms as the RMS over seeds combines them (bias and fluctuation in quadrature)"),
        Form("free_rss", "sqrt((c1*L**(-a))**2 + (c2*(D/(L*M))**b)**2)",
             "free's two terms in quadrature, as the RMS over seeds combines them",
             start=dict(EXPONENT_START), theory={"a": 1.0, "b": 0.5},
             untied="sqrt((c1*D**h*L**(-a))**2 + (c2*D**g*(L*M)**(-b))**2)", report=3),
        Form("decomposed", "sqrt((c1*L**(-a))**2 + (c2*(D/(L*M))**b)**2)",
             "each term on its own: c1, a on the seeds' bias, c2, b on their fluctuation (docs/analysis.md)",
             start={"a": 1.0, "b": 0.5}, theory={"a": 1.0, "b": 0.5}, method="decomposed",
             untied="sqrt((c1*D**h*L**(-a))**2 + (c2*D**g*(L*M)**(-b))**2)", report=0, comparable=True),
        Form("joint", "c1/L + c2*sqrt(D/(L*M)) + c3/sqrt(D)",
             "Chaintron, Chizat, Maass 2026 (arXiv:2603.18168), joint limit in L, M, D", report=5, needs=("D",),
             shape_advice=True),
        Form("output", "c1/L + c2*D/(L*M)", "Chaintron, Chizat, Maass 2026: output error ~ D/(L M)", report=4,
             contrast=("theory", "D/(LM) instead of its square root")),
        Form("companion_hidden", "sqrt(a*D/(L*M) + b/D + c/L**2)",
             "Chaintron, Chizat, Maass 2026: hidden-state error^2 ~ D/(LM) + 1/D + 1/L^2", positive=("a", "b", "c")),
        Form("companion_output", "sqrt(a*(D/(L*M))**2 + b/D + c/L**2)",
             "Chaintron, Chizat, Maass 2026: output error^2 ~ (D/(LM))^2 + 1/D + 1/L^2", positive=("a", "b", "c")),
    )
}


def method_of(form: str, metric: str | None = None, terms: bool = False, method: str | None = None) -> Method:
    """The method that fits ``form``: ``method`` when one is asked for by name (a name of
    ``METHODS`` or ``TERM_METHODS``), else ``TERM_METHOD`` for any law on a term metric,
    ``TERMS_METHOD`` for user laws of both terms (``terms``), else a registry law's own,
    ``LAW_METHOD`` for an expression.

    Raises:
        FitError: ``method`` names no method.
    """
    if method is not None:
        known = {**METHODS, **TERM_METHODS}
        if method not in known:
            raise FitError(f"unknown fit method {method!r}; expected one of: {', '.join(known)}")
        return known[method]
    if metric in TERM_METRICS:
        return TERM_METHODS[TERM_METHOD]
    if terms:
        return TERM_METHODS[TERMS_METHOD]
    return METHODS[FORMS[form].method] if form in FORMS else METHODS[LAW_METHOD]


def law_forms() -> list[str]:
    """The registry laws fitted to RMS errors (``LAW_METHOD``): those ``compare_laws`` ranks."""
    return [name for name, form in FORMS.items() if form.method == LAW_METHOD]


def report_forms() -> list[str]:
    """The laws every report fits, in the report's order (``Form.report``)."""
    return sorted((name for name, form in FORMS.items() if form.report is not None), key=lambda n: FORMS[n].report)


def compared_forms() -> list[str]:
    """The laws ``explorer compare`` fits (``Form.comparable``)."""
    return [name for name, form in FORMS.items() if form.comparable]


def needed_axes(form: str) -> frozenset[str]:
    """The axes a law needs to vary to be fitted: those of L and M it uses, those its registry
    entry needs besides (``Form.needs``: D for ``joint``'s c3/sqrt(D) term), D for a law of D
    alone; one of L, M, D for a law of P alone.

    Raises:
        FitError, ExpressionError: as ``resolve_form``.
    """
    label, expr = resolve_form(form)
    used = set(expr.variables)
    needed = used & {"L", "M"}
    if label in FORMS:
        needed |= set(FORMS[label].needs)
    if not needed and "D" in used:
        needed.add("D")
    return frozenset(needed)


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


__all__ = ["DEFAULT_FORM", "EXPONENT_START", "FORMS", "LAW_METHOD", "MEAN_OF_RUNS_METHOD", "METHODS", "TERM_METHOD",
           "TERM_METHODS", "TERMS_METHOD", "RSS_FALLBACK", "Form", "Method", "compared_forms", "law_forms", "method_of",
           "needed_axes", "report_forms", "resolve_form", "unidentified_terms"]
