"""Options and glue shared by the commands that use the results store.

    @main.command()
    @store_option
    def mycommand(store_uri: str) -> None:
        with store_errors():
            st = open_store(store_uri, must_exist=True)
            ...

``store_errors`` turns the store's exceptions (which know nothing of the CLI) into the
explorer's one-line ``UsageError``s: ``StoreQueryError`` -> ``QueryError``, any other
``StoreError`` -> ``StoreAccessError`` (both exit 2).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from store import Store, StoreError, StoreQueryError

from .errors import QueryError, StoreAccessError

DEFAULT_STORE = "./results"

store_option = click.option(
    "--store",
    "store_uri",
    default=DEFAULT_STORE,
    show_default=True,
    envvar="EXPLORER_STORE",
    metavar="URI",
    help="Results store: a directory or s3://bucket/prefix (env EXPLORER_STORE; for S3 the AWS_* "
    "variables, AWS_ENDPOINT_URL included, select the endpoint and credentials).",
)

sweep_filter_option = click.option(
    "--sweep", default=None, metavar="NAME", help="Only this sweep (default: every sweep in the store)."
)


@contextmanager
def store_errors() -> Iterator[None]:
    """Re-raise store exceptions as one-line CLI errors."""
    try:
        yield
    except StoreQueryError as exc:
        raise QueryError(str(exc)) from exc
    except StoreError as exc:
        raise StoreAccessError(str(exc)) from exc


def open_store(uri: str, must_exist: bool = False) -> Store:
    """The Store at ``uri``; with ``must_exist``, a StoreAccessError when nothing is there yet.

    Raises:
        StoreAccessError: the URI cannot be resolved, or (must_exist) the store is empty.
    """
    with store_errors():
        store = Store(uri)
        if must_exist and not store.exists():
            raise StoreAccessError(f"no results store at {uri!r} (nothing written there yet); pass --store URI")
    return store
