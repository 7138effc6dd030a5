"""Reading results and fitting laws, in wings: ``data`` (the store's views as per-point tables, the
fit metrics), ``laws`` (the law grammar and the registry, each law's fitting method), ``fitting``
(the one dispatch ``fit_sweep``, the fits, their results and diagnostics), ``decomposed`` (the
law fitted term by term from the seeds' Gram rows), ``compare`` (two sweeps and their paired
difference); beside them ``shapes`` (shape advice and the compute frontier) and ``phase`` (the
phase diagram). Each wing is imported through its face, its ``__init__``. No Ray, no charts."""

__all__: list[str] = []
