"""The ``explorer`` command line: thin commands, each parsing its options, making one call of
``explorer.api`` (its Python twin) and printing what it returns. The only package that imports
click.

- ``group``: the ``explorer`` group, ``main``: errors, signals and the store's warnings as one line;
- ``options``: the options several commands share (how a command ends on SIGINT or SIGTERM is
  ``explorer.signals``');
- the commands, a module per group: ``store`` (ls, check, compact, rm, sql), ``sweep`` (sweep,
  status, demo), ``session`` (ray start, stop, status), ``analysis`` (fit, phase, report), ``compare``,
  ``hyper`` (optimum, transfer, coordcheck), ``design``, ``watch``, ``reproduce``;
- ``reference``: docs/cli.md, generated from the commands' help (``cli_reference``).

``explorer.cli:main`` is the console script; ``python -m explorer.cli`` runs it too.
"""
import importlib

from . import analysis, compare, design, hyper, reproduce, session, store, sweep, watch
from .group import main

for _command in (store.ls_command, store.check_command, store.compact_command, store.rm_command, store.sql_command,
                 sweep.sweep_command, sweep.status_command, sweep.demo_command, session.ray_command,
                 analysis.fit_command, analysis.phase_command, analysis.report_command,
                 compare.compare_command, hyper.optimum_command, hyper.transfer_command, hyper.coordcheck_command,
                 design.design_command, watch.watch_command,
                 reproduce.reproduce_command):
    main.add_command(_command)
del _command

__all__ = ["cli_reference", "main"]


def __getattr__(name):
    if name == "cli_reference":  # imported on use: `python -m explorer.cli.reference` runs that module itself
        return importlib.import_module(".reference", __name__).cli_reference
    raise AttributeError(f"module 'explorer.cli' has no attribute {name!r}")
