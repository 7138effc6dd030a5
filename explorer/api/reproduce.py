"""The twins of ``explorer reproduce`` (``--list``, ``--dry-run``; ``explorer.cli.reproduce``): the
papers' experiments run and graded (``explorer.reproduce``)."""
from __future__ import annotations

import os

from store import Store

from ..reproduce.outcome import Reproduction
from ..store_access import store_errors


def reproduce(name: str, scale: str = "laptop", store: Store | str | os.PathLike = "results", *,
              address: str | None = None, out: str | os.PathLike | None = None, force: bool = False) -> Reproduction:
    """Run (or resume) one of the papers' experiments at ``scale`` and grade its claims
    (``explorer.reproduce.run.reproduce``: its errors; the report goes to ``out``, by default
    reproduce-NAME-SCALE)."""
    from ..reproduce.outcome import reproduction

    return reproduction(name, scale, store, address=address, out=out, force=force)


def reproduce_list() -> list[str]:
    """``explorer reproduce --list``: the experiments with their trials, references and estimated
    compute per scale."""
    from ..reproduce.run import list_lines

    with store_errors():
        return list_lines()


def reproduce_dry_run(name: str, scale: str = "laptop", *, address: str | None = None,
                      out: str | os.PathLike | None = None) -> list[str]:
    """``explorer reproduce NAME --dry-run``: each sweep's trials, references and estimated memory
    and time, priced by this machine's memory and CPUs with an embedded Ray (``address`` None),
    and where the report would go."""
    from ..config.host_memory import available_memory_bytes
    from ..reproduce.run import experiment_dry_run_lines

    embedded = address is None
    return experiment_dry_run_lines(name, scale, out, available_memory_bytes() if embedded else None,
                         os.cpu_count() if embedded else None)


__all__ = ["Reproduction", "reproduce", "reproduce_dry_run", "reproduce_list"]
