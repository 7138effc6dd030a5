"""Torch's threads in a worker task: as many as the CPUs Ray gave it, not every core of the node."""
from __future__ import annotations

import math

from ...config.env_settings import setting
from .imports import ray

THREADS_ENV = "EXPLORER_TORCH_THREADS"  # torch threads of each worker task (default: the CPUs Ray gave it)


def apply_torch_threads() -> int:
    """Give torch, in this worker, as many intra-op threads as the CPUs Ray assigned to the task or
    actor (at least 1), or ``$EXPLORER_TORCH_THREADS`` when set; returns that count.

    torch's default (every core of the machine in every worker) oversubscribes a node that runs
    several trials at once: a 512 x 256 reference took 36.6 s with 2 threads and 2.5 s with 1 on
    a busy 2-core machine.
    """
    import torch

    n = setting(THREADS_ENV) or 0  # bounded (env_settings); checked by the driver before Ray starts
    if n <= 0:
        cpus = 1.0
        if ray.is_initialized():
            cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
        n = max(1, math.floor(cpus + 1e-9))
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n
