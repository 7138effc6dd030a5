"""The law the house fits when none is named: ``explorer fit``, the report, the adaptive loop,
``explorer compare``, a design's pilot and the reproductions' rate claims. No imports: the
command line reads it for its ``--form`` default without the analysis stack."""

DEFAULT_FORM = "decomposed"  # a name of ``registry.FORMS``

__all__ = ["DEFAULT_FORM"]
