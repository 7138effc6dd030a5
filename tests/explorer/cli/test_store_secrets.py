"""No command prints the credentials of a store URI (issue 32, item 16): `--store
s3://KEY:SECRET@bucket/p` is shown as s3://***@bucket/p by ls, status, check, fit, the sweep
summary, the resume line and every error line."""
from __future__ import annotations

import socket
import subprocess
import sys
import uuid

import pytest
from click.testing import CliRunner

from explorer.cli import main
from store import Store

from tests.explorer.analysis_data import law_rows, write_to_store
from tests.explorer.sweeps.test_sweep_process import environment, write_spec

SECRET = "SECRETMARKER9f3"
KEY = "KEYMARKER41c"


@pytest.fixture(scope="module")
def secret_store(s3_endpoint):
    """(URI with credentials in it, endpoint) of an S3 store on the moto server holding sweep law."""
    import pyarrow.fs as pafs

    bucket = f"b-{uuid.uuid4().hex[:12]}"
    pafs.S3FileSystem(endpoint_override=s3_endpoint, scheme="http", access_key="x", secret_key="y",
                      region="us-east-1", allow_bucket_creation=True).create_dir(bucket)
    uri = f"s3://{KEY}:{SECRET}@{bucket}/results"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ENDPOINT_URL", f"http://{s3_endpoint}")
        law = lambda L, M, D: 1 / L + (D / (L * M)) ** 0.5  # noqa: E731
        write_to_store(law_rows(law, Ls=(2, 4, 8), Ms=(1, 4), seeds=2, steps=2), Store(uri))
    return uri, s3_endpoint


def _closed_port() -> int:
    with socket.socket() as s:  # bound then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args, endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{endpoint}")
    monkeypatch.setenv("EXPLORER_S3_MAX_ATTEMPTS", "1")
    done = CliRunner().invoke(main, args)
    assert KEY not in done.output and SECRET not in done.output, done.output
    return done.exit_code, done.output


def test_ls_shows_the_store_without_its_credentials(secret_store, monkeypatch):
    uri, endpoint = secret_store
    shown = "s3://***@" + uri.split("@", 1)[1]
    code, out = run(["ls", "--store", uri], endpoint, monkeypatch)
    assert code == 0 and out.splitlines()[1].startswith("law ")
    code, out = run(["ls", "--store", uri.replace("results", "empty")], endpoint, monkeypatch)
    assert (code, out) == (0, f"no sweeps in {shown.replace('results', 'empty')}\n")


@pytest.mark.slow
def test_status_check_and_fit_show_the_store_without_its_credentials(secret_store, monkeypatch):
    uri, endpoint = secret_store
    assert run(["status", "--store", uri], endpoint, monkeypatch)[0] == 0
    assert run(["check", "--store", uri], endpoint, monkeypatch)[0] == 0
    code, out = run(["fit", "--sweep", "law", "--store", uri, "--form", "free_rss", "--bootstrap", "2"], endpoint,
                    monkeypatch)
    assert code == 0 and out.rstrip().endswith(f"(4 rows, kind fits) to s3://***@{uri.split('@', 1)[1]}"), out


@pytest.mark.parametrize("args, says", [
    (["fit", "--sweep", "nope"], "unknown sweep 'nope'; the store 's3://***@"),
    (["sql", "SELECT 1", "--store-suffix", "/nothing"], "no results store at 's3://***@"),
    (["rm", "--sweep", "nope", "--yes"], "unknown sweep 'nope'; the store 's3://***@"),
])
def test_error_lines_show_the_store_without_its_credentials(secret_store, monkeypatch, args, says):
    uri, endpoint = secret_store
    if "--store-suffix" in args:
        i = args.index("--store-suffix")
        args = args[:i] + ["--store", uri + args[i + 1]]
    else:
        args = args + ["--store", uri]
    code, out = run(args, endpoint, monkeypatch)
    assert code == 2 and out.startswith(f"error: {says}") and out.count("\n") == 1, out


@pytest.mark.parametrize("uri", [f"s3://{KEY}:{SECRET}@bucket-x/results", f"s3://{KEY}:{SECRET}/x@bucket-x/results"])
def test_an_unreachable_or_unparsable_store_is_one_line_without_its_credentials(monkeypatch, uri):
    monkeypatch.setenv("EXPLORER_S3_CONNECT_TIMEOUT_S", "1")
    for command in (["ls"], ["sql", "SELECT 1"], ["fit", "--sweep", "law"]):
        code, out = run([*command, "--store", uri], f"127.0.0.1:{_closed_port()}", monkeypatch)
        assert code == 2 and out.startswith("error: ") and out.count("\n") == 1, out


def test_the_resume_command_shows_the_store_without_its_credentials(monkeypatch):
    from explorer.signals import resume_command

    monkeypatch.setattr(sys, "argv", ["/venv/bin/explorer", "sweep", "a.toml", "--store", f"s3://{KEY}:{SECRET}@b/p"])
    assert resume_command() == "explorer sweep a.toml --store 's3://***@b/p'"


@pytest.mark.slow
def test_a_real_sweep_and_fit_on_a_store_uri_with_credentials_never_print_them(tmp_path, s3_endpoint):
    import pyarrow.fs as pafs

    bucket = f"b-{uuid.uuid4().hex[:12]}"
    pafs.S3FileSystem(endpoint_override=s3_endpoint, scheme="http", access_key="x", secret_key="y",
                      region="us-east-1", allow_bucket_creation=True).create_dir(bucket)
    uri = f"s3://{KEY}:{SECRET}@{bucket}/results"
    env = environment(AWS_ENDPOINT_URL=f"http://{s3_endpoint}", AWS_DEFAULT_REGION="us-east-1")
    env.pop("AWS_ACCESS_KEY_ID", None), env.pop("AWS_SECRET_ACCESS_KEY", None)  # the URI's are the only ones
    spec = write_spec(tmp_path / "spec.toml", "secret")
    explorer = [sys.executable, "-m", "explorer.cli"]
    outputs = []
    for args in (["sweep", str(spec), "--store", uri], ["ls", "--store", uri], ["fit", "--sweep", "secret", "--store", uri,
                                                                                  "--bootstrap", "2"]):
        done = subprocess.run(explorer + args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
        outputs.append(done)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "4 trials: 4 ok" in outputs[0].stdout and f"store: s3://***@{bucket}/results" in outputs[0].stdout
    assert outputs[1].stdout.splitlines()[1].startswith("secret ")
    assert outputs[2].stdout.rstrip().endswith(f"to s3://***@{bucket}/results")
    for done in outputs:
        assert KEY not in done.stdout + done.stderr and SECRET not in done.stdout + done.stderr


def test_the_resume_command_shows_a_spec_name_with_control_or_bidi_characters_escaped(monkeypatch):
    import shutil
    import subprocess

    from explorer.signals import resume_command

    name = "a\u202eLMTH\x1b[2J\nb.toml"
    monkeypatch.setattr(sys, "argv", ["/venv/bin/explorer", "sweep", name, "--store", "r s"])
    shown = resume_command()
    assert shown == "explorer sweep $'a\\u202eLMTH\\x1b[2J\\nb.toml' --store 'r s'"
    assert shown.isprintable()
    if shutil.which("bash"):  # and it pastes back as the same arguments
        back = subprocess.run(["bash", "-c", "printf '%s\\0' " + shown[len("explorer "):]], capture_output=True,
                              text=True, check=True)
        assert back.stdout.split("\0")[:-1] == ["sweep", name, "--store", "r s"]
