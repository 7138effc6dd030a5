"""What ``explorer reproduce NAME`` did (its twin ``explorer.api.reproduce``): the experiment run
or resumed (``run.reproduce``), its claims graded, and the report folder; ``lines``, what the
command prints."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..store_access import store_errors

if TYPE_CHECKING:
    import pandas as pd

    from store import Store


@dataclass
class Reproduction:
    """What ``reproduce`` did: the claims table, graded, and the report folder."""

    exit_code: int  # 0, or 1 when some trial failed
    claims: pd.DataFrame
    folder: Path

    def lines(self) -> list[str]:
        from .run import markdown_table

        return markdown_table(self.claims).splitlines() + [f"report: {self.folder.resolve() / 'index.html'}"]


def reproduction(name: str, scale: str = "laptop", store: Store | str | os.PathLike = "results", *,
                 address: str | None = None, out: str | os.PathLike | None = None, force: bool = False) -> Reproduction:
    """Run (or resume) one of the papers' experiments and grade its claims (``run.reproduce``:
    its arguments and errors)."""
    from .run import reproduce as run_experiment

    with store_errors():
        code, claims, folder = run_experiment(name, scale, store=store, address=address, out=out, force=force)
    return Reproduction(exit_code=code, claims=claims, folder=folder)


__all__ = ["Reproduction", "reproduction"]
