"""``explorer design``: from a pilot sweep, the cheapest sweep whose decomposed fit is predicted to
measure each target exponent to a given 95% half-width, and what it will cost.

The prediction (``predict``) follows what the decomposed fit does (``explorer.decomposed``) on
the pilot's laws (``explorer.experiment_design.design_model``), in closed form:

- bias: at each point, one draw's standard error of bias^2 from the fit's noise model
  (``decomposed.standard_errors`` with the pilot's n_eff and the design's seeds); the point enters
  the slope of log bias in L where the bias is resolved (> 3 standard errors) and above 3 times
  the reference's error, with the fit's weights. The slope's variance in one draw is that of a
  weighted least-squares slope with one intercept per (M, D) column, c' Sigma c, with c the
  slope's weights on the points and Sigma the covariance of their log bias: its variances from
  the noise model, its correlations from the units a seed's networks share (``shared_units``:
  seeds are common random numbers across the grid).
- fluctuation: the same with log fluct against log(D/(LM)), one intercept per draw.
- draws: G draws divide the seeds' variance by G; the spread of exponents between draws, tau
  (measured when the pilot has two draws or more, else ``DEFAULT_DRAW_SPREAD``, said), adds tau^2 / G. The
  interval is t(G - 1) sd with several draws, t(R - 1) sd (the seeds' jackknife) with one.
- ``CALIBRATION`` multiplies each exponent's predicted sd: the engine's seeds are common random
  numbers across the grid, which the closed form (independent points) does not know. The table
  of predicted and achieved half-widths is in docs/design.md.

The search (``search``) enumerates product grids that extend the pilot's (``grids``): L doubling
from the pilot's smallest depth to at least its largest, M in factors of 4 from its smallest
width (or the first with L*M >= 16) to at least its largest, D among the pilot's values; seeds per point; problem draws; and for
each the cheapest reference of a ladder (depth, width powers of 2, depth >= 4 L, depth x width
>= 8 L M) whose predicted error leaves the smallest predicted error of the design, and the
smallest bias the fit uses, at least 3 times above it. Cost is single-core seconds from
``explorer.estimate`` (trials and one reference per draw), memory its peak estimate.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from ..analysis.decomposed import RESOLVED_SE, WEIGHT_FLOOR, standard_errors
from .design_model import PilotModel
from ..errors import UsageError
from ..analysis.data import FLOOR_FACTOR

TARGETS = ("a", "b")  # the exponents a design predicts
# achieved / closed-form half-width on the engine, the geometric mean over two designs from the demo
# pilot (a: 0.51, 0.69; b: 1.33, 1.13); docs/design.md has them and the designs that check them.
CALIBRATION = {"a": 0.59, "b": 1.23}
SEEDS = (3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
DRAWS = (1, 2, 3, 4, 6, 8, 12, 16)
M_STEP = 4  # factor between consecutive widths of a designed grid
M_VALUES = tuple(4**k for k in range(8))  # 1 .. 16384
L_LARGEST = 1024
MIN_UNITS = 16  # the smallest L*M a designed grid holds: with a few units a seed's error is heavy-tailed
# (one of 32 seeds at L = 4, M = 1 had 19x the median error, and b's half-width was 0.075, not 0.016)
MIN_BIAS_POINTS = 4  # a's prediction needs this many resolved points: the fit resolves points on its own noisy
# estimates, and a design predicted to resolve 2 came out with a not measured (docs/design.md)
MIN_DEPTHS, MIN_WIDTHS = 3, 2  # a designed grid spans at least this many depths and widths (the fit's range guard
# refits without the smallest depth; two points per column would leave nothing to check the law with)
REF_DEPTHS = tuple(2**k for k in range(8, 15))  # 256 .. 16384
REF_WIDTHS = tuple(2**k for k in range(7, 14))  # 128 .. 8192
DEFAULT_MAX_LM = 2**17  # the rates grid's largest L*M


class DesignError(UsageError):
    """A target no design within the limits reaches, or a request the designer cannot serve (exit 2)."""


@dataclass(frozen=True)
class Candidate:
    """A designed sweep: a product grid, seeds per point, problem draws and one reference per draw."""

    Ls: tuple
    Ms: tuple
    D: int
    seeds: int
    draws: int
    ref_depth: int
    ref_width: int


@dataclass
class Prediction:
    """What a candidate is predicted to give and to cost."""

    halfwidth: dict  # target -> predicted 95% half-width
    sd: dict
    quantile: float
    ref_err: float
    bias_points: int  # grid points whose bias the fit uses (per draw)
    seconds: float  # single-core seconds, trials and references, every draw
    trial_seconds: float
    reference_seconds: float
    peak_bytes: int
    largest: str  # what needs the peak memory


@dataclass
class GridTerms:
    """A grid's one-draw slope variances and floors (no reference, no draws yet)."""

    var: dict  # a, b -> closed-form variance of the slope in one draw (seed noise)
    bias_points: int
    smallest_bias: float  # the smallest bias the fit uses (inf when none)
    smallest_err: float


def slope_variance(x, var_y, w, group, corr) -> float:
    """Variance of a weighted least-squares slope with one intercept per group, for y with
    variances var_y and correlations ``corr`` (n, n), weights w: c' Sigma c with c the slope's
    linear weights. Infinite without two distinct x in a group."""
    sw = np.bincount(group, w)
    mx = np.bincount(group, w * x) / np.where(sw > 0, sw, 1.0)
    dx = x - mx[group]
    dx = np.where(np.abs(dx) > 1e-9 * (1 + np.abs(x)), dx, 0.0)
    S = float(np.sum(w * dx**2))
    if S <= 0:
        return math.inf
    c = w * dx / S * np.sqrt(var_y)
    return float(c @ corr @ c)


def shared_units(L, M) -> np.ndarray:
    """Correlation of two points' unit noise within a seed: the engine draws a seed's units layer
    after layer from one stream per (seed, block of layers), so at one width M the network of
    depth L1 < L2 holds L1 of the L2 layers' units: sqrt(L1 / L2). Other widths lay the same
    numbers out differently: independent."""
    small, large = np.minimum.outer(L, L), np.maximum.outer(L, L)
    return np.where(np.equal.outer(M, M), np.sqrt(small / large), 0.0)


def grid_terms(model: PilotModel, Ls, Ms, D: int, seeds: int, ref_err: float = 0.0) -> GridTerms:
    """The closed-form one-draw variances of a and b on the grid Ls x Ms at D with ``seeds``
    seeds per point (module docstring), and the floors the reference must stay under.

    A point's bias^2 estimate has two noise parts: the cross term of bias and fluctuation (linear
    in the seeds' noise: correlation rho between points, ``shared_units``) and the seeds' spread
    (quadratic: rho^2); fluct^2 is quadratic (rho^2)."""
    L, M = (v.ravel().astype(float) for v in np.meshgrid(Ls, Ms, indexing="ij"))
    column = np.searchsorted(np.asarray(Ms), M.astype(int))
    b2, f2 = model.bias(L, M, D) ** 2, model.fluct(L, M, D) ** 2
    se_b2, se_f2 = standard_errors(b2, f2, seeds, model.n_eff)
    used = (b2 > RESOLVED_SE * se_b2) & (b2 + ref_err**2 >= FLOOR_FACTOR**2 * ref_err**2)
    rho = shared_units(L, M)
    with np.errstate(all="ignore"):
        rel_b = (se_b2 / b2) ** 2
        rel_f = (se_f2 / f2) ** 2
        cross, spread = np.sqrt(4 * f2 * b2 / seeds), np.sqrt(2 * f2**2 / (seeds * (seeds - 1)))
        corr_b = (np.outer(cross, cross) * rho + np.outer(spread, spread) * rho**2) / np.outer(
            np.hypot(cross, spread), np.hypot(cross, spread))
    var = {"a": math.inf, "b": math.inf}
    if used.sum() >= MIN_BIAS_POINTS:
        u = np.flatnonzero(used)
        w = 1.0 / (np.minimum(rel_b[u], 4.0) / 4.0 + WEIGHT_FLOOR**2)
        var["a"] = slope_variance(np.log(L[u]), rel_b[u] / 4.0, w, column[u], corr_b[np.ix_(u, u)])
    w = 1.0 / (np.minimum(rel_f, 4.0) / 4.0 + WEIGHT_FLOOR**2)
    var["b"] = slope_variance(np.log(D / (L * M)), rel_f / 4.0, w, np.zeros(len(L), int), rho**2)
    smallest_bias = float(np.sqrt(b2[used].min())) if used.any() else math.inf
    return GridTerms(var, int(used.sum()), smallest_bias, float(np.sqrt(b2 + f2).min()))


# tau per exponent where the pilot cannot measure it (one draw, or per-draw fits that leave it
# unmeasured): the demo problem's three draws (per-draw a = 1.054, 0.998, 1.176; b = 0.489, 0.492,
# 0.508 at 48 seeds) less the seeds' part of that spread; the rates grid's four draws spread as
# much (a 0.96 - 1.16, b 0.495 - 0.520). docs/design.md, "Draws".
DEFAULT_DRAW_SPREAD = {"a": 0.06, "b": 0.008}


def draw_spread(model: PilotModel) -> tuple[dict, dict]:
    """(tau, measured) per exponent: tau is the per-draw fits' spread less what the seeds alone
    give (0 when the spread is within the seeds' noise) where the pilot has two draws or more
    whose fits measure the exponent; elsewhere ``DEFAULT_DRAW_SPREAD`` (measured False)."""
    tau, measured = dict(DEFAULT_DRAW_SPREAD), {n: False for n in TARGETS}
    terms = grid_terms(model, model.Ls, model.Ms, model.Ds[0], model.seeds)
    for name, values in model.per_draw.items():
        seed_var = CALIBRATION[name] ** 2 * terms.var[name]
        if name in tau and len(values) >= 2 and np.isfinite(seed_var):
            tau[name] = math.sqrt(max(float(np.var(values, ddof=1)) - seed_var, 0.0))
            measured[name] = True
    return tau, measured


def halfwidths(model: PilotModel, terms: GridTerms, seeds: int, draws: int) -> tuple[dict, dict, float]:
    """(half-widths, sds, quantile) of a and b for a grid's terms at ``draws`` problem draws."""
    quantile = float(stats.t.ppf(0.975, draws - 1 if draws > 1 else seeds - 1))
    # one draw's interval is the seeds' jackknife: the spread between draws is not in it (as in the fit)
    between = {n: model.tau[n] ** 2 if draws > 1 else 0.0 for n in TARGETS}
    sd = {n: math.sqrt((CALIBRATION[n] ** 2 * terms.var[n] + between[n]) / draws) for n in TARGETS}
    return {n: quantile * s for n, s in sd.items()}, sd, quantile


class CostModel:
    """Single-core seconds and peak memory of trials and references, through ``explorer.estimate``,
    for configurations built from the pilot's (cached by shape)."""

    def __init__(self, model: PilotModel):
        from ..config.spec import parse_spec

        from .design_spec import spec_data

        self.spec = parse_spec(spec_data(model, Candidate((4,), (4,), model.Ds[0], 3, 1, 256, 128), "cost_model"))
        self.problem = self.spec.problem_config(self.spec.problem_seeds()[0])
        self.base = self.spec.trial_config(self.problem, {**{k: v[0] for k, v in self.spec.axes().items()}})
        self.replicas = model.ref_replicas
        self._trials: dict = {}
        self._refs: dict = {}

    def trial(self, L: int, M: int, D: int, seeds: int) -> tuple[float, int]:
        key = (L, M, D, seeds)
        if key not in self._trials:
            from ..config.cost_model import trial_memory_bytes, trial_seconds

            config = self.base.replace(L=int(L), M=int(M), D=int(D), seeds=tuple(range(seeds)))
            self._trials[key] = (trial_seconds(config), trial_memory_bytes(config))
        return self._trials[key]

    def reference(self, depth: int, width: int, D: int) -> tuple[float, int]:
        key = (depth, width, D)
        if key not in self._refs:
            from trials import ReferenceConfig

            from ..config.estimate import reference_memory_bytes, reference_seconds

            config = ReferenceConfig(limit=self.base.replace(D=int(D)), depth=int(depth), width=int(width),
                                     replicas=self.replicas, device="cpu")
            self._refs[key] = (reference_seconds(config), reference_memory_bytes(config))
        return self._refs[key]

    def grid(self, Ls, Ms, D: int, seeds: int) -> tuple[float, int, str]:
        """(seconds of one draw's trials, the largest trial's bytes, which one)."""
        seconds, peak, what = 0.0, 0, ""
        for L, M in itertools.product(Ls, Ms):
            s, b = self.trial(L, M, D, seeds)
            seconds += s
            if b > peak:
                peak, what = b, f"trial L={L}, M={M}, D={D}, {seeds} seeds"
        return seconds, peak, what


@dataclass
class Limits:
    """What a design may use: CPU-hours (None: no limit), bytes per trial, largest L*M."""

    budget_hours: float | None = None
    memory_bytes: int = 0
    max_lm: int = DEFAULT_MAX_LM
    min_draws: int = 1


@dataclass
class Evaluated:
    candidate: Candidate
    prediction: Prediction
    within: dict = field(default_factory=dict)  # budget, memory, floor -> bool


def _reference_for(model: PilotModel, costs: CostModel, Ls, Ms, D: int, need: float, memory: int):
    """(depth, width, err, seconds, bytes), floor met, fits in memory: the cheapest ladder
    reference whose error is at most ``need``, preferring those that fit in ``memory``; else the
    most accurate one (the floor not met)."""
    from ..config.cost_model import PROCESS_BYTES

    options = []
    top_L, top_LM = max(Ls), max(Ls) * max(Ms)
    for depth, width in itertools.product(REF_DEPTHS, REF_WIDTHS):
        if depth < max(4 * top_L, 2) or depth * width < 8 * top_LM:
            continue
        seconds, size = costs.reference(depth, width, D)
        options.append((depth, width, float(model.ref_err(depth, width)), seconds, size))
    if not options:
        return None, False, False
    fitting = [o for o in options if o[4] + PROCESS_BYTES <= memory]
    meeting = [o for o in fitting if o[2] <= need]
    if meeting:
        return min(meeting, key=lambda o: o[3]), True, True
    if fitting:  # the floor is not met within memory: the finest that fits
        return min(fitting, key=lambda o: o[2]), False, True
    meeting = [o for o in options if o[2] <= need]
    if meeting:
        return min(meeting, key=lambda o: o[3]), True, False
    return min(options, key=lambda o: o[2]), False, False


def evaluate_grid(model: PilotModel, costs: CostModel, limits: Limits, Ls, Ms, D: int, seeds: int,
                  targets: dict) -> list[Evaluated]:
    """Every draw count for one grid and seed count: its prediction, and which limits it meets."""
    from ..config.cost_model import PROCESS_BYTES

    terms = grid_terms(model, Ls, Ms, D, seeds)
    need = min(terms.smallest_err, terms.smallest_bias if "a" in targets else math.inf) / FLOOR_FACTOR
    ref, floor_ok, ref_fits = _reference_for(model, costs, Ls, Ms, D, need, limits.memory_bytes)
    trial_s, trial_bytes, what = costs.grid(Ls, Ms, D, seeds)
    if ref is None:  # no reference of the ladder is fine enough for the grid's depths
        return []
    depth, width, ref_err, ref_s, ref_bytes = ref
    if not floor_ok:  # the bias points under the floor leave the fit
        terms = grid_terms(model, Ls, Ms, D, seeds, ref_err)
    peak = max(trial_bytes, ref_bytes)
    largest = what if trial_bytes >= ref_bytes else f"reference {depth} x {width} particles at D={D}"
    memory_ok = ref_fits and peak + PROCESS_BYTES <= limits.memory_bytes and max(Ls) * max(Ms) <= limits.max_lm
    out = []
    for draws in (g for g in DRAWS if g >= limits.min_draws):
        hw, sd, q = halfwidths(model, terms, seeds, draws)
        seconds = draws * (trial_s + ref_s)
        prediction = Prediction(hw, sd, q, ref_err, terms.bias_points, seconds, draws * trial_s, draws * ref_s,
                                int(peak), largest)
        budget_ok = limits.budget_hours is None or seconds <= limits.budget_hours * 3600
        out.append(Evaluated(Candidate(tuple(Ls), tuple(Ms), D, seeds, draws, depth, width), prediction,
                             {"budget": budget_ok, "memory": memory_ok, "floor": floor_ok}))
    return out


def grids(model: PilotModel, max_lm: int):
    """The product grids a design chooses among (module docstring). Each spans the pilot's depths
    and at least its largest width, and its smallest width is the pilot's unless L*M would fall
    below ``MIN_UNITS``: it measures the exponents over the range the pilot's laws were fitted on
    (a narrower range measures a local slope: 6 points at L = 4..16, M = 64, 256 gave
    b = 0.65 [0.56, 0.74] where the pilot's 25 gave 0.49). Up to 4x ``max_lm``, so that a
    refusal can say whether the L*M limit is what blocks a target."""
    low, high = min(model.Ls), max(model.Ls)
    Ls_all = [low * 2**k for k in range(12) if low * 2**k <= max(L_LARGEST, high)]
    m_low = min(v for v in M_VALUES if v >= min(model.Ms) / M_STEP and low * v >= MIN_UNITS)
    i = M_VALUES.index(m_low)
    for n_L in range(MIN_DEPTHS, len(Ls_all) + 1):
        Ls = tuple(Ls_all[:n_L])
        if Ls[-1] < high:
            continue
        for j in range(i + MIN_WIDTHS - 1, len(M_VALUES)):
            Ms = M_VALUES[i:j + 1]
            if Ms[-1] >= max(model.Ms) and Ls[-1] * Ms[-1] <= 4 * max_lm:
                yield Ls, Ms


def meets(e: Evaluated, targets: dict) -> bool:
    return all(e.prediction.halfwidth[n] <= hw for n, hw in targets.items())


@dataclass
class SearchResult:
    best: Evaluated | None
    reachable: dict  # target -> the smallest half-width within every limit
    blocked_by: str  # what keeps the targets out of reach ('' when met)
    considered: int
    together: dict | None = None  # the half-widths of the design within every limit closest to all targets at once


def search(model: PilotModel, targets: dict, limits: Limits) -> SearchResult:
    """The cheapest candidate meeting every target within the limits, or what blocks it."""
    costs = CostModel(model)
    best, cheapest_relaxed = None, {}
    reachable = {n: math.inf for n in targets}
    together, closest = None, math.inf  # the design within the limits whose worst target ratio is least
    considered = 0
    for D in model.Ds:
        for Ls, Ms in sorted(grids(model, limits.max_lm), key=lambda g: max(g[0]) * max(g[1]) * len(g[0]) * len(g[1])):
            for seeds in SEEDS:
                if best is not None and limits.min_draws * costs.grid(Ls, Ms, D, seeds)[0] >= best.prediction.seconds:
                    continue  # dearer than the best so far whatever it predicts (nothing to refuse any more)
                for e in evaluate_grid(model, costs, limits, Ls, Ms, D, seeds, targets):
                    considered += 1
                    ok = all(e.within.values())
                    if ok:
                        for n in targets:
                            reachable[n] = min(reachable[n], e.prediction.halfwidth[n])
                        worst = max(e.prediction.halfwidth[n] / hw for n, hw in targets.items())
                        if worst < closest:
                            together, closest = {n: e.prediction.halfwidth[n] for n in targets}, worst
                    if not meets(e, targets):
                        continue
                    if ok and (best is None or e.prediction.seconds < best.prediction.seconds):
                        best = e
                    for relaxed in ("budget", "memory", "floor"):
                        others = all(v for k, v in e.within.items() if k != relaxed)
                        held = cheapest_relaxed.get(relaxed)
                        if others and (held is None or e.prediction.seconds < held.prediction.seconds):
                            cheapest_relaxed[relaxed] = e
    return SearchResult(best, reachable, "" if best else _blocked(cheapest_relaxed, limits), considered, together)


def _blocked(relaxed: dict, limits: Limits) -> str:
    from ..formatting import format_bytes

    if "budget" in relaxed:
        hours = relaxed["budget"].prediction.seconds / 3600
        return (f"the budget of {limits.budget_hours:g} CPU-hour(s) (the cheapest design that reaches every target "
                f"needs {hours:.3g})")
    if "memory" in relaxed:
        return (f"memory and the largest L*M ({format_bytes(limits.memory_bytes)} per trial, L*M <= {limits.max_lm}): "
                "only larger networks reach the targets")
    if "floor" in relaxed:
        return ("the reference floor: no reference that fits in memory is accurate enough to leave the smallest "
                "errors 3x above its own")
    return (f"the designs considered (grids up to L*M = {4 * limits.max_lm}, at most {max(SEEDS)} seeds and "
            f"{max(DRAWS)} draws): the seeds' noise at these sizes")


__all__ = ["CALIBRATION", "DEFAULT_DRAW_SPREAD", "Candidate", "CostModel", "DesignError", "GridTerms", "Limits", "Prediction",
           "SearchResult", "TARGETS", "draw_spread", "grid_terms", "halfwidths", "search", "shared_units",
           "slope_variance"]
