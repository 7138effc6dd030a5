"""Ray, imported once, on loopback unless the user says otherwise: every module of the sweep
driver takes ``ray`` and ``tune`` from here, never from Ray directly.

Ray decides, once, when it is first imported, which address the nodes it starts advertise and
bind: on Linux the machine's routable one (so that other machines can join), on macOS and
Windows the loopback one. Its documented switch for that is the environment variable
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER ("0": single machine, loopback). An embedded Ray must listen
on loopback only, so Ray is imported here with the switch off unless the user set it. Joining a
cluster still works (a driver takes the address of the node it connects to), and the switch is
not left in the environment of the processes this one starts later.
"""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

SINGLE_MACHINE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Set these environment variables for the duration, then restore what was there."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def single_machine_switch() -> dict[str, str]:
    """The switch as this process should see it: the user's value, else "0" (loopback)."""
    return {SINGLE_MACHINE: os.environ.get(SINGLE_MACHINE, "0")}


RAY_IMPORTED_BEFORE = "ray" in sys.modules
with environment(single_machine_switch()):
    import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: E402 - after the switch


def __getattr__(name: str):
    """``tune``, imported at its first use: Ray Tune takes about a second to import, and the
    adaptive sweep's driver and workers (``point_pool``) never use it."""
    if name == "tune":
        with environment(single_machine_switch()):
            from ray import tune
        return tune
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["NodeAffinitySchedulingStrategy", "RAY_IMPORTED_BEFORE", "SINGLE_MACHINE", "environment", "ray",
           "single_machine_switch", "tune"]
