"""Adaptive sweeps (``explorer sweep SPEC --adaptive``): the [grid] run as a candidate set, a round
at a time, until the targets' CIs are narrow enough or the budget is spent (docs/sweeps.md).

The wing's face: code outside it imports these names, never a module inside it. Each is
imported on first use (PEP 562), so that reading a spec or a dry run does not import Ray:

- ``adaptive_sweep`` (``launch``): the launch of an adaptive sweep, the twin of ``explorer sweep --adaptive``;
  ``adaptive_dry_run_lines`` (``preview``): its dry run, the candidates, budget and initial design;
- ``run_adaptive``, ``AdaptiveLoop`` (``loop``): one run of the loop; ``AdaptiveResult``,
  ``adaptive_status``, ``read_rounds`` (``rounds``): what it did, and its rounds log;
- ``TrialRunner``, ``RoundRunner`` (``runners``): the interfaces the loop's runners declare;
- ``SessionRunner`` (``session_runner``, with ``point_pool``): the runner on Ray, one session and
  one pool of workers for every round; ``PlantedRunner``, ``TermsLaw``, ``free_law``
  (``planted_runner``): a runner that writes planted laws, without Ray or torch;
- ``SweepRows`` (``row_cache``): the sweep's metric rows kept between refits.

Behind the face: ``driver`` schedules the rounds on a runner, ``stopping`` decides after each
refit what runs next or why the loop stops, ``trial_reads`` keeps the trials' statuses and wall
times between reads, ``selection`` chooses the points. The wing reaches the rest of
``explorer.sweeps`` only through the faces of its wings (``ray``, ``tracking``, ``references``,
``worker``; ``tests/explorer/sweeps/test_sweeps_layout.py``).
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "adaptive_sweep": "launch",
    "adaptive_dry_run_lines": "preview",
    "run_adaptive": "loop",
    "AdaptiveLoop": "loop",
    "FIT_SEED": "loop",
    "INITIAL_SHARE": "selection",
    "AdaptiveResult": "rounds",
    "adaptive_status": "rounds",
    "read_rounds": "rounds",
    "TrialRunner": "runners",
    "RoundRunner": "runners",
    "SessionRunner": "session_runner",
    "PlantedRunner": "planted_runner",
    "TermsLaw": "planted_runner",
    "free_law": "planted_runner",
    "SweepRows": "row_cache",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
