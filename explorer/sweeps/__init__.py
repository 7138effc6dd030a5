"""Running a sweep on Ray Tune, in wings, one folder per abstraction, each imported through its
face (its ``__init__``):

- ``run``: the driver's run of a grid sweep: a spec run from a path (``sweep``), the Tune driver
  (``run_sweep``), the trial phase and its Tune glue, the dry run, the counts by status;
- ``ray``: Ray itself: its import, reaching one (``ray_session``), the session Ray kept between
  commands and what its private folder records, the resources a trial asks of it, threads and
  runtime envs;
- ``tracking``: what the driver keeps track of: progress, leases, the run's record, results,
  failures, a store lost mid-sweep, the cleanup after a run;
- ``references``: the reference phase, the references' cache and its screen;
- ``worker``: the packing of points into Tune trials and the workers that train them;
- ``adaptive``: the adaptive loop, which imports only the faces of the wings above;

and ``interrupts``, SIGINT and SIGTERM during a run. The only part of the explorer that imports
Ray. Code outside ``explorer.sweeps`` imports the names below, each imported on first use
(``explorer.faces``, PEP 562), never a module of a wing.
"""
from ..faces import lazy_face

# name -> the module (of a wing of this package) that defines it.
_LAZY = {
    "sweep": "run.launch",
    "run_sweep": "run.runner",
    "sweep_dry_run_lines": "run.dry_run",
    "SweepStatus": "run.status",
    "every_sweep_status_lines": "run.status",
    "sweep_status": "run.status",
    "SweepResult": "tracking.results",
    "eta_seconds": "tracking.progress",
    "start_lines": "ray.session",
    "status_lines": "ray.session",
    "stop_lines": "ray.session",
    "adaptive_sweep": "adaptive.launch",
    "adaptive_dry_run_lines": "adaptive.preview",
    "AdaptiveResult": "adaptive.rounds",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
