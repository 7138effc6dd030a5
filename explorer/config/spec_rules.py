"""The rules across a spec's keys, checked once its sections are parsed: a key set twice (a grid
list and a scalar), a reference key its kind does not use, the adaptive section's law and
targets, the resources against the device, and the trials package's own rules of a
configuration (``CONFIG_KEYS`` names the spec key behind each trials field). Each refusal names
the key the user should change."""
from __future__ import annotations

from trials import ConfigError

from ..errors import SpecProblems, spec_error
from ..formatting import spec_value
from .reference_kinds import kind_named
from .sections import AXIS_SCALAR, AdaptiveSpec, SweepSpec


def check_consistency(spec: SweepSpec, problems: SpecProblems) -> None:
    """Cross-key rules: each refusal names the key the user should change; every rule is
    judged, and each refusal is added to ``problems`` (one line per mistake)."""
    for axis, (section, key) in AXIS_SCALAR.items():
        if getattr(spec.grid, axis) is not None and f"{section}.{key}" in spec.given:
            problems.add(spec_error(f"[grid] {axis}", f"also set as [{section}] {key}; keep one (the grid list sweeps it; "
                                    f"on the command line, {section}.{key}= removes the file's)"))
    ref = spec.reference
    kind = kind_named(ref.kind)
    for key in kind.unused_keys:
        if f"reference.{key}" in spec.given:
            problems.add(spec_error(f"[reference] {key}", f'not used with kind = "{ref.kind}"; remove it'))
    if spec.problem.independent_embeddings and spec.coupled_embeddings:
        problems.add(spec_error("[problem] independent_embeddings",
                                "true needs coupled_embeddings = false (each D draws its own W_E, W_U)"))
    kind.check_spec(spec, problems)
    if not problems.lines:  # the trials' rules judge a spec whose own rules hold (else they repeat them)
        check_trial_rules(spec, problems)
    if any(key.startswith("adaptive.") for key in spec.given):
        with problems.gather():
            check_adaptive(spec.adaptive)
    check_resources(spec, problems)


def check_resources(spec: SweepSpec, problems: SpecProblems) -> None:
    """[resources] against Ray's rules of a resource quantity (``ray_quantity``) and the device."""
    res = spec.resources
    for key, device in (("cpus_per_trial", "CPU"), ("gpus_per_trial", "GPU")):
        problem = ray_quantity(getattr(res, key), device)
        if problem:
            problems.add(spec_error(f"[resources] {key}", problem))
    gpus = res.gpus_per_trial
    if gpus > 0 and spec.train.device == "cpu":
        problems.add(spec_error("[resources] gpus_per_trial", f'{gpus:g} GPU per trial but [train] device = "cpu"; '
                                'set gpus_per_trial = 0 or device = "auto"'))
    if gpus == 0 and spec.train.device == "cuda":
        problems.add(spec_error("[train] device", '"cuda" needs [resources] gpus_per_trial > 0 (a trial sees only the GPUs it holds)'))


# Ray counts a resource in units of 1/10,000 (``ray._raylet.RESOURCE_UNIT_SCALING``, 10,000 in
# Ray 2.60): its ``_validate_resource_quantity`` (ray/_common/ray_option_utils.py) refuses a
# request below one unit, with a traceback once the first trial is scheduled, and a quantity
# between units is rounded to one. A GPU count above 1 must be whole: the explorer's own rule
# (a fraction shares one GPU among trials; 1.5 GPUs would share two unevenly).
RAY_RESOURCE_UNIT = 10_000


def ray_quantity(value: float, device: str) -> str | None:
    """What is wrong with a ``device`` ("CPU" or "GPU") count as Ray reads it, or None: a
    positive count is a multiple of 0.0001, and a GPU count above 1 a whole number."""
    if value == 0:
        return None
    if device == "GPU" and value > 1 and value != int(value):
        return f"a fraction must be below 1 (several trials share a GPU); above 1 give a whole number, got {value:g}"
    units = value * RAY_RESOURCE_UNIT
    if round(units) < 1 or abs(units - round(units)) > 1e-6 * units:
        return (f"Ray counts a {device} in steps of 0.0001, and refuses or rounds anything finer; give a "
                f"multiple of 0.0001 (at least 0.0001), got {value:g}")
    return None


def check_adaptive(adaptive: AdaptiveSpec) -> None:
    """[adaptive] form must be a registry law and its targets parameters of that law (checked
    only when the section is given: it imports the fits, pandas and scipy)."""
    from ..analysis.laws import FORMS

    if adaptive.form not in FORMS:
        raise spec_error("[adaptive] form", f"expected one of {', '.join(spec_value(f) for f in FORMS)}; got {spec_value(adaptive.form)}")
    parameters = adaptive_parameters(adaptive.form)
    for name in adaptive.targets or ():
        if name not in parameters:
            raise spec_error("[adaptive] targets", f"{spec_value(name)} is not a parameter of the {adaptive.form} law; "
                             f"expected some of {', '.join(spec_value(p) for p in parameters)}")


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
CONFIG_KEYS = {
    "L": "[grid] L", "M": "[grid] M", "D": "[grid] D", "alpha": "[grid] alpha",
    "sigma_u": "[model] sigma_u", "sigma_v": "[model] sigma_v", "lr": "[train] lr",
    "activation": "[model] activation", "block": "[model] block", "preset": "[model] preset",
    "antithetic": "[model] antithetic", "steps": "[train] steps", "dtype": "[train] dtype",
    "device": "[train] device", "seeds": "[grid] seeds",
    "divergence_factor": "[train] divergence_factor", "divergence_bound": "[train] divergence_bound",
    "init_noise_limit": "[train] init_noise_limit", "chaos_check": "[train] chaos_check",
    "lr_scaling": "[train] lr_scaling", "optimizer": "[train] optimizer", "momentum": "[train] momentum",
    "betas": "[train] betas", "eps": "[train] eps", "weight_decay": "[train] weight_decay",
    "problem.d_in": "[problem] d_in", "problem.d_out": "[problem] d_out", "problem.samples": "[problem] samples",
    "problem.seed": "[problem] seed", "problem.coupled_dim": "[problem] coupled_embeddings",
    "problem.data": "[problem] data", "problem.data_seed": "[problem] data_seed",
    "problem.independent_embeddings": "[problem] independent_embeddings",
    **{f"problem.{name}": f"[problem] {name}"
       for name in ("teacher_seed", "teacher_depth", "teacher_width", "label_noise", "test_samples")}, "reference.grid": "[reference] grid",
    "reference.depth": "[reference] depth", "reference.width": "[reference] width",
    "reference.replicas": "[reference] replicas", "reference.device": "[train] device",
}


# Fields an optional [grid] list replaces: when it is given, the error is the axis's.
FIELD_AXIS = {"sigma_u": "sigma_u", "sigma_v": "sigma_v", "lr": "lr", "problem.seed": "problem_seeds",
              "preset": "preset", "activation": "activation", "lr_scaling": "lr_scaling", "optimizer": "optimizer"}


def key_of(error: ConfigError, spec: SweepSpec) -> str | None:
    """The spec key (``[section] key``) a trials ConfigError is about, or None."""
    axis = FIELD_AXIS.get(error.field)
    if axis is not None and getattr(spec.grid, axis) is not None:
        return f"[grid] {axis}"
    return CONFIG_KEYS.get(error.field)


def check_trial_rules(spec: SweepSpec, problems: SpecProblems) -> None:
    """Build the trials configurations the spec implies, so that the trials package's own rules
    judge it: per case of ``[[grid.cases]]`` (the [grid] alone without them) the first grid point,
    each other value of each axis (the rest held at the first point: every rule involves at most
    one axis), and whether the reference kind serves each (its ``check_serves``: mean_ode and
    joint_limit refuse a preset or learning-rate scaling with no limit, ``TrialConfig.no_limit_reason``).

    Adds to ``problems`` each refusal, naming the key (an axis value that breaks a rule names its
    [grid] axis, or ``[grid.cases][i] axis`` when case i names it; one line per axis); a first
    point that is refused is the only line of its case (every other configuration is built from
    it), and so is its reference.
    """
    cases = spec.grid.case_tables()
    for number, axes in enumerate(spec.case_axes()):
        named = cases[number] if cases else {}
        _check_case(spec, axes, problems, lambda axis: f"[grid.cases][{number}] {axis}" if axis in named
                    else f"[grid] {axis}")


def _case_key(error: ConfigError, key) -> str | None:
    """``[grid.cases][i] axis`` when the refused field is an axis the case names, else None."""
    named = key(FIELD_AXIS.get(error.field, error.field))
    return named if named.startswith("[grid.cases]") else None


def _check_case(spec: SweepSpec, axes: dict, problems: SpecProblems, key) -> None:
    """``check_trial_rules`` on one case's axes (``key``: axis -> the spec key to name)."""
    first = {axis: values[0] for axis, values in axes.items()}
    seeds = spec.problem_seeds()
    try:
        problem = spec.problem_config(seeds[0])
        limit = spec.trial_config(problem, first)
    except ConfigError as exc:
        where = ", ".join(f"{k}={v}" for k, v in first.items())
        problems.add(spec_error(_case_key(exc, key) or key_of(exc, spec) or f"[grid] point {where}", str(exc)))
        return
    kind = kind_named(spec.reference.kind)
    try:
        kind.check_serves(spec, limit)
    except ConfigError as exc:
        problems.add(spec_error(_case_key(exc, key) or key_of(exc, spec) or "[reference]", str(exc)))
        return
    for axis, values in (*axes.items(), ("problem_seeds", seeds)):
        for value in values[1:]:
            try:
                if axis == "problem_seeds":
                    spec.problem_config(value)
                    continue
                config = spec.trial_config(problem, {**first, axis: value})
                kind.check_serves(spec, config)
            except ConfigError as exc:
                problems.add(spec_error(key(axis), str(exc)))
                break  # the axis is named: its first bad value says what to change


