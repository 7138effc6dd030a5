"""References on the worker side: computed once per key (or found in the store's cache) and
kept in memory per worker process, so that reused actors keep them warm.

The engine's names are imported in the functions that use them: they import torch, which the
adaptive sweep's driver, importing this module for its workers, never needs."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from store import Store, StoreError

from ...config.planning import PlannedReference
from ...config.reference_kinds import kind_named
from ..ray import apply_torch_threads
from ..tracking import unreachable
from .screen import validator

if TYPE_CHECKING:
    from trials import Reference

REFERENCE_CACHE: dict[str, Reference] = {}  # per worker process: reused actors keep it warm
REFERENCE_CACHE_SIZE = 64


def compute(planned: PlannedReference) -> Reference:
    """Compute one reference (no cache)."""
    from trials import release_spares

    # A worker keeps its last trial's tensors for the next trial of that shape (trials.train);
    # a reference is not one, and its memory estimate does not count them.
    release_spares()
    return kind_named(planned.kind).compute(planned.config)


def load_reference(store: Store, planned: PlannedReference) -> Reference:
    """The reference from this process's cache, else the store's (computed there once per key); a
    kind that stores none (``ReferenceKind.stored``) makes it here."""
    ref = REFERENCE_CACHE.get(planned.ref_key)
    if ref is None and not kind_named(planned.kind).stored:
        return kind_named(planned.kind).compute(planned.config)
    if ref is None:
        from trials import Reference

        arrays, meta = store.get_or_compute_reference(planned.ref_key, lambda: compute(planned).to_record(),
                                                      validate=validator(planned.ref_key))
        ref = Reference.from_record(arrays, meta)
        if len(REFERENCE_CACHE) >= REFERENCE_CACHE_SIZE:
            REFERENCE_CACHE.pop(next(iter(REFERENCE_CACHE)))
        REFERENCE_CACHE[planned.ref_key] = ref
    return ref


def reference_task(store: Store, planned: PlannedReference) -> tuple[str | None, int, float]:
    """Compute (or find) one reference in the store; return (why it diverged or None, the torch
    threads it ran with, seconds). Any other error is raised (its group is not scheduled)."""
    from trials import ReferenceDiverged

    threads = apply_torch_threads()
    t0 = time.perf_counter()
    try:
        load_reference(store, planned)
    except ReferenceDiverged as exc:
        return str(exc), threads, time.perf_counter() - t0
    except StoreError as exc:
        raise unreachable(store, exc) or exc from None
    return None, threads, time.perf_counter() - t0
