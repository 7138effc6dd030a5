"""The Python twin of every command: ``explorer X`` on the command line is ``explorer.api.X`` in a
notebook or a script, with the same arguments and errors (the CLI parses, calls one of these,
prints what it returns).

    import explorer
    result = explorer.sweep("examples/quick.toml", store="results")   # embedded Ray
    result = explorer.sweep(spec, store="s3://bucket/prefix", address="auto")  # join a cluster
    explorer.sweep_status("examples/quick.toml", store="results").counts
    explorer.api.ls("results").lines(); explorer.api.sql("SELECT count(*) FROM trials", "results")

A module per command group, as ``explorer.cli`` has; each twin parses nothing, calls its wing and
returns what the wing returns (its result's ``lines()`` are what the command prints):

| command | twin | module |
| --- | --- | --- |
| sweep (--adaptive, --dry-run) | ``sweep``, ``adaptive_sweep``, ``dry_run`` | ``sweep`` |
| status | ``sweep_status``; with no spec nor sweep ``every_sweep_status_lines`` | ``sweep`` |
| demo | ``demo`` | ``sweep`` |
| ray start, stop, status | ``ray_start``, ``ray_stop``, ``ray_status`` | ``session`` |
| ls, check, compact, rm, sql | ``ls``, ``check``, ``compact``, ``rm``, ``sql`` | ``store`` |
| fit, phase, report | ``fit``, ``phase``, ``report`` | ``analysis`` |
| compare, design | ``compare``, ``design`` | ``compare``, ``design`` |
| optimum, transfer, coordcheck | ``optimum``, ``transfer``, ``coordcheck`` | ``hyper`` |
| watch | ``watch`` (one refresh: ``explorer.watch.Watcher``) | ``watch`` |
| reproduce (--list, --dry-run) | ``reproduce``, ``reproduce_list``, ``reproduce_dry_run`` | ``reproduce`` |

Commands that print as they go (check, compact, phase, demo) take ``echo`` (``echo.Echo``), which
receives each line when it is ready; the others return what the command prints (``lines()``). A
script that already called ``ray.init`` (or joined a cluster) keeps its Ray: ``sweep`` uses it and
leaves it running. Ray is imported only when a sweep actually has trials to run. Errors are the
wings' (``explorer.errors``); the CLI words some in its flags (``explorer.cli.flag_words``).

The twins are imported here at once (not on first use, as a wing's face does): a command imports
this package while a signal still ends it cleanly (``begin_work``), and with it the store.
"""
from .analysis import fit, phase, report
from .compare import compare
from .design import design
from .echo import Echo
from .hyper import coordcheck, optimum, transfer
from .reproduce import Reproduction, reproduce, reproduce_dry_run, reproduce_list
from .session import ray_start, ray_status, ray_stop
from .store import SweepListing, check, compact, ls, rm, sql
from .sweep import SweepStatus, adaptive_sweep, demo, dry_run, every_sweep_status_lines, sweep, sweep_status
from .watch import watch
from ..report.stored_sweep import SweepFit

__all__ = [
    "Echo", "Reproduction", "SweepFit", "SweepListing", "SweepStatus",
    "sweep", "adaptive_sweep", "dry_run", "sweep_status", "every_sweep_status_lines", "demo",
    "ray_start", "ray_stop", "ray_status",
    "ls", "check", "compact", "rm", "sql",
    "fit", "phase", "report", "compare", "design",
    "optimum", "transfer", "coordcheck",
    "watch",
    "reproduce", "reproduce_list", "reproduce_dry_run",
]
