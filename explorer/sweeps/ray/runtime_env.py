"""Credentials stay out of Ray's runtime envs (Ray writes those, values included, to its logs)."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

SECRET_WORDS = ("SECRET", "TOKEN", "PASSWORD", "ACCESS_KEY", "CREDENTIAL", "PRIVATE_KEY")


def is_secret_name(name: str) -> bool:
    """An environment variable that holds a credential (AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN...)."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


@contextlib.contextmanager
def no_secrets_in_runtime_env() -> Iterator[None]:
    """Keep credentials out of the runtime env of Tune's trial actors.

    Ray Tune copies ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN`` and
    ``AWS_SECURITY_TOKEN`` from the driver's environment into ``runtime_env={"env_vars": ...}`` of
    every trial actor (``ray.tune.execution.class_cache.ENV_VARS_TO_PROPAGATE``), and Ray's
    runtime-env agent writes that runtime env, values included, to its log
    (``runtime_env_agent.log``). Workers get credentials the platform's way instead: an embedded
    Ray's workers inherit the driver's environment; a cluster's nodes have their own (instance
    roles, credentials files, the cluster's environment). Here the list is narrowed to the
    names that are not credentials for the duration; if Ray moved it, the credential variables
    leave this process's environment for the duration instead (the Store resolved its own
    credentials when it was opened).
    """
    try:
        from ray.tune.execution import class_cache
        names = class_cache.ENV_VARS_TO_PROPAGATE
    except (ImportError, AttributeError):
        class_cache = names = None
    if class_cache is not None and isinstance(names, (set, frozenset)):
        class_cache.ENV_VARS_TO_PROPAGATE = {n for n in names if not is_secret_name(n)}
        try:
            yield
        finally:
            class_cache.ENV_VARS_TO_PROPAGATE = names
        return
    saved = {k: v for k, v in os.environ.items() if k.startswith("AWS_") and is_secret_name(k)}
    for k in saved:
        os.environ.pop(k, None)
    try:
        yield
    finally:
        os.environ.update(saved)
