"""Sweep specs: the TOML file a user writes, its strict validation, and its expansion into trials.

A spec names a sweep, fixes the problem, model, training and reference settings, and lists grid
axes whose product is the sweep (see docs/sweeps.md for every key). Loading is strict: an
unknown key, a wrong type, a non-positive size or an impossible resource request raises
``SpecError`` with one line naming the key, before anything runs.

Expansion (``plan``) turns a spec into trial configurations (``trials.TrialConfig``, one per grid
point, all its seeds batched), each with a ``trial_key`` (a hash of the config, its reference and
the store's schema version), grouped by the reference they are compared with (SPEC section 3):
``mean_ode`` (a particle solution, one per limit-defining group) or ``largest`` (the largest grid
point of the group at the same seeds, with embeddings coupled across D, as in the companion
paper, arXiv:2603.18168).
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from store import InvalidNameError
from store.layout import check_sweep
from trials import PRESETS, ProblemConfig, ReferenceConfig, TrialConfig
from trials.config import ACTIVATION_NAMES, BLOCKS, DEVICES, DTYPES, stable_hash
from trials.reference import REFERENCE_KINDS, largest_reference_key

from .errors import SpecError

# Axes a [grid] list may sweep, and the scalar setting each one replaces when swept.
GRID_AXES = ("L", "M", "D", "alpha", "sigma_u", "sigma_v", "lr")
_AXIS_SCALAR = {"sigma_u": "model", "sigma_v": "model", "lr": "train"}


# --- value checks: each returns the normalized value or raises _Bad(problem) -----------------


class _Bad(Exception):
    """A value's problem, without the key (the caller names it)."""


def _fmt(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string: control characters escaped
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "a table"
    return repr(value)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and math.isfinite(v)


def _positive_int(v: Any) -> int:
    if not _is_int(v) or v < 1:
        raise _Bad(f"expected a positive integer, got {_fmt(v)}")
    return v


def _nonnegative_int(v: Any) -> int:
    if not _is_int(v) or v < 0:
        raise _Bad(f"expected a non-negative integer, got {_fmt(v)}")
    return v


def _positive_number(v: Any) -> float:
    if not _is_number(v) or v <= 0:
        raise _Bad(f"expected a positive number, got {_fmt(v)}")
    return float(v)


def _nonnegative_number(v: Any) -> float:
    if not _is_number(v) or v < 0:
        raise _Bad(f"expected a non-negative number, got {_fmt(v)}")
    return float(v)


def _boolean(v: Any) -> bool:
    if not isinstance(v, bool):
        raise _Bad(f"expected true or false, got {_fmt(v)}")
    return v


def _choice(*allowed: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if v not in allowed:
            raise _Bad(f"expected one of {', '.join(_fmt(a) for a in allowed)}; got {_fmt(v)}")
        return v

    return check


def _list_of(item: Callable[[Any], Any], noun: str) -> Callable[[Any], tuple]:
    def check(v: Any) -> tuple:
        if not isinstance(v, list) or not v:
            raise _Bad(f"expected a non-empty list of {noun}, got {_fmt(v)}")
        try:
            values = tuple(item(x) for x in v)
        except _Bad:
            raise _Bad(f"expected a list of {noun}, got {_fmt(v)}") from None
        dup = next((x for i, x in enumerate(values) if x in values[:i]), None)
        if dup is not None:
            raise _Bad(f"value {_fmt(dup)} is listed twice in {_fmt(v)}")
        return values

    return check


def _sweep_name(v: Any) -> str:
    try:
        return check_sweep(v)  # the store's own rule: the name is a folder of the store
    except InvalidNameError:
        raise _Bad(
            "expected 1-128 letters, digits, '_', '-' or '.', starting with a letter or digit, no '..' "
            f"(it names a folder in the store), got {_fmt(v)}"
        ) from None


def _points_per_trial(v: Any) -> int | str:
    if v == "auto":
        return v
    if not _is_int(v) or v < 1:
        raise _Bad(f'expected "auto" or a positive integer, got {_fmt(v)}')
    return v


def _spec_field(default: Any, check: Callable[[Any], Any], doc: str, required: bool = False):
    """A dataclass field carrying its validator and a one-line description (docs/sweeps.md)."""
    return field(default=default, metadata={"check": check, "doc": doc, "required": required})


# --- the spec dataclasses: each field = one key, its default, its check, its meaning ---------


@dataclass(frozen=True)
class ProblemSpec:
    """[problem]: the data and frozen embeddings, shared by every trial and its reference."""

    d_in: int = _spec_field(5, _positive_int, "input dimension")
    d_out: int = _spec_field(5, _positive_int, "output dimension")
    samples: int = _spec_field(10, _positive_int, "N, the full-batch training set size")
    seed: int = _spec_field(1, _nonnegative_int, "draws the data X, Y and the embeddings W_E, W_U")
    coupled_embeddings: bool | None = _spec_field(
        None, _boolean,
        "draw W_E, W_U once at the largest D; width D uses their first D rows "
        "(default: true with [reference] kind = \"largest\", else false)",
    )


@dataclass(frozen=True)
class ModelSpec:
    """[model]: the residual block, its scaling preset and its initialization."""

    activation: str = _spec_field("tanh", _choice(*ACTIVATION_NAMES), "sigma in each 2LP block")
    preset: str = _spec_field("mlu", _choice(*PRESETS), "residual scaling preset")
    block: str = _spec_field("2lp", _choice(*BLOCKS), "residual block type")
    sigma_u: float = _spec_field(1.0, _positive_number, "init std of u entries, in units of sqrt(D)")
    sigma_v: float = _spec_field(1.0, _positive_number, "init std of v entries, in units of sqrt(D)")
    antithetic: bool = _spec_field(False, _boolean, "trial units in antithetic pairs (u, v), (u, -v); M must be even")


@dataclass(frozen=True)
class TrainSpec:
    """[train]: full-batch gradient descent."""

    steps: int = _spec_field(10, _positive_int, "K gradient steps; metrics at k = 0..K")
    lr: float = _spec_field(1.0, _positive_number, "eta, mean-field convention")
    dtype: str = _spec_field("float64", _choice(*DTYPES), "floating-point precision")
    device: str = _spec_field("auto", _choice(*DEVICES), "auto = cuda when the trial holds a GPU, else cpu")


@dataclass(frozen=True)
class ReferenceSpec:
    """[reference]: what each trial is compared with (SPEC section 3)."""

    kind: str = _spec_field("mean_ode", _choice(*REFERENCE_KINDS), "mean_ode particle solution, or the largest grid point")
    depth: int = _spec_field(1024, _positive_int, "L_ref of the mean_ode reference (even)")
    width: int = _spec_field(512, _positive_int, "M_ref of the mean_ode reference (even)")
    replicas: int = _spec_field(2, _positive_int, "R_ref >= 2 independent particle systems")


@dataclass(frozen=True)
class GridSpec:
    """[grid]: every list is an axis; the sweep is their product, times ``seeds`` repetitions."""

    L: tuple[int, ...] = _spec_field(None, _list_of(_positive_int, "positive integers"), "depths", required=True)
    M: tuple[int, ...] = _spec_field(None, _list_of(_positive_int, "positive integers"), "hidden widths", required=True)
    D: tuple[int, ...] = _spec_field(None, _list_of(_positive_int, "positive integers"), "embedding dimensions", required=True)
    alpha: tuple[float, ...] = _spec_field((1.0,), _list_of(_positive_number, "positive numbers"), "residual multipliers")
    sigma_u: tuple[float, ...] | None = _spec_field(
        None, _list_of(_positive_number, "positive numbers"), "init scales of u (replaces [model] sigma_u)")
    sigma_v: tuple[float, ...] | None = _spec_field(
        None, _list_of(_positive_number, "positive numbers"), "init scales of v (replaces [model] sigma_v)")
    lr: tuple[float, ...] | None = _spec_field(
        None, _list_of(_positive_number, "positive numbers"), "learning rates (replaces [train] lr)")
    seeds: int = _spec_field(3, _positive_int, "repetitions per grid point (seeds 0..seeds-1, batched)")


@dataclass(frozen=True)
class ResourcesSpec:
    """[resources]: what each Ray Tune trial holds, and how the sweep is scheduled."""

    cpus_per_trial: float = _spec_field(1.0, _positive_number, "CPUs each trial holds (fractions allowed)")
    gpus_per_trial: float = _spec_field(0.0, _nonnegative_number, "GPUs each trial holds; fractions below 1 share a GPU")
    max_concurrent: int | None = _spec_field(None, _positive_int, "at most this many trials at once (default: what fits)")
    retries: int = _spec_field(2, _nonnegative_int, "re-runs of a grid point that raised before it is recorded failed")
    points_per_trial: int | str = _spec_field(
        "auto", _points_per_trial, "grid points packed into one Tune trial (auto: by estimated cost)")


SECTIONS: dict[str, type] = {
    "problem": ProblemSpec,
    "model": ModelSpec,
    "train": TrainSpec,
    "reference": ReferenceSpec,
    "grid": GridSpec,
    "resources": ResourcesSpec,
}


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep spec (build it with ``load_spec`` or ``parse_spec``)."""

    name: str
    problem: ProblemSpec = field(default_factory=ProblemSpec)
    model: ModelSpec = field(default_factory=ModelSpec)
    train: TrainSpec = field(default_factory=TrainSpec)
    reference: ReferenceSpec = field(default_factory=ReferenceSpec)
    grid: GridSpec = field(default_factory=lambda: GridSpec(L=(4,), M=(1,), D=(8,)))
    resources: ResourcesSpec = field(default_factory=ResourcesSpec)
    # The keys the user actually wrote, as "section.key": tells a default from an explicit value.
    given: frozenset[str] = frozenset()

    @property
    def coupled_embeddings(self) -> bool:
        """Resolved: explicit value, else true exactly for the ``largest`` reference kind."""
        if self.problem.coupled_embeddings is None:
            return self.reference.kind == "largest"
        return self.problem.coupled_embeddings

    def grid_points(self) -> int:
        """Number of grid points (trials), seeds not counted."""
        return math.prod(len(values) for values in self._axes().values())

    def _axes(self) -> dict[str, tuple]:
        axes = {}
        for name in GRID_AXES:
            values = getattr(self.grid, name)
            if values is None:
                section = getattr(self, _AXIS_SCALAR[name])
                values = (getattr(section, name),)
            axes[name] = values
        return axes

    def to_dict(self) -> dict:
        """The resolved spec as plain TOML-like data (tuples as lists), for records and display."""
        out: dict[str, Any] = {"name": self.name}
        for section in SECTIONS:
            values = dataclasses.asdict(getattr(self, section))
            out[section] = {k: list(v) if isinstance(v, tuple) else v for k, v in values.items() if v is not None}
        out["problem"]["coupled_embeddings"] = self.coupled_embeddings
        return out


# --- loading ---------------------------------------------------------------------------------


def _parse_section(section: str, cls: type, raw: Any) -> tuple[Any, set[str]]:
    if not isinstance(raw, dict):
        raise SpecError(f"spec error: [{section}]: expected a table, got {_fmt(raw)}")
    known = {f.name: f for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in known:
            raise SpecError(
                f"spec error: [{section}] {key}: unknown key; expected one of: {', '.join(known)}"
            )
    values = {}
    for name, f in known.items():
        if name not in raw:
            if f.metadata["required"]:
                raise SpecError(f"spec error: [{section}] {name}: missing; {f.metadata['doc']} are required")
            continue
        try:
            values[name] = f.metadata["check"](raw[name])
        except _Bad as bad:
            raise SpecError(f"spec error: [{section}] {name}: {bad}") from None
    return cls(**values), {f"{section}.{k}" for k in raw}


def parse_spec(raw: Mapping[str, Any], overrides: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """Validate a spec given as parsed TOML data, after applying ``KEY=VALUE`` overrides.

    Args:
        raw: the TOML document as a dict (``tomllib.load`` output).
        overrides: strings like ``"grid.L=[4, 8]"``, ``"train.steps=5"`` or ``"name=quick2"``;
            the value is read as TOML, and as a bare string when it is not TOML.

    Returns:
        The validated ``SweepSpec``.

    Raises:
        SpecError: one line naming the key and the problem.
    """
    data = _apply_overrides(raw, overrides)
    for key in data:
        if key != "name" and key not in SECTIONS:
            raise SpecError(
                f"spec error: {key}: unknown key; expected name or one of the tables "
                + ", ".join(f"[{s}]" for s in SECTIONS)
            )
    if "name" not in data:
        raise SpecError("spec error: name: missing; give the sweep a name, e.g. name = \"quick\"")
    try:
        name = _sweep_name(data["name"])
    except _Bad as bad:
        raise SpecError(f"spec error: name: {bad}") from None
    if "grid" not in data:
        raise SpecError("spec error: [grid]: missing; list at least L, M and D")
    sections, given = {}, set()
    for section, cls in SECTIONS.items():
        sections[section], keys = _parse_section(section, cls, data.get(section, {}))
        given |= keys
    spec = SweepSpec(name=name, given=frozenset(given), **sections)
    _check_consistency(spec)
    return spec


def load_spec(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """Read and validate a TOML spec file (see ``parse_spec``).

    Raises:
        SpecError: a missing or unreadable file, invalid TOML, or any problem ``parse_spec`` finds.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError(f"spec error: {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"spec error: {path}: cannot read it ({exc})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"spec error: {path}: invalid TOML: {exc}") from None
    return parse_spec(raw, overrides)


def _parse_override_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word such as relu or float32


def _apply_overrides(raw: Mapping[str, Any], overrides) -> dict:
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for item in overrides:
        key, sep, value = item.lstrip("-").partition("=")
        if not sep or not key:
            raise SpecError(f"spec error: override {item!r}: expected KEY=VALUE, e.g. train.steps=5 or grid.L=[4,8]")
        path = key.strip().split(".")
        if len(path) == 1 and path[0] == "name":
            data["name"] = _parse_override_value(value.strip())
        elif len(path) == 2 and path[0] in SECTIONS:
            section = data.setdefault(path[0], {})
            if not isinstance(section, dict):
                raise SpecError(f"spec error: [{path[0]}]: expected a table, got {_fmt(section)}")
            section[path[1]] = _parse_override_value(value.strip())
        else:
            raise SpecError(
                f"spec error: override {item!r}: unknown key {key!r}; expected name or SECTION.KEY with SECTION one of "
                + ", ".join(SECTIONS)
            )
    return data


def _check_consistency(spec: SweepSpec) -> None:
    """Cross-key rules: each refusal names the key the user should change."""
    for axis, section in _AXIS_SCALAR.items():
        if getattr(spec.grid, axis) is not None and f"{section}.{axis}" in spec.given:
            raise SpecError(
                f"spec error: [grid] {axis}: also set as [{section}] {axis}; keep one (the grid list sweeps it)"
            )
    ref = spec.reference
    if ref.kind == "largest":
        for key in ("depth", "width", "replicas"):
            if f"reference.{key}" in spec.given:
                raise SpecError(
                    f'spec error: [reference] {key}: not used with kind = "largest" (the largest grid point is the reference); remove it'
                )
        if spec.problem.coupled_embeddings is False and len(spec.grid.D) > 1:
            raise SpecError(
                'spec error: [problem] coupled_embeddings: kind = "largest" over several D compares the first D '
                "coordinates, so it needs coupled embeddings; set it to true"
            )
    _check_trial_rules(spec)
    res = spec.resources
    gpus = res.gpus_per_trial
    if gpus > 1 and gpus != int(gpus):
        raise SpecError(f"spec error: [resources] gpus_per_trial: a fraction must be below 1 (several trials share a GPU); above 1 give a whole number, got {gpus:g}")
    if gpus > 0 and spec.train.device == "cpu":
        raise SpecError(f'spec error: [resources] gpus_per_trial: {gpus:g} GPU per trial but [train] device = "cpu"; set gpus_per_trial = 0 or device = "auto"')
    if gpus == 0 and spec.train.device == "cuda":
        raise SpecError('spec error: [train] device: "cuda" needs [resources] gpus_per_trial > 0 (a trial sees only the GPUs it holds)')


# The trials package owns the rules of a configuration (antithetic M even, lazy alpha > 1, an
# even reference width ...): the spec builds its configurations and names the key behind a
# refusal. Its messages start with the field they are about ("reference.width must be even",
# "unknown activation ...", "antithetic units come in pairs ...").
_FIELD = re.compile(r"^(?:unknown )?(?:(problem|reference)\.)?([A-Za-z_]+)")
_FIELD_SECTION = {
    "activation": "model", "block": "model", "preset": "model", "antithetic": "model",
    "steps": "train", "dtype": "train", "device": "train", "seeds": "grid",
}


def _key_of(message: str, spec: SweepSpec) -> str | None:
    """The spec key (``[section] key``) a trials ValueError is about, or None."""
    match = _FIELD.match(message)
    if not match:
        return None
    prefix, name = match.groups()
    if prefix == "reference":
        return f"[reference] {name}"
    if prefix == "problem":
        return "[problem] coupled_embeddings" if name == "coupled_dim" else f"[problem] {name}"
    if name in GRID_AXES:
        swept = name not in _AXIS_SCALAR or getattr(spec.grid, name) is not None
        return f"[grid] {name}" if swept else f"[{_AXIS_SCALAR[name]}] {name}"
    section = _FIELD_SECTION.get(name)
    return f"[{section}] {name}" if section else None


def _check_trial_rules(spec: SweepSpec) -> None:
    """Build the trials configurations the spec implies, so that the trials package's own rules
    judge it: the first grid point, each other value of each axis (the rest held at the first
    point: every rule involves at most one axis), and the reference configuration.

    Raises:
        SpecError: the first refusal, naming the key (an axis value that breaks a rule names
            its [grid] axis).
    """
    axes = spec._axes()
    first = {axis: values[0] for axis, values in axes.items()}
    where = ", ".join(f"{k}={v}" for k, v in first.items())
    try:
        problem = _problem_config(spec)
        limit = _trial_config(spec, problem, first)
    except (ValueError, TypeError) as exc:
        key = _key_of(str(exc), spec) or f"[grid] point {where}"
        raise SpecError(f"spec error: {key}: {exc}") from None
    for axis, values in axes.items():
        for value in values[1:]:
            try:
                _trial_config(spec, problem, {**first, axis: value})
            except (ValueError, TypeError) as exc:
                raise SpecError(f"spec error: [grid] {axis}: {exc}") from None
    if spec.reference.kind == "mean_ode":
        try:
            _reference_config(spec, limit)
        except (ValueError, TypeError) as exc:
            key = _key_of(str(exc), spec) or "[reference]"
            raise SpecError(f"spec error: {key}: {exc}") from None


def _problem_config(spec: SweepSpec) -> ProblemConfig:
    p = spec.problem
    coupled = max(spec.grid.D) if spec.coupled_embeddings else None
    return ProblemConfig(d_in=p.d_in, d_out=p.d_out, samples=p.samples, seed=p.seed, coupled_dim=coupled)


def _trial_config(spec: SweepSpec, problem: ProblemConfig, point: Mapping[str, Any]) -> TrialConfig:
    """The trial configuration of one grid point (all its seeds)."""
    return TrialConfig(
        problem=problem, activation=spec.model.activation, block=spec.model.block, preset=spec.model.preset,
        steps=spec.train.steps, dtype=spec.train.dtype, device=spec.train.device,
        seeds=tuple(range(spec.grid.seeds)), antithetic=spec.model.antithetic, **point,
    )


def _reference_config(spec: SweepSpec, limit: TrialConfig) -> ReferenceConfig:
    ref = spec.reference
    return ReferenceConfig(limit=limit, depth=ref.depth, width=ref.width, replicas=ref.replicas,
                           device=spec.train.device)


# --- expansion into trials and references ----------------------------------------------------


@dataclass(frozen=True)
class PlannedReference:
    """One reference: computed once, cached in the store under ``ref_key``, shared by its group."""

    ref_key: str
    kind: str  # mean_ode | largest
    config: ReferenceConfig | TrialConfig  # a ReferenceConfig, or the largest grid point's config


@dataclass(frozen=True)
class PlannedTrial:
    """One grid point (all its seeds): what a worker trains and writes under ``trial_key``."""

    trial_key: str
    ref_key: str
    config: TrialConfig


@dataclass(frozen=True)
class Plan:
    """A spec expanded: references first, then the trials that use them."""

    spec: SweepSpec
    references: tuple[PlannedReference, ...]
    trials: tuple[PlannedTrial, ...]

    def trials_by_reference(self) -> dict[str, list[PlannedTrial]]:
        groups: dict[str, list[PlannedTrial]] = {r.ref_key: [] for r in self.references}
        for t in self.trials:
            groups[t.ref_key].append(t)
        return groups


def trial_key(config: TrialConfig, ref_key: str, schema_version: int) -> str:
    """A trial's identity in the store: its numbers depend on the config, on the reference it is
    compared with, and on the row schema, so all three are hashed."""
    return stable_hash({"trial": config.key(), "reference": ref_key, "schema_version": schema_version})


def plan(spec: SweepSpec, schema_version: int | None = None) -> Plan:
    """Expand a spec into its references and trials, in a stable order.

    Args:
        spec: a validated spec.
        schema_version: the store's row schema version (default: ``store.SCHEMA_VERSION``).

    Returns:
        A ``Plan``: one ``PlannedReference`` per reference key, one ``PlannedTrial`` per grid
        point (seeds 0..seeds-1 batched in its config), ordered by reference then grid order.

    Raises:
        SpecError: a grid point that the trial configuration refuses.
    """
    if schema_version is None:
        from store import SCHEMA_VERSION as schema_version  # the store owns the row schema
    axes = spec._axes()
    problem = _problem_config(spec)
    # A mean_ode reference is defined by everything but L and M ("limit": any trial of the group),
    # the largest point's by everything but L, M and D: one reference per group, computed once.
    outside_group = ("L", "M") if spec.reference.kind == "mean_ode" else ("L", "M", "D")
    largest = {"L": max(spec.grid.L), "M": max(spec.grid.M), "D": max(spec.grid.D)}
    references: dict[tuple, PlannedReference] = {}
    trials = []
    for values in itertools.product(*axes.values()):
        point = dict(zip(axes, values))
        try:
            cfg = _trial_config(spec, problem, point)
        except (ValueError, TypeError) as exc:
            where = ", ".join(f"{k}={v}" for k, v in point.items())
            raise SpecError(f"spec error: [grid] point {where}: {exc}") from None
        group = tuple(v for k, v in point.items() if k not in outside_group)
        ref = references.get(group)
        if ref is None:
            if spec.reference.kind == "mean_ode":
                rc = _reference_config(spec, cfg)
                ref = PlannedReference(rc.key(), "mean_ode", rc)
            else:
                top = cfg.replace(**largest)
                ref = PlannedReference(largest_reference_key(top), "largest", top)
            references[group] = ref
        trials.append(PlannedTrial(trial_key(cfg, ref.ref_key, schema_version), ref.ref_key, cfg))
    unique = list({r.ref_key: r for r in references.values()}.values())
    order = {r.ref_key: i for i, r in enumerate(unique)}
    trials.sort(key=lambda t: order[t.ref_key])  # stable: grid order within a group
    return Plan(spec=spec, references=tuple(unique), trials=tuple(trials))
