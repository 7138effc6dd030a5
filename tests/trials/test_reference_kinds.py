"""The reference kinds that compute a limit declare one interface (``LimitReferenceConfig``):
mean_ode's ``ReferenceConfig`` and joint_limit's ``JointLimitConfig`` implement every member with
its signature, and keep its contract: trials that differ only in L, M and seeds share the limit's
identity and key, a limit-defining field changes both."""
from __future__ import annotations

import inspect

import pytest

from trials import JointLimitConfig, LimitReferenceConfig, ProblemConfig, ReferenceConfig, TrialConfig

LINEAR = ProblemConfig(d_in=3, d_out=3, samples=1, data="linear_target", data_seed=42, seed=1)


def trial(**changes) -> TrialConfig:
    base = dict(L=4, M=2, D=8, problem=LINEAR, activation="identity", lr=0.1, steps=5, device="cpu")
    return TrialConfig(**{**base, **changes})


KINDS = {"mean_ode": lambda t: ReferenceConfig(limit=t, depth=16, width=8), "joint_limit": JointLimitConfig}
MEMBERS = [name for name in vars(LimitReferenceConfig) if not name.startswith("_")]


def test_the_interface_declares_what_the_planner_and_the_store_read():
    assert set(MEMBERS) == {"limit", "limit_identity", "limit_fields", "key"}


@pytest.mark.parametrize("kind", KINDS)
def test_each_limit_kind_implements_the_interface_with_its_signatures(kind):
    config = KINDS[kind](trial())
    assert isinstance(config, LimitReferenceConfig)
    for name in MEMBERS:
        declared = getattr(LimitReferenceConfig, name)
        if isinstance(declared, property):
            assert isinstance(getattr(config, name), TrialConfig)
            continue
        wanted = list(inspect.signature(declared).parameters)[1:]  # without self
        assert list(inspect.signature(getattr(config, name)).parameters) == wanted, (kind, name)


def test_a_trial_config_is_no_limit_reference():
    # the largest kind's reference is a grid point: a TrialConfig, keyed by largest_reference_key
    assert not isinstance(trial(), LimitReferenceConfig)


@pytest.mark.parametrize("kind", KINDS)
def test_trials_of_one_limit_share_its_identity_and_key_and_a_limit_field_changes_both(kind):
    make = KINDS[kind]
    base = make(trial())
    same = make(trial(L=16, M=6, seeds=(3, 4)))
    other = make(trial(lr=0.2))
    assert same.limit_identity() == base.limit_identity() and same.key() == base.key()
    assert same.limit_fields() == base.limit_fields()
    assert other.limit_identity() != base.limit_identity() and other.key() != base.key()


def test_the_two_kinds_of_one_limit_are_two_references():
    t = trial()
    mean_ode, joint = (make(t) for make in KINDS.values())
    assert mean_ode.limit_fields() == joint.limit_fields()  # the same limit
    assert mean_ode.key() != joint.key()  # computed two ways: stored apart
