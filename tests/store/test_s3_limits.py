"""An S3 store opened from its URI fails fast when its endpoint is gone (store/files.py,
``S3_TIMEOUTS``), and says so with ``StoreUnreachable``."""
from __future__ import annotations

import pickle
import socket
import time
import uuid

import pyarrow.fs as pafs
import pytest

from store import Store, StoreError, StoreUnreachable

from .conftest import s3_filesystem


def _closed_port() -> int:
    with socket.socket() as s:  # bound then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def aws_env(monkeypatch):
    for name, value in dict(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                            AWS_DEFAULT_REGION="us-east-1").items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def test_probe_of_a_dead_endpoint_fails_within_seconds_as_unreachable(aws_env):
    aws_env.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_closed_port()}")
    store = Store("s3://bucket/prefix")
    t0 = time.monotonic()
    with pytest.raises(StoreUnreachable, match="store s3://bucket/prefix cannot be listed: .*connect"):
        store.probe()
    assert time.monotonic() - t0 < 4.0  # pyarrow's defaults: about 6 s


def test_s3_timeouts_come_from_the_environment_and_survive_pickling(aws_env, s3_endpoint):
    aws_env.setenv("AWS_ENDPOINT_URL", f"http://{s3_endpoint}")
    aws_env.setenv("EXPLORER_S3_CONNECT_TIMEOUT_S", "1.5")
    aws_env.setenv("EXPLORER_S3_MAX_ATTEMPTS", "2")
    bucket = f"b-{uuid.uuid4().hex[:12]}"
    s3_filesystem(s3_endpoint).create_dir(bucket)
    store = Store(f"s3://{bucket}/results")
    store.probe()
    options = store.files.fs.__reduce__()[1][0]
    assert (options["connect_timeout"], options["request_timeout"], options["allow_delayed_open"]) == (1.5, 3.0, True)
    copy = pickle.loads(pickle.dumps(store))  # what a Ray worker gets
    assert copy.files.s3_attempts == 2 and copy.files.fs.__reduce__()[1][0] == options
    copy.probe()


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_bad_s3_timeout_variable_is_one_error_naming_it(aws_env, value):
    aws_env.setenv("EXPLORER_S3_REQUEST_TIMEOUT_S", value)
    with pytest.raises(StoreError, match=f"EXPLORER_S3_REQUEST_TIMEOUT_S='{value}': expected a positive number"):
        Store("s3://bucket/prefix")


def test_an_explicit_filesystem_is_used_as_it_is(s3_endpoint):
    fs = s3_filesystem(s3_endpoint)
    store = Store("s3://bucket/prefix", filesystem=fs)
    assert store.files.fs is fs and store.files.s3_attempts is None
    assert isinstance(pickle.loads(pickle.dumps(store)).files.fs, pafs.S3FileSystem)
