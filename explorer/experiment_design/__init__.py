"""Designing the next sweep (``explorer design``): from a pilot sweep's decomposed fit, the
cheapest grid, seeds, problem draws and reference predicted to measure the target exponents.
``design_model`` reads the pilot, ``design_search`` predicts and searches, ``design_spec`` writes
the spec, ``designer`` is the command. It imports analysis and config, never the sweep driver."""

__all__: list[str] = []
