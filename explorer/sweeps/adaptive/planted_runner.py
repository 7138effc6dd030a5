"""A runner that writes planted laws into a store, for the adaptive loop without Ray or torch:
the tests of the adaptive wing and the coverage of the loop at its stopping point
(``benchmarks/adaptive_coverage.py``). ``PlantedRunner(store, law)`` is a ``runners.TrialRunner``:
called with a spec and trial keys, it writes those trials' rows as a sweep would, with errors of a
known law."""
from __future__ import annotations

import datetime as dt
import json

import numpy as np

from store import trial_row_from_metrics

from ...config.planning import plan


def free_law(c1=0.5, a=1.0, c2=0.3, b=0.5):
    """err = c1 L^-a + c2 (D/(LM))^b."""
    return lambda L, M, D: c1 * L ** -a + c2 * (D / (L * M)) ** b


class TermsLaw:
    """A law given by its two terms, bias = c1 L^-a and fluctuation = c2 (D/(LM))^b: the
    FakeRunner then writes each seed's error as the RMS of bias * u + fluct * xi (u a fixed
    direction per draw, xi Gaussian per seed) and its Gram rows, as the engine does."""

    def __init__(self, c1=0.065, a=1.0, c2=0.205, b=0.5):
        self.c1, self.a, self.c2, self.b = c1, a, c2, b

    def terms(self, L, M, D):
        return self.c1 * L ** -self.a, self.c2 * (D / (L * M)) ** self.b

    def __call__(self, L, M, D):
        bias, fluct = self.terms(L, M, D)
        return float(np.hypot(bias, fluct))


class PlantedRunner:
    """``runner(spec, keys)``: writes each key's trial with per-seed errors law * sqrt(chi2_k / k)
    (k = ``entries``), a per-draw factor exp(draw_sd * z), and wall_s = 1e-4 + 1e-6 L M D seeds.

    ``fail_after``: raise after writing this many trials in a call (a crash mid-round).
    ``term_effects``: with a ``TermsLaw``, each draw scales its two terms by independent factors
    exp(draw_sd * z_bias), exp(draw_sd * z_fluct) (``explorer.analysis.decomposed``'s rates regime) instead of
    one factor for both.
    """

    def __init__(self, store, law, *, entries: int = 200, draw_sd: float = 0.02, ref_err: float = 1e-6,
                 fail_after: int | None = None, seed: int = 0, term_effects: bool = False):
        self.store = store
        self.law, self.entries, self.draw_sd, self.ref_err = law, entries, draw_sd, ref_err
        self.fail_after, self.seed, self.term_effects = fail_after, seed, term_effects
        self.calls: list[frozenset] = []
        self.written: list[str] = []

    def __call__(self, spec, keys):
        self.calls.append(frozenset(keys))
        trials = {t.trial_key: t for t in plan(spec).trials}
        done = self.store.trial_statuses(spec.name) if spec.name in self.store.sweeps() else {}
        n = 0
        for key in sorted(keys):
            if key in done:
                continue
            if self.fail_after is not None and n >= self.fail_after:
                raise KeyboardInterrupt("simulated crash mid-round")
            self._write(spec.name, trials[key])
            n += 1

    def _seed_errors(self, cfg, draw, factor, true, rng):
        """Per-seed errors and, for a ``TermsLaw``, their Gram rows (seeds in ascending order)."""
        seeds = sorted(cfg.seeds)
        if not hasattr(self.law, "terms"):
            return [true * float(np.sqrt(rng.chisquare(self.entries) / self.entries)) for _ in seeds], None
        factors = (np.exp(self.draw_sd * np.random.default_rng([self.seed, draw, 9]).standard_normal(2))
                   if self.term_effects else (factor, factor))
        bias, fluct = (f * t for f, t in zip(factors, self.law.terms(cfg.L, cfg.M, cfg.D)))
        direction = np.random.default_rng([self.seed, draw, 7]).standard_normal(self.entries)
        direction /= np.sqrt(np.mean(direction**2))
        reference = np.random.default_rng([self.seed, draw, 8]).standard_normal(self.entries)
        reference *= self.ref_err / np.sqrt(np.mean(reference**2))
        vectors = np.array([bias * direction + reference
                            + fluct * np.random.default_rng([self.seed, draw, seed, cfg.L, cfg.M]).standard_normal(
                                self.entries) for seed in seeds])
        gram = vectors @ vectors.T / self.entries
        order = [seeds.index(s) for s in cfg.seeds]
        return [float(np.sqrt(gram[i, i])) for i in order], [gram[i] for i in order]

    def _write(self, sweep, trial):
        cfg = trial.config
        draw = cfg.problem.seed
        rng = np.random.default_rng([self.seed, draw, cfg.L, cfg.M, cfg.D])
        factor = float(np.exp(self.draw_sd * np.random.default_rng([self.seed, draw]).standard_normal()))
        true = float(self.law(cfg.L, cfg.M, cfg.D)) * factor
        columns = cfg.columns()
        wall = 1e-4 + 1e-6 * cfg.L * cfg.M * cfg.D * len(cfg.seeds)
        rows = []
        errs, grams = self._seed_errors(cfg, draw, factor, true, rng)
        for i, seed in enumerate(cfg.seeds):
            err = errs[i]
            for step in range(cfg.steps + 1):
                scale = (step + 1) / (cfg.steps + 1)
                e = err * scale
                gram = None if grams is None else [float(v) * scale**2 for v in grams[i]]
                rows.append({**columns, "ref_key": trial.ref_key, "ref_kind": "mean_ode", "seed": seed, "step": step,
                             "err_out": e, "err_hidden": e, "gram_out": gram, "gram_hidden": gram,
                             "loss": 1.0, "ref_loss": 1.0,
                             "ref_err_out": self.ref_err, "ref_err_hidden": self.ref_err, "feature_update": 0.4,
                             "lin_ratio": 0.3, "output_change": 0.6, "weight_change": 0.1, "status": "ok",
                             "flags": "", "device": "cpu", "wall_s": wall})
        row = trial_row_from_metrics(rows, config_json=json.dumps({"L": cfg.L}),
                                     started_at=dt.datetime.now(dt.timezone.utc))
        self.store.write_trial(sweep, trial.trial_key, rows, row)
        self.written.append(trial.trial_key)


__all__ = ["PlantedRunner", "TermsLaw", "free_law"]
