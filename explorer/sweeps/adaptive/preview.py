"""``explorer sweep SPEC --adaptive --dry-run``: the candidates, the rules, the budget and the
initial design of an adaptive sweep, with the candidates that cannot fit this machine flagged, not
refused (a dry run prices a grid for a larger machine too). Nothing runs, no store is opened. A
grid sweep's dry run is ``explorer.sweeps.run.dry_run``'s."""
from __future__ import annotations

from ...config import host_memory
from ...config.cost_model import trial_memory_bytes
from ...config.estimate import reference_memory_bytes
from ...config.memory_refusal import too_large_lines
from ...config.planning import plan
from ...config.sections import SweepSpec
from ...formatting import format_percent, format_seconds
from .loop import AdaptiveLoop
from .selection import INITIAL_SHARE


def adaptive_dry_run_lines(spec: SweepSpec, embedded: bool = False) -> list[str]:
    """What ``explorer sweep SPEC --adaptive --dry-run`` prints: the candidates, the rules
    (form, targets, halfwidth), the budget in predicted seconds and as a fraction of the full grid, and
    the initial design's points, those a fresh store would run first. ``embedded``: the sweep would
    run on this machine, so the candidates too large for its memory are flagged. Nothing runs, no
    store is opened or written.

    Raises:
        SpecError: as ``run_adaptive`` before anything runs (a grid the law cannot be fitted
            on, a target it cannot measure, a budget that pays for no initial point).
    """
    lines = _plan_lines(spec)
    if embedded:
        lines[-1:-1] = _too_large_lines(spec, host_memory.available_memory_bytes())  # read at the call: tests set it
    return lines


def _too_large_lines(spec: SweepSpec, memory: int) -> list[str]:
    """The candidates an adaptive dry run could choose that would not fit here (flagged)."""
    the_plan = plan(spec)
    return too_large_lines(the_plan, [trial_memory_bytes(t.config) for t in the_plan.trials],
                           [reference_memory_bytes(r.config) for r in the_plan.references], memory)


def _plan_lines(spec: SweepSpec) -> list[str]:
    """The candidates, rules, budget and initial design of ``spec`` (``adaptive_dry_run_lines``)."""
    loop = AdaptiveLoop(spec, None, None, lambda line: None)  # type: ignore[arg-type]  # no store: nothing is read
    ad, cands = loop.ad, loop.cands
    draws = sorted({c.problem_seed for c in cands})
    shape = " x ".join(f"{v} {len({getattr(c, v) for c in cands})}" for v in ("L", "M", "D"))
    consts = [t for t in loop.targets if t in loop.positive]
    units = (f"relative (CI of log) for {', '.join(consts)}, absolute for the rest" if consts and len(consts) < len(loop.targets)
             else "relative, half the width of the CI of log c" if consts else "absolute")
    design = loop.initial_plan()
    cost = sum(c.cost for c in design)
    lines = [f"adaptive sweep {spec.name}: the [grid] is a candidate set of {len(cands)} trials ({shape}; "
             f"{len(draws)} problem draw(s); {spec.grid.seeds} seeds each, {spec.train.steps} steps); only the "
             "trials the loop chooses run",
             f"rules: form {ad.form}, targets {', '.join(loop.targets)}, 95% CI half-width <= {ad.halfwidth:g} "
             f"({units}); batch {ad.batch} per round, {ad.resamples} bootstrap resamples",
             f"budget: at most {format_seconds(loop.budget)} of the full grid's {format_seconds(loop.full)} of "
             f"predicted single-core compute ({ad.budget:.0%}); the initial design at most {INITIAL_SHARE:.0%} of that "
             f"({format_seconds(INITIAL_SHARE * loop.budget)}), each of its {loop.initial} points at most "
             f"{format_seconds(INITIAL_SHARE * loop.budget / loop.initial)}",
             f"round 0 (initial space-filling design): {len(design)} trials, {format_seconds(cost)} predicted "
             f"({format_percent(cost / loop.full)} of the full grid):"]
    lines += [f"  L={c.L} M={c.M} D={c.D} problem_seed={c.problem_seed}  cost {format_seconds(c.cost)}  {c.trial_key}"
              for c in design]
    lines += ["then rounds of up to {} trials chosen by the refitted law, until every target reaches its "
              "half-width or the budget is spent".format(ad.batch),
              "on a store that already has this sweep's rounds, the command resumes them instead "
              f"(explorer status --sweep {spec.name})",
              "nothing run, nothing written (--dry-run)"]
    return lines


__all__ = ["adaptive_dry_run_lines"]
