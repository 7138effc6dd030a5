"""Every command ends on SIGINT / SIGTERM with one line and exit 130 / 143 (issue 25, item 4):
``explorer sql`` and ``explorer check`` used to print 44 lines of DuckDB's "Query interrupted"
traceback and exit 1. A query also stops at its ``--timeout``."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from tests.paths import STORE_TESTKIT

sys.path.insert(0, str(STORE_TESTKIT))
import store_testkit as kit  # noqa: E402

from store import Store  # noqa: E402

LONG_QUERY = "SELECT count(*) AS n FROM range(100000000) a, range(1000000) b"  # hours of work
# `explorer` with store.query.run's first query replaced by LONG_QUERY, after writing a marker:
# the moment a query of the command is running inside DuckDB
_RUNNER = """
import sys
import store.query as q
original, marker = q.run, sys.argv[1]
def slow(con, sql, timeout_s=None):
    open(marker, "w").close()
    return original(con, {long!r}, timeout_s)
q.run = slow
import store.integrity as integrity
integrity.run = slow
from explorer.cli import main
sys.argv = ["explorer"] + sys.argv[2:]
main()
""".format(long=LONG_QUERY)


@pytest.fixture
def small_store(tmp_path):
    st = Store(tmp_path / "store")
    for key, rows, trial in kit.grid(n_L=2, n_M=1):
        st.write_trial("tiny", key, rows, trial)
    return st


def _interrupt(tmp_path, args, signum) -> subprocess.CompletedProcess:
    marker = tmp_path / "querying"
    process = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, str(marker), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        while not marker.exists() and process.poll() is None:
            time.sleep(0.05)
        time.sleep(0.5)  # inside DuckDB by now (the signal is handled the same a little earlier)
        process.send_signal(signum)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    return subprocess.CompletedProcess(args, process.returncode, out, err)


@pytest.mark.slow
@pytest.mark.parametrize("signum, code, name", [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_during_a_long_sql_query_is_one_line(tmp_path, small_store, signum, code, name):
    done = _interrupt(tmp_path, ["sql", "SELECT 1", "--store", small_store.uri], signum)
    assert done.returncode == code, done.stderr
    assert done.stderr == f"interrupted ({name})\n" and done.stdout == ""


@pytest.mark.slow
def test_ctrl_c_during_check_is_one_line(tmp_path, small_store):
    done = _interrupt(tmp_path, ["check", "--store", small_store.uri], signal.SIGINT)
    assert (done.returncode, done.stderr) == (130, "interrupted (SIGINT)\n")


def test_a_query_stops_at_its_timeout_with_one_line(small_store):
    from click.testing import CliRunner

    from explorer.cli import main

    result = CliRunner().invoke(main, ["sql", LONG_QUERY.replace("FROM ", "FROM metrics, ", 1),
                                       "--store", small_store.uri, "--timeout", "0.5"])
    assert result.exit_code == 2
    assert result.output == "error: the query ran longer than its time limit of 0.5 s and was stopped\n"


def test_sql_has_a_memory_limit_of_half_the_machine_unless_told(small_store):
    from store.interrupt import SQL_MEMORY_SHARE, memory_limit_bytes, physical_memory_bytes

    setting = "SELECT current_setting('memory_limit') AS m"
    assert SQL_MEMORY_SHARE == 0.5 and memory_limit_bytes(None) == physical_memory_bytes() // 2
    assert small_store.query(setting, memory_limit="256MiB").to_pylist() == [{"m": "256.0 MiB"}]
    default = small_store.query(setting).to_pylist()[0]["m"]
    assert default != small_store.query(setting, memory_limit="80%").to_pylist()[0]["m"]
