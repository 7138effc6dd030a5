"""The twin of ``explorer design`` (``explorer.cli.design``): a sweep designed from a pilot
(``explorer.experiment_design``)."""
from __future__ import annotations

import os

from store import Store


def design(sweep: str, targets, store: Store | str | os.PathLike = "results", **options):
    """The cheapest sweep predicted to measure each target exponent, from the pilot ``sweep``
    (``explorer.experiment_design.designer.design``: its arguments, its ``DesignResult``); for the
    transfer law's gamma or delta (``["delta=0.15"]``), the problem draws that reach them
    (``explorer.experiment_design.transfer_design``: out, name, force; a ``TransferDesign``)."""
    from ..experiment_design.transfer_design import design_transfer, wants_transfer

    if wants_transfer(targets):
        return design_transfer(sweep, targets, store, **{k: v for k, v in options.items()
                                                         if k in ("out", "name", "force") and v is not None})
    from ..experiment_design.designer import design as designed

    return designed(sweep, targets, store=store, **options)


__all__ = ["design"]
