"""Fixtures for the store tests: a local store, and an S3 store on a moto server on 127.0.0.1."""
from __future__ import annotations

import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # store_testkit, importable by spawned workers too

from store import Store  # noqa: E402

S3_KEYS = {"access_key": "testing", "secret_key": "testing", "region": "us-east-1"}




def s3_filesystem(endpoint: str):
    import pyarrow.fs as pafs

    return pafs.S3FileSystem(
        endpoint_override=endpoint, scheme="http", allow_delayed_open=True, allow_bucket_creation=True, **S3_KEYS
    )


@pytest.fixture
def s3_store(s3_endpoint) -> Store:
    """An empty store in a fresh bucket on the moto server."""
    fs = s3_filesystem(s3_endpoint)
    bucket = f"b-{uuid.uuid4().hex[:12]}"
    fs.create_dir(bucket)
    return Store(f"s3://{bucket}/results", filesystem=fs)


@pytest.fixture
def local_store(tmp_path) -> Store:
    return Store(tmp_path / "results")


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.slow)])
def any_store(request) -> Store:
    """The same test against a local directory and against S3 (on the moto server: with the slow
    set; the tests written for S3 alone run with the fast one)."""
    return request.getfixturevalue(f"{request.param}_store")
