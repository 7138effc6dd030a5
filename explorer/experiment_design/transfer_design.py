"""Design for transfer (``explorer design --target gamma=0.1`` or ``delta=0.15``): the problem draws
a sweep needs for the transfer law's exponent (gamma across L, delta across M; ``explorer
transfer``) to reach a 95% half-width, from a pilot sweep with an lr or alpha axis.

The pilot's transfer law is fitted with its bootstrap over draws, then seeds; its interval spans
the draws, so its half-width falls as 1/sqrt(draws). Per group (parametrization) the pilot's
half-width h at G draws predicts h sqrt(G / G') at G' draws; the design takes the fewest draws
that bring every group to the target. The designed spec is the pilot's own spec as its user wrote
it (from the pilot's last run record), with the draws extended from the pilot's: its trials on the
pilot's draws are the pilot's own keys only under the pilot's name, so the designed sweep runs
them all. The target and the prediction are recorded for the designed sweep, and ``explorer
transfer`` on it prints the half-width it achieved beside them (``transfer_target_lines``).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from .design_record import record_rows, write_record
from .design_search import DesignError
from .design_spec import check_out, spec_text, write_text

TRANSFER_TARGETS = {"gamma": "L", "delta": "M"}  # exponent -> the axis it runs across
AXES = ("lr", "alpha")
MAX_DRAWS = 256


def _position(target: str, across) -> int:
    """The index of ``target``'s exponent among a transfer fit's parameters (c, then one exponent
    per axis of ``across``, in its order), whatever name the law gives it (gamma across M alone)."""
    return 1 + list(across).index(TRANSFER_TARGETS[target])


def wants_transfer(targets) -> bool:
    """Whether ``targets`` (``["delta=0.15"]`` or a mapping) ask for a transfer exponent."""
    names = targets.keys() if isinstance(targets, Mapping) else [str(t).partition("=")[0].strip() for t in targets]
    return any(name in TRANSFER_TARGETS for name in names)


def parse_transfer_targets(items) -> dict[str, float]:
    pairs = items.items() if isinstance(items, Mapping) else [str(t).partition("=")[::2] for t in items]
    out = {}
    for name, value in pairs:
        name = str(name).strip()
        if name not in TRANSFER_TARGETS:
            raise DesignError(f"target {name!r}: a transfer design predicts gamma (across L) and delta (across M); "
                              "the exponents a and b of the decomposed law are designed on their own")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise DesignError(f"target {name}: expected a number for its half-width, got {value!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise DesignError(f"target {name}: the 95% half-width must be a positive number, got {value:g}")
        out[name] = value
    return out


@dataclass
class TransferDesign:
    """What ``explorer design --target gamma=...`` chose, and what it prints."""

    pilot: str
    name: str
    axis: str
    targets: dict[str, float]
    pilot_draws: list[int]
    draws: list[int]
    predicted: dict[str, float]
    groups: list[tuple[str, str, float]] = field(default_factory=list)  # (group, exponent, pilot half-width)
    spec: str = ""
    out: str | None = None
    record_not_written: str | None = None

    def lines(self) -> list[str]:
        out = [f"design for transfer of {self.axis} from pilot {self.pilot} ({len(self.pilot_draws)} draws): "
               f"{len(self.draws)} problem draws ({self.draws[0]}..{self.draws[-1]})"]
        for group, name, half in self.groups:
            out.append(f"  {name} ({group}): pilot +- {half:.3g} -> predicted +- "
                       f"{half * math.sqrt(len(self.pilot_draws) / len(self.draws)):.3g}")
        for name, target in self.targets.items():
            out.append(f"target {name} +- {target:g}: predicted +- {self.predicted[name]:.3g}")
        out.append("assumes: the interval spans the draws, so its half-width falls as 1/sqrt(draws); the grid, "
                   "seeds and parametrizations are the pilot's")
        if self.out:
            out.append(f"wrote {self.out}: explorer sweep {self.out}, then explorer transfer --sweep {self.name} "
                       f"--axis {self.axis} --across {' --across '.join(sorted({TRANSFER_TARGETS[n] for n in self.targets}))}")
            if self.record_not_written:
                out.append(f"note: its targets are not recorded in the store ({self.record_not_written})")
        else:
            out.append("pass --out SPEC to write it")
        return out


def _given(spec: dict) -> dict:
    """The pilot's spec as its user wrote it: only the keys named in ``given``."""
    given = set(spec.get("given") or ())
    data: dict = {"name": spec.get("name")}
    for section, values in spec.items():
        if isinstance(values, dict) and section not in ("axes",):
            kept = {k: v for k, v in values.items() if f"{section}.{k}" in given}
            if kept:
                data[section] = kept
    return data


def _fits(con, sweep: str, axis: str, across: list[str], n_boot: int, seed: int):
    from ..analysis.hyper import axis_runs, optima, transfer

    found = optima(axis_runs(con, sweep, axis), n_boot=n_boot, seed=seed)
    return found, transfer(found, across)


def design_transfer(sweep: str, targets, store="results", *, out=None, name: str | None = None, force: bool = False,
                    n_boot: int = 200, seed: int = 0, max_draws: int = MAX_DRAWS) -> TransferDesign:
    """The draws that give each transfer exponent its target 95% half-width (module docstring).

    Raises:
        DesignError: a pilot without a run record, without an lr/alpha axis, not varying the target's
            axis, an exponent it does not measure at all, more draws than ``max_draws``.
    """
    from ..store_access import open_store, store_errors

    wanted = parse_transfer_targets(targets)
    name = name or f"{sweep}_design"
    if out is not None:
        check_out(out, force)
    with store_errors():
        st = open_store(store, sweep=sweep)
        runs = st.runs(sweep, last=1)
        if not runs or not runs[-1].spec.get("given"):
            raise DesignError(f"pilot {sweep!r} has no run record with its spec (it was run by an older version): "
                              "run `explorer sweep` on its spec once more (complete trials are not run again)")
        spec = runs[-1].spec
        axes = {c: len(v) for c, v in (spec.get("axes") or {}).items()}
        axis = next((a for a in AXES if axes.get(a, 0) > 1), None)
        if axis is None:
            raise DesignError(f"pilot {sweep!r} varies neither lr nor alpha: a transfer law needs an optimum per slice")
        across = [a for a in ("L", "M") if axes.get(a, 0) > 1]
        for target in wanted:
            if TRANSFER_TARGETS[target] not in across:
                raise DesignError(f"target {target}: pilot {sweep!r} does not vary {TRANSFER_TARGETS[target]}, "
                                  f"so it measures no {target}")
        con = st.connect(sweep=sweep, read_only=True)
        try:
            found, law = _fits(con, sweep, axis, across, n_boot, seed)
        finally:
            con.close()
    pilot_draws = sorted(int(d) for d in (spec.get("axes") or {}).get("problem_seed", []))
    g = max(len(pilot_draws), 1)
    groups, need = [], g
    columns = [c for c in found.slice_columns if c not in across]
    for fit in law.fits:
        label = ", ".join(f"{c}={fit.values.get(c)}" for c in columns if c in fit.values) or "all"
        for target, half_wanted in wanted.items():
            p = _position(target, across)
            half = (fit.high[p] - fit.low[p]) / 2
            if not math.isfinite(half):
                raise DesignError(f"target {target}: the pilot does not measure it in {label} (no interval): "
                                  "add draws or widen the axis around the optima, then design again")
            groups.append((label, target, float(half)))
            need = max(need, math.ceil(g * (half / half_wanted) ** 2))
    if need > max_draws:
        raise DesignError(f"the targets need {need} problem draws, more than {max_draws}: loosen them")
    first = pilot_draws[0] if pilot_draws else 1
    draws = pilot_draws + [d for d in range(first, first + 10 * need) if d not in pilot_draws][: need - len(pilot_draws)]
    predicted = {t: max(h for _, n, h in groups if n == t) * math.sqrt(g / len(draws)) for t in wanted}
    data = _given(spec)
    data["name"] = name
    data.setdefault("grid", {})["problem_seeds"] = draws
    data.get("problem", {}).pop("seed", None)
    header = [f"Designed by `explorer design --sweep {sweep} " + " ".join(f"--target {k}={v:g}" for k, v in wanted.items())
              + "`", f"{len(draws)} problem draws for the transfer law's exponents; the rest is the pilot's spec."]
    result = TransferDesign(sweep, name, axis, wanted, pilot_draws, draws, predicted, groups, spec_text(data, header))
    if out is not None:
        write_text(out, result.spec, force)
        result.out = str(out)
        rows = record_rows(name, wanted, predicted, 0, f"designed for transfer from pilot {sweep}")
        result.record_not_written = write_record(st, name, rows)
    return result


def transfer_target_lines(targets: dict, law) -> list[str]:
    """Each recorded transfer target against the half-width ``law`` (a ``Transfer``) achieved, per group."""
    out = []
    for name, (target, predicted) in targets.items():
        if name not in TRANSFER_TARGETS:
            continue
        told = f" (predicted +- {predicted:.3g})" if math.isfinite(predicted) else ""
        if TRANSFER_TARGETS[name] not in law.across:
            continue
        for fit in law.fits:
            p = _position(name, law.across)
            half = (fit.high[p] - fit.low[p]) / 2
            group = ", ".join(f"{c}={v}" for c, v in fit.values.items()) or "all"
            if not math.isfinite(half):
                out.append(f"target {name} +- {target:g} ({group}): not measured{told}, missed")
            else:
                verdict = "met" if half <= target else "missed"
                out.append(f"target {name} +- {target:g} ({group}): achieved +- {half:.3g}{told}, {verdict}")
    return out
