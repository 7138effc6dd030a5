"""The demo's design against a planted law with its grid, seeds, draws and measured constants: the
fit measures both of the theory's exponents, and the lines that lead the demo's fit say so (fast;
``test_demo.py`` runs the real demo)."""
from __future__ import annotations

import re

import numpy as np

from explorer.analysis.decomposed import fit_decomposed, planted_grams
from explorer.analysis.decomposed.planted import Regime
from explorer.demo import DEMO_SPEC, exponent_lines

# the demo's real sweep (docs/analysis.md): c1 ~ 0.07, c2 ~ 0.23, errors behave as ~20 independent
# entries, the 512 x 256 references' error ~1e-3 (err_out at step 10)
MEASURED = dict(c1=0.07, c2=0.23, D=8, entries=20, draw_sd=0.1, ref_err=1e-3)
GRID = DEMO_SPEC["grid"]
DEMO = Regime("demo", Ls=tuple(GRID["L"]), Ms=tuple(GRID["M"]), draws=len(GRID["problem_seeds"]), seeds=GRID["seeds"],
              **MEASURED)
# the demo before: L = 4..64 x M = 1..256, one draw of three seeds
OLD = Regime("old demo", Ls=(4, 8, 16, 32, 64), Ms=(1, 4, 16, 64, 256), draws=1, seeds=3, **MEASURED)
LINE = re.compile(r"^(depth|width) exponent ([ab]) \(.*\) = ([-\d.e+]+) \[([-\d.e+]+), ([-\d.e+]+)\]: the 95% CI "
                  r"(holds|leaves out) the theory's (1|1/2)$")


def test_the_demos_design_measures_a_and_b_on_its_planted_law():
    """10 planted sweeps: a and b measured in every one, their intervals holding the theory's
    exponents in at least 8 (a binomial(10, 0.95) falls below that 1.2 % of the time; seeded)."""
    held = {"a": 0, "b": 0}
    for seed in range(10):
        lines = exponent_lines(fit_decomposed(planted_grams(DEMO, np.random.default_rng(seed)), n_boot=100))
        assert len(lines) == 2 and all(LINE.match(line) for line in lines), lines
        for line in lines:
            _, name, est, low, high, holds, theory = LINE.match(line).groups()
            truth = {"1": 1.0, "1/2": 0.5}[theory]
            assert (holds == "holds") == (float(low) <= truth <= float(high)), line
            assert float(high) - float(low) < 1.0, line  # a measurement, not a span of the search range
            held[name] += holds == "holds"
    assert held["a"] >= 8 and held["b"] >= 8, held


def test_an_exponent_the_grid_does_not_measure_leads_as_not_measured_with_the_fits_reason():
    result = fit_decomposed(planted_grams(OLD, np.random.default_rng(0)), n_boot=50)
    assert "a" in result.unidentified
    a_line, b_line = exponent_lines(result)
    assert a_line.startswith("depth exponent a (bias ~ L^-a): not measured (on this grid: the bias is resolved"), a_line
    assert LINE.match(b_line), b_line
