"""explorer compare's check for seeds that took different paths in the two sweeps
(``explorer.analysis.compare``), on planted pairs that share every random draw."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.analysis.compare import DEPARTURE_FACTOR, departing_seeds, departure_warning, pair_frames
from explorer.analysis.decomposed import REGIMES

from tests.explorer.compare_data import planted_pair


def scaled_seed(gram, seed_index: int, factor: float) -> np.ndarray:
    """The Gram matrix of the same errors with one seed's error vector multiplied by ``factor``."""
    scale = np.ones(len(gram))
    scale[seed_index] = factor
    return np.asarray(gram) * np.outer(scale, scale)


def test_a_pair_sharing_its_noise_has_no_departing_seed():
    a, b = planted_pair(REGIMES["rates"], np.random.default_rng(11))
    paired = pair_frames(a, b)
    assert departing_seeds(paired.a, paired.b) == []
    assert departure_warning([]) == []


def test_a_seed_whose_error_moves_alone_is_named_with_its_factor():
    a, b = planted_pair(REGIMES["rates"], np.random.default_rng(12))
    paired = pair_frames(a, b)
    row = int(np.flatnonzero((paired.b["problem_seed"] == 2) & (paired.b["L"] == 16))[0])
    grams = list(paired.b["gram"])
    grams[row] = scaled_seed(grams[row], 1, 2.0)  # seed index 1's squared error 4x in B only
    paired.b["gram"] = grams
    found = departing_seeds(paired.a, paired.b)
    assert len(found) == 1
    hit = found[0]
    assert (hit["draw"], hit["L"], hit["M"], hit["seed"]) == (2, 16.0, float(paired.b["M"][row]),
                                                              paired.b["seeds"][row][1])
    # independently: the seed's A/B ratio of squared errors over the median of the point's ratios
    # (the median of four is the mean of the middle two, taken in log)
    ratio = np.sort(np.diag(paired.a["gram"][row]) / np.diag(grams[row]))
    assert hit["factor"] == pytest.approx(ratio[0] / np.sqrt(ratio[1] * ratio[2]), rel=1e-12)
    assert hit["factor"] < 1 / DEPARTURE_FACTOR
    line = departure_warning(found)[0]
    assert "1 seed(s) took different paths in A and B" in line and "problem_seed 2 L=16" in line


def test_a_moderate_change_and_two_seed_points_are_not_named():
    a, b = planted_pair(REGIMES["rates"], np.random.default_rng(13))
    paired = pair_frames(a, b)
    paired.b["gram"] = [scaled_seed(g, 0, 1.5) for g in paired.b["gram"]]  # 2.25x: within the factor
    assert departing_seeds(paired.a, paired.b) == []
    two_a, two_b = paired.a.copy(), paired.b.copy()
    two_a["gram"] = [np.asarray(g)[:2, :2] for g in two_a["gram"]]
    two_b["gram"] = [scaled_seed(np.asarray(g)[:2, :2], 0, 10.0) for g in two_b["gram"]]
    assert departing_seeds(two_a, two_b) == []  # with 2 seeds neither can be told from the other
