"""An adaptive sweep's rounds: their ids, their log in the store (the ``rounds`` kind: the points
each round chose and why, the targets' CIs once it is done), what ``explorer status`` shows of
it, and the loop's result."""
from __future__ import annotations

import signal
from dataclasses import dataclass, field

import pandas as pd

from store import Store

from ...analysis.data import stored_round_rows
from ...analysis.fitting import positive_parameters, target_lines
from .selection import Candidate, Choice


def round_id(number: int) -> str:
    """The store key of round ``number``: ``round-0003``."""
    return f"round-{number:04d}"


@dataclass
class AdaptiveResult:
    """Where an adaptive sweep stands after a run of the loop (read back from the store)."""

    name: str
    store: str
    rounds: int = 0  # rounds recorded (planned or done)
    done: int = 0  # rounds done
    trials: int = 0  # trials chosen so far
    candidates: int = 0  # trials of the candidate grid
    spent_cost: float = 0.0  # predicted single-core seconds (selection.COST_UNIT) of the chosen trials
    budget_cost: float = 0.0
    full_cost: float = 0.0
    wall_s: float = 0.0  # sum of the sweep's trials' wall_s
    targets: dict = field(default_factory=dict)  # parameter -> (estimate, ci_low, ci_high)
    halfwidth: float = float("nan")
    positive: frozenset = frozenset()  # the law's positive constants: their half-widths are relative
    stop_reason: str | None = None
    interrupted: int | None = None  # the signal that stopped a round's trials
    open_round: int | None = None  # the oldest round the log still has planned (a later one may be queued)
    missing: int = 0  # trials of the current round without rows
    prior: int = 0  # candidate trials in the store that no round chose (an earlier plain sweep): counted as spent
    failed: int = 0  # candidate trials recorded failed: counted as spent, in no fit, never retried
    resume: str | None = None

    @property
    def exit_code(self) -> int:
        """0 when the loop stopped (targets reached or budget spent), 128 + signal when a signal
        stopped it, 1 when a round's trials are missing (run the command again)."""
        if self.interrupted is not None:
            return 128 + int(self.interrupted)
        return 0 if self.stop_reason is not None and not self.missing else 1

    def summary(self) -> str:
        """A few lines for the terminal."""
        frac = self.spent_cost / self.full_cost if self.full_cost else float("nan")
        lines = [f"adaptive sweep {self.name}: {self.done} round(s) done of {self.rounds}, {self.trials}/"
                 f"{self.candidates} candidate trials run; compute {frac:.1%} of the full grid's predicted seconds "
                 f"(budget {self.budget_cost / self.full_cost if self.full_cost else float('nan'):.0%}), "
                 f"trials' wall time {self.wall_s:.1f}s",
                 f"store: {self.store}"]
        if self.prior:
            lines.append(f"{self.prior} trial(s) were in the store before the loop (an earlier sweep of this name): "
                         "they enter the fit and count in the compute spent")
        if self.failed:
            lines.append(f"{self.failed} trial(s) failed: their cost counts as spent, they enter no fit and the "
                         "loop does not retry them")
        lines += target_lines(self.targets, self.halfwidth, self.positive)
        if self.stop_reason:
            lines.append(f"stopped: {self.stop_reason}")
        elif self.interrupted is not None or self.missing:
            again = f": {self.resume}" if self.resume else ""
            open_round = self.open_round if self.open_round is not None else max(self.rounds - 1, 0)
            if self.interrupted is not None:
                lines.append(f"interrupted by {signal.Signals(self.interrupted).name} in round {open_round} "
                             f"({self.missing} of its trials without rows); to resume, run the same command again{again}")
            else:
                lines.append(f"round {open_round} is not finished ({self.missing} trials without rows); "
                             f"run the same command again to resume{again}")
        return "\n".join(lines)


def read_rounds(store: Store, sweep: str) -> pd.DataFrame:
    """The sweep's ``rounds`` rows (empty frame when it has none), sorted by round."""
    if sweep not in store.sweeps() or not store.has_kind(sweep, "rounds"):  # no query for a kind not there
        return pd.DataFrame()
    return stored_round_rows(store, sweep).to_pandas()


def point_log_rows(choices: list[Choice] | list[Candidate], reason: str) -> list[dict]:
    rows = []
    for item in choices:
        c = item.candidate if isinstance(item, Choice) else item
        rows.append({"entry": "point", "trial_key": c.trial_key, "L": c.L, "M": c.M, "D": c.D,
                     "alpha": float(c.alpha), "problem_seed": c.problem_seed,
                     "gain_per_cost": item.gain_per_cost if isinstance(item, Choice) else float("nan"),
                     "predicted_cost": c.cost,
                     "predicted_wall_s": item.predicted_wall_s if isinstance(item, Choice) else float("nan"),
                     "parameter": None, "estimate": None, "ci_low": None, "ci_high": None, "halfwidth": None,
                     "reason": reason})
    return rows


def target_log_rows(targets: dict, halfwidth: float, reason: str) -> list[dict]:
    return [{"entry": "target", "trial_key": None, "L": None, "M": None, "D": None, "alpha": None,
             "problem_seed": None, "gain_per_cost": None, "predicted_cost": None, "predicted_wall_s": None,
             "parameter": name, "estimate": est, "ci_low": lo, "ci_high": hi, "halfwidth": halfwidth,
             "reason": reason} for name, (est, lo, hi) in targets.items()]


def adaptive_status(store: Store, sweep: str) -> list[str]:
    """Lines for ``explorer status`` of a sweep with rounds: the current round, the targets' CIs
    after the last done round, the budget spent (predicted and measured seconds), why it stopped. Empty when
    the sweep has no rounds."""
    rounds = read_rounds(store, sweep)
    if rounds.empty:
        return []
    last = rounds[rounds["round"] == rounds["round"].max()]
    head = last.iloc[0]
    points = rounds[rounds["entry"] == "point"].drop_duplicates("trial_key")
    statuses = store.trial_statuses(sweep)
    done_points = sum(1 for k in last.loc[last["entry"] == "point", "trial_key"] if k in statuses)
    n_last = int((last["entry"] == "point").sum())
    wall = sum(v for v in store.trial_column(sweep, "wall_s").values() if v is not None)
    lines = [f"adaptive: round {int(head['round'])} {head['state']} ({done_points}/{n_last} of its trials have rows); "
             f"{len(points)} trials chosen; compute {head['spent_cost'] / head['full_cost']:.1%} of the full grid "
             f"(budget {head['budget_cost'] / head['full_cost']:.0%}, in predicted seconds), trials' wall time {wall:.1f}s"]
    targets = rounds[(rounds["entry"] == "target") & (rounds["state"] == "done")]
    if not targets.empty:
        at = targets[targets["round"] == targets["round"].max()]
        lines.append(f"  targets after round {int(at['round'].iloc[0])} ({head['form']} law):")
        lines += ["  " + line for line in target_lines(
            {r.parameter: (r.estimate, r.ci_low, r.ci_high) for r in at.itertuples()}, float(at["halfwidth"].iloc[0]),
            positive_parameters(str(head["form"])))]
    stops = rounds["stop_reason"].dropna()
    if len(stops):
        lines.append(f"  stopped: {stops.iloc[-1]}")
    return lines


__all__ = ["AdaptiveResult", "adaptive_status", "point_log_rows", "read_rounds", "round_id", "target_log_rows"]
