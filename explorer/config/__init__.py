"""What a sweep is before it runs: the spec file and its overrides, the input bounds, the plan of
trials and references, the environment settings, and the one cost and memory model."""

__all__: list[str] = []
