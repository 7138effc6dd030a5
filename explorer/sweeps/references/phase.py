"""The reference phase: the references the remaining trials need, each ready before its trials
are scheduled. A reference the store already holds, whole and sound, is read on the driver
(a store read: no Ray task, no worker start, no torch); each other one is one Ray task, whose
worker computes it (or finds it, after all) through ``Store.get_or_compute_reference``, which
caches it for every later trial and quarantines a cached copy that is not sound. A reference
that raises stops its group (its trials are not scheduled)."""
from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

from store import StoreError, StoreUnreachable

from ...config.planning import Plan, PlannedTrial
from ...config.sections import SweepSpec
from ...signals import SIGNAL_POLL_S
from ..ray import largest_node_memory, memory_request, ray, reference_need
from ..tracking import Progress, error_text, root_cause
from .cache import reference_task
from .screen import reference_problem

REFERENCE_TASK_RETRIES = 3  # Ray reruns a reference task whose worker died this many times
READ_THREADS = 8  # driver threads reading cached references (each read mostly waits on the store)


def _submit(spec: SweepSpec, store, refs) -> dict:
    """Start one task per reference; returns future -> planned reference."""
    res = spec.resources
    task = ray.remote(reference_task)
    options = dict(num_cpus=res.cpus_per_trial, num_gpus=res.gpus_per_trial, max_retries=REFERENCE_TASK_RETRIES,
                   retry_exceptions=False)
    futures = {}
    node_memory = largest_node_memory()
    for r in refs:
        memory = memory_request(reference_need(r), node_memory)
        futures[task.options(**options, **({"memory": memory} if memory else {})).remote(store, r)] = r
    return futures


def _sound_copy(store, planned) -> bool:
    """Whether the store holds the reference of ``planned``, readable and sound. A store that
    stopped answering is raised (every group would stop on it); any other failure to read is
    left to the reference's task, whose worker says what is wrong."""
    try:
        cached = store.read_reference(planned.ref_key)
    except StoreUnreachable:
        raise
    except (OSError, StoreError):  # a foreign or unreadable file
        return False
    return cached is not None and reference_problem(planned.ref_key, *cached) is None


def found_in_store(store, refs, check: Callable[[], None]) -> list:
    """The references of ``refs`` that the store holds and that can serve as they are: read on
    the driver (``READ_THREADS`` at a time: on object storage each read waits on the network)
    and screened as a worker would (``references.screen``). One that is missing, unreadable or
    not sound is left to a Ray task, whose worker quarantines it and computes it again, or says
    why it cannot; ``check`` (a signal) is called while the reads run."""
    pool = ThreadPoolExecutor(max_workers=max(1, min(READ_THREADS, len(refs))),
                              thread_name_prefix="explorer-reference-read")
    futures = {pool.submit(_sound_copy, store, r): r for r in refs}
    pending = set(futures)
    try:
        while pending:
            check()
            _, pending = wait(pending, timeout=SIGNAL_POLL_S)
    finally:  # after a signal, the reads not started are dropped and those running not waited for
        pool.shutdown(wait=not pending, cancel_futures=True)
    return [r for future, r in futures.items() if future.result()]


def _summary(n_refs: int, diverged: dict[str, str], broken: dict[str, str], seconds: float) -> str:
    ready_n = n_refs - len(diverged) - len(broken)
    text = f"references: {ready_n}/{n_refs} ready in {seconds:.1f}s"
    if diverged:
        text += (f"; {len(diverged)} diverged, their trials are recorded failed "
                 f"(first: {next(iter(diverged.values()))})")
    if broken:
        text += f"; {len(broken)} failed, their trials are not run (first: {next(iter(broken.values()))})"
    return text


def run_references(spec: SweepSpec, store, the_plan: Plan, todo: list[PlannedTrial],
                   bar: Progress, check: Callable[[], None]) -> tuple[dict[str, str], dict[str, str]]:
    """Find the references the remaining trials need in the store (on the driver), and compute
    the others, one Ray task each, with one progress line (``Progress.status``) counting them; ``check`` (a signal) is
    called between reads and between polls of ``ray.wait``. Nothing to compute: no Ray task.

    Returns:
        ``(diverged, broken)``: ref_key -> why. The trials of a diverged reference are recorded
        failed with that message; those of a broken one (it raised: a store error, a bug) are not
        scheduled at all: they stay missing, and the summary names the reference and its error.
    """
    needed = {t.ref_key for t in todo}
    refs = [r for r in the_plan.references if r.ref_key in needed]
    if not refs:
        return {}, {}
    t0 = time.monotonic()
    found = {r.ref_key for r in found_in_store(store, refs, check)}
    to_compute = [r for r in refs if r.ref_key not in found]
    diverged: dict[str, str] = {}
    broken: dict[str, str] = {}
    if not to_compute:
        bar.message(f"references: {len(refs)}/{len(refs)} found in the store in {time.monotonic() - t0:.1f}s")
        return diverged, broken
    bar.message(f"references: {len(to_compute)} to compute"
                + (f" ({len(found)} found in the store)" if found else ""))
    futures = _submit(spec, store, to_compute)
    pending = list(futures)
    done = 0
    while pending:
        check()
        ready, pending = ray.wait(pending, num_returns=1, timeout=SIGNAL_POLL_S)
        if not ready:
            continue
        ref = futures[ready[0]]
        done += 1
        try:
            message, _threads, seconds = ray.get(ready[0])
        except Exception as exc:  # noqa: BLE001 - a reference that raised stops its group, not the sweep
            if isinstance(root_cause(exc), StoreUnreachable):  # ... unless the store is gone: every group stops
                raise StoreUnreachable(error_text(exc)) from None
            broken[ref.ref_key] = error_text(exc)
            bar.message(f"reference {done}/{len(to_compute)} {ref.ref_key} failed: {broken[ref.ref_key]}")
            continue
        if message is not None:
            diverged[ref.ref_key] = message
        bar.status(f"references {done}/{len(to_compute)} done | diverged {len(diverged)} | failed {len(broken)} "
                   f"| elapsed {time.monotonic() - t0:.1f}s", force=done == len(to_compute))
    bar.message(_summary(len(refs), diverged, broken, time.monotonic() - t0))
    return diverged, broken
