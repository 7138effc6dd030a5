"""Sweep specs: the TOML file a user writes, its overrides, and its strict validation.

A spec names a sweep, fixes the problem, model, training and reference settings, and lists grid
axes whose product is the sweep (see docs/sweeps.md for every key). Loading is strict: an
unknown key, a wrong type, a non-positive size or an impossible resource request raises
``SpecError`` with one line naming the key, before anything runs.

A spec also knows how to say itself in the trials package's terms (``problem_config``,
``trial_config``, ``reference_config``): validation builds those configurations so that the
trials' own rules judge the spec, and a refusal (``trials.ConfigError``) names its field, which
``_CONFIG_KEYS`` maps to the spec key to blame. Expanding a spec into trials and references is
``explorer.config.planning``'s job.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from trials import (ACTIVATION_NAMES, BLOCKS, DATA_KINDS, DEVICES, DTYPES, PRESETS, REFERENCE_KINDS, ConfigError,
                    ProblemConfig, ReferenceConfig, TrialConfig)

from ..bounds import (INT64_MAX, MAX_GRID_POINTS, MAX_NESTING, MAX_REPLICAS, MAX_RESAMPLES, MAX_SEEDS, data_nesting,
                     toml_nesting)
from ..errors import spec_error

if TYPE_CHECKING:
    from trials import JointLimitConfig

# The [grid] axes that are TrialConfig fields (the one other axis, problem_seeds, sets the
# ProblemConfig's seed), and the scalar setting each optional axis replaces when it is swept.
GRID_AXES = ("L", "M", "D", "alpha", "sigma_u", "sigma_v", "lr")
_AXIS_SCALAR = {"sigma_u": ("model", "sigma_u"), "sigma_v": ("model", "sigma_v"), "lr": ("train", "lr"),
                "problem_seeds": ("problem", "seed")}


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
    return _storable(v)


def _nonnegative_int(v: Any) -> int:
    if not _is_int(v) or v < 0:
        raise _Bad(f"expected a non-negative integer, got {_fmt(v)}")
    return _storable(v)


def _storable(v: int) -> int:
    # every integer of a spec lands in an int64 column (or sizes an array): refused here, not
    # after a sweep's every write failed
    if v > INT64_MAX:
        raise _Bad(f"expected an integer of at most 2^63 - 1 = {INT64_MAX} (it is stored as int64), got {_fmt(v)}")
    return v


def _at_most(limit: int, what: str) -> Callable[[Any], int]:
    """A positive integer of at most ``limit`` (explorer.bounds: refused before anything is built)."""
    def check(v: Any) -> int:
        v = _positive_int(v)
        if v > limit:
            raise _Bad(f"expected at most {limit:,} {what}, got {_fmt(v)}")
        return v

    return check


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
        seen: set = set()
        for x in values:  # a set, not values[:i]: quadratic in the list's length was minutes at 10^6
            if x in seen:
                raise _Bad(f"value {_fmt(x)} is listed twice in {_fmt(v) if len(v) <= 20 else 'the list'}")
            seen.add(x)
        return values

    return check


def _sweep_name(v: Any) -> str:
    # The store's own rule (the name is a folder of the store). Imported here, and checked after
    # the sections, so that a typo in a section is reported without importing the store (pyarrow).
    from store import InvalidNameError, check_sweep

    try:
        return check_sweep(v)
    except InvalidNameError:
        raise _Bad(
            "expected 1-128 letters, digits, '_', '-' or '.', starting with a letter or digit, no '..' "
            f"(it names a folder in the store), got {_fmt(v)}"
        ) from None


def _points_per_trial(v: Any) -> int | str:
    if v == "auto":
        return v
    if not _is_int(v) or v < 1 or v > MAX_GRID_POINTS:
        raise _Bad(f'expected "auto" or a positive integer of at most {MAX_GRID_POINTS:,}, got {_fmt(v)}')
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
    data: str = _spec_field("gaussian", _choice(*DATA_KINDS),
                            "gaussian: X, Y ~ N(0, 1); linear_target: one x of norm 0.8, y = A x + 0.05 noise (trials/data.py)")
    data_seed: int | None = _spec_field(None, _nonnegative_int,
                                        "draws X, Y apart from the embeddings (default: from seed / problem_seeds)")
    independent_embeddings: bool = _spec_field(False, _boolean,
                                               "every D draws its own W_E, W_U (uncoupled; needs coupled_embeddings = false)")


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
    divergence_factor: float = _spec_field(10.0, _positive_number,
                                           "a seed whose loss exceeds this times its step-0 loss is diverged (> 1)")
    divergence_bound: float = _spec_field(1e3, _positive_number,
                                          "a seed whose |f| exceeds this times the targets' RMS is diverged")
    init_noise_limit: float = _spec_field(1.0, _positive_number,
                                          "rows of points with alpha_eff / sqrt(L M) above this are flagged init_noise")
    chaos_check: bool = _spec_field(False, _boolean,
                                    "run a twin nudged by 1e-12 and flag seeds whose trajectories separate as chaotic")


@dataclass(frozen=True)
class ReferenceSpec:
    """[reference]: what each trial is compared with (docs/model.md section 3)."""

    kind: str = _spec_field("mean_ode", _choice(*REFERENCE_KINDS),
                            "mean_ode particle solution, the largest grid point, or joint_limit (exact, identity activation)")
    depth: int = _spec_field(1024, _positive_int, "L_ref of the mean_ode reference (even)")
    width: int = _spec_field(512, _positive_int, "M_ref of the mean_ode reference (even)")
    replicas: int = _spec_field(2, _at_most(MAX_REPLICAS, "replicas"), "R_ref >= 2 independent particle systems")
    grid: int = _spec_field(256, _positive_int, "RK4 steps over depth of the joint_limit reference (even)")


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
    problem_seeds: tuple[int, ...] | None = _spec_field(
        None, _list_of(_nonnegative_int, "non-negative integers"),
        "problem draws: data and embeddings seeds, each with its own reference (replaces [problem] seed)")
    seeds: int = _spec_field(3, _at_most(MAX_SEEDS, "seeds per grid point"), "repetitions per grid point (seeds 0..seeds-1, batched)")


@dataclass(frozen=True)
class ResourcesSpec:
    """[resources]: what each Ray Tune trial holds, and how the sweep is scheduled."""

    cpus_per_trial: float = _spec_field(1.0, _positive_number, "CPUs each trial holds (fractions allowed)")
    gpus_per_trial: float = _spec_field(0.0, _nonnegative_number, "GPUs each trial holds; fractions below 1 share a GPU")
    max_concurrent: int | None = _spec_field(None, _positive_int, "at most this many trials at once (default: what fits)")
    retries: int = _spec_field(2, _nonnegative_int, "re-runs of a grid point that raised before it is recorded failed")
    points_per_trial: int | str = _spec_field(
        "auto", _points_per_trial, "grid points packed into one Tune trial (auto: by estimated cost)")
    max_points: int = _spec_field(
        100_000, _at_most(MAX_GRID_POINTS, "points"), "the most grid points (trials) the spec may define; a larger grid is refused before it is expanded")


def _resample_count(v: Any) -> int:
    # a CI is the spread of the resamples: one resample (or none) gives no CI, and a loop
    # waiting for a CI that never comes would spend its whole budget
    if not _is_int(v) or not 2 <= v <= MAX_RESAMPLES:
        raise _Bad(f"expected an integer from 2 to {MAX_RESAMPLES:,} (the CIs are the spread of the resamples; "
                   f"default 200), got {_fmt(v)}")
    return v


def _budget_fraction(v: Any) -> float:
    if not _is_number(v) or not 0 < v <= 1:
        raise _Bad(f"expected a fraction of the full grid's cost in (0, 1], got {_fmt(v)}")
    return float(v)


def _name(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise _Bad(f"expected a name, got {_fmt(v)}")
    return v


@dataclass(frozen=True)
class AdaptiveSpec:
    """[adaptive]: ``explorer sweep --adaptive`` runs the [grid] as a candidate set, choosing points
    round by round to shrink the targets' CIs per unit of cost (``explorer.sweeps.adaptive``)."""

    form: str = _spec_field("decomposed", _name,
                            "the law fitted each round, a name of the fit registry (explorer fit --form)")
    targets: tuple[str, ...] | None = _spec_field(
        None, _list_of(_name, "parameter names"), "parameters whose CIs to shrink (default: the form's exponents)")
    halfwidth: float = _spec_field(0.1, _positive_number, "the 95% CI half-width every target should reach")
    budget: float = _spec_field(0.5, _budget_fraction,
                                "the most compute to spend, a fraction of the full grid's cost in L*M*D*seeds")
    batch: int = _spec_field(8, _at_most(MAX_GRID_POINTS, "points per round"), "points (trials) chosen per round")
    initial: int | None = _spec_field(None, _at_most(MAX_GRID_POINTS, "points"),
                                      "points of the space-filling initial design (default: 2 x batch, at least 8)")
    resamples: int = _spec_field(200, _resample_count, "bootstrap resamples of each round's fit (>= 2)")


SECTIONS: dict[str, type] = {
    "problem": ProblemSpec,
    "model": ModelSpec,
    "train": TrainSpec,
    "reference": ReferenceSpec,
    "grid": GridSpec,
    "resources": ResourcesSpec,
    "adaptive": AdaptiveSpec,
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
    adaptive: AdaptiveSpec = field(default_factory=AdaptiveSpec)
    # The keys the user actually wrote, as "section.key": tells a default from an explicit value.
    given: frozenset[str] = frozenset()

    @property
    def coupled_embeddings(self) -> bool:
        """Resolved: explicit value, else true exactly for the ``largest`` reference kind."""
        if self.problem.coupled_embeddings is None:
            return self.reference.kind == "largest"
        return self.problem.coupled_embeddings

    def grid_points(self) -> int:
        """Number of grid points (trials), seeds not counted, problem draws counted."""
        return math.prod(len(values) for values in self.axes().values()) * len(self.problem_seeds())

    def axes(self) -> dict[str, tuple]:
        """The values of each TrialConfig axis (``GRID_AXES``): the [grid] list, else the scalar."""
        axes = {}
        for name in GRID_AXES:
            values = getattr(self.grid, name)
            if values is None:
                section, key = _AXIS_SCALAR[name]
                values = (getattr(getattr(self, section), key),)
            axes[name] = values
        return axes

    def problem_seeds(self) -> tuple[int, ...]:
        """The problem draws: [grid] problem_seeds, else the one [problem] seed."""
        return self.grid.problem_seeds if self.grid.problem_seeds is not None else (self.problem.seed,)

    # --- the spec in the trials package's terms (raise trials.ConfigError) -------------------

    def problem_config(self, seed: int) -> ProblemConfig:
        """The data and embeddings of one problem draw (embeddings coupled at the largest D when
        ``coupled_embeddings``)."""
        p = self.problem
        coupled = max(self.grid.D) if self.coupled_embeddings else None
        return ProblemConfig(d_in=p.d_in, d_out=p.d_out, samples=p.samples, seed=seed, coupled_dim=coupled,
                             data=p.data, data_seed=p.data_seed, independent_embeddings=p.independent_embeddings)

    def trial_config(self, problem: ProblemConfig, point: Mapping[str, Any]) -> TrialConfig:
        """The trial configuration of one grid point (``point``: a value per ``GRID_AXES`` axis),
        all its seeds batched."""
        return TrialConfig(
            problem=problem, activation=self.model.activation, block=self.model.block, preset=self.model.preset,
            steps=self.train.steps, dtype=self.train.dtype, device=self.train.device,
            seeds=tuple(range(self.grid.seeds)), antithetic=self.model.antithetic,
            divergence_factor=self.train.divergence_factor, divergence_bound=self.train.divergence_bound,
            init_noise_limit=self.train.init_noise_limit, chaos_check=self.train.chaos_check, **point,
        )

    def reference_config(self, limit: TrialConfig) -> ReferenceConfig | JointLimitConfig:
        """The mean_ode (or joint_limit) reference of the group ``limit`` (any of its trials) belongs to."""
        ref = self.reference
        if ref.kind == "joint_limit":
            from trials import JointLimitConfig  # imports torch: only specs of this kind pay for it

            return JointLimitConfig(limit=limit, grid=ref.grid)
        return ReferenceConfig(limit=limit, depth=ref.depth, width=ref.width, replicas=ref.replicas,
                               device=self.train.device)

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
        raise spec_error(f"[{section}]", f"expected a table, got {_fmt(raw)}")
    known = {f.name: f for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in known:
            raise spec_error(f"[{section}] {key}", f"unknown key; expected one of: {', '.join(known)}")
    values = {}
    for name, f in known.items():
        if name not in raw:
            if f.metadata["required"]:
                raise spec_error(f"[{section}] {name}", f"missing; {f.metadata['doc']} are required")
            continue
        try:
            values[name] = f.metadata["check"](raw[name])
        except _Bad as bad:
            raise spec_error(f"[{section}] {name}", str(bad)) from None
    return cls(**values), {f"{section}.{k}" for k in raw}


def parse_spec(raw: Mapping[str, Any], overrides: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """Validate a spec given as parsed TOML data, after applying ``KEY=VALUE`` overrides.

    Args:
        raw: the TOML document as a dict (``tomllib.load`` output).
        overrides: strings like ``"grid.L=[4, 8]"``, ``"train.steps=5"`` or ``"name=quick2"``;
            the value is read as TOML, and as a bare string when it is not TOML.
            ``"SECTION.KEY="`` (nothing after ``=``) or ``"~SECTION.KEY"`` removes a key (it
            takes its default), e.g. ``"problem.seed="``.

    Returns:
        The validated ``SweepSpec``.

    Raises:
        SpecError: one line naming the key and the problem.
    """
    if data_nesting(raw) > MAX_NESTING:  # before any recursive walk of it (a RecursionError otherwise)
        raise spec_error("spec", f"nested more than {MAX_NESTING} deep; a spec's values are numbers, names and lists")
    data = _apply_overrides(raw, overrides)
    _check_grid_size(data)
    for key in data:
        if key != "name" and key not in SECTIONS:
            raise spec_error(key, "unknown key; expected name or one of the tables "
                + ", ".join(f"[{s}]" for s in SECTIONS)
            )
    if "name" not in data:
        raise spec_error("name", "missing; give the sweep a name, e.g. name = \"quick\"")
    if "grid" not in data:
        raise spec_error("[grid]", "missing; list at least L, M and D")
    sections, given = {}, set()
    for section, cls in SECTIONS.items():
        sections[section], keys = _parse_section(section, cls, data.get(section, {}))
        given |= keys
    spec = SweepSpec(name=data["name"], given=frozenset(given), **sections)
    _check_consistency(spec)
    try:  # last: the store's rule imports the store, which a spec error elsewhere need not wait for
        _sweep_name(spec.name)
    except _Bad as bad:
        raise spec_error("name", str(bad)) from None
    return spec


# --- bounds: a spec is refused before anything large is read or expanded ---------------------

MAX_SPEC_BYTES = 1 << 20  # a spec file above 1 MiB is refused unread (a grid of 10^5 points needs a few KiB)
MAX_POINTS = 100_000  # default of [resources] max_points: planning 10^5 points takes seconds, 10^6 minutes and ~1 GB


def _check_grid_size(data: Mapping[str, Any]) -> None:
    """Refuse a grid whose product of axis lengths exceeds [resources] max_points, from the raw
    lists' lengths: before any value is checked or any point expanded."""
    resources = data.get("resources", {})
    limit = MAX_POINTS
    if isinstance(resources, dict) and "max_points" in resources:
        try:
            limit = _at_most(MAX_GRID_POINTS, "points")(resources["max_points"])
        except _Bad as bad:
            raise spec_error("[resources] max_points", str(bad)) from None
    grid = data.get("grid")
    if not isinstance(grid, dict):
        return
    lengths = {k: len(v) for k, v in grid.items() if isinstance(v, list)}
    points = math.prod(lengths.values())
    if points > limit:
        sizes = " x ".join(f"{k} {n}" for k, n in lengths.items())
        raise spec_error("[grid]", f"{points:,} grid points ({sizes}) exceed the limit of {limit:,}; "
                         "sweep fewer values, or raise [resources] max_points")


def load_spec(source: SweepSpec | Mapping[str, Any] | str | os.PathLike,
              overrides: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """A validated spec from a TOML file's path, a dict of TOML data, or a ``SweepSpec``, after
    applying ``KEY=VALUE`` overrides (see ``parse_spec``; this is also ``explorer.load_spec``).

    Raises:
        SpecError: a missing or unreadable file, invalid TOML, or any problem ``parse_spec`` finds.
    """
    if isinstance(source, SweepSpec):
        return parse_spec(_given_data(source), overrides) if overrides else source
    if isinstance(source, Mapping):
        return parse_spec(source, overrides)
    path = Path(source)
    try:
        with path.open("rb") as handle:
            content = handle.read(MAX_SPEC_BYTES + 1)
        if len(content) > MAX_SPEC_BYTES:
            raise spec_error(str(path), f"the file is larger than {MAX_SPEC_BYTES:,} bytes (1 MiB); a spec is a few KiB")
        text = content.decode()
    except FileNotFoundError:
        raise spec_error(str(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise spec_error(str(path), f"cannot read it ({exc})") from None
    if toml_nesting(text) > MAX_NESTING:  # the TOML parser recurses once per level
        raise spec_error(str(path), f"arrays or tables nested more than {MAX_NESTING} deep; a spec needs 2")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise spec_error(str(path), f"invalid TOML: {exc}") from None
    except RecursionError:
        raise spec_error(str(path), "arrays or tables nested too deep; a spec needs 2") from None
    return parse_spec(raw, overrides)


def _given_data(spec: SweepSpec) -> dict:
    """A spec back as TOML data, with only the keys the user gave (so defaults stay defaults)."""
    raw = spec.to_dict()
    for section, keys in raw.items():
        if isinstance(keys, dict):
            raw[section] = {k: v for k, v in keys.items() if f"{section}.{k}" in spec.given}
    return raw


def _parse_override_value(text: str) -> Any:
    if toml_nesting(text) > MAX_NESTING:  # the TOML parser recurses once per level
        raise spec_error(f"override value {text[:40]!r}...", f"nested more than {MAX_NESTING} deep")
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word such as relu or float32


def _remove_key(data: dict, item: str, key: str) -> None:
    """``SECTION.KEY=`` (nothing after ``=``) or ``~SECTION.KEY``: remove that key from the spec,
    so that it takes its default, or leaves room for the [grid] list that replaces it
    (``problem.seed= grid.problem_seeds=[1,2]``)."""
    path = key.strip().split(".")
    if len(path) != 2 or path[0] not in SECTIONS:
        raise spec_error(f"override {item!r}", "expected SECTION.KEY= or ~SECTION.KEY (removes that key: it takes "
                         "its default), e.g. problem.seed=")
    known = [f.name for f in dataclasses.fields(SECTIONS[path[0]])]
    if path[1] not in known:
        raise spec_error(f"override {item!r}", f"unknown key; expected one of: {', '.join(known)}")
    section = data.get(path[0])
    if isinstance(section, dict):
        section.pop(path[1], None)  # a key the file does not set is already at its default


def _apply_overrides(raw: Mapping[str, Any], overrides) -> dict:
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for item in overrides:
        text = item.lstrip("-")
        if text.startswith("~") and "=" not in text:
            _remove_key(data, item, text[1:])
            continue
        key, sep, value = text.partition("=")
        if sep and key and not value.strip():
            _remove_key(data, item, key)
            continue
        if not sep or not key:
            raise spec_error(f"override {item!r}", "expected KEY=VALUE, e.g. train.steps=5 or grid.L=[4,8], "
                             "or SECTION.KEY= to remove a key")
        path = key.strip().split(".")
        if len(path) == 1 and path[0] == "name":
            data["name"] = _parse_override_value(value.strip())
        elif len(path) == 2 and path[0] in SECTIONS:
            section = data.setdefault(path[0], {})
            if not isinstance(section, dict):
                raise spec_error(f"[{path[0]}]", f"expected a table, got {_fmt(section)}")
            section[path[1]] = _parse_override_value(value.strip())
        else:
            raise spec_error(f"override {item!r}", f"unknown key {key!r}; expected name or SECTION.KEY with SECTION one of "
                + ", ".join(SECTIONS)
            )
    return data


def _check_consistency(spec: SweepSpec) -> None:
    """Cross-key rules: each refusal names the key the user should change."""
    for axis, (section, key) in _AXIS_SCALAR.items():
        if getattr(spec.grid, axis) is not None and f"{section}.{key}" in spec.given:
            raise spec_error(f"[grid] {axis}", f"also set as [{section}] {key}; keep one (the grid list sweeps it; "
                             f"on the command line, {section}.{key}= removes the file's)")
    ref = spec.reference
    unused = {"largest": ("depth", "width", "replicas", "grid"), "joint_limit": ("depth", "width", "replicas"),
              "mean_ode": ("grid",)}[ref.kind]
    for key in unused:
        if f"reference.{key}" in spec.given:
            raise spec_error(f"[reference] {key}", f'not used with kind = "{ref.kind}"; remove it')
    if spec.problem.independent_embeddings and spec.coupled_embeddings:
        raise spec_error("[problem] independent_embeddings",
                         "true needs coupled_embeddings = false (each D draws its own W_E, W_U)")
    if ref.kind == "largest":
        if spec.problem.coupled_embeddings is False and len(spec.grid.D) > 1 and not spec.problem.independent_embeddings:
            raise spec_error("[problem] coupled_embeddings", 'kind = "largest" over several D compares the first D '
                             "coordinates, so it needs coupled embeddings; set it to true (or set "
                             "independent_embeddings = true to compare outputs only: err_hidden is then not meaningful)")
    _check_trial_rules(spec)
    if any(key.startswith("adaptive.") for key in spec.given):
        _check_adaptive(spec.adaptive)
    res = spec.resources
    gpus = res.gpus_per_trial
    if gpus > 1 and gpus != int(gpus):
        raise spec_error("[resources] gpus_per_trial", f"a fraction must be below 1 (several trials share a GPU); above 1 give a whole number, got {gpus:g}")
    if gpus > 0 and spec.train.device == "cpu":
        raise spec_error("[resources] gpus_per_trial", f'{gpus:g} GPU per trial but [train] device = "cpu"; set gpus_per_trial = 0 or device = "auto"')
    if gpus == 0 and spec.train.device == "cuda":
        raise spec_error("[train] device", '"cuda" needs [resources] gpus_per_trial > 0 (a trial sees only the GPUs it holds)')




def _check_adaptive(adaptive: AdaptiveSpec) -> None:
    """[adaptive] form must be a registry law and its targets parameters of that law (checked
    only when the section is given: it imports the fits, pandas and scipy)."""
    from ..analysis.laws import FORMS

    if adaptive.form not in FORMS:
        raise spec_error("[adaptive] form", f"expected one of {', '.join(_fmt(f) for f in FORMS)}; got {_fmt(adaptive.form)}")
    parameters = adaptive_parameters(adaptive.form)
    for name in adaptive.targets or ():
        if name not in parameters:
            raise spec_error("[adaptive] targets", f"{_fmt(name)} is not a parameter of the {adaptive.form} law; "
                             f"expected some of {', '.join(_fmt(p) for p in parameters)}")


def adaptive_parameters(form: str) -> tuple[str, ...]:
    """The parameters of a registry law, in the law's order."""
    from ..analysis.laws import resolve_form

    return resolve_form(form)[1].parameters


def adaptive_targets(adaptive: AdaptiveSpec) -> tuple[str, ...]:
    """The targets of an [adaptive] section: as given, else the law's exponents (its parameters
    that are not positive constants), else all its parameters."""
    if adaptive.targets:
        return adaptive.targets
    from ..analysis.laws import resolve_form

    expr = resolve_form(adaptive.form)[1]
    exponents = tuple(p for p in expr.parameters if p not in expr.positive)
    return exponents or expr.parameters


# The trials package owns the rules of a configuration (antithetic M even, lazy alpha > 1, an
# even reference width ...): validation builds the configurations the spec implies and lets
# those rules judge it. A refusal (trials.ConfigError) names the config field; these tables name
# the spec key behind it.
_CONFIG_KEYS = {
    "L": "[grid] L", "M": "[grid] M", "D": "[grid] D", "alpha": "[grid] alpha",
    "sigma_u": "[model] sigma_u", "sigma_v": "[model] sigma_v", "lr": "[train] lr",
    "activation": "[model] activation", "block": "[model] block", "preset": "[model] preset",
    "antithetic": "[model] antithetic", "steps": "[train] steps", "dtype": "[train] dtype",
    "device": "[train] device", "seeds": "[grid] seeds",
    "divergence_factor": "[train] divergence_factor", "divergence_bound": "[train] divergence_bound",
    "init_noise_limit": "[train] init_noise_limit", "chaos_check": "[train] chaos_check",
    "problem.d_in": "[problem] d_in", "problem.d_out": "[problem] d_out", "problem.samples": "[problem] samples",
    "problem.seed": "[problem] seed", "problem.coupled_dim": "[problem] coupled_embeddings",
    "problem.data": "[problem] data", "problem.data_seed": "[problem] data_seed",
    "problem.independent_embeddings": "[problem] independent_embeddings", "reference.grid": "[reference] grid",
    "reference.depth": "[reference] depth", "reference.width": "[reference] width",
    "reference.replicas": "[reference] replicas", "reference.device": "[train] device",
}
# Fields an optional [grid] list replaces: when it is given, the error is the axis's.
_FIELD_AXIS = {"sigma_u": "sigma_u", "sigma_v": "sigma_v", "lr": "lr", "problem.seed": "problem_seeds"}


def key_of(error: ConfigError, spec: SweepSpec) -> str | None:
    """The spec key (``[section] key``) a trials ConfigError is about, or None."""
    axis = _FIELD_AXIS.get(error.field)
    if axis is not None and getattr(spec.grid, axis) is not None:
        return f"[grid] {axis}"
    return _CONFIG_KEYS.get(error.field)


def _check_trial_rules(spec: SweepSpec) -> None:
    """Build the trials configurations the spec implies, so that the trials package's own rules
    judge it: the first grid point, each other value of each axis (the rest held at the first
    point: every rule involves at most one axis), and the reference configuration.

    Raises:
        SpecError: the first refusal, naming the key (an axis value that breaks a rule names
            its [grid] axis).
    """
    axes = spec.axes()
    first = {axis: values[0] for axis, values in axes.items()}
    seeds = spec.problem_seeds()
    try:
        problem = spec.problem_config(seeds[0])
        limit = spec.trial_config(problem, first)
    except ConfigError as exc:
        where = ", ".join(f"{k}={v}" for k, v in first.items())
        raise spec_error(key_of(exc, spec) or f"[grid] point {where}", str(exc)) from None
    for axis, values in (*axes.items(), ("problem_seeds", seeds)):
        for value in values[1:]:
            try:
                if axis == "problem_seeds":
                    spec.problem_config(value)
                else:
                    spec.trial_config(problem, {**first, axis: value})
            except ConfigError as exc:
                raise spec_error(f"[grid] {axis}", str(exc)) from None
    if spec.reference.kind in ("mean_ode", "joint_limit"):
        try:
            spec.reference_config(limit)
        except ConfigError as exc:
            raise spec_error(key_of(exc, spec) or "[reference]", str(exc)) from None
