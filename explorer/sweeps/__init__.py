"""Running a sweep: the Ray Tune driver and its worker side, a spec run from a path (``launch``),
signals, progress, the dry run; the adaptive loop is its own wing (``adaptive``, imported through
its face). The only part of the explorer that imports Ray."""

__all__: list[str] = []
