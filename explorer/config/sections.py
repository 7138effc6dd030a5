"""The sections of a sweep spec, one frozen dataclass per TOML table, and ``SweepSpec``, the
validated spec they make up.

Each field is one key: its default, its check (``spec_values``) and its meaning, declared once
with ``spec_field``; docs/sweeps.md's tables and the validation read them from here. A spec also
knows how to say itself in the trials package's terms (``problem_config``, ``trial_config``,
``reference_config``). Reading a spec (TOML, overrides, the rules across keys) is
``explorer.config.spec``'s job; the rules (``spec_rules``) and the overrides (``overrides``) import
these classes, never the loader.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from trials import (ACTIVATION_NAMES, BLOCKS, DATA_KINDS, DEVICES, DTYPES, LR_SCALINGS, OPTIMIZERS, PRESETS, ProblemConfig,
                    TrialConfig)

from ..bounds import MAX_GRID_POINTS, MAX_REPLICAS, MAX_SEEDS
from ..analysis.laws import DEFAULT_FORM
from .reference_kinds import DEFAULT_KIND, KINDS, kind_named
from .spec_values import (at_most, boolean, budget_fraction, choice, law_name, list_of, nonnegative_int,
                          nonnegative_number, points_per_trial, positive_int, positive_number, resample_count,
                          spec_field)

# The [grid] axes that are TrialConfig fields (the one other axis, problem_seeds, sets the
# ProblemConfig's seed), and the scalar setting each optional axis replaces when it is swept.
GRID_AXES = ("L", "M", "D", "alpha", "sigma_u", "sigma_v", "lr", "preset", "activation", "lr_scaling", "optimizer")


# A [grid] list that replaces a scalar key of another section: setting both is refused.
AXIS_SCALAR = {"sigma_u": ("model", "sigma_u"), "sigma_v": ("model", "sigma_v"), "lr": ("train", "lr"),
               "preset": ("model", "preset"), "activation": ("model", "activation"),
               "lr_scaling": ("train", "lr_scaling"), "optimizer": ("train", "optimizer"),
               "problem_seeds": ("problem", "seed")}


# --- the spec dataclasses: each field = one key, its default, its check, its meaning ---------


@dataclass(frozen=True)
class ProblemSpec:
    """[problem]: the data and frozen embeddings, shared by every trial and its reference."""

    d_in: int = spec_field(5, positive_int, "input dimension")
    d_out: int = spec_field(5, positive_int, "output dimension")
    samples: int = spec_field(10, positive_int, "N, the full-batch training set size")
    seed: int = spec_field(1, nonnegative_int, "draws the data X, Y and the embeddings W_E, W_U")
    coupled_embeddings: bool | None = spec_field(
        None, boolean,
        "draw W_E, W_U once at the largest D; width D uses their first D rows "
        "(default: true with [reference] kind = \"largest\", else false)",
    )
    data: str = spec_field("gaussian", choice(*DATA_KINDS),
                            "gaussian: X, Y ~ N(0, 1); linear_target: one x of norm 0.8, y = A x + 0.05 noise; "
                            "teacher: y = a fixed random network of this family (trials/data.py)")
    data_seed: int | None = spec_field(None, nonnegative_int,
                                        "draws X, Y apart from the embeddings (default: from seed / problem_seeds)")
    independent_embeddings: bool = spec_field(False, boolean,
                                               "every D draws its own W_E, W_U (uncoupled; needs coupled_embeddings = false)")
    teacher_seed: int | None = spec_field(None, nonnegative_int, "data teacher: draws the teacher network (default: seed)")
    teacher_depth: int = spec_field(2, positive_int, "data teacher: the teacher's depth")
    teacher_width: int = spec_field(16, positive_int, "data teacher: the teacher's width and embedding dimension")
    label_noise: float = spec_field(0.0, nonnegative_number, "data teacher: std of the noise on its unit-RMS targets")
    test_samples: int = spec_field(0, nonnegative_int,
                                   "data teacher: held-out samples of the same law, never trained on: metrics test_loss, test_err_out")


@dataclass(frozen=True)
class ModelSpec:
    """[model]: the residual block, its scaling preset and its initialization."""

    activation: str = spec_field("tanh", choice(*ACTIVATION_NAMES), "sigma in each 2LP block")
    preset: str = spec_field("mlu", choice(*PRESETS), "residual scaling preset")
    block: str = spec_field("2lp", choice(*BLOCKS), "residual block type")
    sigma_u: float = spec_field(1.0, positive_number, "init std of u entries, in units of sqrt(D)")
    sigma_v: float = spec_field(1.0, positive_number, "init std of v entries, in units of sqrt(D)")
    antithetic: bool = spec_field(False, boolean, "trial units in antithetic pairs (u, v), (u, -v); M must be even")


@dataclass(frozen=True)
class TrainSpec:
    """[train]: full-batch gradient descent."""

    steps: int = spec_field(10, positive_int, "K gradient steps; metrics at k = 0..K")
    lr: float = spec_field(1.0, positive_number, "the learning rate, in the convention lr_scaling names")
    lr_scaling: str = spec_field(
        "mean_field", choice(*LR_SCALINGS),
        "mean_field: each unit steps by lr D / (2 c^2 L M) dl/dtheta; raw: plain SGD on the weights W1 = u / D, W2 = c v "
        "(no Mean ODE limit: needs [reference] kind = \"largest\" or \"none\")")
    optimizer: str = spec_field("gd", choice(*OPTIMIZERS),
                                "gd (full-batch gradient descent) | momentum | adam (AdamW): each preset's per-layer rule "
                                "under mean_field, one global lr on W1, W2 under raw (docs/model.md section 2b)")
    momentum: float = spec_field(0.9, nonnegative_number, "mu of optimizer momentum, in [0, 1)")
    betas: tuple[float, ...] = spec_field((0.9, 0.999), list_of(nonnegative_number, "numbers in [0, 1)"),
                                          "Adam's [beta1, beta2]")
    eps: float = spec_field(1e-8, nonnegative_number, "Adam's epsilon, in the units lr_scaling names")
    weight_decay: float = spec_field(0.0, nonnegative_number,
                                     "decoupled weight decay (AdamW's): each step first multiplies the units by 1 - lr weight_decay")
    dtype: str = spec_field("float64", choice(*DTYPES), "floating-point precision")
    device: str = spec_field("auto", choice(*DEVICES), "auto = cuda when the trial holds a GPU, else cpu")
    divergence_factor: float = spec_field(10.0, positive_number,
                                           "a seed whose loss exceeds this times its step-0 loss is diverged (> 1)")
    divergence_bound: float = spec_field(1e3, positive_number,
                                          "a seed whose |f| exceeds this times the targets' RMS is diverged")
    init_noise_limit: float = spec_field(1.0, positive_number,
                                          "rows of points with alpha_eff / sqrt(L M) above this are flagged init_noise")
    chaos_check: bool = spec_field(False, boolean,
                                    "run a twin nudged by 1e-12 and flag seeds whose trajectories separate as chaotic")


@dataclass(frozen=True)
class ReferenceSpec:
    """[reference]: what each trial is compared with (docs/model.md section 3)."""

    kind: str = spec_field(DEFAULT_KIND, choice(*KINDS),
                            "mean_ode particle solution, the largest grid point, joint_limit (exact, identity "
                            "activation), or none (the loss alone, no reference)")
    depth: int = spec_field(1024, positive_int, "L_ref of the mean_ode reference (even)")
    width: int = spec_field(512, positive_int, "M_ref of the mean_ode reference (even)")
    replicas: int = spec_field(2, at_most(MAX_REPLICAS, "replicas"), "R_ref >= 2 independent particle systems")
    grid: int = spec_field(256, positive_int, "RK4 steps over depth of the joint_limit reference (even)")


@dataclass(frozen=True)
class GridSpec:
    """[grid]: every list is an axis; the sweep is their product, times ``seeds`` repetitions."""

    L: tuple[int, ...] = spec_field(None, list_of(positive_int, "positive integers"), "depths", required=True)
    M: tuple[int, ...] = spec_field(None, list_of(positive_int, "positive integers"), "hidden widths", required=True)
    D: tuple[int, ...] = spec_field(None, list_of(positive_int, "positive integers"), "embedding dimensions", required=True)
    alpha: tuple[float, ...] = spec_field((1.0,), list_of(positive_number, "positive numbers"), "residual multipliers")
    sigma_u: tuple[float, ...] | None = spec_field(
        None, list_of(positive_number, "positive numbers"), "init scales of u (replaces [model] sigma_u)")
    sigma_v: tuple[float, ...] | None = spec_field(
        None, list_of(positive_number, "positive numbers"), "init scales of v (replaces [model] sigma_v)")
    lr: tuple[float, ...] | None = spec_field(
        None, list_of(positive_number, "positive numbers"), "learning rates (replaces [train] lr)")
    # categorical axes: each value is its own limit, so its trials get their own references
    preset: tuple[str, ...] | None = spec_field(
        None, list_of(choice(*PRESETS), "presets"), "residual scaling presets (replaces [model] preset)")
    activation: tuple[str, ...] | None = spec_field(
        None, list_of(choice(*ACTIVATION_NAMES), "activations"), "activations (replaces [model] activation)")
    lr_scaling: tuple[str, ...] | None = spec_field(
        None, list_of(choice(*LR_SCALINGS), "learning-rate scalings"),
        "learning-rate scalings (replaces [train] lr_scaling)")
    optimizer: tuple[str, ...] | None = spec_field(
        None, list_of(choice(*OPTIMIZERS), "optimizers"), "optimizers (replaces [train] optimizer)")
    problem_seeds: tuple[int, ...] | None = spec_field(
        None, list_of(nonnegative_int, "non-negative integers"),
        "problem draws: data and embeddings seeds, each with its own reference (replaces [problem] seed)")
    seeds: int = spec_field(3, at_most(MAX_SEEDS, "seeds per grid point"), "repetitions per grid point (seeds 0..seeds-1, batched)")
    cases: tuple[tuple[tuple[str, tuple], ...], ...] | None = spec_field(
        None, lambda v: grid_cases(v),
        "sub-grids ([[grid.cases]] tables): each overrides the axes it names; the sweep is the union of their products")

    def case_tables(self) -> list[dict]:
        """Each case as axis -> values (empty when the grid has no cases)."""
        return [dict(case) for case in self.cases or ()]


# The [grid] axes a case may name: the TrialConfig axes (problem draws and seeds are the grid's).
CASE_AXES = GRID_AXES


def _at(error: Exception, key: str) -> Exception:
    """``error`` with the spec key it is about (``[grid.cases][1] lr``): the loader names it."""
    error.key = key
    return error


def grid_cases(v: Any) -> tuple:
    """[[grid.cases]]: a non-empty list of tables, each naming at least one of ``CASE_AXES`` with
    a list its [grid] axis accepts; kept as a tuple of (axis, values) pairs per case."""
    from .spec_values import InvalidValue, unknown_key
    from ..formatting import spec_key

    if not isinstance(v, list) or not v or not all(isinstance(case, dict) for case in v):
        raise InvalidValue("expected [[grid.cases]] tables, each naming the axes it overrides, e.g. "
                           "[[grid.cases]] lr_scaling = [\"raw\"] lr = [0.01, 0.1]")
    known = {f.name: f for f in dataclasses.fields(GridSpec)}
    out = []
    for i, case in enumerate(v):
        if not case:
            raise _at(InvalidValue("names no axis; name the axes it overrides, e.g. lr = [0.5, 1.0]"), f"[grid.cases][{i}]")
        pairs = []
        for axis, values in case.items():
            if axis not in CASE_AXES:
                raise _at(InvalidValue(unknown_key(axis, CASE_AXES)), f"[grid.cases][{i}] {spec_key(axis)}")
            try:
                pairs.append((axis, known[axis].metadata["check"](values)))
            except InvalidValue as bad:
                raise _at(InvalidValue(str(bad)), f"[grid.cases][{i}] {axis}") from None
        out.append(tuple(pairs))
    return tuple(out)


@dataclass(frozen=True)
class ResourcesSpec:
    """[resources]: what each Ray Tune trial holds, and how the sweep is scheduled."""

    cpus_per_trial: float = spec_field(1.0, positive_number, "CPUs each trial holds (fractions allowed)")
    gpus_per_trial: float = spec_field(0.0, nonnegative_number, "GPUs each trial holds; fractions below 1 share a GPU")
    max_concurrent: int | None = spec_field(None, positive_int, "at most this many trials at once (default: what fits)")
    retries: int = spec_field(2, nonnegative_int, "re-runs of a grid point that raised before it is recorded failed")
    points_per_trial: int | str = spec_field(
        "auto", points_per_trial, "grid points packed into one Tune trial (auto: by estimated cost)")
    fuse: bool = spec_field(
        True, boolean, "train the points of a Tune trial that share a shape as one program, units drawn once "
        "(false: each point alone; the rows are the same)")
    max_points: int = spec_field(
        100_000, at_most(MAX_GRID_POINTS, "points"), "the most grid points (trials) the spec may define; a larger grid is refused before it is expanded")


@dataclass(frozen=True)
class AdaptiveSpec:
    """[adaptive]: ``explorer sweep --adaptive`` runs the [grid] as a candidate set, choosing points
    round by round to shrink the targets' CIs per unit of cost (``explorer.sweeps.adaptive``)."""

    form: str = spec_field(DEFAULT_FORM, law_name,
                            "the law fitted each round, a name of the fit registry (explorer fit --form)")
    targets: tuple[str, ...] | None = spec_field(
        None, list_of(law_name, "parameter names"), "parameters whose CIs to shrink (default: the form's exponents)")
    halfwidth: float = spec_field(0.1, positive_number, "the 95% CI half-width every target should reach")
    budget: float = spec_field(0.5, budget_fraction,
                                "the most compute to spend, a fraction of the full grid's cost in predicted seconds")
    batch: int = spec_field(8, at_most(MAX_GRID_POINTS, "points per round"), "points (trials) chosen per round")
    initial: int | None = spec_field(None, at_most(MAX_GRID_POINTS, "points"),
                                      "points of the space-filling initial design (default: 2 x batch, at least 8)")
    resamples: int = spec_field(200, resample_count, "bootstrap resamples of each round's fit (>= 2)")


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
            return kind_named(self.reference.kind).couples_embeddings
        return self.problem.coupled_embeddings

    def grid_points(self) -> int:
        """Number of grid points (trials), seeds not counted, problem draws counted: the union of
        the cases' products (a point in two cases counts once)."""
        cases = self.case_axes()
        if len(cases) == 1:
            per_draw = math.prod(len(values) for values in cases[0].values())
        else:
            per_draw = len({point for axes in cases for point in itertools.product(*axes.values())})
        return per_draw * len(self.problem_seeds())

    def base_axes(self) -> dict[str, tuple]:
        """The values of each TrialConfig axis (``GRID_AXES``) the [grid] itself gives: its list,
        else the scalar it replaces (the cases override these)."""
        axes = {}
        for name in GRID_AXES:
            values = getattr(self.grid, name)
            if values is None:
                section, key = AXIS_SCALAR[name]
                values = (getattr(getattr(self, section), key),)
            axes[name] = values
        return axes

    def case_axes(self) -> list[dict[str, tuple]]:
        """The axes of each case (``[[grid.cases]]``): the [grid]'s, with those the case names
        replaced; one entry, the [grid]'s, without cases. The sweep is the union of their products."""
        base = self.base_axes()
        cases = self.grid.case_tables()
        return [{**base, **case} for case in cases] if cases else [base]

    def axes(self) -> dict[str, tuple]:
        """The values each TrialConfig axis (``GRID_AXES``) takes anywhere in the sweep: the [grid]
        list, else the scalar; with cases, every value of any case, in the order first met."""
        cases = self.case_axes()
        if len(cases) == 1:
            return cases[0]
        return {name: tuple(dict.fromkeys(v for axes in cases for v in axes[name])) for name in GRID_AXES}

    def problem_seeds(self) -> tuple[int, ...]:
        """The problem draws: [grid] problem_seeds, else the one [problem] seed."""
        return self.grid.problem_seeds if self.grid.problem_seeds is not None else (self.problem.seed,)

    # --- the spec in the trials package's terms (raise trials.ConfigError) -------------------

    def problem_config(self, seed: int) -> ProblemConfig:
        """The data and embeddings of one problem draw (embeddings coupled at the largest D when
        ``coupled_embeddings``)."""
        p = self.problem
        coupled = max(self.axes()["D"]) if self.coupled_embeddings else None
        return ProblemConfig(d_in=p.d_in, d_out=p.d_out, samples=p.samples, seed=seed, coupled_dim=coupled,
                             data=p.data, data_seed=p.data_seed, independent_embeddings=p.independent_embeddings,
                             teacher_seed=p.teacher_seed, teacher_depth=p.teacher_depth, teacher_width=p.teacher_width,
                             label_noise=p.label_noise, test_samples=p.test_samples)

    def trial_config(self, problem: ProblemConfig, point: Mapping[str, Any]) -> TrialConfig:
        """The trial configuration of one grid point (``point``: a value per ``GRID_AXES`` axis),
        all its seeds batched."""
        fields = {"activation": self.model.activation, "preset": self.model.preset,
                  "lr_scaling": self.train.lr_scaling, "optimizer": self.train.optimizer, **point}
        t = self.train
        return TrialConfig(
            problem=problem, block=self.model.block,
            steps=self.train.steps, dtype=self.train.dtype, device=self.train.device,
            seeds=tuple(range(self.grid.seeds)), antithetic=self.model.antithetic,
            divergence_factor=self.train.divergence_factor, divergence_bound=self.train.divergence_bound,
            init_noise_limit=self.train.init_noise_limit, chaos_check=self.train.chaos_check,
            momentum=t.momentum, betas=tuple(t.betas), eps=t.eps, weight_decay=t.weight_decay, **fields,
        )

    def reference_config(self, limit: TrialConfig):
        """The configuration of the reference the trial ``limit`` is compared with, as the spec's
        kind makes it (``reference_kinds``)."""
        return kind_named(self.reference.kind).reference_config(self, limit)

    def to_dict(self) -> dict:
        """The resolved spec as plain TOML-like data (tuples as lists), for records and display."""
        out: dict[str, Any] = {"name": self.name}
        for section in SECTIONS:
            values = {f.name: getattr(getattr(self, section), f.name) for f in dataclasses.fields(SECTIONS[section])}
            out[section] = {k: list(v) if isinstance(v, tuple) else v for k, v in values.items() if v is not None}
        if self.grid.cases is not None:
            out["grid"]["cases"] = [{axis: list(values) for axis, values in case.items()}
                                    for case in self.grid.case_tables()]
        out["problem"]["coupled_embeddings"] = self.coupled_embeddings
        return out
