"""Seeds that take another path in one of two paired sweeps (numpy only).

Pairing two sweeps cancels the noise they share: a seed index draws the same units in both, so
where one knob changes a little, each seed's error changes by about the same factor as its
point's other seeds'. A seed whose error changes by a much larger (or smaller) factor than
theirs has left the other sweep's path: its noise is not shared and the paired interval keeps
all of it. Measured on real sweeps (docs/analysis.md, "Comparing two sweeps"): a learning rate
of 1.0 against 0.8 does this to a few small networks (L M of 128 to 512) of one problem draw
in eight, the draw whose data put lr 1.0 at the edge of stability (trained longer, most of its
seeds' losses rise at some step); elsewhere a seed's factor stays within 1.7x of its point's.

``departing_seeds`` finds them: per shared (draw, point), the log ratio of each seed's squared
error in B to A (the Gram diagonal), less the median over the point's seeds; a seed departs
when that exceeds log ``DEPARTURE_FACTOR`` either way. It needs 3 seeds (with 2 the median is
their mean, and neither can be told from the other).
"""
from __future__ import annotations

import math

import numpy as np

from ...formatting import fmt
from ..data import DRAW_COLUMN, plain_value

DEPARTURE_FACTOR = 3.0  # a seed's B/A squared-error ratio this far from its point's median ratio


def departing_seeds(frame_a, frame_b) -> list[dict]:
    """The seeds whose squared error changes from A to B by more than ``DEPARTURE_FACTOR`` times
    (or less than 1 / it) their point's median change.

    Args:
        frame_a, frame_b: paired ``seed_grams`` frames (``pairing.pair_frames``:
            same rows, same seeds per row, in the same order).
    Returns:
        One dict per departing seed, largest departure first: draw, L, M, D, seed and
        ``factor``, the seed's A/B ratio of squared errors over the point's median A/B ratio.
    """
    found = []
    for i in range(len(frame_a)):
        gram_a, gram_b = np.asarray(frame_a["gram"].iloc[i], float), np.asarray(frame_b["gram"].iloc[i], float)
        if gram_a.shape[0] < 3:
            continue
        with np.errstate(all="ignore"):
            change = np.log(np.diag(gram_b) / np.diag(gram_a))
        if not np.all(np.isfinite(change)):
            continue
        departure = change - np.median(change)
        for k in np.flatnonzero(np.abs(departure) > math.log(DEPARTURE_FACTOR)):
            row = frame_a.iloc[i]
            found.append({"draw": plain_value(row[DRAW_COLUMN]) if DRAW_COLUMN in frame_a else None,
                          "L": float(row["L"]), "M": float(row["M"]), "D": float(row["D"]), "seed": list(row["seeds"])[k],
                          "factor": float(np.exp(-departure[k]))})
    return sorted(found, key=lambda d: -abs(math.log(d["factor"])))


def departure_warning(departing: list[dict], shown: int = 4) -> list[str]:
    """One warning line naming the departing seeds (``departing_seeds``), or none."""
    if not departing:
        return []
    where = "; ".join(f"{DRAW_COLUMN} {d['draw']} L={fmt(d['L'], 'g')} M={fmt(d['M'], 'g')} D={fmt(d['D'], 'g')} "
                      f"seed {d['seed']} (A/B {fmt(d['factor'], '.2g')}x its point's)" for d in departing[:shown])
    more = f"; ... ({len(departing)} in all)" if len(departing) > shown else ""
    draws = sorted({str(d["draw"]) for d in departing})
    return [f"{len(departing)} seed(s) took different paths in A and B: each one's squared error changes from A to B "
            f"{fmt(DEPARTURE_FACTOR, 'g')}x more (or less) than its point's other seeds' ({where}{more}). "
            f"Their noise is not shared, so the pairing cannot cancel it ({DRAW_COLUMN} {', '.join(draws)}); a "
            "learning rate near the edge of stability of a draw's training does this"]


__all__ = ["DEPARTURE_FACTOR", "departing_seeds", "departure_warning"]
