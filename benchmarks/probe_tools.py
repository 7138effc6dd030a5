"""What the kill and input campaigns of benchmarks/hostile_probe.py share: the tiny specs, running
the real `explorer` CLI as a subprocess with a deadline, and the two fingerprints of a store.

- ``rows_fingerprint``: what the views serve, as a user's SQL sees it: every metrics and trials
  row (and, for an adaptive sweep, every round's choice) minus the columns that differ between two
  honest runs (wall time, host, timestamps), sorted and hashed; plus the rows lost and duplicated
  against an expected key set.
- ``files_fingerprint``: the bytes on disk (every path, its size and content hash), to tell that a
  command which should only read left the store exactly as it was.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from store import Store  # noqa: E402

# Columns whose values differ between two honest runs of the same trials (store/schema.py).
VOLATILE = frozenset({"wall_s", "node_id", "started_at", "created_at", "spent_wall_s", "predicted_wall_s",
                      "gain_per_cost", "reason"})
# The identity of one row per kind: two rows with the same identity are a duplicate.
IDENTITY = {"metrics": ("trial_key", "seed", "step"), "trials": ("trial_key",),
            "rounds": ("round", "entry", "trial_key", "parameter")}
# The adaptive log's columns that a resumed loop must reproduce exactly (which point, which round).
ROUND_COLUMNS = ("round", "entry", "state", "trial_key", "parameter")

TINY_SPEC = """
name = "{name}"
[train]
steps = 6
[reference]
depth = 16
width = 8
[grid]
L = [2, 4, 8, 16]
M = [1, 4, 16]
D = [4]
seeds = 2
[resources]
points_per_trial = 1
"""
TINY_TRIALS = 12
TINY_STEPS = 6
TINY_SEEDS = 2

ADAPTIVE_SPEC = """
name = "{name}"
[train]
steps = 5
[reference]
depth = 32
width = 16
[grid]
L = [2, 4, 8, 16]
M = [1, 4, 16]
D = [4]
problem_seeds = [1, 2]
seeds = 2
[resources]
points_per_trial = 1
[adaptive]
halfwidth = 0.001
budget = 0.4
batch = 3
initial = 5
resamples = 40
"""


def environment(**extra: str) -> dict:
    """The CLI's environment: no Ray auth or telemetry, unbuffered output, and every object-store
    endpoint on a closed loopback port unless a campaign names its own (no network beyond 127.0.0.1)."""
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1",
               PYTHONPATH=str(ROOT), AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="probe",
               AWS_SECRET_ACCESS_KEY="probe", AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    env.update(extra)
    return env


def explorer(*args: str) -> list[str]:
    """The argv of a real `explorer` command, run by this interpreter."""
    return [sys.executable, "-c", "from explorer.cli import main; main()", *args]


@dataclasses.dataclass
class Outcome:
    """One finished (or timed-out) command."""

    rc: int | None  # None: killed at its deadline
    stdout: str
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.rc is None


def end_group(process: subprocess.Popen) -> None:
    """SIGKILL a command's whole session (the driver and every Ray process it started)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv: list[str], timeout_s: float, env: dict | None = None, cwd: Path | None = None,
        preexec=None) -> Outcome:
    """Run a command in its own session; past ``timeout_s`` its whole group is killed (rc None)."""
    started = time.monotonic()
    process = subprocess.Popen(argv, env=env or environment(), cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               preexec_fn=preexec)
    try:
        out, err = process.communicate(timeout=timeout_s)
        rc = process.returncode
    except subprocess.TimeoutExpired:
        end_group(process)
        out, err = process.communicate()
        rc = None
    end_group(process)  # Ray's agents may outlive a driver that exited
    return Outcome(rc, out.decode(errors="backslashreplace"), err.decode(errors="backslashreplace"),
                   time.monotonic() - started)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoServer:
    """A moto S3 server in its own process on 127.0.0.1 (so that it can be killed mid-sweep)."""

    def __init__(self):
        self.port = free_port()
        code = ("import sys, time\nfrom moto.server import ThreadedMotoServer\n"
                "s = ThreadedMotoServer(ip_address='127.0.0.1', port=int(sys.argv[1]), verbose=False)\n"
                "s.start()\nprint('up', flush=True)\ntime.sleep(10**6)\n")
        self.process = subprocess.Popen([sys.executable, "-c", code, str(self.port)], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        self.process.stdout.readline()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def make_bucket(self, name: str) -> None:
        import pyarrow.fs as pafs

        pafs.S3FileSystem(endpoint_override=self.endpoint, access_key="probe", secret_key="probe",
                          region="us-east-1", scheme="http", allow_bucket_creation=True).create_dir(name)

    def kill(self) -> None:
        end_group(self.process)
        self.process.wait()


@dataclasses.dataclass
class RowsFingerprint:
    """What the views serve for one sweep, against the keys a clean run has."""

    digest: str
    counts: dict  # kind -> rows served
    duplicated: int  # rows beyond the first of their identity
    identities: dict  # kind -> set of identities served
    per_trial: dict  # trial_key -> hash of its metrics and trials rows

    def differing_trials(self, clean: RowsFingerprint) -> set:
        """Trials served by both whose rows differ."""
        return {k for k in self.per_trial.keys() & clean.per_trial.keys() if self.per_trial[k] != clean.per_trial[k]}

    def chosen_not_served(self) -> int:
        """An adaptive sweep's chosen points that have no trial row."""
        chosen = {identity[2] for identity in self.identities.get("rounds", ()) if identity[1] == "point"}
        return len(chosen - {identity[0] for identity in self.identities["trials"]})

    def lost_against(self, clean: RowsFingerprint) -> int:
        return sum(len(clean.identities[k] - self.identities.get(k, set())) for k in clean.identities)


def _row_text(row: dict) -> str:
    return repr(sorted((k, v) for k, v in row.items() if k not in VOLATILE))


def rows_fingerprint(uri: str, sweep: str, kinds: tuple[str, ...] = ("metrics", "trials")) -> RowsFingerprint:
    """Read every row of ``kinds`` of ``sweep`` through the store's views (as `explorer sql` does)."""
    store = Store(uri)
    digest, counts, duplicated, identities, per_trial = hashlib.sha256(), {}, 0, {}, {}
    for kind in kinds:
        columns = "*" if kind != "rounds" else ", ".join(ROUND_COLUMNS)
        try:
            rows = store.query(f"SELECT {columns} FROM {kind}", sweep=sweep).to_pylist()
        except Exception:  # no such view yet: the sweep wrote nothing of this kind
            rows = []
        keys = [tuple(r[c] for c in IDENTITY[kind]) for r in rows]
        identities[kind] = set(keys)
        duplicated += len(keys) - len(set(keys))
        counts[kind] = len(rows)
        for text in sorted(_row_text(r) for r in rows):
            digest.update(text.encode())
        digest.update(b"|")
        if kind != "rounds":
            for row in sorted(rows, key=_row_text):
                trial = per_trial.setdefault(row["trial_key"], hashlib.sha256())
                trial.update(_row_text(row).encode())
    per_trial = {key: h.hexdigest() for key, h in per_trial.items()}
    return RowsFingerprint(digest.hexdigest(), counts, duplicated, identities, per_trial)


def files_fingerprint(root: Path) -> str:
    """A hash of every path under ``root`` (symlinks as their target, never followed), size and bytes."""
    digest = hashlib.sha256()
    if not root.exists():
        return "absent"
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode(errors="surrogateescape"))
        if path.is_symlink():
            digest.update(b"->" + os.readlink(path).encode(errors="surrogateescape"))
        elif path.is_file():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


class Budget:
    """The campaign's global wall-clock budget."""

    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def spent(self) -> bool:
        return self.left() <= 0
