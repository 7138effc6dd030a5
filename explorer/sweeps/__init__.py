"""Running a sweep: the Ray Tune driver and its worker side, signals, progress, and the adaptive loop
with its selection. The only part of the explorer that imports Ray."""

__all__: list[str] = []
