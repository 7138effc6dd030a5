"""Choosing the points of an adaptive sweep: candidates, cost, the initial design, the CI gain.

Pure functions of tables and numbers (no store, no Ray); ``loop`` runs the loop, ``stopping`` decides.

- Candidates: the plan's trials (a grid point x problem draw, with the spec's seeds batched).
  A candidate's cost is its predicted single-core seconds, ``config.cost_model.trial_seconds``:
  the one cost model that the dry run and the packer use too (``COST_UNIT``). It is
  deterministic, so a budget in these units is never exceeded. The wall time is predicted from
  the measured ``wall_s`` of the sweep's trials (``WallModel``: wall_s = w0 + w1 * cost,
  non-negative least squares; before any trial ran, the cost itself).
- Initial design (``initial_design``): greedy maximin in (log L, log M, log D) scaled to [0, 1],
  the first point the cheapest, draws assigned round robin (the two-level bootstrap needs
  several), each point at most its share of the design's cost cap (the largest corner of a
  grid costs ~10% of it and usually sits on the reference floor).
- Selection (``choose_batch``): the linearised model of the law in its fit parametrization
  (log for constants). With the bootstrap covariance Sigma of the parameters, a candidate x with
  gradient g = d log f(x) / d theta and residual variance s^2 (of the fit's log residuals) would
  leave the covariance (Sigma^-1 + g g^T / s^2)^-1 (a rank-1 update). Its expected gain is the
  reduction of the unmet targets' 95% half-widths 1.96 sqrt(Sigma_jj), in units of the target
  half-width, summed; the batch is picked greedily by gain per predicted second, updating Sigma
  after each pick, within the budget left. Candidates the law predicts below
  ``FLOOR_FACTOR`` x their draw's reference error are skipped (the fit would leave them out).

This is an approximation: the bootstrap covariance holds the spread between problem draws,
which more points at the same draws do not shrink, and the law is linearised at the current
estimate. It only ranks the candidates; every round's CIs come from the real two-level bootstrap.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...analysis.fitting import Z95
from ...config.cost_model import trial_seconds

LOG_AXES = ("L", "M", "D")
COST_UNIT = "predicted single-core seconds"  # of config.cost_model.trial_seconds: the rounds log's cost_unit
INITIAL_SHARE = 0.4  # the initial design spends at most this share of the budget


@dataclass(frozen=True)
class Candidate:
    """One trial the loop may choose: a grid point at one problem draw, all its seeds."""

    trial_key: str
    L: int
    M: int
    D: int
    alpha: float
    problem_seed: int
    seeds: int
    cost: float  # predicted single-core seconds (COST_UNIT)


def candidates_of(trials) -> list[Candidate]:
    """The candidates of a plan's trials (``planning.PlannedTrial``), in plan order, each priced
    by ``config.cost_model.trial_seconds``."""
    return [Candidate(t.trial_key, t.config.L, t.config.M, t.config.D, t.config.alpha, t.config.problem.seed,
                      len(t.config.seeds), trial_seconds(t.config)) for t in trials]


@dataclass(frozen=True)
class WallModel:
    """Predicted wall seconds of a trial: w0 + w1 * cost (``fit`` it to measured trials; the cost is
    already predicted seconds, so w1 corrects the model to this machine)."""

    w0: float = 0.0
    w1: float = 1.0
    measured: int = 0  # trials it was fitted to (0: the cost itself)

    @classmethod
    def fit(cls, cost: np.ndarray, wall_s: np.ndarray) -> "WallModel":
        """Non-negative least squares of wall_s on (1, cost); the cost alone when fewer than 2
        finite measurements or their costs are all equal."""
        cost, wall_s = np.asarray(cost, float), np.asarray(wall_s, float)
        ok = np.isfinite(cost) & np.isfinite(wall_s)
        cost, wall_s = cost[ok], wall_s[ok]
        if len(cost) < 2 or np.ptp(cost) == 0:
            return cls()
        X = np.column_stack([np.ones_like(cost), cost])
        w, *_ = np.linalg.lstsq(X, wall_s, rcond=None)
        if w[0] < 0:  # no fixed cost: through the origin
            w = np.array([0.0, float(wall_s @ cost / (cost @ cost))])
        if w[1] < 0:  # no growth with size: the mean
            w = np.array([float(wall_s.mean()), 0.0])
        w0, w1 = float(max(w[0], 0.0)), float(max(w[1], 0.0))
        if w0 == 0.0 and w1 == 0.0:
            return cls()
        return cls(w0, w1, int(len(cost)))

    def predict(self, cost) -> np.ndarray:
        """Predicted seconds (the cost itself before any measurement), never below 1e-9."""
        return np.maximum(self.w0 + self.w1 * np.asarray(cost, float), 1e-9)


def _positions(cands: list[Candidate]) -> np.ndarray:
    """(n, 3) log L, log M, log D, each scaled to [0, 1] over the candidates (0 when constant)."""
    X = np.log(np.array([[c.L, c.M, c.D] for c in cands], float))
    span = np.ptp(X, axis=0)
    return np.where(span > 0, (X - X.min(axis=0)) / np.where(span > 0, span, 1.0), 0.0)


def initial_design(cands: list[Candidate], n: int, cap: float, taken: set[str] = frozenset(),
                   draw_counts: dict | None = None) -> list[Candidate]:
    """A space-filling design of at most ``n`` candidates costing at most ``cap`` (``COST_UNIT``).

    Greedy maximin over the grid positions (log L, log M, log D in [0, 1]), starting from the
    cheapest; positions already ``taken`` count as chosen. Each position is given to the draw
    with the fewest points so far (so the design spans the draws); a point dearer than ``cap /
    n`` is not considered. Ties go to the cheaper point, then plan order.
    """
    if n <= 0 or not cands:
        return []
    counts = dict(draw_counts or {})
    pos = _positions(cands)
    chosen_pos = [pos[i] for i, c in enumerate(cands) if c.trial_key in taken]
    free = [i for i, c in enumerate(cands) if c.trial_key not in taken and c.cost <= cap / n]
    out: list[Candidate] = []
    spent = 0.0
    while free and len(out) < n:
        if chosen_pos:
            d = np.min(np.linalg.norm(pos[free][:, None, :] - np.array(chosen_pos)[None, :, :], axis=2), axis=1)
        else:
            d = -np.array([cands[i].cost for i in free])  # the first: the cheapest
        costs = np.array([cands[i].cost for i in free])
        draws = np.array([counts.get(cands[i].problem_seed, 0) for i in free])
        order = np.lexsort((np.arange(len(free)), draws, costs, -np.round(d, 9)))
        pick = None
        for j in order:
            if spent + costs[j] <= cap:
                pick = free[j]
                break
        if pick is None:
            break
        c = cands[pick]
        out.append(c)
        spent += c.cost
        chosen_pos.append(pos[pick])
        counts[c.problem_seed] = counts.get(c.problem_seed, 0) + 1
        free.remove(pick)
    return out


@dataclass(frozen=True)
class Linearised:
    """What the selection needs from a fit: the law, its estimate and covariance in the fit's
    parametrization (log for positive constants), the residual variance of log errors."""

    law: object  # explorer.analysis.laws.Expression (the fitted law)
    theta: np.ndarray  # (p,)
    cov: np.ndarray  # (p, p)
    sigma2: float  # residual variance of log errors
    targets: tuple[int, ...]  # indices of the unmet targets in theta
    halfwidth: float

    @classmethod
    def from_fit(cls, result, targets: list[str], halfwidth: float) -> "Linearised":
        """From an ``explorer.analysis.fitting.FitResult`` (with bootstrap samples); ``targets``: the unmet ones."""
        law = result.law
        names = law.parameters
        is_log = np.array([n in law.positive for n in names])
        values = np.array([result.estimate[n] for n in names], float)
        theta = np.where(is_log, np.log(np.maximum(values, 1e-300)), values)
        samples = np.asarray(result.samples, float)
        if samples.ndim == 2 and len(samples) >= 2:
            thetas = np.where(is_log, np.log(np.maximum(samples, 1e-300)), samples)
            cov = np.atleast_2d(np.cov(thetas, rowvar=False))
        else:
            cov = np.eye(len(names))
        cov = cov + 1e-12 * np.eye(len(names)) * max(1.0, float(np.trace(cov)))
        residuals = result.grid.loc[result.grid["used"], "residual_log"].to_numpy(float)
        residuals = residuals[np.isfinite(residuals)]
        sigma2 = float(np.var(residuals, ddof=min(len(names), max(len(residuals) - 1, 0)))) if len(residuals) > 1 else 0.01
        index = tuple(names.index(t) for t in targets if t in names)
        return cls(law, theta, cov, max(sigma2, 1e-4), index, float(halfwidth))

    def _values(self, theta: np.ndarray) -> np.ndarray:
        return np.where(np.array([n in self.law.positive for n in self.law.parameters]), np.exp(theta), theta)

    def log_model(self, L, M, D) -> np.ndarray:
        """log f at points (arrays), at the estimate."""
        with np.errstate(all="ignore"):
            return np.log(self.law(self._values(self.theta), L, M, D))

    def gradients(self, L, M, D) -> np.ndarray:
        """(n, p) d log f / d theta at the estimate, central differences."""
        L, M, D = (np.asarray(v, float) for v in (L, M, D))
        out = np.zeros((len(L), len(self.theta)))
        for j in range(len(self.theta)):
            h = 1e-5 * max(1.0, abs(self.theta[j]))
            up, down = self.theta.copy(), self.theta.copy()
            up[j] += h
            down[j] -= h
            with np.errstate(all="ignore"):
                out[:, j] = (np.log(self.law(self._values(up), L, M, D))
                             - np.log(self.law(self._values(down), L, M, D))) / (2 * h)
        return np.where(np.isfinite(out), out, 0.0)

    def halfwidths(self, cov: np.ndarray | None = None) -> np.ndarray:
        """95% half-widths of every parameter under ``cov`` (default the current one)."""
        cov = self.cov if cov is None else cov
        return Z95 * np.sqrt(np.maximum(np.diag(cov), 0.0))

    def gains(self, cov: np.ndarray, G: np.ndarray) -> np.ndarray:
        """(n,) the unmet targets' half-width reduction, in units of ``halfwidth``, summed, if
        one more point with gradient G[i] were measured (rank-1 update of ``cov``)."""
        if not self.targets:
            return np.zeros(len(G))
        S = G @ cov  # (n, p): Sigma g for each candidate
        denom = self.sigma2 + np.einsum("np,np->n", S, G)
        t = list(self.targets)
        var = np.diag(cov)[t]
        new_var = np.maximum(var[None, :] - S[:, t] ** 2 / denom[:, None], 0.0)
        return (Z95 * (np.sqrt(var)[None, :] - np.sqrt(new_var)) / self.halfwidth).sum(axis=1)

    def update(self, cov: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Sherman-Morrison: (cov^-1 + g g^T / s^2)^-1."""
        s = cov @ g
        return cov - np.outer(s, s) / (self.sigma2 + g @ s)

    def predicted_halfwidths_with(self, cands: list[Candidate]) -> np.ndarray:
        """Every parameter's half-width predicted after measuring all of ``cands`` (the most any
        subset of them can give under this model)."""
        cov = self.cov
        if cands:
            G = self.gradients([c.L for c in cands], [c.M for c in cands], [c.D for c in cands])
            info = np.linalg.inv(cov) + G.T @ G / self.sigma2
            cov = np.linalg.inv(info)
        return self.halfwidths(cov)


@dataclass(frozen=True)
class Choice:
    """A chosen candidate and why: its expected gain per predicted second."""

    candidate: Candidate
    gain: float
    gain_per_cost: float
    predicted_wall_s: float


def choose_batch(model: Linearised, cands: list[Candidate], batch: int, budget_left: float, wall: WallModel,
                 ref_err: dict | None = None, floor_factor: float = 3.0,
                 draw_counts: dict | None = None) -> list[Choice]:
    """Greedy batch by expected CI gain per predicted second, within ``budget_left`` (``COST_UNIT``).

    Args:
        model: the linearised fit. cands: candidates not run yet.
        ref_err: problem_seed -> the reference's own error estimate; a candidate whose predicted
            error is below ``floor_factor`` times it is skipped (the fit would leave it out).
            Draws without a value use the median of the others.
        draw_counts: problem_seed -> points so far: ties (same point, other draws) go to the
            draw with the fewest.
    Returns:
        At most ``batch`` choices, best first; empty when nothing fits the budget or no
        candidate is expected to shrink an unmet target.
    """
    if not cands or batch <= 0 or not model.targets:
        return []
    L = np.array([c.L for c in cands], float)
    M = np.array([c.M for c in cands], float)
    D = np.array([c.D for c in cands], float)
    cost = np.array([c.cost for c in cands])
    wall_s = wall.predict(cost)
    G = model.gradients(L, M, D)
    usable = np.isfinite(model.log_model(L, M, D)) & np.all(np.isfinite(G), axis=1)
    if ref_err:
        known = [v for v in ref_err.values() if v is not None and math.isfinite(v)]
        fallback = float(np.median(known)) if known else 0.0
        floor = np.array([ref_err.get(c.problem_seed, fallback) or fallback for c in cands], float)
        with np.errstate(all="ignore"):
            usable &= ~(np.exp(model.log_model(L, M, D)) < floor_factor * floor)
    counts = dict(draw_counts or {})
    cov = model.cov
    left = float(budget_left)
    taken = np.zeros(len(cands), bool)
    out: list[Choice] = []
    for _ in range(batch):
        gains = model.gains(cov, G)
        ok = usable & ~taken & (cost <= left + 1e-9 * max(left, 1.0)) & (gains > 1e-9)
        if not ok.any():
            break
        ratio = gains / wall_s
        draws = np.array([counts.get(c.problem_seed, 0) for c in cands])
        scores = np.where(ok, ratio * (1.0 - 1e-6 * draws), -np.inf)
        i = int(np.argmax(scores))
        out.append(Choice(cands[i], float(gains[i]), float(ratio[i]), float(wall_s[i])))
        taken[i] = True
        left -= cost[i]
        cov = model.update(cov, G[i])
        counts[cands[i].problem_seed] = counts.get(cands[i].problem_seed, 0) + 1
    return out
