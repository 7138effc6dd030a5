"""Planning: a spec expanded into trials, their keys and their references."""
from __future__ import annotations

import pytest

from explorer.config.planning import plan, trial_key
from explorer.config.spec import parse_spec
from trials import LARGEST_REFERENCE_SEED, PRESETS, ReferenceConfig, largest_reference_key

from tests.explorer.config.test_spec import DROP, BASE, with_changes


def test_grid_expands_to_product_with_batched_seeds():
    p = plan(parse_spec(BASE), schema_version=1)
    assert len(p.trials) == 12
    assert {(t.config.L, t.config.M) for t in p.trials} == {(L, M) for L in (4, 8, 16, 32) for M in (1, 4, 16)}
    assert all(t.config.seeds == (0, 1, 2) for t in p.trials)
    assert len({t.trial_key for t in p.trials}) == 12


def test_mean_ode_reference_shared_by_all_L_and_M_and_split_by_alpha_and_D():
    raw = with_changes(grid={"alpha": [1.0, 2.0], "D": [4, 8]})
    p = plan(parse_spec(raw), schema_version=1)
    assert len(p.references) == 4  # one per (alpha, D)
    for ref in p.references:
        assert ref.kind == "mean_ode"
        assert isinstance(ref.config, ReferenceConfig) and ref.config.depth == 1024
    groups = p.trials_by_reference()
    assert sorted(len(g) for g in groups.values()) == [12, 12, 12, 12]
    for ref in p.references:
        assert ref.ref_key == ref.config.key()
        assert {t.config.D for t in groups[ref.ref_key]} == {ref.config.limit.D}


def test_largest_reference_is_the_largest_point_with_embeddings_coupled_at_largest_D():
    raw = with_changes(reference={"kind": "largest", "depth": DROP, "width": DROP, "replicas": DROP},
                       grid={"D": [4, 8, 16], "alpha": [1.0, 4.0]})
    spec = parse_spec(raw)
    assert spec.coupled_embeddings is True
    p = plan(spec, schema_version=1)
    assert len(p.references) == 2  # one per alpha
    for ref in p.references:
        largest = ref.config
        assert (largest.L, largest.M, largest.D) == (32, 16, 16)
        assert ref.ref_key == largest_reference_key(largest)
    assert {t.config.problem.coupled_dim for t in p.trials} == {16}


def test_largest_reference_never_shares_a_unit_with_a_trial():
    # At D*M >= UNIT_BLOCK each layer draws from its own stream, so a trial run with the reference's
    # seeds would have the first row of every layer's units equal to the reference's.
    import numpy as np
    import torch

    from trials.model import init_units

    raw = with_changes(reference={"kind": "largest", "depth": DROP, "width": DROP, "replicas": DROP},
                       grid={"L": [2], "M": [512, 1024], "D": [512]}, model={"antithetic": False})
    p = plan(parse_spec(raw), schema_version=1)
    (ref,) = p.references
    assert set(ref.config.seeds).isdisjoint(s for t in p.trials for s in t.config.seeds)
    cpu = torch.device("cpu")
    ref_u = init_units(ref.config, ref.config.seeds, cpu, torch.float64).u.numpy()
    for t in p.trials:
        u = init_units(t.config, t.config.seeds, cpu, torch.float64).u.numpy()
        rows = u.reshape(-1, u.shape[-1])  # every (layer, seed, row) of the trial's u
        ref_rows = ref_u[..., : u.shape[-1]].reshape(-1, u.shape[-1])
        shared = {r.tobytes() for r in rows} & {r.tobytes() for r in ref_rows}
        assert not shared, f"trial M={t.config.M} shares {len(shared)} unit rows with its reference"
    # the same check sees the overlap that the trial's own seeds would give
    own = init_units(ref.config.replace(seeds=p.trials[0].config.seeds), p.trials[0].config.seeds, cpu,
                     torch.float64).u.numpy()
    assert np.array_equal(own[0, 0, 0, :512], init_units(p.trials[0].config, p.trials[0].config.seeds, cpu,
                                                          torch.float64).u.numpy()[0, 0, 0, :512])


def test_trial_keys_are_stable_and_change_with_schema_reference_and_config():
    first = {t.trial_key for t in plan(parse_spec(BASE), schema_version=1).trials}
    assert first == {t.trial_key for t in plan(parse_spec(BASE), schema_version=1).trials}
    assert first.isdisjoint({t.trial_key for t in plan(parse_spec(BASE), schema_version=2).trials})
    finer_ref = with_changes(reference={"depth": 2048})
    assert first.isdisjoint({t.trial_key for t in plan(parse_spec(finer_ref), schema_version=1).trials})


def test_extending_an_axis_keeps_the_existing_trial_keys():
    before = {t.trial_key for t in plan(parse_spec(BASE), schema_version=1).trials}
    after = {t.trial_key for t in plan(parse_spec(with_changes(grid={"L": [4, 8, 16, 32, 64]})), schema_version=1).trials}
    assert before < after and len(after - before) == 3


def test_grid_axis_replaces_scalar_setting():
    p = plan(parse_spec(with_changes(grid={"sigma_u": [0.5, 2.0]})), schema_version=1)
    assert {t.config.sigma_u for t in p.trials} == {0.5, 2.0}
    assert len(p.trials) == 24


def test_each_problem_seed_has_its_own_reference_and_trials():
    raw = with_changes(problem={"seed": DROP}, grid={"problem_seeds": [1, 2]})
    spec = parse_spec(raw)
    assert spec.grid_points() == 24
    p = plan(spec, schema_version=1)
    assert len(p.trials) == 24 and len(p.references) == 2
    groups = p.trials_by_reference()
    seeds_per_ref = [{t.config.problem.seed for t in groups[r.ref_key]} for r in p.references]
    assert seeds_per_ref == [{1}, {2}]
    assert [r.config.limit.problem.seed for r in p.references] == [1, 2]
    assert len({t.trial_key for t in p.trials}) == 24
    # One draw listed is the same sweep as [problem] seed: the same keys.
    one = with_changes(problem={"seed": DROP}, grid={"problem_seeds": [1]})
    assert [t.trial_key for t in plan(parse_spec(one), schema_version=1).trials] == \
        [t.trial_key for t in plan(parse_spec(BASE), schema_version=1).trials]


def test_problem_seeds_split_the_largest_reference_too():
    raw = with_changes(reference={"kind": "largest", "depth": DROP, "width": DROP, "replicas": DROP},
                       problem={"seed": DROP}, grid={"problem_seeds": [3, 4], "D": [4, 8]})
    p = plan(parse_spec(raw), schema_version=1)
    assert [r.config.problem.seed for r in p.references] == [3, 4]
    assert {r.ref_key for r in p.references} == {largest_reference_key(r.config) for r in p.references}


def test_trial_key_hashes_config_reference_and_schema():
    cfg = plan(parse_spec(BASE)).trials[0].config
    assert trial_key(cfg, "r1", 1) == trial_key(cfg, "r1", 1)
    assert len({trial_key(cfg, "r1", 1), trial_key(cfg, "r2", 1), trial_key(cfg, "r1", 2),
                trial_key(cfg.replace(L=cfg.L * 2), "r1", 1)}) == 4


def test_stability_settings_reach_every_trial_and_its_key():
    raw = with_changes(train={"divergence_factor": 4.0, "divergence_bound": 50.0, "init_noise_limit": 0.5,
                              "chaos_check": True})
    p = plan(parse_spec(raw), schema_version=1)
    assert {(t.config.divergence_factor, t.config.divergence_bound, t.config.init_noise_limit, t.config.chaos_check)
            for t in p.trials} == {(4.0, 50.0, 0.5, True)}
    default = plan(parse_spec(BASE), schema_version=1)
    assert not {t.trial_key for t in p.trials} & {t.trial_key for t in default.trials}


# --- every trial is compared with the reference its own config defines -------------------------

def _own_reference_key(spec, cfg) -> str:
    """The reference key of one trial computed from its config alone (no plan, no group)."""
    ref = spec.reference
    if ref.kind == "largest":
        seeds = tuple(LARGEST_REFERENCE_SEED + s for s in cfg.seeds)
        return largest_reference_key(cfg.replace(L=max(spec.grid.L), M=max(spec.grid.M), D=max(spec.grid.D), seeds=seeds))
    if ref.kind == "joint_limit":
        from trials import JointLimitConfig

        return JointLimitConfig(limit=cfg, grid=ref.grid).key()
    return ReferenceConfig(limit=cfg, depth=ref.depth, width=ref.width, replicas=ref.replicas,
                           device=spec.train.device).key()


def _effective_alpha(preset: str, alpha: float, M: int, D: int) -> float:
    """The Mean ODE multiplier by hand: alpha (mlu, lazy), alpha sqrt(M / D) (completep)."""
    return alpha * (M / D) ** 0.5 if preset == "completep" else alpha


def _specs_over_presets():
    grid = {"L": [2, 4, 8], "M": [1, 4, 16, 64], "D": [4, 8], "seeds": 1}
    for preset in PRESETS:
        alphas = [2.0, 8.0] if preset == "lazy" else [0.5, 1.0, 4.0]
        kinds = ["largest"] if preset in ("depth_mup", "standard") else ["mean_ode", "largest"]  # no limit: no mean_ode
        if preset in ("mlu", "lazy"):
            kinds.append("joint_limit")
        for kind in kinds:
            reference = {"kind": kind, "depth": DROP, "width": DROP, "replicas": DROP}
            if kind == "mean_ode":
                reference = {"depth": 64, "width": 16}
            model = {"preset": preset, "activation": "identity" if kind == "joint_limit" else "tanh"}
            problem = {"seed": DROP}
            if kind == "largest":
                problem["coupled_embeddings"] = True
            raw = with_changes(model=model, reference=reference, problem=problem,
                               grid={**grid, "alpha": alphas, "problem_seeds": [1, 2]})
            yield pytest.param(raw, id=f"{preset}-{kind}")


@pytest.mark.parametrize("raw", list(_specs_over_presets()))
def test_every_trials_ref_key_is_the_one_its_own_config_defines(raw):
    spec = parse_spec(raw)
    p = plan(spec, schema_version=1)
    assert len(p.trials) == 3 * 4 * 2 * len(spec.grid.alpha) * 2
    for t in p.trials:
        assert t.ref_key == _own_reference_key(spec, t.config), t.config
        assert t.trial_key == trial_key(t.config, t.ref_key, 1)
    by_key = {r.ref_key: r for r in p.references}
    assert set(by_key) == {t.ref_key for t in p.trials}  # every reference planned once, none unused
    # how many references, counted by hand: one per problem draw and distinct limit
    # (D, effective alpha), or per largest point (alpha: L, M and D are the grid's maxima)
    if spec.reference.kind == "largest":
        expected = {(t.config.problem.seed, t.config.alpha) for t in p.trials}
    else:
        expected = {(t.config.problem.seed, t.config.D,
                     round(_effective_alpha(spec.model.preset, t.config.alpha, t.config.M, t.config.D), 12))
                    for t in p.trials}
    assert len(p.references) == len(expected)


def test_completep_gives_each_M_its_own_mean_ode_reference():
    spec = parse_spec(with_changes(model={"preset": "completep"}, grid={"M": [4, 16, 64]}))
    p = plan(spec, schema_version=1)
    assert len(p.references) == 3
    for ref, M in zip(p.references, (4, 16, 64)):
        assert ref.config.limit.limit_alpha == pytest.approx((M / 8) ** 0.5)
        assert {t.config.M for t in p.trials_by_reference()[ref.ref_key]} == {M}
