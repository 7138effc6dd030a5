"""The twins of ``explorer ray start``, ``stop`` and ``status`` (``explorer.cli.session``): the
session Ray (``explorer.sweeps.ray.session``)."""
from __future__ import annotations


def ray_start(num_cpus: int | None = None) -> list[str]:
    """Start the session Ray, a local Ray that every later sweep on this machine without an
    ``address`` joins, so that Ray starts once per working session (``explorer ray start``;
    ``explorer.sweeps.ray.session``). Loopback only, no dashboard, as the embedded default.
    Returns what the command prints; one already running is kept.

    Raises:
        ClusterError: Ray could not start (one line).
    """
    from ..sweeps import start_lines

    return start_lines(num_cpus)


def ray_stop() -> list[str]:
    """Stop the session Ray (``explorer ray stop``): its processes only, never another Ray of this
    machine. Returns what the command prints."""
    from ..sweeps import stop_lines

    return stop_lines()


def ray_status() -> list[str]:
    """Whether a session Ray is running and where (``explorer ray status``)."""
    from ..sweeps import status_lines

    return status_lines()


__all__ = ["ray_start", "ray_status", "ray_stop"]
