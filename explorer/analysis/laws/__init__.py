"""The law language and the law registry: what a fit, a spec or the report may ask for.

``expression`` parses and evaluates a law written over L, M, D, P (the grammar of docs/analysis.md);
``registry`` names the laws of the papers (``FORMS``), how each is fitted (``METHODS``: the data
it reads and its fitter), what the report, the diagnostics and ``explorer compare`` ask of a law
(its ``Form`` fields), and which part of a law a grid can measure; ``default`` names the form a
fit uses by default (``DEFAULT_FORM``, importable without the rest). No scipy: a spec reads the registry without the fitting stack.

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "POSITIVE": "expression",
    "Expression": "expression",
    "parse_expression": "expression",
    "DEFAULT_FORM": "default",
    "EXPONENT_START": "registry",
    "FORMS": "registry",
    "LAW_METHOD": "registry",
    "MEAN_OF_RUNS_METHOD": "registry",
    "METHODS": "registry",
    "RSS_FALLBACK": "registry",
    "TERM_METHOD": "registry",
    "TERMS_METHOD": "registry",
    "TERM_METHODS": "registry",
    "Form": "registry",
    "Method": "registry",
    "compared_forms": "registry",
    "law_forms": "registry",
    "method_of": "registry",
    "needed_axes": "registry",
    "report_forms": "registry",
    "resolve_form": "registry",
    "unidentified_terms": "registry",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
