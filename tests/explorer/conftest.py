"""Fixtures of the sweep tests (sweeps/, cli/test_cli_sweep.py, and tests/end_to_end through its
conftest): Ray's environment, a local Ray per module, and the row counts every sweep test checks.
The analysis tests keep their fixtures in their own modules and the shared data modules here."""
from __future__ import annotations

import os

import pytest

# Before any test module imports Ray: no token prompt, no usage reporting (spawned drivers too).
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# Ray reads its single-machine switch when first imported: test modules import Ray before explorer
# does, so the embedded Rays of these tests stay on loopback only through this (the loopback test
# itself runs in a fresh interpreter without it, as the CLI does).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


@pytest.fixture(scope="module")
def local_ray():
    """A 2-CPU local Ray for the tests of one module; a sweep run meanwhile uses it and leaves it up."""
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def metric_row_counts():
    """``counts(store, sweep) -> {"n": rows, "distinct_n": distinct (trial_key, seed, step)}``."""

    def counts(store, sweep: str) -> dict[str, int]:
        return store.query("SELECT count(*) AS n, count(DISTINCT (trial_key, seed, step)) AS distinct_n FROM metrics",
                           sweep=sweep).to_pylist()[0]

    return counts


def spec_values(node, key):
    """Every value of ``key`` anywhere in a nested chart spec (dicts and lists)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                yield v
            yield from spec_values(v, key)
    elif isinstance(node, list):
        for v in node:
            yield from spec_values(v, key)
