"""Reading results and fitting laws: per-point data from the store, the law expressions and their
registry, the solver, fits, comparisons, phase diagrams and shape advice. No Ray, no charts."""

__all__: list[str] = []
