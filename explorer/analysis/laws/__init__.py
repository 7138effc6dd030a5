"""The law language and the law registry: what a fit, a spec or the report may ask for.

``expression`` parses and evaluates a law written over L, M, D, P (the grammar of docs/analysis.md);
``registry`` names the laws of the papers (``FORMS``), how each is fitted (``METHODS``: the data
it reads and its fitter), the form a fit uses by default, and which part of a law a grid can
measure. No scipy: a spec reads the registry without the fitting stack.

Every public name is imported on first use (PEP 562), as in ``trials`` and ``store``: code
outside this wing imports these names, never a module inside it.
"""
import importlib

# name -> the module of this wing that defines it.
_LAZY = {
    "POSITIVE": "expression",
    "Expression": "expression",
    "parse_expression": "expression",
    "DEFAULT_FORM": "registry",
    "FORMS": "registry",
    "LAW_METHOD": "registry",
    "METHODS": "registry",
    "RSS_FALLBACK": "registry",
    "Form": "registry",
    "Method": "registry",
    "law_forms": "registry",
    "method_of": "registry",
    "resolve_form": "registry",
    "unidentified_terms": "registry",
}

__all__ = sorted(_LAZY, key=lambda name: (name[0].islower(), name))


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
