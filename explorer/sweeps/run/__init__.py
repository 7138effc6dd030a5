"""The driver's run of a grid sweep: a spec run from a path (``launch``: ``sweep``), the Tune
driver that puts the steps in order (``runner``: ``run_sweep``, and ``TuneRunner`` for an adaptive
round), the trial phase (``trial_phase``) and its glue to Tune's loop (``tune_glue``), the dry run
(``dry_run``) and the counts by status (``status``: ``explorer status``).

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "sweep": "launch",
    "run_sweep": "runner",
    "TuneRunner": "runner",
    "sweep_dry_run_lines": "dry_run",
    "SweepStatus": "status",
    "every_sweep_status_lines": "status",
    "sweep_status": "status",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
