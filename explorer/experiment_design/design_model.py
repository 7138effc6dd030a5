"""What a pilot sweep says about the sweep to run next: its two error terms as laws of (L, M, D),
their noise per seed, and its reference's error as a law of the particles.

``explorer design`` (``explorer.experiment_design.design_search``) predicts the confidence intervals a candidate sweep
would give from this model. It is built from the pilot's per-seed Gram rows
(``sweep_data.seed_grams``) and its ``decomposed`` fit (``DESIGNED_LAW``, through ``fit_sweep``):

- fluctuation: c2 (D/(LM))^b, the pilot's fitted c2 and b (the fit must measure them);
- bias: (c1 + c3 D/M) L^-a. a is the pilot's fitted exponent where the pilot measures it, else
  the theory's 1 (said in the assumptions). The bias carries a second-order sampling part of
  order D/(LM) = (D/M)/L (docs/model.md section 4), large at small M: c3 D/M is its level. c1
  and c3 are fitted by weighted least squares to every point's bias^2 less its reference's
  error^2, with weights from the same noise model as the fit's (``decomposed.standard_errors``);
  points whose bias is not resolved still carry information about its level there.
- noise: errors behave as n_eff independent entries (``entries``: as the fit's
  ``decomposed.effective_entries``, but the harmonic mean over points instead of the median, which
  a pilot's few seeds bias upwards: with 3 seeds each point's ratio rests on 3 Gram entries);
  what is left of that bias is measured on planted laws of the pilot's grid and seeds and divided
  out (``unbiased_entries``: 1.34x with 3 seeds, 1.04x with 12). On the engine that still leaves
  the demo pilot's 3 seeds at 16.7 where its designs' 24-32 seeds measure 10.2-10.6 on the same
  problem: ``ENTRIES_CALIBRATION`` scales it (docs/design.md);
- the spread of exponents between problem draws (tau_a, tau_b): measured from the per-draw fits
  when the pilot has two draws or more (their spread less the seeds' part), else the documented
  default ``design_search.DEFAULT_DRAW_SPREAD`` (set by ``designer.design``; 0 here);
- reference: err_ref^2 = s^2 (depth0 width0) / (depth width) + (d depth0 / depth)^2, with s and d
  the pilot reference's sampling and discretization parts of err_out at the final step
  (the sampling part falls like 1/sqrt(particles), the Euler part like 1/depth).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from ..analysis.decomposed import draws_of, effective_entries, gram_spread, standard_errors, terms
from ..config.reference_kinds import DEFAULT_KIND, KINDS
from ..errors import FitError
from .design_record import DESIGNED_LAW

MIN_POINTS = 6  # fewer grid points than this cannot measure two exponents
ENTRIES_CALIBRATION = 0.57  # n_eff of the engine's errors / what a 3-seed pilot's unbiased estimate gives
THEORY_A = 1.0  # the bias exponent assumed where the pilot does not measure it (docs/model.md section 2)


class PilotError(FitError):
    """A pilot sweep whose fit cannot ground a design (exit 2)."""


@dataclass
class PilotModel:
    """The pilot's laws (module docstring) and what a designed spec copies from it."""

    sweep: str
    config: dict  # a pilot trial's config_json: problem, model and train fields
    Ls: tuple
    Ms: tuple
    Ds: tuple
    draws: tuple  # the pilot's problem seeds
    seeds: int
    points: int
    n_eff: float
    c1: float
    c3: float
    a: float
    a_measured: bool
    c2: float
    b: float
    tau: dict = field(default_factory=lambda: {"a": 0.0, "b": 0.0})
    tau_measured: dict = field(default_factory=lambda: {"a": False, "b": False})  # per exponent: from the pilot's draws
    ref_depth: int = 1024
    ref_width: int = 512
    ref_replicas: int = 2
    ref_sampling: float = 0.0
    ref_discretization: float = 0.0
    fit_halfwidths: dict = field(default_factory=dict)  # the pilot fit's own 95% half-widths of a, b
    per_draw: dict = field(default_factory=dict)  # a, b -> the per-draw fits' estimates (two draws or more)

    def bias(self, L, M, D):
        L, M, D = (np.asarray(v, float) for v in (L, M, D))
        return (self.c1 + self.c3 * D / M) * L ** (-self.a)

    def fluct(self, L, M, D):
        L, M, D = (np.asarray(v, float) for v in (L, M, D))
        return self.c2 * (D / (L * M)) ** self.b

    def ref_err(self, depth, width):
        """The reference's own error of err_out at (depth, width) particles, the pilot's replicas."""
        depth, width = np.asarray(depth, float), np.asarray(width, float)
        sampling2 = self.ref_sampling**2 * (self.ref_depth * self.ref_width) / (depth * width)
        return np.sqrt(sampling2 + (self.ref_discretization * self.ref_depth / depth) ** 2)


def entries(draws) -> float:
    """n_eff of the noise model: 1 / mean over points of var(off-diagonal Gram entries) / what
    Gaussian errors with one independent entry give (the diagonal with two seeds). The mean of
    the inverse ratio is unbiased where the median of the ratio is not; falls back to the fit's
    ``effective_entries`` when no point has a spread."""
    inverse = []
    for d in draws:
        spread, model = gram_spread(d)
        ok = (spread > 0) & (model > 0)
        inverse.extend(spread[ok] / model[ok])
    return 1.0 / float(np.mean(inverse)) if inverse else effective_entries(draws)


def unbiased_entries(measured: float, draws, replicates: int = 12) -> float:
    """``measured`` (``entries`` of the pilot) divided by the bias of ``entries`` on planted laws
    with the pilot's grid and seeds and that many entries (Gaussian errors: n_eff = entries)."""
    from ..analysis.decomposed import Regime, planted_grams

    d = draws[0]
    n = max(int(round(measured)), 2)
    regime = Regime("pilot", c1=0.05, c2=0.2, Ls=tuple(sorted(set(d.L))), Ms=tuple(sorted(set(d.M))),
                    D=int(d.D[0]), draws=1, seeds=d.R, entries=n, draw_sd=0.0, ref_err=0.0)
    rng = np.random.default_rng(0)
    found = [entries(draws_of(planted_grams(regime, rng))) for _ in range(replicates)]
    return measured * n / float(np.mean(found))


def fit_bias_level(L, M, D, bias2, f2, R, n_eff, a) -> tuple[float, float]:
    """(c1, c3) of bias = (c1 + c3 D/M) L^-a, weighted least squares on the points' bias^2
    estimates (reference error removed; negative values kept: they are unbiased), weights from
    the noise model at the current fit (two passes). Both are >= 0."""
    from scipy.optimize import least_squares

    L, M, D, bias2, f2 = (np.asarray(v, float) for v in (L, M, D, bias2, f2))
    x = D / M
    ok = np.isfinite(bias2) & np.isfinite(f2)
    L, x, bias2, f2 = L[ok], x[ok], bias2[ok], np.maximum(f2[ok], 0.0)
    if len(L) == 0:
        return math.nan, math.nan
    theta = np.array([max(float(np.median(np.maximum(bias2, 0) * L ** (2 * a))), 1e-12) ** 0.5, 0.0])
    for _ in range(3):
        model2 = ((theta[0] + theta[1] * x) * L ** (-a)) ** 2
        se, _ = standard_errors(model2, f2, R, n_eff)
        se = np.maximum(se, 1e-300)

        def residuals(t, se=se):
            return (bias2 - ((t[0] + t[1] * x) * L ** (-a)) ** 2) / se

        theta = least_squares(residuals, theta, bounds=([0.0, 0.0], [np.inf, np.inf])).x
    return float(theta[0]), float(theta[1])


def pilot_model(store, sweep: str, n_boot: int = 100) -> PilotModel:
    """The pilot's model from a store (module docstring).

    Raises:
        PilotError: too few points, one seed per point (no decomposition), a fit that does not
            measure the fluctuation's exponent, a pilot that varies axes besides L, M, D.
        SweepDataError, NoDecompositionError: as ``seed_grams``.
    """
    from ..analysis.data import first_ok_trial
    from ..analysis.fitting import data_and_fitter, fit_sweep

    read, _ = data_and_fitter(DESIGNED_LAW[0], DESIGNED_LAW[1])  # the decomposed law's rows: the seeds' Gram rows
    con = store.connect(sweep=sweep, read_only=True)
    try:
        frame = read(con, sweep, metric=DESIGNED_LAW[1])
        configs = first_ok_trial(con, sweep, _TRIAL_COLUMNS)
    finally:
        con.close()
    _check_usable(frame, sweep)
    frame = frame[frame["n_seeds"] >= 2].reset_index(drop=True)
    try:
        fit = fit_sweep(None, sweep, DESIGNED_LAW[0], metric=DESIGNED_LAW[1], rows=frame, n_boot=n_boot,
                        per_draw=True, range_check=False)
    except FitError as exc:
        raise PilotError(f"pilot sweep {sweep!r} cannot ground a design: its decomposed fit fails ({exc})") from None
    if not all(np.isfinite(fit.estimate[n]) for n in ("c2", "b")):
        raise PilotError(f"pilot sweep {sweep!r} cannot ground a design: its fit does not measure the fluctuation's "
                         f"exponent b ({fit.unidentified.get('b', 'not measured')}); sweep more values of L*M")
    draws = draws_of(frame)
    n_eff = ENTRIES_CALIBRATION * unbiased_entries(entries(draws), draws)
    R = float(np.mean([d.R for d in draws]))
    a_measured = bool(np.isfinite(fit.estimate["a"]))
    a = float(fit.estimate["a"]) if a_measured else THEORY_A
    L, M, D, b2, f2 = [], [], [], [], []
    for d in draws:
        bias2, fluct2 = terms(d.grams)
        L += list(d.L)
        M += list(d.M)
        D += list(d.D)
        b2 += list(bias2 - d.ref2)
        f2 += list(fluct2)
    c1, c3 = fit_bias_level(L, M, D, b2, f2, R, n_eff, a)
    model = PilotModel(sweep=sweep, config=_pilot_config(configs), Ls=tuple(sorted(set(int(v) for v in L))),
                       Ms=tuple(sorted(set(int(v) for v in M))), Ds=tuple(sorted(set(int(v) for v in D))),
                       draws=tuple(d.label for d in draws), seeds=int(round(R)), points=len(frame), n_eff=n_eff,
                       c1=c1, c3=c3, a=a, a_measured=a_measured, c2=float(fit.estimate["c2"]),
                       b=float(fit.estimate["b"]))
    model.fit_halfwidths = {n: (fit.ci_high[n] - fit.ci_low[n]) / 2 for n in ("a", "b")}
    per_draw = getattr(fit, "per_draw", None)
    if per_draw is not None and len(per_draw):
        for name in ("a", "b"):
            values = per_draw.loc[per_draw["parameter"] == name, "estimate"].to_numpy(float)
            model.per_draw[name] = [float(v) for v in values if np.isfinite(v)]
    _reference_of(store, frame, model)
    return model


def _check_usable(frame, sweep: str) -> None:
    """Refuse a pilot that cannot measure what a design rests on (one line each)."""
    if int(frame["n_seeds"].max()) < 2:
        raise PilotError(f"pilot sweep {sweep!r} cannot ground a design: one seed per point, so its error has no "
                         "bias/fluctuation decomposition; run the pilot with seeds >= 3")
    varying = [c for c in ("alpha", "lr", "sigma_u", "sigma_v") if c in frame and frame[c].nunique() > 1]
    if varying:
        raise PilotError(f"pilot sweep {sweep!r} varies {varying[0]}: a design extends one slice of L, M, D; "
                         "design from a pilot that holds it fixed")
    if len(frame) < MIN_POINTS:
        raise PilotError(f"pilot sweep {sweep!r} cannot ground a design: {len(frame)} grid point(s) with seeds' Gram "
                         f"rows, at least {MIN_POINTS} are needed to measure two exponents")
    if (frame["L"] * frame["M"] / frame["D"]).nunique() < 3:
        raise PilotError(f"pilot sweep {sweep!r} cannot ground a design: fewer than 3 values of L*M/D, so the "
                         "fluctuation's exponent is not measured")


_TRIAL_COLUMNS = ("d_in", "d_out", "samples", "problem_seed", "activation", "block", "preset", "alpha", "sigma_u",
                  "sigma_v", "lr", "steps", "dtype", "antithetic")


def _pilot_config(rows) -> dict:
    """The fields a designed spec copies from the pilot: a trial's columns (every row describes
    itself), and what its config_json adds (the data kind, the divergence rules)."""
    if not rows:
        raise PilotError("the pilot has no trial with status ok; cannot write a spec from it")
    values = dict(zip(_TRIAL_COLUMNS, rows[0][:-1]))
    config = {k: v for k, v in values.items() if k not in ("d_in", "d_out", "samples", "problem_seed")}
    config["problem"] = {"d_in": values["d_in"], "d_out": values["d_out"], "samples": values["samples"],
                         "seed": values["problem_seed"]}
    try:
        extra = json.loads(rows[0][-1] or "{}")
    except ValueError:
        extra = {}
    if isinstance(extra, dict):
        config["problem"].update({k: v for k, v in (extra.get("problem") or {}).items() if k not in config["problem"]})
        config.update({k: v for k, v in extra.items() if k not in config and k != "problem"})
    return config


def _reference_of(store, frame, model: PilotModel) -> None:
    """The pilot reference's resolution and its error's parts at the final step (mean over draws)."""
    keys = [k for k in frame["ref_key"].dropna().unique()] if "ref_key" in frame else []
    sampling, disc = [], []
    for key in keys:
        found = store.read_reference(str(key))
        if not found:
            continue
        arrays, meta = found
        kind = KINDS.get(str(meta.get("kind", DEFAULT_KIND)))
        if kind is None or not kind.scales_with_particles or "err_out_sampling" not in arrays:
            raise PilotError("the pilot's reference is not a mean_ode particle solution: a design needs one to "
                             "scale the reference's error with its particles")
        model.ref_depth, model.ref_width = int(meta["depth"]), int(meta["width"])
        model.ref_replicas = int(meta.get("replicas", 2))
        sampling.append(float(arrays["err_out_sampling"][-1]))
        disc.append(float(arrays.get("err_out_discretization", np.zeros(1))[-1]))
    if not sampling:
        raise PilotError("the pilot's reference is not in the store: its error cannot be scaled to other resolutions")
    model.ref_sampling = float(np.sqrt(np.mean(np.square(sampling))))
    model.ref_discretization = float(np.sqrt(np.mean(np.square(disc))))


__all__ = ["ENTRIES_CALIBRATION", "MIN_POINTS", "PilotError", "PilotModel", "THEORY_A", "entries", "fit_bias_level", "unbiased_entries", "pilot_model"]
