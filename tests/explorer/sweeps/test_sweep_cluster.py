"""A sweep on a multi-node Ray cluster (``ray.cluster_utils.Cluster``: a head with no CPUs and
worker nodes of one CPU each): trials run on both nodes, and losing one mid-sweep costs only its
running trials, which run again on the other.

The order is forced, not left to the scheduler: a placeholder actor holds the second node's CPU
until a trial has finished on the first; then it is killed and the first node removed, so the
rest can only run on the second. (Left to the scheduler, a loaded machine let the first node's
actor take every trial before the second node's actor had started.)"""
from __future__ import annotations

import threading
import time

import pytest
import ray
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import explorer
from store import Store

pytestmark = pytest.mark.slow

SPEC = {
    "name": "cluster",
    "train": {"steps": 20},
    "reference": {"depth": 16, "width": 8},
    # About 13 s of compute in 9 Tune trials: the first node is lost after its first trial.
    "grid": {"L": [64, 128, 256], "M": [64, 128, 256], "D": [8], "seeds": 3},
    "resources": {"points_per_trial": 1},
}
TOTAL = 9


@pytest.fixture
def cluster():
    # Fast failure detection: a removed node is declared dead within about a second.
    head = {"num_cpus": 0, "_system_config": {"health_check_initial_delay_ms": 0, "health_check_period_ms": 200,
                                              "health_check_failure_threshold": 5}}
    c = Cluster(initialize_head=True, head_node_args=head)
    nodes = [c.add_node(num_cpus=1), c.add_node(num_cpus=1)]
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    yield c, nodes
    ray.shutdown()
    c.shutdown()


@ray.remote(num_cpus=1)
class Placeholder:
    """Holds one CPU of the node it is pinned to, so that no trial can start there."""

    def ready(self) -> bool:
        return True


def node_counts(store: Store) -> dict[str, int]:
    table = store.query("SELECT node_id, count(DISTINCT trial_key) AS trials FROM metrics GROUP BY node_id",
                        sweep="cluster")
    return dict(zip(table.column("node_id").to_pylist(), table.column("trials").to_pylist()))


def test_trials_run_on_both_nodes_and_survive_losing_one(tmp_path, cluster, metric_row_counts):
    c, (first, second) = cluster
    store = Store(tmp_path)
    hold_second = Placeholder.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(second.node_id, soft=False)).remote()
    ray.get(hold_second.ready.remote())
    removed = threading.Event()
    errors: list[Exception] = []

    def move_to_second_node_after_a_trial_on_the_first():
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            try:
                # The trials rows' node ids, read without DuckDB (this thread races the driver's).
                ran_there = first.node_id in set(store.trial_column("cluster", "node_id").values())
            except Exception as exc:  # noqa: BLE001 - the store is being written; look again
                errors.append(exc)
                ran_there = False
            if ran_there:
                ray.kill(hold_second)  # the second node's CPU is free for trials
                c.remove_node(first)  # while the other trials are still to run
                removed.set()
                return
            time.sleep(0.1)

    mover = threading.Thread(target=move_to_second_node_after_a_trial_on_the_first, daemon=True)
    mover.start()
    result = explorer.sweep(SPEC, store=tmp_path, progress=False)
    mover.join(timeout=5)

    assert removed.is_set(), errors
    assert (result.ok, result.failed, result.missing, result.exit_code) == (TOTAL, 0, 0, 0), result.summary()
    counts = node_counts(store)
    assert set(counts) == {first.node_id, second.node_id}  # the node id is a column; both nodes ran trials
    assert sum(counts.values()) == TOTAL  # every trial once
    assert metric_row_counts(store, "cluster") == {"n": TOTAL * 3 * 21, "distinct_n": TOTAL * 3 * 21}
    assert store.check().ok
