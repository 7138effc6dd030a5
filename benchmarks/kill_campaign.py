"""The kill campaign of benchmarks/hostile_probe.py: SIGKILL a real `explorer` command at a random
moment, run the same command again to completion, and check that nothing was lost or doubled.

Scenarios (taken in turn, kill i runs ``SCENARIOS[i % n]``): a sweep from an empty store, a sweep
resumed on a store missing half its trials, `compact` while a sweep writes, `rm --sweep` of one
of two sweeps, `report`, `sweep --adaptive`, and with an S3 server a sweep on an ``s3://`` store.
The moment is uniform over the command's clean run time (measured first), drawn from ``--seed``,
so a start-up window is hit as often as a write. An adaptive loop's choices depend on which queued
trials had finished at each refit (two clean runs can choose different points), so there every
chosen point must have its rows and every trial's rows must equal the clean run's of that trial. After each kill: the driver gets SIGKILL, its
session (Ray's processes) 1 s later; the command is run again; then the views must serve exactly
the rows of a clean run (``probe_tools.rows_fingerprint``: none lost, none duplicated, same
content) and `explorer check` must pass. With an S3 server, the server itself is killed once mid-sweep:
the sweep must end in one line, exit 2, within seconds.
"""
from __future__ import annotations

import dataclasses
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

from probe_tools import (ADAPTIVE_SPEC, TINY_SPEC, Budget, MotoServer, RowsFingerprint, end_group, environment,
                         explorer, rows_fingerprint, run)

SWEEP, VICTIM, ADAPTIVE = "tiny", "victim", "adaptive"
RERUN_TIMEOUT_S = 600


@dataclasses.dataclass
class Tally:
    """One scenario's results."""

    kills: int = 0  # the command was alive when killed
    finished_first: int = 0  # it ended before its kill moment (no kill)
    lost: int = 0
    duplicated: int = 0
    mismatches: int = 0
    check_failures: int = 0
    rerun_failures: int = 0
    problems: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class StoreLost:
    """The S3 server killed mid-sweep: how the sweep ended."""

    rc: int | None
    seconds: float
    error_lines: int  # lines of stderr starting "error" (progress lines left out)
    first_line: str


def kill_at(argv: list[str], delay_s: float, env: dict) -> bool:
    """Start ``argv``, SIGKILL it ``delay_s`` later (then its session); True when it was still running."""
    process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        process.wait(timeout=delay_s)
        alive = False
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)  # the driver only, as a crash would
        process.wait()
        alive = True
    time.sleep(1.0)  # Ray's processes notice their driver is gone; then the rest of the session
    end_group(process)
    return alive


class KillCampaign:
    """Kill after kill, each in its own store under ``work``."""

    def __init__(self, work: Path, seed: int, budget: Budget, s3: MotoServer | None = None):
        self.work, self.rng, self.budget, self.s3 = work, random.Random(seed), budget, s3
        self.specs = {name: work / f"{name}.toml" for name in (SWEEP, VICTIM, ADAPTIVE)}
        self.clean: dict[str, RowsFingerprint] = {}
        self.seconds: dict[str, float] = {}
        self.clean_store = work / "clean"
        self.two_sweeps = work / "clean_two"
        self.adaptive_store = work / "clean_adaptive"

    # -- the clean runs ---------------------------------------------------------------------------
    def prepare(self, scenarios: list[str]) -> None:
        """Run each command once to completion: the clean fingerprints and the run times kills draw from."""
        self.work.mkdir(parents=True, exist_ok=True)
        for name, spec in self.specs.items():
            spec.write_text((ADAPTIVE_SPEC if name == ADAPTIVE else TINY_SPEC).format(name=name))
        self.seconds["sweep"] = self._clean(self.sweep_argv(self.clean_store))
        self.clean[SWEEP] = rows_fingerprint(str(self.clean_store), SWEEP)
        shutil.copytree(self.clean_store, self.two_sweeps)
        self._clean(explorer("sweep", str(self.specs[VICTIM]), "--store", str(self.two_sweeps)))
        if "compact_during_sweep" in scenarios:
            copy = self._copy(self.clean_store, "timing_compact")
            self.seconds["compact"] = self._clean(explorer("compact", "--store", str(copy), "--sweep", SWEEP))
            if rows_fingerprint(str(copy), SWEEP).digest != self.clean[SWEEP].digest:
                raise SystemExit("a clean `compact` changed the rows the views serve")
        if "rm" in scenarios:
            copy = self._copy(self.two_sweeps, "timing_rm")
            self.seconds["rm"] = self._clean(self.rm_argv(copy))
        if "report" in scenarios:
            copy = self._copy(self.clean_store, "timing_report")
            self.seconds["report"] = self._clean(self.report_argv(copy, self.work / "timing_report_out"))
        if "adaptive" in scenarios:
            self.seconds["adaptive"] = self._clean(self.adaptive_argv(self.adaptive_store))
            self.clean[ADAPTIVE] = rows_fingerprint(str(self.adaptive_store), ADAPTIVE, ("metrics", "trials", "rounds"))
        if "s3_sweep" in scenarios:
            self.s3.make_bucket("probe")
            uri = "s3://probe/clean"
            self.seconds["s3_sweep"] = self._clean(self.sweep_argv(uri), self.s3_env())
            with self._s3_reads():
                if rows_fingerprint(uri, SWEEP).digest != self.clean[SWEEP].digest:
                    raise SystemExit("a clean sweep on S3 serves other rows than on a local store")

    def _clean(self, argv: list[str], env: dict | None = None) -> float:
        done = run(argv, RERUN_TIMEOUT_S, env or environment())
        if done.rc != 0:
            raise SystemExit(f"clean run failed ({done.rc}): {' '.join(argv)}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        return done.seconds

    def _copy(self, source: Path, name: str) -> Path:
        target = self.work / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)
        return target

    # -- the commands -----------------------------------------------------------------------------
    def sweep_argv(self, store) -> list[str]:
        return explorer("sweep", str(self.specs[SWEEP]), "--store", str(store))

    def adaptive_argv(self, store) -> list[str]:
        return explorer("sweep", str(self.specs[ADAPTIVE]), "--adaptive", "--store", str(store))

    def rm_argv(self, store) -> list[str]:
        return explorer("rm", "--store", str(store), "--sweep", VICTIM, "--yes")

    def report_argv(self, store, out: Path) -> list[str]:
        return explorer("report", "--sweep", SWEEP, "--store", str(store), "--out", str(out), "--bootstrap", "20")

    def s3_env(self) -> dict:
        return environment(AWS_ENDPOINT_URL=self.s3.endpoint)

    def _s3_reads(self):
        """This process reads the S3 store through the same variables as the CLI."""
        campaign = self

        class _Env:
            def __enter__(self):
                self.saved = {k: os.environ.get(k) for k in campaign.s3_env() if k.startswith("AWS_")}
                os.environ.update({k: v for k, v in campaign.s3_env().items() if k.startswith("AWS_")})

            def __exit__(self, *exc):
                for k, v in self.saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
        return _Env()

    # -- one kill ---------------------------------------------------------------------------------
    def moment(self, command: str) -> float:
        return self.rng.uniform(0.0, self.seconds[command])

    def one_kill(self, scenario: str, index: int, tally: Tally) -> None:
        place = self.work / f"kill{index:03d}"
        shutil.rmtree(place, ignore_errors=True)
        place.mkdir()
        store, sweep, env, kinds = place / "store", SWEEP, environment(), ("metrics", "trials")
        if scenario == "sweep_fresh":
            argv, delay = self.sweep_argv(store), self.moment("sweep")
            alive = kill_at(argv, delay, env)
            rerun = run(argv, RERUN_TIMEOUT_S, env)
        elif scenario == "sweep_resumed":
            shutil.copytree(self.clean_store, store)
            self.drop_half(store)
            # half the trials to run: its run time is about half a fresh sweep's (Ray's start included)
            argv, delay = self.sweep_argv(store), 0.6 * self.moment("sweep")
            alive = kill_at(argv, delay, env)
            rerun = run(argv, RERUN_TIMEOUT_S, env)
        elif scenario == "compact_during_sweep":
            sweeping = subprocess.Popen(self.sweep_argv(store), env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            time.sleep(self.rng.uniform(0.3, 0.8) * self.seconds["sweep"])
            argv, delay = explorer("compact", "--store", str(store), "--sweep", SWEEP), self.moment("compact")
            alive = kill_at(argv, delay, env)
            rerun = run(argv, RERUN_TIMEOUT_S, env)
            try:
                sweeping.wait(timeout=RERUN_TIMEOUT_S)
            finally:
                end_group(sweeping)
            if sweeping.returncode != 0:
                tally.problems.append(f"kill {index}: the sweep under compact exited {sweeping.returncode}")
            finish = run(self.sweep_argv(store), RERUN_TIMEOUT_S, env)  # trials a dead compact may have cost
            rerun = rerun if rerun.rc != 0 else finish
        elif scenario == "rm":
            shutil.copytree(self.two_sweeps, store)
            argv, delay = self.rm_argv(store), self.moment("rm")
            alive = kill_at(argv, delay, env)
            rerun = run(argv, RERUN_TIMEOUT_S, env)
            if rerun.rc != 0 and "victim" in rerun.stderr and not (store / f"sweep={VICTIM}").exists():
                rerun.rc = 0  # the kill came after the deletion: nothing left to delete
            left = rows_fingerprint(str(store), VICTIM).counts
            if any(left.values()):
                tally.mismatches += 1
                tally.problems.append(f"kill {index}: rm left {left} of the deleted sweep")
        elif scenario == "report":
            shutil.copytree(self.clean_store, store)
            argv, delay = self.report_argv(store, place / "report"), self.moment("report")
            alive = kill_at(argv, delay, env)
            rerun = run(argv, RERUN_TIMEOUT_S, env)
        elif scenario == "adaptive":
            sweep, kinds = ADAPTIVE, ("metrics", "trials", "rounds")
            argv, delay = self.adaptive_argv(store), self.moment("adaptive")
            alive = kill_at(argv, delay, env)
            rerun = run(argv, RERUN_TIMEOUT_S, env)
        elif scenario == "s3_sweep":
            store, env = f"s3://probe/kill{index:03d}", self.s3_env()
            argv, delay = self.sweep_argv(store), self.moment("s3_sweep")
            alive = kill_at(argv, delay, env)
            rerun = run(argv, RERUN_TIMEOUT_S, env)
        else:
            raise ValueError(f"unknown scenario {scenario!r}")
        self.tally_one(tally, index, scenario, alive, delay, rerun, str(store), sweep, kinds, env)

    def drop_half(self, store: Path) -> None:
        """Delete the metrics and trials files of a random half of the trials: a store to resume."""
        files = sorted((store / f"sweep={SWEEP}" / "kind=trials").glob("*.parquet"))
        for path in self.rng.sample(files, len(files) // 2):
            for kind in ("metrics", "trials"):
                (store / f"sweep={SWEEP}" / f"kind={kind}" / path.name).unlink()

    def tally_one(self, tally: Tally, index, scenario, alive, delay, rerun, store, sweep, kinds, env) -> None:
        tally.kills += alive
        tally.finished_first += not alive
        where = f"kill {index} ({scenario}, at {delay:.2f} s)"
        if rerun.rc != 0:
            tally.rerun_failures += 1
            tally.problems.append(f"{where}: the rerun exited {rerun.rc}: {first_line(rerun.stderr or rerun.stdout)}")
        if store.startswith("s3://"):
            with self._s3_reads():
                seen = rows_fingerprint(store, sweep, kinds)
        else:
            seen = rows_fingerprint(store, sweep, kinds)
        clean = self.clean[sweep]
        doubled = seen.duplicated
        if sweep == ADAPTIVE:
            # Which points a loop chooses depends on which queued trials had finished at each refit
            # (two clean runs differ): lost = a chosen point without its rows; a mismatch = a trial
            # whose rows differ from the clean run's rows of the same trial
            lost, differing = seen.chosen_not_served(), seen.differing_trials(clean)
        else:
            lost, differing = seen.lost_against(clean), seen.digest != clean.digest
        tally.lost += lost
        tally.duplicated += doubled
        if differing:
            tally.mismatches += 1
            tally.problems.append(f"{where}: fingerprint differs (rows {seen.counts}, clean {clean.counts}, "
                                  f"lost {lost}, duplicated {doubled})")
        check = run(explorer("check", "--store", store), 300, env)
        if check.rc != 0:
            tally.check_failures += 1
            tally.problems.append(f"{where}: check exited {check.rc}: {first_problem(check)}")

    # -- the store lost mid-sweep -----------------------------------------------------------------
    def store_lost(self) -> StoreLost:
        """Kill a second S3 server while a sweep writes to it; how long until the sweep ends, and how."""
        server = MotoServer()
        try:
            server.make_bucket("lost")
            env = environment(AWS_ENDPOINT_URL=server.endpoint)
            process = subprocess.Popen(self.sweep_argv("s3://lost/sweep"), env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            time.sleep(self.rng.uniform(0.4, 0.8) * self.seconds.get("s3_sweep", self.seconds["sweep"]))
            if process.poll() is not None:
                return StoreLost(process.returncode, 0.0, 0, "the sweep ended before the server was killed")
            server.kill()
            killed = time.monotonic()
            try:
                out, err = process.communicate(timeout=300)
                rc = process.returncode
            except subprocess.TimeoutExpired:
                end_group(process)
                out, err = process.communicate()
                rc = None
            seconds = time.monotonic() - killed
            end_group(process)
        finally:
            server.kill()
        # The sweep's progress lines go to stderr too: the verdict is its error lines
        lines = [line for line in err.decode(errors="backslashreplace").splitlines() if line.startswith("error")]
        return StoreLost(rc, seconds, len(lines), lines[0] if lines else "")

    # -- the campaign -----------------------------------------------------------------------------
    def run(self, kills: int) -> dict[str, Tally]:
        scenarios = scenario_order(self.s3 is not None)
        chosen = [scenarios[i % len(scenarios)] for i in range(kills)]
        self.prepare(sorted(set(chosen)))
        tallies = {name: Tally() for name in scenarios if name in chosen}
        for index, scenario in enumerate(chosen):
            if self.budget.spent():
                tallies[scenario].problems.append(f"budget spent: kills {index}..{kills - 1} not run")
                break
            self.one_kill(scenario, index, tallies[scenario])
        return tallies


def scenario_order(s3: bool) -> list[str]:
    order = ["sweep_fresh", "sweep_resumed", "compact_during_sweep", "rm", "report", "adaptive"]
    return order[:1] + ["s3_sweep"] + order[1:] if s3 else order


def first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0][:200] if lines else ""


def first_problem(check) -> str:
    """The first line of `explorer check` that names a problem (its output lists categories)."""
    lines = [line for line in (check.stdout + check.stderr).splitlines() if line.strip()]
    flagged = [line for line in lines if not line.lower().startswith(("ok", "note"))]
    return (flagged or lines or [""])[0][:200]


def table(tallies: dict[str, Tally]) -> list[str]:
    """The campaign's figures, one row per scenario, as a Markdown table."""
    rows = ["| scenario | kills | lost rows | duplicated rows | fingerprint mismatches | check failures | rerun failures |",
            "|---|---|---|---|---|---|---|"]
    total = Tally()
    for name, t in tallies.items():
        rows.append(f"| {name} | {t.kills} | {t.lost} | {t.duplicated} | {t.mismatches} | {t.check_failures} "
                    f"| {t.rerun_failures} |")
        for field in ("kills", "lost", "duplicated", "mismatches", "check_failures", "rerun_failures"):
            setattr(total, field, getattr(total, field) + getattr(t, field))
    rows.append(f"| all | {total.kills} | {total.lost} | {total.duplicated} | {total.mismatches} "
                f"| {total.check_failures} | {total.rerun_failures} |")
    return rows
