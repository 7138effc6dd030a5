"""Errors as a sweep records them: the user's exception out of Ray's wrappers, as one bounded
line, and the rows a failed trial leaves in the store."""
from __future__ import annotations

import math

from store import COLUMNS, StoreError
from trials import resolve_device

from ...config.planning import PlannedTrial
from ..ray import ray

ERROR_CHARS = 2000  # longest error message stored with a failed trial
# A Tune trial whose actor died (its node was lost, or the process was killed) is restarted this
# many times (the adaptive pool's points too). A pack skips its points that already have rows, so
# a restart costs only the point in flight; while a node is being removed Ray can still place the
# restart there, and three quick deaths made a trial "missing" in the two-node test under load.
LOST_ACTOR_RETRIES = 10
FLOAT_METRICS = tuple(c.name for c in COLUMNS["metrics"] if str(c.type) == "double")


def root_cause(exc: BaseException) -> BaseException:
    """The user's exception inside Ray's wrappers (``RayTaskError(StoreError)``, ``TuneError``...)."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "cause", None)
        if isinstance(inner, BaseException):
            exc = inner
            continue
        if isinstance(exc, ray.exceptions.RayError) and isinstance(exc.__cause__, BaseException):
            exc = exc.__cause__
            continue
        break
    return exc


def error_text(exc: BaseException) -> str:
    """One line for an error, at most ``ERROR_CHARS``: a store error by its own message, any
    other as ``Type: message``."""
    exc = root_cause(exc)
    message = str(exc).strip()
    if isinstance(exc, StoreError):  # its message says it all
        text = message or type(exc).__name__
    else:
        text = f"{type(exc).__name__}: {message}".strip()
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."


def failed_rows(trial: PlannedTrial, ref_kind: str, error: str, wall_s: float) -> list[dict]:
    """The rows of a failed trial: one per seed at step 0, NaN metrics, status failed, the error."""
    cfg = trial.config
    base = dict(cfg.columns(), ref_key=trial.ref_key, ref_kind=ref_kind,
                device=resolve_device("auto").type if cfg.device == "auto" else cfg.device)
    rows = []
    for seed in cfg.seeds:
        row = dict(base, seed=seed, step=0, status="failed", error=error, flags="")
        row.update({name: math.nan for name in FLOAT_METRICS if name not in base})
        row["wall_s"] = wall_s
        rows.append(row)
    return rows
