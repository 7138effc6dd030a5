"""The coordinate check (muP practice; docs/model.md section 4): per step k, how much each block's
output has moved since step 0 and how large its residual branch's output is, averaged over the
blocks of each quarter of depth.

For the blocks l = 1..L, with h_l the block outputs (``Forward.hidden[l]``) and the RMS taken over
samples and coordinates:

    update_l(k) = RMS of h_l(k) - h_l(0)
    branch_l(k) = RMS of h_l(k) - h_{l-1}(k) = c * sum_j v_j sigma(p_j)   (block l's branch output)

Depth bin b of COORD_BINS holds the blocks l with COORD_BINS (l - 1) // L = b (L / 4 blocks each
when 4 divides L); its column is the mean of update_l (``coord_update_b<b>``) or branch_l
(``coord_branch_b<b>``) over those blocks. With L < COORD_BINS some bins hold no block: their
columns are null. The differences are taken in float64 (a float32 trial's states are exact there),
so a small update is not lost to the rounding of h; through the layers in blocks of about
METRICS_BLOCK elements, in buffers kept from step to step (the whole depth at once in fresh
temporaries cost twice as much at L = 1024, M = 4 in float32: docs/benchmarks.md).
"""
from __future__ import annotations

import math

import torch

from .config import METRICS_BLOCK
from .model import Forward

COORD_BINS = 4  # store/schema.py declares as many columns of each kind (a test checks it)
COORD_KINDS = ("update", "branch")
COORD_COLUMNS = tuple(f"coord_{kind}_b{b}" for kind in COORD_KINDS for b in range(COORD_BINS))
F64 = torch.float64


def depth_bins(L: int) -> list[list[int]]:
    """The blocks of each depth bin, as 0-based layer indices l - 1: bin b holds COORD_BINS i // L = b."""
    bins: list[list[int]] = [[] for _ in range(COORD_BINS)]
    for i in range(L):
        bins[COORD_BINS * i // L].append(i)
    return bins


class CoordCheck:
    """The coordinate check of one trial: made from its step-0 forward pass (whose block outputs
    it keeps, in float64), then called with each step's pass."""

    def __init__(self, fwd: Forward):
        hidden = fwd.hidden
        L, R, N, D = hidden[1:].shape
        self.h0 = hidden[1:].to(F64, copy=True)  # (L, R, N, D): h_l(0)
        self.bins = depth_bins(L)
        # (COORD_BINS, L): the mean over each bin's blocks, of the per-block RMS, as one product
        weights = torch.zeros(COORD_BINS, L, dtype=F64)
        for b, blocks in enumerate(self.bins):
            for i in blocks:
                weights[b, i] = 1.0 / len(blocks)
        self.weights = weights.to(hidden.device)
        self.rms_scale = 1.0 / math.sqrt(N * D)
        layers = max(1, METRICS_BLOCK // (R * N * D))
        self.blocks = [(lo, min(lo + layers, L)) for lo in range(0, L, layers)]
        shape = (min(layers, L), R, N, D)
        make = lambda: torch.empty(shape, dtype=F64, device=hidden.device)
        self._current = None if hidden.dtype == F64 else make()  # h_l(k) in float64, a block at a time
        self._difference = make()
        self._norms = torch.empty((2, L, R), dtype=F64, device=hidden.device)

    @property
    def empty(self) -> list[bool]:
        """Per bin, whether it holds no block (its columns are null)."""
        return [not blocks for blocks in self.bins]

    def __call__(self, fwd: Forward) -> torch.Tensor:
        """(len(COORD_COLUMNS), R) float64: the update bins, then the branch bins (COORD_COLUMNS' order);
        0 in an empty bin."""
        hidden, (update, branch) = fwd.hidden, self._norms
        for lo, hi in self.blocks:
            current = hidden[lo + 1:hi + 1]
            if self._current is not None:  # float32 states, exact in float64: no rounding in the differences
                current = self._current[: hi - lo].copy_(current)
            difference = torch.sub(current, self.h0[lo:hi], out=self._difference[: hi - lo])
            torch.linalg.vector_norm(difference, dim=(2, 3), out=update[lo:hi])
            torch.sub(current, hidden[lo:hi], out=difference)  # h_l - h_{l-1}: the branch's output
            torch.linalg.vector_norm(difference, dim=(2, 3), out=branch[lo:hi])
        return torch.cat([self.weights @ update, self.weights @ branch]).mul_(self.rms_scale)
