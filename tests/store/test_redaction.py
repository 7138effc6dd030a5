"""Store URIs are shown without their credentials (issue 32, item 16): ``redact_uri`` and the
display name ``Store.uri`` made with it, while the store itself keeps using them."""
from __future__ import annotations

import pickle

import pytest

from store import Store, StoreError, redact_uri


@pytest.mark.parametrize("given, shown", [
    ("s3://KEY:SECRET@bucket/p", "s3://***@bucket/p"),
    ("s3://KEY@bucket/p", "s3://***@bucket/p"),
    ("s3://KEY:SEC/RET@bucket/p", "s3://***@bucket/p"),  # a raw "/" in the secret: still hidden
    ("s3://K:S@x@bucket/p", "s3://***@bucket/p"),
    ("s3://bucket/p?region=eu-west-1&secret_key=S&X-Amz-Signature=abc&sas_token=t#f",
     "s3://bucket/p?region=eu-west-1&secret_key=***&X-Amz-Signature=***&sas_token=***#f"),
    ("cannot open store 's3://KEY:SECRET@bucket/p': Cannot parse URI: 's3://KEY:SECRET@bucket/p?x=1'",
     "cannot open store 's3://***@bucket/p': Cannot parse URI: 's3://***@bucket/p?x=1'"),
    ("explorer sweep a.toml --store=s3://KEY:SECRET@bucket/p", "explorer sweep a.toml --store=s3://***@bucket/p"),
    ("s3://bucket/p", "s3://bucket/p"),
    ("/home/me/results@2026", "/home/me/results@2026"),
])
def test_userinfo_and_secret_parameters_are_redacted_and_the_rest_kept(given, shown):
    assert redact_uri(given) == shown


def test_the_display_name_has_no_secret_but_a_workers_copy_keeps_it(monkeypatch, s3_endpoint):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{s3_endpoint}")
    store = Store("s3://KEY:SECRET@bucket/prefix")
    assert store.uri == "s3://***@bucket/prefix" and "SECRET" not in repr(store)
    copy = pickle.loads(pickle.dumps(store))  # what a Ray worker gets: the store as it was given
    assert copy.files.fs.__reduce__()[1][0]["secret_key"] == "SECRET" and copy.uri == store.uri


def test_a_uri_pyarrow_cannot_parse_is_refused_without_its_secret():
    with pytest.raises(StoreError) as info:
        Store("s3://KEY:SEC/RET@bucket/prefix")
    assert "cannot parse" in str(info.value).lower() and "SEC" not in str(info.value)
