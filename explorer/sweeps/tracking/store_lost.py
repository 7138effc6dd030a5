"""A store that becomes unreachable mid-sweep (an S3 endpoint that died) stops the whole run
within seconds, as one line.

The worker whose write or read failed probes the store once (``unreachable``) and, if that
fails too, reports ``STORE_LOST`` instead of raising (which Tune would retry on every pack); the
driver then stops every Tune trial (``tune_glue.StopWhenStoreLost``; a reference task raising
``StoreUnreachable`` does the same), shuts Ray down and raises one ``StoreUnreachable`` naming
the store, the filesystem's error and how to resume (``stop_when_store_lost``). Trials already
written stay; claims lapse after their TTL.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

from store import Store, StoreError, StoreUnreachable

from ...formatting import shown_ends
from ...signals import resume_command
from .progress import Progress

STORE_LOST = "store_lost"  # the key of a worker's report that the store is unreachable
# The filesystem's error is cut to this (its start and end kept), so that the line keeps room
# for the command that resumes, which is what the user acts on.
LOST_CHARS = 300


def unreachable(store: Store, exc: StoreError) -> StoreUnreachable | None:
    """After a store error in a worker: the store's own failure (``Store.probe()``, once), or
    None when the store answers and the error was about one file or one moment."""
    if isinstance(exc, StoreUnreachable):
        return exc
    try:
        store.probe()
    except StoreUnreachable as lost:
        return lost
    return None


@contextlib.contextmanager
def stop_when_store_lost(bar: Progress) -> Iterator[None]:
    """Turn a store that became unreachable mid-sweep into one ``StoreUnreachable`` line that
    names the store, the filesystem's error and how to resume. The cleanup on the way out (Ray
    shut down, claims released) stops at the first store call that fails: the claims lapse after
    their TTL, temporaries are removed by the next run."""
    try:
        yield
    except StoreError as exc:
        lost = exc
        while lost is not None and not isinstance(lost, StoreUnreachable):
            lost = lost.__context__  # a cleanup call that failed too, after the first loss
        if lost is None:
            raise
        bar.finish()
        again = resume_command()
        raise StoreUnreachable(
            f"the store became unreachable mid-sweep, which stopped: {shown_ends(' '.join(str(lost).split()), LOST_CHARS)}; "
            f"the trials already written stay in it: to resume, run the same command again once the store is "
            f"back{': ' + again if again else ''}") from None
