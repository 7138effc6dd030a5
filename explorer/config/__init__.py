"""What a sweep is before it runs: the spec's sections (``sections``), reading a spec and its
overrides (``spec``), the rules across its keys, the plan of trials and references, the environment
settings, and the one cost and memory model."""

__all__: list[str] = []
