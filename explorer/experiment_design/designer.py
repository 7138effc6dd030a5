"""``explorer design`` and ``explorer.design``: read the pilot, search the designs, say what the
chosen one will give and cost and what it rests on, and write it as a spec.

    import explorer
    result = explorer.design("demo", {"a": 0.2, "b": 0.05}, store="results", out="d.toml")
    print("\\n".join(result.lines()))
"""
from __future__ import annotations

import datetime as dt
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..formatting import shell_word
from .design_search import DesignError, Limits, SearchResult, TARGETS, draw_spread, search
from .design_model import PilotModel, pilot_model
from .design_record import record_rows, write_record
from .design_spec import check_out, problem_seeds, spec_data, spec_text, write_text


@dataclass
class DesignResult:
    """The chosen design and everything ``lines`` prints."""

    model: PilotModel
    targets: dict
    limits: Limits
    found: SearchResult
    name: str
    spec: str  # the spec's TOML text
    out: str | None = None
    record_not_written: str | None = None  # why the targets' record is not in the store (None: written, or no --out)

    @property
    def chosen(self):
        return self.found.best

    def assumptions(self) -> list[str]:
        m, c = self.model, self.found.best.candidate
        out = [f"the pilot's laws: bias = ({m.c1:.3g} + {m.c3:.3g} D/M) L^-{m.a:.3g}, fluctuation = "
               f"{m.c2:.3g} (D/(LM))^{m.b:.3g}, errors of {m.n_eff:.3g} independent entries"]
        if not m.a_measured:
            out.append(f"the pilot does not measure a: the theory's a = {m.a:g} is assumed, and the bias level is "
                       "fitted to every pilot point's bias with that slope")
        beyond = []
        if max(c.Ls) > max(m.Ls):
            beyond.append(f"L up to {max(c.Ls)} (pilot <= {max(m.Ls)})")
        if max(c.Ms) > max(m.Ms):
            beyond.append(f"M up to {max(c.Ms)} (pilot <= {max(m.Ms)})")
        if max(c.Ls) * max(c.Ms) > max(m.Ls) * max(m.Ms):
            beyond.append(f"L*M up to {max(c.Ls) * max(c.Ms)} (pilot <= {max(m.Ls) * max(m.Ms)})")
        if c.seeds > m.seeds:
            beyond.append(f"{c.seeds} seeds (pilot {m.seeds}: the noise model scales with the seeds)")
        if beyond:
            out.append("extrapolates the pilot's laws to " + ", ".join(beyond))
        out += self.draw_lines()
        out.append(f"the reference's error scales from the pilot's {m.ref_depth} x {m.ref_width} particles "
                   f"({m.ref_sampling:.3g} sampling, {m.ref_discretization:.3g} Euler) like 1/sqrt(particles) and "
                   "1/depth")
        out.append("D is held at the pilot's value: the constants belong to the limit at that D")
        return out

    def draw_lines(self) -> list[str]:
        """Where the exponents' spread between problem draws (tau) comes from: the pilot's per-draw
        fits, or the documented default (``DEFAULT_DRAW_SPREAD``), said either way."""
        from .design_search import DEFAULT_DRAW_SPREAD

        m, draws = self.model, self.found.best.candidate.draws
        measured = [n for n in TARGETS if m.tau_measured.get(n)]
        assumed = [n for n in TARGETS if n not in measured]
        out = []
        if measured:
            out.append("the exponents' spread between problem draws, from the pilot's per-draw fits: "
                       + ", ".join(f"{n} {m.tau[n]:.3g}" for n in measured))
        if assumed:
            why = ("the pilot has one problem draw" if len(m.draws) < 2 else
                   "the pilot's per-draw fits do not measure " + " and ".join(assumed))
            out.append(f"{why}: the exponents' spread between draws is not measured; the documented default "
                       + ", ".join(f"{n} {DEFAULT_DRAW_SPREAD[n]:g}" for n in assumed)
                       + " is assumed (docs/design.md, \"Draws\"; another problem may spread more or less)"
                       + (": with one draw it does not enter the interval, which covers the seeds' noise only, as "
                          "the pilot's does; --min-draws designs over several" if draws == 1 else ""))
        return out

    def lines(self) -> list[str]:
        from ..config.cost_model import PROCESS_BYTES
        from ..formatting import format_bytes, format_seconds

        best, m = self.found.best, self.model
        c, p = best.candidate, best.prediction
        grid = len(c.Ls) * len(c.Ms)
        lines = [f"design from pilot {m.sweep} ({m.points} points, {len(m.draws)} draw(s), {m.seeds} seeds; "
                 f"decomposed law): {self.found.considered} candidate designs, the cheapest that meets every target",
                 f"grid: L = {list(c.Ls)}, M = {list(c.Ms)}, D = [{c.D}]: {grid} points x {c.draws} problem draw(s) "
                 f"{problem_seeds(m, c.draws)}, {c.seeds} seeds each",
                 f"reference: {c.ref_depth} x {c.ref_width} particles, {m.ref_replicas} replicas, one per draw; "
                 f"predicted error {p.ref_err:.3g} (the smallest error the fit uses is >= 3x it)",
                 "predicted 95% half-widths (decomposed fit, "
                 + (f"t({c.draws - 1}) over draws" if c.draws > 1 else f"t({c.seeds - 1}), seeds' jackknife") + "):"]
        for name, target in self.targets.items():
            lines.append(f"  {name}: {p.halfwidth[name]:.3g} (target {target:g})")
        lines += [f"  bias resolved at {p.bias_points} of {grid} points per draw",
                  f"estimated compute: {p.seconds / 3600:.3g} CPU-hours single-core ({format_seconds(p.seconds)}: "
                  f"trials {format_seconds(p.trial_seconds)}, references {format_seconds(p.reference_seconds)})",
                  f"peak memory: {format_bytes(p.peak_bytes)} ({p.largest}) + {format_bytes(PROCESS_BYTES)} per worker",
                  "assumptions:"]
        lines += [f"  {line}" for line in self.assumptions()]
        if self.out:
            out = shell_word(self.out)  # quoted, and escaped where the name holds a control or bidi character
            lines.append(f"wrote {out}: explorer sweep {out}, then explorer fit --sweep {self.name}")
            lines.append(f"note: the targets are not in the store ({self.record_not_written}); explorer fit will not "
                         "compare with them" if self.record_not_written else
                         f"recorded the targets in the pilot's store (kind fits, form design, sweep {self.name}): "
                         "explorer fit on the designed sweep there prints each against what it achieved")
        return lines


def parse_targets(items) -> dict:
    """``["a=0.2", "b=0.05"]`` (or a mapping) -> {"a": 0.2, "b": 0.05}.

    Raises:
        DesignError: a malformed item, a name other than a and b, a half-width that is not positive.
    """
    pairs = items.items() if isinstance(items, Mapping) else [_split(item) for item in items]
    out = {}
    for name, value in pairs:
        if name not in TARGETS:
            raise DesignError(f"target {name!r}: a design predicts the exponents {' and '.join(TARGETS)} of the "
                              "decomposed law; give --target a=HALFWIDTH or b=HALFWIDTH")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise DesignError(f"target {name}: expected a number for its half-width, got {value!r}") from None
        if not value > 0 or not math.isfinite(value):
            raise DesignError(f"target {name}: the 95% half-width must be a positive number, got {value:g}")
        out[name] = value
    if not out:
        raise DesignError("no target: give at least one --target a=HALFWIDTH or b=HALFWIDTH")
    return out


def _split(item: str) -> tuple[str, str]:
    match = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=\s*(\S+)\s*", str(item))
    if not match:
        raise DesignError(f"target {item!r}: expected NAME=HALFWIDTH, e.g. a=0.2")
    return match.group(1), match.group(2)


def design(sweep: str, targets, store="results", budget: float | None = None, out: str | os.PathLike | None = None,
           max_lm: int | None = None, memory_bytes: int | None = None, min_draws: int = 1,
           name: str | None = None, force: bool = False) -> DesignResult:
    """The cheapest sweep predicted to measure every target, from the pilot sweep ``sweep``.

    Args:
        targets: {"a": 0.2, "b": 0.05} or ["a=0.2", ...]: 95% half-widths of the exponents.
        store: the pilot's store (a path, URI or Store).
        budget: the most single-core CPU-hours the designed sweep may cost (None: no limit).
        out: write the designed spec there (TOML, with comments), atomically; a file there that
            design did not write is refused unless ``force``, and anything that is not a
            regular file always (``design_spec.check_out``), before the search runs.
        max_lm: the largest L*M a trial may have (default ``design.DEFAULT_MAX_LM``).
        memory_bytes: the memory a trial may use (default: this machine's).
        min_draws: at least this many problem draws.
        name: the designed sweep's name (default ``<pilot>_design``).

    Raises:
        DesignError: a target out of reach (the best half-width and what blocks it), bad targets.
        DesignOutputError: an ``out`` that may not be written (its folder missing or read-only,
            someone else's file, not a regular file).
        PilotError: a pilot that cannot ground a design. SweepDataError: a sweep the store lacks.
    """
    from .design_search import DEFAULT_MAX_LM, DRAWS
    from ..config.host_memory import physical_memory_bytes
    from ..store_access import open_store
    from ..config.spec import parse_spec

    wanted = parse_targets(targets)
    if budget is not None and not budget > 0:
        raise DesignError(f"--budget must be a positive number of CPU-hours, got {budget:g}")
    if not 1 <= min_draws <= max(DRAWS):
        raise DesignError(f"--min-draws must be from 1 to {max(DRAWS)}, got {min_draws}")
    if out:
        check_out(out, force)  # before the search: a refused --out costs the user no wait
    st = open_store(store, sweep=sweep)
    model = pilot_model(st, sweep)
    largest = max(model.Ls) * max(model.Ms)
    if max_lm is not None and max_lm < largest:
        raise DesignError(f"--max-lm {max_lm} is below the pilot's largest L*M ({largest}): a design extends the "
                          "pilot's grid, so that it measures the exponents over the range the pilot's laws hold on")
    model.tau, model.tau_measured = draw_spread(model)
    limits = Limits(budget, memory_bytes or physical_memory_bytes(), max_lm or DEFAULT_MAX_LM, min_draws)
    found = search(model, wanted, limits)
    if found.best is None:
        raise DesignError(_refusal(wanted, found, limits))
    name = name or f"{sweep}_design"
    data = spec_data(model, found.best.candidate, name)
    parse_spec(data)  # the written spec must load as it is
    result = DesignResult(model, wanted, limits, found, name, "", os.fspath(out) if out else None)
    result.spec = spec_text(data, _header(result), _notes(result))
    if out:
        write_text(out, result.spec, force)
        c, p = found.best.candidate, found.best.prediction
        described = (f"designed by explorer design from pilot {sweep}: L = {list(c.Ls)}, M = {list(c.Ms)}, D = {c.D}, "
                     f"{c.seeds} seeds x {c.draws} draw(s), written to {result.out}")
        rows = record_rows(name, wanted, p.halfwidth, len(c.Ls) * len(c.Ms) * c.draws, described)
        result.record_not_written = write_record(st, name, rows)
    return result


def _shown(value: float, target: float) -> str:
    """``value`` to 3 significant digits, or more when 3 would print it as ``target`` (0.01494
    against a target of 0.0149)."""
    for digits in range(3, 8):
        shown = f"{value:.{digits}g}"
        if value == target or float(shown) != float(f"{target:.{digits}g}"):
            return shown
    return shown


def _refusal(targets: dict, found: SearchResult, limits: Limits) -> str:
    """The refusal: the targets out of reach even alone, with the best each can reach; when each is
    reachable alone but no design reaches them together, what the closest design reaches together."""
    within = f" within {limits.budget_hours:g} CPU-hour(s)" if limits.budget_hours is not None else ""
    alone = [name for name, hw in targets.items() if not found.reachable[name] <= hw]
    if not alone:  # each alone is reachable: it is their combination that is not
        asked = " and ".join(f"{name} = {hw:g}" for name, hw in targets.items())
        best = ", ".join(f"{name} {_shown(found.reachable[name], targets[name])}" for name in targets)
        closest = ""
        if found.together is not None:
            closest = (": together the closest design reaches "
                       + " with ".join(f"{name} = {_shown(found.together[name], targets[name])}" for name in targets))
        return (f"no design{within} reaches {asked} together (each alone is reachable: {best}){closest}; "
                f"limited by {found.blocked_by}")
    parts = []
    for name in alone:
        best = found.reachable[name]
        shown = _shown(best, targets[name]) if math.isfinite(best) else "none (no design within the limits measures it)"
        parts.append(f"{name} = {targets[name]:g} (best reachable {shown})")
    return f"no design{within} reaches {', '.join(parts)}; limited by {found.blocked_by}"


def _header(result: DesignResult) -> list[str]:
    c, p = result.found.best.candidate, result.found.best.prediction
    asked = " ".join(f"--target {n}={v:g}" for n, v in result.targets.items())
    budget = f" --budget {result.limits.budget_hours:g}" if result.limits.budget_hours is not None else ""
    budget += f" --min-draws {result.limits.min_draws}" if result.limits.min_draws > 1 else ""
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    return [f"Designed by `explorer design --sweep {result.model.sweep} {asked}{budget}` ({today}):",
            "the cheapest sweep whose decomposed fit is predicted to give these 95% half-widths:",
            *[f"  {n}: {p.halfwidth[n]:.3g} (target {v:g})" for n, v in result.targets.items()],
            f"Estimated compute {p.seconds / 3600:.3g} CPU-hours single-core, {c.draws} reference(s).",
            "It rests on:", *[f"  {line}" for line in result.assumptions()],
            f"Run it: explorer sweep {shell_word(result.out) if result.out else 'THIS_FILE'}; then explorer fit "
            f"--sweep {result.name}"]


def _notes(result: DesignResult) -> dict:
    p = result.found.best.prediction
    return {
        "reference": [f"the cheapest resolution whose predicted error ({p.ref_err:.3g}) leaves the smallest error "
                      "the fit uses 3x above it; one per problem draw"],
        "grid": [f"bias resolved at {p.bias_points} points per draw; more seeds or draws narrow both exponents, "
                 "wider M the bias's columns, a wider L*M range b",
                 "as a candidate grid for --adaptive, add an [adaptive] table (targets, halfwidth, budget)"],
    }


__all__ = ["DesignResult", "design", "parse_targets"]
