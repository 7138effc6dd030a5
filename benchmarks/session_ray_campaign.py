"""The session Ray's hostile cases (issue 43, holes 1, 2, 3, 5, 6 and 7), for benchmarks/hostile_probe.py
(``--session-ray``): each case runs the real CLI in a private TMPDIR, XDG_RUNTIME_DIR and
XDG_CACHE_HOME, checks the rule, and says what it saw in one line.

- stale holder (1): a live process of the campaign's own whose number a session record names
  (an older record without identity, a reused number, an earlier boot) survives `explorer ray stop`;
- not Ray (3): `explorer sweep --address` at a port that accepts TCP and says nothing ends within
  45 s, exit 2, one line; a session record naming it is "not answering" in `ray status`;
- second environment (7): a second checkout (a copy of the packages) sees no session of the first
  and `ray status` names its own environment;
- with Ray (``full``): a second checkout that writes wall_s = 777.0 is refused by the first's
  session (exit 2, one line) and its embedded run stores 777.0 and its own fingerprint (2); a
  killed raylet makes `ray status` say "not answering" (6); `explorer ray stop` under a running
  sweep ends it with one explorer line, the resume command and no claim left (5).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from probe_tools import ROOT, environment, explorer, run

SPEC = """
name = "sr"
[train]
steps = {steps}
[reference]
depth = 16
width = 8
[grid]
L = {Ls}
M = {Ms}
D = [4]
seeds = 2
"""
WALL_LINE = "    wall_s = (time.perf_counter() - started) / len(configs)\n"


@dataclasses.dataclass
class Case:
    name: str
    hole: int
    ok: bool
    seen: str


class Listener:
    """A loopback port that accepts TCP connections and never answers (not a Ray)."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.held, self.stop = [], threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        self.server.settimeout(0.1)
        while not self.stop.is_set():
            try:
                self.held.append(self.server.accept()[0])
            except OSError:
                pass

    def close(self):
        self.stop.set()
        for conn in self.held:
            conn.close()
        self.server.close()


def start_ticks(pid: int) -> float | None:
    try:
        return float(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


class SessionCampaign:
    """The cases, in a work folder whose short TMPDIR keeps Ray's socket paths short."""

    def __init__(self, work: Path):
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="srp", dir="/tmp"))
        for name in ("run", "cache"):
            (self.tmp / name).mkdir(mode=0o700)
        self.env = environment(TMPDIR=str(self.tmp), XDG_RUNTIME_DIR=str(self.tmp / "run"),
                               XDG_CACHE_HOME=str(self.tmp / "cache"))
        self.cases: list[Case] = []
        (work / "tiny.toml").write_text(SPEC.format(steps=5, Ls="[2, 4]", Ms="[1]"))
        (work / "long.toml").write_text(SPEC.format(steps=400, Ls="[2, 4, 8, 16]", Ms="[1, 2, 4, 8]"))
        self.copy = self._second_checkout(work / "copy")

    def _second_checkout(self, root: Path) -> Path:
        for package in ("trials", "store", "explorer"):
            shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
        train = root / "trials" / "train.py"
        train.write_text(train.read_text().replace(WALL_LINE, "    wall_s = 777.0\n"))
        return root

    def cli(self, *args, timeout_s=600.0, copy=False):
        env = dict(self.env, PYTHONPATH=str(self.copy)) if copy else self.env
        return run(explorer(*args), timeout_s, env, cwd=self.work)

    def record_folder(self, copy=False) -> Path:
        code = "import sys; from explorer.sweeps.ray.records import session_dir; print(session_dir())"
        env = dict(self.env, PYTHONPATH=str(self.copy)) if copy else self.env
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=self.work, capture_output=True, text=True)
        return Path(out.stdout.strip())

    def add(self, name, hole, ok, seen):
        self.cases.append(Case(name, hole, bool(ok), " ".join(seen.split())[:240]))

    # -- without Ray ---------------------------------------------------------------------------
    def stale_holder(self):
        folder = self.record_folder()
        sleeper = subprocess.Popen(["setsid", "sleep", "3000"])
        try:
            time.sleep(0.3)
            ticks = start_ticks(sleeper.pid)
            for label, identity in (("no identity", {}),
                                    ("reused number", {"holder_started": ticks - 7, "boot_id": boot_id()}),
                                    ("earlier boot", {"holder_started": ticks, "boot_id": "0-earlier"})):
                (folder / "session.json").write_text(json.dumps({
                    "address": "127.0.0.1:9", "holder_pid": sleeper.pid, "processes": [[sleeper.pid, ticks - 7, "raylet"]],
                    "num_cpus": 2, "started_at": 0.0, "start_seconds": 1.0, **identity}))
                done = self.cli("ray", "stop", timeout_s=120)
                time.sleep(0.3)
                alive = sleeper.poll() is None and start_ticks(sleeper.pid) == ticks
                self.add(f"ray stop, stale record ({label})", 1,
                         done.rc == 0 and alive and "nothing was signalled" in done.stdout,
                         f"exit {done.rc}, sleep {'alive' if alive else 'GONE'}: {done.stdout.splitlines()[:1]}")
        finally:
            sleeper.kill()
            sleeper.wait()

    def not_ray(self):
        listener = Listener()
        try:
            done = self.cli("sweep", "tiny.toml", "--store", "nr", "--address", listener.address, timeout_s=120)
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            errors = [line for line in lines if line.startswith("error:")]
            self.add("sweep --address at a TCP port that is not Ray", 3,
                     done.rc == 2 and done.seconds < 45 and len(errors) == 1 and errors[0] == lines[-1]
                     and "Traceback" not in done.stderr and "GCS" not in done.stderr,
                     f"exit {done.rc} after {done.seconds:.1f} s, {len(errors)} error line(s): {lines[-1:]}")
            folder = self.record_folder()
            holder = subprocess.Popen(["setsid", "sleep", "3000"])
            try:
                time.sleep(0.3)
                (folder / "session.json").write_text(json.dumps({
                    "address": listener.address, "holder_pid": holder.pid, "processes": [], "num_cpus": 2,
                    "started_at": 0.0, "start_seconds": 1.0, "holder_started": start_ticks(holder.pid),
                    "boot_id": boot_id()}))
                status = self.cli("ray", "status", timeout_s=120)
                self.add("ray status, session address not Ray", 3, "not answering" in status.stdout,
                         f"exit {status.rc}: {status.stdout.splitlines()[:1]}")
            finally:
                (folder / "session.json").unlink(missing_ok=True)
                holder.kill()
                holder.wait()
        finally:
            listener.close()

    def second_environment(self):
        ours, theirs = self.record_folder(), self.record_folder(copy=True)
        status = self.cli("ray", "status", copy=True, timeout_s=120)
        self.add("a second checkout has a session folder of its own", 7,
                 ours != theirs and str(self.tmp / "run") in str(ours) and str(self.copy) in status.stdout,
                 f"{ours.name} vs {theirs.name}: {status.stdout.splitlines()[:1]}")

    # -- with Ray ------------------------------------------------------------------------------
    def with_ray(self):
        started = self.cli("ray", "start", "--num-cpus", "2")
        if started.rc != 0:
            self.add("ray start", 0, False, started.stderr[-200:])
            return
        try:
            record = json.loads((self.record_folder() / "session.json").read_text())
            joined = self.cli("sweep", "tiny.toml", "--store", "two", "--address", record["address"], copy=True)
            self.add("second checkout joins the first's session by address", 2,
                     joined.rc == 2 and "run other code" in joined.stderr,
                     f"exit {joined.rc}: {joined.stderr.splitlines()[-1:]}")
            own = self.cli("sweep", "tiny.toml", "--store", "two", copy=True)
            rows = self._rows(self.work / "two")
            self.add("second checkout's rows: its own values and fingerprint", 2,
                     own.rc == 0 and rows and {r[0] for r in rows} == {777.0} and len({r[1] for r in rows}) == 1,
                     f"exit {own.rc}, rows (wall_s, code_fingerprint): {sorted(set(rows))}")
            self._stop_under_a_sweep()
            self.cli("ray", "start", "--num-cpus", "2")
            record = json.loads((self.record_folder() / "session.json").read_text())
            raylet = next(pid for pid, _, name in record["processes"] if name == "raylet")
            os.kill(raylet, signal.SIGKILL)
            time.sleep(1)
            status = self.cli("ray", "status", timeout_s=120)
            self.add("ray status after the raylet was killed", 6, "not answering" in status.stdout,
                     status.stdout.splitlines()[0] if status.stdout else status.stderr[-200:])
        finally:
            self.cli("ray", "stop")

    def _rows(self, store: Path) -> list:
        code = ("import sys; from store import Store; print([tuple(r.values()) for r in Store(sys.argv[1]).query("
                "'SELECT wall_s, code_fingerprint FROM trials').to_pylist()])")
        out = subprocess.run([sys.executable, "-c", code, str(store)], env=self.env, cwd=self.work,
                             capture_output=True, text=True)
        try:
            return [tuple(r) for r in eval(out.stdout.strip() or "[]")]  # noqa: S307 - our own printed list
        except SyntaxError:
            return []

    def _stop_under_a_sweep(self):
        sweep = subprocess.Popen(explorer("sweep", "long.toml", "--store", "long"), cwd=self.work, env=self.env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        leases = self.work / "long" / "sweep=sr" / ".leases"
        deadline = time.monotonic() + 300
        while not (leases.is_dir() and any(leases.iterdir())) and sweep.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        stopped = self.cli("ray", "stop")
        out, err = sweep.communicate(timeout=300)
        explorer_lines = [line for line in err.splitlines() if "session Ray is being stopped" in line]
        left = list(leases.iterdir()) if leases.is_dir() else []
        self.add("ray stop under a running sweep", 5,
                 sweep.returncode == 143 and len(explorer_lines) == 1 and "to resume" in out
                 and "core_worker" not in err and not left,
                 f"exit {sweep.returncode}, {len(left)} claim(s) left; stop said {stopped.stdout.splitlines()[:1]}")

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def run_cases(work: Path, full: bool = True) -> list[Case]:
    campaign = SessionCampaign(work)
    try:
        campaign.stale_holder()
        campaign.not_ray()
        campaign.second_environment()
        if full:
            campaign.with_ray()
    finally:
        campaign.close()
    return campaign.cases


def table(cases: list[Case]) -> list[str]:
    lines = ["| hole | case | held | seen |", "|---|---|---|---|"]
    lines += [f"| {c.hole} | {c.name} | {'yes' if c.ok else 'NO'} | {c.seen.replace('|', '/')} |" for c in cases]
    return lines
