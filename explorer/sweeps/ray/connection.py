"""The Ray a sweep runs on: this process's own, the session Ray this user keeps running
(``explorer ray start``: ``ray.session``), an embedded one started for the duration (dashboard
off, loopback only, session files in a private 0700 folder, ``ray.init`` called from an empty
folder so that no ``./store`` shadows the packages in the workers, shut down on exit), or a
cluster joined by address."""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator

from store import code_fingerprint

from ...errors import ClusterError
from ...formatting import format_seconds
from .imports import RAY_IMPORTED_BEFORE, SINGLE_MACHINE, environment, ray, single_machine_switch
from .probe import (JOIN_TIMEOUT_ENV, PROBE_TIMEOUT_S, SESSION_ADDRESS as SESSION, JoinTimedOut, join_timeout_s,
                    probe, time_bound)
from .records import (SessionRay, check_session, environment_label, private_temp_dir, record_start_seconds,
                          session_dir)
from .session_drivers import joined

# Ray 2.60's ray.init() turns token authentication on for a new local cluster when RAY_AUTH_MODE
# is unset (it generates ~/.ray/auth_token) and logs a WARNING saying so from this logger, on
# every sweep. The embedded Ray keeps the authentication; only that one notice is dropped (a user
# read it as trouble). RAY_AUTH_MODE, when set, is Ray's to honour as it is.
TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"
TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"
START_HINT = ("retry; if the machine is busy, wait or lower the load; or start Ray once for the session "
              "(`explorer ray start`: later sweeps join it), or join a running cluster with --address")
OBJECT_STORE_BYTES = 256 * 1024**2  # of an embedded Ray: workers exchange keys and statuses, not rows
@contextlib.contextmanager
def neutral_directory(temp_dir: str) -> Iterator[None]:
    """Run ``ray.init`` from an empty folder of our own.

    ``ray.init`` puts the driver's working directory (and its script's folder) on every worker's
    ``sys.path``, first (``JobConfig.py_driver_sys_path``, inserted at position 0 by each worker):
    a folder named ``store``, ``trials`` or ``explorer`` where the user runs ``explorer sweep``
    then shadows the installed package in every worker (``cannot import name 'COLUMNS' from
    'store' (unknown location)``). From an empty folder, that entry holds nothing to import.
    """
    here = os.getcwd()
    empty = os.path.join(temp_dir, "driver-cwd")
    os.makedirs(empty, mode=0o700, exist_ok=True)
    os.chdir(empty)
    try:
        yield
    finally:
        os.chdir(here)


class DropTokenNotice(logging.Filter):
    """Drops Ray's notice that token authentication is on (``TOKEN_NOTICE``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(TOKEN_NOTICE)


@contextlib.contextmanager
def token_notice_dropped() -> Iterator[None]:
    """While an embedded Ray starts: Ray's notice that token authentication is on is not logged."""
    drop = DropTokenNotice()
    logger = logging.getLogger(TOKEN_LOGGER)
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def _start(address: str | None, num_cpus: int | None, session: SessionRay | None = None) -> str:
    """``ray.init`` for an embedded Ray (address None) or a cluster; returns the session's kind.
    Any failure is one ``ClusterError`` line with what to do, and leaves no half-started Ray. A
    join is bounded: the address must answer as Ray (``probe.probe``), and the join must be
    done within ``join_timeout_s()``."""
    quiet = dict(log_to_driver=False, logging_level=logging.WARNING, configure_logging=True)
    temp_dir = private_temp_dir()
    limit = join_timeout_s()
    if address is not None:
        answer = probe(address, min(limit, PROBE_TIMEOUT_S))
        if answer is not None:
            raise ClusterError(_join_failed(address, session, answer))
    try:
        with neutral_directory(temp_dir):
            if address is None:
                # The processes ray.init starts read the single-machine switch too.
                started = time.monotonic()
                with environment(single_machine_switch()), token_notice_dropped():
                    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                             object_store_memory=OBJECT_STORE_BYTES, _temp_dir=os.path.join(temp_dir, "ray"), **quiet)
                record_start_seconds(time.monotonic() - started)  # what the dry run prices Ray's start with
                return "embedded"
            # Ray's own wait for a GCS is bounded too, in case this is not the main thread.
            with environment({"RAY_gcs_server_port_wait_time_s": str(max(1, int(limit)))}), time_bound(limit):
                ray.init(address=address, **quiet)
                # a cluster's workers are asked (a worker's start: seconds); the session Ray's code
                # is its record's, checked before (``session_to_join``)
                theirs = code_fingerprint() if session is not None else ray.get(worker_code.remote(), timeout=limit)
            if theirs != code_fingerprint():
                ray.shutdown()
                raise ClusterError(_join_failed(address, session, f"its workers run other code ({theirs}; this is "
                                                f"{code_fingerprint()}), which would compute this sweep's rows",
                                                other_code=True))
            return "session" if session is not None else "joined"
    except JoinTimedOut:
        with contextlib.suppress(Exception):
            ray.shutdown()  # a half-joined Ray
        raise ClusterError(_join_failed(address, session, f"it answers, but the join did not finish within "
                                        f"{format_seconds(limit)} ({JOIN_TIMEOUT_ENV} sets the limit)")) from None
    except ClusterError:
        raise
    except Exception as exc:  # noqa: BLE001 - Ray raises plain Exception too ("node timed out during startup")
        with contextlib.suppress(Exception):
            ray.shutdown()  # a half-started Ray
        first = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        if address is None:
            raise ClusterError(f"cannot start an embedded Ray: {first}; {START_HINT}") from None
        raise ClusterError(_join_failed(address, session, first)) from None
    except BaseException:  # interrupted while Ray was starting: leave no Ray processes behind
        with contextlib.suppress(Exception):
            ray.shutdown()
        raise


def _join_failed(address: str, session: SessionRay | None, why: str, other_code: bool = False) -> str:
    """The one line of a join that failed: what answered, and what to run."""
    if other_code:
        return (f"not joining the Ray at {address}: {why}; run without --address (an embedded Ray runs this code), "
                "or start that Ray from this code")
    if session is not None:
        return (f"cannot join the session Ray at {address} (holder process {session.holder_pid}): {why}; "
                "`explorer ray stop` ends it (sweeps then start their own embedded Ray), `explorer ray start` "
                "starts a new one")
    return (f"cannot join the Ray cluster at {address!r}: {why}; check the address and that the cluster is up "
            "(`ray status` on its head node), or run without --address (an embedded Ray)")


@ray.remote(num_cpus=0, max_retries=0)
def worker_code() -> str:
    """The code fingerprint of a worker of the joined Ray (what would compute the rows)."""
    return code_fingerprint()


def session_to_join(address: str | None, join_session: bool, say: Callable[[str], None]) -> SessionRay | None:
    """The session Ray this run joins: with ``address`` None, the one of this environment when
    it answers and runs this code (else a note, and None: an embedded Ray); with ``"session"``,
    that one or a ``ClusterError``."""
    if not (address == SESSION or address is None and join_session):
        return None
    check = check_session()
    if check.note:
        say(check.note)
    ours = code_fingerprint()
    if address == SESSION:
        if check.session is None:
            raise ClusterError("--address session: no session Ray runs for this environment "
                               f"({environment_label()}); `explorer ray start` starts one")
        if check.problem is not None:
            raise ClusterError(_join_failed(check.session.address, check.session, check.problem))
        if check.session.fingerprint != ours:
            raise ClusterError(f"--address session: the session Ray at {check.session.address} runs other code "
                               f"({check.session.fingerprint}; this is {ours}); `explorer ray stop` then "
                               "`explorer ray start` starts one with this code")
        return check.session
    if check.session is None:
        return None
    if check.problem is not None:
        say(f"the session Ray at {check.session.address} does not answer ({check.problem}): this sweep starts its own "
            "embedded Ray; `explorer ray stop` ends the session Ray")
        return None
    if check.session.fingerprint != ours:
        say(f"the session Ray at {check.session.address} runs other code ({check.session.fingerprint}; this is "
            f"{ours}): this sweep starts its own embedded Ray; `explorer ray stop` then `explorer ray start` "
            "runs this code")
        return None
    return check.session


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None, join_session: bool = True,
                say: Callable[[str], None] = _say, on_session_stop: Callable[[], None] | None = None) -> Iterator[str]:
    """Use the Ray this process already has, or start/join one for the duration.

    Args:
        address: None: the session Ray when one of this environment answers and runs this code
            (``explorer ray start``), else an embedded local Ray (dashboard off, loopback only,
            session files in ``private_temp_dir()``, shut down on exit); ``"session"``: the
            session Ray or an error; ``"auto"`` or ``"ray://host:port"`` (or ``host:port``): join
            that cluster. A join gives up after ``join_timeout_s()`` (one line).
        num_cpus: CPUs of the embedded Ray (default: all of this machine's; a session Ray has its own).
        join_session: False: never the session Ray (the holder that starts it).
        say: where a note goes (a stale session record removed, a session Ray not joined).
        on_session_stop: on the session Ray, called once (from another thread) when
            ``explorer ray stop`` begins, which waits for this run to stop (``session_drivers``).

    Yields:
        ``"existing"``, ``"session"``, ``"embedded"`` or ``"joined"``.

    Raises:
        ClusterError: Ray cannot be started or the cluster cannot be reached (one line, with what
            to do).
    """
    if ray.is_initialized():
        yield "existing"
        return
    session = session_to_join(address, join_session, say)
    if session is not None:
        kind = _start(session.address, None, session)
    else:
        kind = _start(None if address == SESSION else address, num_cpus)
    try:
        if kind == "embedded":
            warn_if_not_loopback()
        if kind == "session" and on_session_stop is not None:
            with joined(session_dir(), on_session_stop):
                yield kind
        else:
            yield kind
    finally:
        ray.shutdown()


def warn_if_not_loopback() -> None:
    """Say so when the embedded Ray is reachable from other machines: Ray was imported before
    this module, with the single-machine switch unset, so its address was already chosen."""
    address = ray.util.get_node_ip_address()
    if address not in ("127.0.0.1", "::1"):
        why = ("Ray was imported before explorer" if RAY_IMPORTED_BEFORE
               else f"{SINGLE_MACHINE}={os.environ.get(SINGLE_MACHINE)}")
        warnings.warn(f"the embedded Ray listens on {address}, not on loopback only ({why}); set "
                      f"{SINGLE_MACHINE}=0 before importing Ray to keep it on this machine", stacklevel=3)
