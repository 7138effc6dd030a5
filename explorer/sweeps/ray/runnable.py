"""A spec known to run before Ray is even imported: loaded (spec errors first) and, on an embedded
Ray, checked against this machine's memory. The first step of every launch, a grid's
(``launch.sweep``) and an adaptive sweep's (``explorer.sweeps.adaptive``), which is why it stands
apart from either: the adaptive wing reaches it without importing the Tune driver."""
from __future__ import annotations

from collections.abc import Sequence

from ...config.sections import SweepSpec
from ...config.spec import load_spec
from .probe import SESSION_ADDRESS


def runnable_spec(spec_or_path, overrides: Sequence[str], address: str | None) -> SweepSpec:
    """The spec, loaded before Ray is even imported (spec errors first); with an embedded Ray
    (``address`` None: it runs on this machine) what cannot fit its memory is refused before it starts."""
    spec = load_spec(spec_or_path, overrides)
    if address in (None, SESSION_ADDRESS):
        from ...config.host_memory import available_memory_bytes
        from ...config.memory_refusal import check_fits_memory

        check_fits_memory(spec, available_memory_bytes())
    return spec


__all__ = ["runnable_spec"]
