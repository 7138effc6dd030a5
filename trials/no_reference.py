"""The ``none`` reference kind: no reference at all, for a study that reads the loss alone (the
optimum of a learning rate, its transfer across width or depth).

Nothing is computed and nothing is stored. A trial is still trained by ``train_trial`` against a
``Reference``: an empty one, whose outputs and hidden states are NaN and whose ``meta`` says it
measures no error (``MEASURES_ERROR``), so that the trial's rows carry null errors
(``err_out``, ``err_hidden``, their Gram rows and the reference's own columns), never a number.
Its arrays are shaped by the trial (steps, samples, outputs, width D): ``NoReferenceConfig.key``
hashes exactly those, so that one empty reference serves every trial of that shape.

This module imports no torch (nor numpy until a reference is made): a spec of this kind is read,
planned and priced without them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .config import TrialConfig, stable_hash

if TYPE_CHECKING:
    from .reference import Reference

NO_REFERENCE_KIND = "none"
MEASURES_ERROR = "measures_error"  # a reference's meta key: False for the empty reference
# the metric columns a trial measures against its reference: null when it has none
REFERENCE_COLUMNS = ("err_out", "err_hidden", "gram_out", "gram_hidden", "ref_loss", "ref_err_out", "ref_err_hidden")


@dataclass(frozen=True)
class NoReferenceConfig:
    """The empty reference of the trials shaped like ``limit`` (its steps, samples, outputs, D)."""

    limit: TrialConfig  # any trial of the group

    def shape(self) -> tuple[int, int, int, int]:
        """(steps + 1, samples, d_out, D): the shape of the empty arrays."""
        t = self.limit
        return t.steps + 1, t.problem.samples, t.problem.d_out, t.D

    def key(self) -> str:
        steps, samples, d_out, width = self.shape()
        return stable_hash({"kind": NO_REFERENCE_KIND, "steps": steps, "samples": samples, "d_out": d_out, "D": width})


def empty_reference(config: NoReferenceConfig) -> "Reference":
    """The empty reference: NaN outputs, hidden states, loss and errors, measuring nothing."""
    import numpy as np  # not at import: a spec error must import nothing heavy

    from .reference import Reference  # imports torch: only a worker that trains pays for it

    K1, N, d_out, D = config.shape()
    nan = np.full(K1, np.nan)
    arrays = {"out": np.full((K1, N, d_out), np.nan), "hidden": np.full((K1, N, D), np.nan), "loss": nan,
              "err_out": nan, "err_hidden": nan}
    return Reference(config.key(), NO_REFERENCE_KIND, arrays, {MEASURES_ERROR: False})
