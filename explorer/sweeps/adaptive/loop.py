"""Adaptive sweeps (``explorer sweep SPEC --adaptive``): run the [grid] as a candidate set, a round
at a time, until the targets' CIs are narrow enough or the budget is spent.

The loop (docs/sweeps.md, "Adaptive sweeps"):

0. Round 0 is a space-filling initial design over the candidates (``selection.initial_design``)
   spread over the problem draws, costing at most 40% of the budget.
1. A round is first written to the store's ``rounds`` log as *planned* (its chosen points, each
   with its expected CI gain per predicted second), then its trials are queued on the runner
   (``session_runner.SessionRunner``: one Ray session and one pool of workers for every round;
   the scheduling is ``driver``'s: with a background runner the next round is queued
   while a round's last points run, so a round is a logging unit, not a barrier).
2. When every trial of the round has its rows, the law is refitted with the two-level bootstrap
   on the trials of the rounds up to it (``explorer.analysis.fitting.fit_sweep``, with the law's own method; the metric rows of the trials
   already read are kept, ``row_cache``, so a refit reads only the trials
   finished since the last one and gives what a refit from scratch gives), the next batch is chosen
   (``stopping.next_choice``, ``selection.choose_batch``), and the round is rewritten as *done* with the targets'
   estimates and CIs, and why the loop stops if it does: every target within ``halfwidth``
   (absolute for exponents, relative for positive constants: half the width of the CI of log c,
   the units the selection ranks in; ``target_halfwidth``) in two consecutive rounds with each
   estimate inside the previous round's interval (``unconfirmed``: one lucky round does not stop
   the loop), the budget spent, or no candidate left that is expected to help. The fit's per-draw
   fits and pre-asymptotic checks, which decide nothing, run only for the warnings of a stop on
   reached targets. A round
   is never recorded done before its trials are all in the store.
3. Rerunning the same command resumes: the planned rounds are completed first (their finished
   trials are not rerun), a done round without a stop reason is followed by the next, a stopped
   loop only reports.

Compute is counted in predicted single-core seconds per trial (``config.cost_model.trial_seconds``,
the cost model of the dry run and the packer; ``selection.COST_UNIT``, recorded in the rounds log),
against ``budget`` times the full grid's: a choice never takes the spending past the budget. Wall
time (sum of the trials' ``wall_s``) is reported beside it and corrects the selection's wall
predictions to this machine.
"""
from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np
import pandas as pd

from store import SCHEMA_VERSION, Store

from ...analysis.fitting import positive_parameters
from ...config.planning import plan
from ...config.reference_kinds import kind_named
from ...config.sections import SweepSpec
from ...config.spec_rules import adaptive_targets
from ...errors import FitError, SweepDataError, spec_error
from ...signals import SignalGuard, resume_command
from . import stopping
from .driver import BlockingRunner, RoundDriver
from .rounds import AdaptiveResult, point_log_rows, round_id, target_log_rows
from .row_cache import SweepRows
from .runners import RoundRunner, TrialRunner
from .selection import COST_UNIT, INITIAL_SHARE, Candidate, WallModel, candidates_of, initial_design
from .trial_reads import TrialReads

MIN_INITIAL = 8  # default initial design: 2 x batch, at least this many points
FIT_SEED = 0  # every round's bootstrap uses the same seed: a resumed loop makes the same choices


# --- the loop --------------------------------------------------------------------------------


class AdaptiveLoop:
    """One run of the loop over a store: the spec's candidates, what is spent, the log."""

    def __init__(self, spec: SweepSpec, store: Store, runner: TrialRunner | RoundRunner | None,
                 log: Callable[[str], None]):
        self.spec, self.store, self.runner, self.log = spec, store, runner, log
        self.guard: SignalGuard | None = None  # run_adaptive's: a signal stops the loop between its steps
        self.ad = spec.adaptive
        self.reads = TrialReads(store, spec.name)  # the trials' statuses and wall times, read once per step
        self.fitted_keys: Collection[str] | None = None  # the trials of the last fit
        # the sweep's metrics rows, read once per trial (None: every refit reads the store afresh)
        self.rows: SweepRows | None = SweepRows(store, spec.name)
        if not kind_named(spec.reference.kind).measures_error:
            raise spec_error("[reference] kind", f"{spec.reference.kind} measures no error, and an adaptive sweep "
                             "fits the error's law; choose a kind with a reference")
        varying = [axis for axis, values in spec.axes().items() if axis not in ("L", "M", "D") and len(values) > 1]
        if varying:
            raise spec_error(f"[grid] {varying[0]}", "an adaptive sweep fits one slice; it may vary only L, M, D "
                             "and problem_seeds (run one adaptive sweep per value)")
        self.targets = adaptive_targets(self.ad)
        self.positive = positive_parameters(self.ad.form)
        self.cands = candidates_of(plan(spec, SCHEMA_VERSION).trials)
        self.by_key = {c.trial_key: c for c in self.cands}
        self.full = sum(c.cost for c in self.cands)
        self.budget = self.ad.budget * self.full
        # never more points than candidates: each point's cap is the design's cap / initial
        self.initial = min(self.ad.initial or max(MIN_INITIAL, 2 * self.ad.batch), len(self.cands))
        self._check_identifiable()

    def _check_identifiable(self) -> None:
        """Refuse a grid on which the law, or one of the targets, cannot be fitted at all: no
        subset of it could ever reach the targets (a single L for the free law's ``a``)."""
        from ...analysis.laws import resolve_form, unidentified_terms

        law = resolve_form(self.ad.form)[1]
        frame = pd.DataFrame({"L": [c.L for c in self.cands], "M": [c.M for c in self.cands],
                              "D": [c.D for c in self.cands]})
        try:
            fitted, dropped = unidentified_terms(law, frame)
        except FitError:
            held = ", ".join(f"{v} = {frame[v].iloc[0]}" for v in ("L", "M", "D") if frame[v].nunique() == 1)
            raise spec_error("[grid]", f"no term of the {self.ad.form} law varies on this grid ({held}); an adaptive "
                             "sweep needs a grid that varies the law's variables (or run it as a plain sweep)") from None
        for name in self.targets:
            if name in dropped:
                raise spec_error("[adaptive] targets", f"{name} is {dropped[name]}, so no point of this grid measures "
                                 f"it; sweep more values there, or choose targets among "
                                 f"{', '.join(p for p in fitted.parameters)}")
        need = len(fitted.parameters) + 1
        if len(self.cands) < need:
            raise spec_error("[grid]", f"{len(self.cands)} candidate trial(s), but the {self.ad.form} law has "
                             f"{len(fitted.parameters)} parameters on this grid and its fit needs at least {need} "
                             "points; sweep more values (or run it as a plain sweep)")

    def initial_plan(self, prior: Collection[str] = ()) -> list[Candidate]:
        """Round 0's points on a store without rounds: the space-filling design within its cap
        (``prior``: candidate trials already in the store, taken as chosen and paid for).

        Raises:
            SpecError: the budget pays for no initial point.
        """
        prior_cost = float(sum(self.by_key[k].cost for k in prior))
        cap = min(INITIAL_SHARE * self.budget, self.budget - prior_cost)
        design = initial_design(self.cands, self.initial, cap, set(prior), self.draw_counts(prior))
        if not design and prior_cost:
            raise spec_error("[adaptive] budget", f"the {len(prior)} trial(s) of this sweep already in the store "
                             f"cost {prior_cost / self.full:.1%} of the full grid, so a budget of "
                             f"{self.ad.budget:.0%} pays for no initial point; raise budget, or use another sweep name")
        if not design:
            raise spec_error("[adaptive] budget", f"{self.ad.budget:g} of the grid's cost cannot pay for any "
                             f"initial point: the initial design may spend {INITIAL_SHARE:.0%} of the budget, "
                             f"each of its {self.initial} points at most {cap / self.initial:.4g} ({COST_UNIT}), "
                             f"and the cheapest candidate costs {min(c.cost for c in self.cands):.4g}; raise "
                             "budget (at most 1), lower initial, or sweep more small points")
        return design

    def draw_counts(self, keys: Collection[str]) -> dict:
        """Problem draw -> how many of the candidates ``keys`` it holds (the designs spread the draws)."""
        counts: dict = {}
        for k in keys:
            counts[self.by_key[k].problem_seed] = counts.get(self.by_key[k].problem_seed, 0) + 1
        return counts

    def chosen(self, rounds: pd.DataFrame) -> list[str]:
        if rounds.empty:
            return []
        points = rounds[rounds["entry"] == "point"]
        return [k for k in dict.fromkeys(points["trial_key"]) if k in self.by_key]

    def spent(self, keys: Collection[str]) -> float:
        """Cost (``COST_UNIT``) of the chosen ``keys`` and of every candidate trial already in the store
        (one a plain sweep of the same name ran: it enters the fit, so it counts as spent)."""
        return float(sum(self.by_key[k].cost for k in set(keys) | set(self.reads.statuses()) if k in self.by_key))

    def prior(self, keys: Collection[str]) -> list[str]:
        """Candidate trials in the store that no round chose (from an earlier plain sweep)."""
        return [k for k in self.reads.statuses() if k in self.by_key and k not in set(keys)]

    def failed(self) -> list[str]:
        """Candidate trials recorded failed: spent, in no fit, never retried by the loop."""
        return [k for k, v in self.reads.statuses().items() if v == "failed" and k in self.by_key]

    def wall(self) -> tuple[float, WallModel]:
        walls = {k: v for k, v in self.reads.walls().items() if k in self.by_key and v is not None}
        model = WallModel.fit(np.array([self.by_key[k].cost for k in walls]), np.array(list(walls.values()), float))
        return float(sum(walls.values())), model

    def fit(self, keys: Collection[str] | None = None, warnings: bool = False):
        """The law fitted to the sweep's trials so far (only those of ``keys`` when given: the
        rounds up to one), a FitResult, or the FitError's text.

        ``warnings``: also the per-draw fits and the pre-asymptotic checks, whose warnings only
        the stop reason quotes (``stop_warnings``); the estimates, CIs and samples that decide are
        the same without them, at half the cost of a refit.
        """
        from ...analysis.fitting import fit_sweep

        def only(frame: pd.DataFrame) -> pd.DataFrame:
            """The rows of the trials of ``keys`` (a trial is a grid point at one problem draw)."""
            if keys is None:
                return frame
            if "trial_key" in frame:
                kept = frame[frame["trial_key"].isin(set(keys))]
            else:
                cols = [c for c in ("L", "M", "D", "problem_seed") if c in frame]
                points = {tuple(getattr(self.by_key[k], c) for c in cols) for k in keys if k in self.by_key}
                kept = frame[[p in points for p in zip(*(frame[c] for c in cols))]]
            kept = kept.reset_index(drop=True)
            kept.attrs = dict(frame.attrs)
            return kept

        con = self.connect()
        try:
            self.fitted_keys = keys
            return fit_sweep(con, self.spec.name, self.ad.form, n_boot=self.ad.resamples, seed=FIT_SEED, hold=False,
                             per_draw=warnings, range_check=warnings, select=only)
        except (FitError, SweepDataError) as exc:
            return str(exc)
        except (np.linalg.LinAlgError, ValueError) as exc:  # a degenerate early design: more points first
            return f"the fit failed ({type(exc).__name__}: {exc})"
        finally:
            con.close()

    def load_fit(self) -> None:
        """Import the fit's modules (scipy among them: about a second) while the first trials
        run, instead of in the first refit, when the workers have nothing else queued."""
        from ...analysis.fitting import data_and_fitter

        data_and_fitter(self.ad.form)

    def connect(self):
        """A connection whose ``metrics`` are the sweep's rows: the kept rows of its finished
        trials (``row_cache``: only the trials finished since the last refit are read), or the
        store's view when ``rows`` is None."""
        if self.rows is None:
            return self.store.connect(sweep=self.spec.name, views=("metrics",))
        walls = self.reads.walls()
        return self.rows.connection({k: (v, walls.get(k)) for k, v in self.reads.statuses().items()})

    def stop_warnings(self, result) -> list[str]:
        """The warnings of ``result``'s fit with the per-draw fits and the pre-asymptotic checks on
        (refitted on the same trials: the loop fits without them)."""
        full = self.fit(self.fitted_keys, warnings=True)
        return list(full.warnings) if not isinstance(full, str) else list(result.warnings)

    # -- writing the log
    def write(self, number: int, state: str, rows: list[dict], keys: list[str], stop: str | None = None) -> None:
        wall_s, _ = self.wall()
        common = {"round": number, "state": state, "form": self.ad.form, "spent_cost": self.spent(keys),
                  "budget_cost": self.budget, "full_cost": self.full, "cost_unit": COST_UNIT, "spent_wall_s": wall_s,
                  "stop_reason": stop}
        self.store.write_round(self.spec.name, round_id(number), [{**common, **r} for r in rows])

    # -- deciding (``stopping``)
    def next_choice(self, result, keys: list[str], number: int, count: int | None = None
                    ) -> tuple[list, str, str | None]:
        """(choices, reason, stop_reason) after round ``number`` (``stopping.next_choice``)."""
        return stopping.next_choice(self, result, keys, number, count)

    def recorded_points(self, point_rows: pd.DataFrame) -> list[dict]:
        """A round's point rows as read back, ready to be written again (the done record)."""
        out = []
        for r in point_rows.itertuples():
            if r.trial_key not in self.by_key:  # the spec no longer defines it
                continue
            row = point_log_rows([self.by_key[r.trial_key]], r.reason)[0]
            row.update(gain_per_cost=float(r.gain_per_cost), predicted_wall_s=float(r.predicted_wall_s))
            out.append(row)
        return out

    def target_rows(self, targets: dict, reason: str) -> list[dict]:
        return target_log_rows(targets, self.ad.halfwidth, reason)

    def note_failed(self, number: int, round_keys: list[str]) -> None:
        now = self.reads.statuses()
        failed = [k for k in round_keys if now.get(k) == "failed"]
        if failed:
            self.log(f"round {number}: {len(failed)} trial(s) failed; their cost counts as spent, they enter no "
                     "fit and are not retried")

    def run(self, runner: TrialRunner | RoundRunner) -> AdaptiveResult:
        """Run (or resume) the rounds through ``runner`` (``driver``; a ``TrialRunner`` is driven a
        round at a time)."""
        self.reads.forget()
        result = AdaptiveResult(name=self.spec.name, store=self.store.uri, candidates=len(self.cands),
                                budget_cost=self.budget, full_cost=self.full, halfwidth=self.ad.halfwidth,
                                positive=self.positive)
        if not hasattr(runner, "lookahead"):
            runner = BlockingRunner(runner, self.spec, self.reads.statuses)
        return RoundDriver(self, runner).run(result)

    def signalled(self, result: AdaptiveResult) -> bool:
        """Whether SIGINT or SIGTERM came (recorded by ``run_adaptive``'s guard; never raised
        inside a fit or a Ray call); it is then ``result.interrupted``."""
        if self.guard is None or self.guard.signum is None:
            return False
        result.interrupted = self.guard.signum
        return True

    def finish(self, result: AdaptiveResult, rounds: pd.DataFrame) -> AdaptiveResult:
        result.rounds = int(rounds["round"].nunique()) if not rounds.empty else 0
        result.done = int(rounds.loc[rounds["state"] == "done", "round"].nunique()) if not rounds.empty else 0
        planned = rounds.loc[rounds["state"] == "planned", "round"] if not rounds.empty else pd.Series(dtype=int)
        result.open_round = int(planned.min()) if len(planned) else None
        keys = self.chosen(rounds)
        result.trials = len(keys)
        result.spent_cost = self.spent(keys)
        result.prior = len(self.prior(keys))
        result.failed = len(self.failed())
        result.wall_s, _ = self.wall()
        if not rounds.empty:
            done = rounds[(rounds["state"] == "done") & (rounds["entry"] == "target")]
            if not done.empty:
                last = done[done["round"] == done["round"].max()]
                result.targets = {r.parameter: (r.estimate, r.ci_low, r.ci_high) for r in last.itertuples()}
            stops = rounds["stop_reason"].dropna()
            result.stop_reason = str(stops.iloc[-1]) if len(stops) else None
        return result


def run_adaptive(spec: SweepSpec, store: Store, runner: TrialRunner | RoundRunner,
                 log: Callable[[str], None] = lambda line: None) -> AdaptiveResult:
    """Run (or resume) the adaptive loop of ``spec`` over ``store`` (see the module docstring).

    Args:
        spec: a validated spec; its [grid] is the candidate set, its [adaptive] the rules.
        store: the results store (rounds are logged in its ``rounds`` kind).
        runner: a ``RoundRunner`` (``SessionRunner``: the trials run in the background, the
            next round queued while one ends), or a ``TrialRunner``: ``runner(spec, keys)`` runs
            the trials with those keys and returns (``run.runner.TuneRunner``, ``PlantedRunner``).
        log: receives one line per event (round chosen, done, stop).

    Returns:
        An ``AdaptiveResult`` (``summary()``, ``exit_code``).

    Raises:
        SpecError: a grid that varies axes besides L, M, D and problem_seeds, or a budget that
            pays for no point.
    """
    with SignalGuard() as guard:  # a round's sweep shares it (nested guards): one record for the whole loop
        loop = AdaptiveLoop(spec, store, runner, log)
        loop.guard = guard
        result = loop.run(runner)
    if result.interrupted is not None or result.missing:
        result.resume = resume_command()
    return result


__all__ = ["FIT_SEED", "INITIAL_SHARE", "AdaptiveLoop", "run_adaptive"]
