"""What the sweep asks of Ray's nodes: how many trials fit at once (refusing what no node can
hold), and the memory each task or Tune trial requests."""
from __future__ import annotations

import math

from ...config.memory_refusal import check_fits_memory
from ...config.planning import PlannedReference
from ...config.reference_kinds import kind_named
from ...config.sections import SweepSpec
from ...errors import spec_error
from .imports import ray

# Trials and references estimated below this ask Ray for no memory (the worker process's own
# memory is not requested either): tiny sweeps schedule as before, by CPUs alone.
MEMORY_REQUEST_FLOOR = 256 * 2**20


def memory_request(need_bytes: int, largest_node_bytes: float) -> int:
    """Bytes of Ray's ``memory`` resource to request for a task estimated at ``need_bytes``: 0
    below ``MEMORY_REQUEST_FLOOR``, else the next power of two (Tune trials of similar size then
    share one resource shape and their actors can be reused), never more than the largest node's
    memory resource (a request no node can grant would wait forever; ``check_resources`` has
    already refused a point that does not fit there)."""
    if need_bytes < MEMORY_REQUEST_FLOOR or largest_node_bytes <= 0:  # no node reports memory: ask none
        return 0
    return int(min(2 ** math.ceil(math.log2(need_bytes)), max(largest_node_bytes, need_bytes)))


def largest_node_memory() -> float:
    """The largest ``memory`` resource of a live Ray node (0 when Ray reports none)."""
    return max((n.get("Resources", {}).get("memory", 0) for n in ray.nodes() if n.get("Alive")), default=0)


def reference_need(planned: PlannedReference) -> int:
    """Estimated bytes of computing one reference, as its kind asks them of Ray (0: none)."""
    return kind_named(planned.kind).request_bytes(planned.config)


def check_resources(spec: SweepSpec) -> int:
    """How many trials fit at once on the cluster; refuse requests no node can satisfy.

    Raises:
        SpecError: a GPU asked of a cluster without GPUs, or a trial larger than every node.
    """
    cpus, gpus = spec.resources.cpus_per_trial, spec.resources.gpus_per_trial
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    total_cpu = sum(n.get("CPU", 0) for n in nodes)
    total_gpu = sum(n.get("GPU", 0) for n in nodes)
    where = f"the Ray cluster has {total_cpu:g} CPUs and {total_gpu:g} GPUs on {len(nodes)} node(s)"
    if gpus > 0 and total_gpu == 0:
        raise spec_error("[resources] gpus_per_trial", f"{gpus:g} GPU per trial, but {where}; "
                         "set gpus_per_trial = 0, or join a cluster with GPUs (--address)")
    # Trials that ask Ray for memory are placed only where it is: one larger than every node's
    # would wait forever, so it is refused here with the point and its estimate.
    largest_memory = largest_node_memory()
    if largest_memory:
        check_fits_memory(spec, int(largest_memory), where="the largest Ray node has (its memory resource)")
    slots = 0
    for n in nodes:
        per_node = math.floor(n.get("CPU", 0) / cpus + 1e-9)
        if gpus > 0:
            per_node = min(per_node, math.floor(n.get("GPU", 0) / gpus + 1e-9))
        slots += per_node
    if slots == 0:
        largest = max(nodes, key=lambda n: (n.get("GPU", 0), n.get("CPU", 0)), default={})
        raise spec_error(
            "[resources] cpus_per_trial", f"a trial asks for {cpus:g} CPUs and {gpus:g} GPUs but no node has "
            f"that much (the largest has {largest.get('CPU', 0):g} CPUs and {largest.get('GPU', 0):g} GPUs); lower it"
        )
    return slots
