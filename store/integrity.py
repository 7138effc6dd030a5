"""``check``: find what is wrong in a store, without changing it.

Problems (``check`` fails, the CLI exits 1):
- unreadable: a data file whose Parquet footer cannot be read (truncated, corrupt);
- foreign: a file or directory the layout does not know, or a Parquet file whose columns or key
  are not those of its place (a file named after one trial holding another's rows);
- temporary: a hidden ``.tmp.*`` file, left by a write that was interrupted (its writer, named in
  the file, is a dead process of this machine: ``maintenance.repair`` removes it at once) or whose
  writer runs elsewhere or is unknown (removed once an hour old). One whose writer runs on this
  machine is a note (``writing``);
- stale_lock: a reference lock whose heartbeat (mtime) is older than ``references.STALE_AFTER_S``
  (60 s), or dated further ahead of this machine's clock, or a lock file that is no lock (a link,
  a device, too large): its holder died (Ctrl-C, kill); ``maintenance.repair`` removes it;
- stale_lease: a claim file in ``.leases/`` that is no lease (not a JSON object with an owner, a
  TTL that is not a finite number, a link, a device, too large) or whose heartbeat is dated
  further in the future than its TTL: it counts as lapsed; ``maintenance.repair`` removes it;
- bad_value: a status-ok metrics row whose err_out or err_hidden is NaN, infinite or negative
  (no error of a finished trial can be): the fits leave it out and say so;
- duplicate: a (trial_key, seed, step) present twice in ``metrics``, or a trial twice in ``trials``;
- missing_steps: a seed whose steps are not 0..steps (0..the diverged step for a diverged seed),
  or a seed listed in the trials row without any metric row;
- incomplete: metric rows without a trials row (an interrupted trial: rerun the sweep), or a
  trials row without metric rows.
Notes (reported, not failures): copies left by an interrupted compaction, which the views
already ignore and ``explorer compact`` removes; live reference locks; quarantined files.
Unreadable and foreign files are judged by ``screen.screen_file``, the rule the views apply.
"""
from __future__ import annotations

import datetime as _dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .catalog import Listing, list_kind, list_references, list_sweeps, resolve, unexpected_entries
from .files import Entry, Files
from .layout import DATA_KINDS, check_sweep
from .query import connect, run
from .schema import KEY_COLUMN
from .maintenance import quarantine_root, quarantined_files
from .printable import printable
from .leases import malformed_leases
from .owners import temporary_writer
from .references import STALE_AFTER_S, lock_live
from .screen import screen_file

PROBLEMS = ("unreadable", "foreign", "temporary", "stale_lock", "stale_lease", "duplicate", "missing_steps",
            "incomplete", "bad_value")
NOTES = ("leftover", "lock", "writing", "quarantined")


@dataclass(frozen=True)
class Finding:
    """One thing check found: a category (PROBLEMS or NOTES), where, and what."""

    category: str
    where: str  # a path, or sweep/trial_key[/seed]
    detail: str

    @property
    def is_problem(self) -> bool:
        return self.category in PROBLEMS


@dataclass
class CheckReport:
    """Everything ``check`` found, plus how much it looked at."""

    findings: list[Finding] = field(default_factory=list)
    files_checked: int = 0
    metric_rows: int = 0
    trials: int = 0

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.is_problem]

    @property
    def ok(self) -> bool:
        return not self.problems

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.category] = out.get(f.category, 0) + 1
        return out

    def lines(self, limit_per_category: int = 20) -> list[str]:
        """A human summary: one line per finding (at most ``limit_per_category`` each), then totals."""
        out, shown = [], {}
        for f in self.findings:
            shown[f.category] = shown.get(f.category, 0) + 1
            if shown[f.category] <= limit_per_category:
                out.append(f"{'problem' if f.is_problem else 'note'}: {f.category}: {printable(f.where)}: {printable(f.detail)}")
        for category, n in self.counts().items():
            if n > limit_per_category:
                out.append(f"... {n - limit_per_category} more {category} finding(s)")
        verdict = "ok" if self.ok else f"{len(self.problems)} problem(s)"
        out.append(f"checked {self.files_checked} files, {self.trials} trials, {self.metric_rows} metric rows: {verdict}")
        return out


def _footer_problem(files: Files, entry: Entry, kind: str, key: str | None) -> Finding | None:
    verdict = screen_file(files, entry, kind, key)  # the rule the views apply too
    return None if verdict is None else Finding(verdict.category, verdict.path, verdict.reason)


def _temporary_finding(files: Files, entry: Entry) -> Finding:
    writer = temporary_writer(entry.name)
    shown = files.display(entry.path)
    if writer is None:
        return Finding("temporary", shown, "temporary file of an interrupted (or running) write; never read as data")
    pid, alive = writer
    if alive:
        return Finding("writing", shown, f"temporary file of a write in progress (its writer, pid {pid} of this machine, runs)")
    return Finding("temporary", shown, f"temporary file of an interrupted write (its writer, pid {pid} of this machine, "
                                      "is dead); never read as data; `explorer check --repair` removes it")


def _listing_findings(files: Files, listing: Listing, locks_are_foreign: bool) -> list[Finding]:
    found = [_temporary_finding(files, e) for e in listing.temporary]
    odd = listing.foreign + (listing.locks if locks_are_foreign else [])
    found += [Finding("foreign", files.display(e.path), f"cannot be opened ({e.error}); never read" if e.error
                      else "not part of the store layout; never read") for e in odd]
    return found


def check(files: Files, sweep: str | None = None, workers: int = 8) -> CheckReport:
    """Inspect a store (or one sweep of it) and report problems and notes; changes nothing.

    Raises:
        InvalidNameError: a bad sweep name. StoreError: the store cannot be listed.
    """
    report = CheckReport()
    now = _dt.datetime.now(_dt.timezone.utc)
    sweeps = [check_sweep(sweep)] if sweep is not None else list_sweeps(files)
    if sweep is None:
        report.findings += [
            Finding("foreign", files.display(e.path), "not part of the store layout; never read")
            for e in unexpected_entries(files)
        ]
    jobs: list[tuple[Entry, str, str | None]] = []
    listings: list[tuple[str, str, Listing]] = []
    for name in sweeps:
        for kind in DATA_KINDS:
            listing = list_kind(files, name, kind, stat=True)
            listings.append((name, kind, listing))
            report.findings += _listing_findings(files, listing, locks_are_foreign=True)
            jobs += [(e, kind, key) for key, e in listing.singles.items()]
            jobs += [(e, kind, None) for e in listing.compacted]
    references = list_references(files, stat=True)
    report.findings += _listing_findings(files, references, locks_are_foreign=False)
    jobs += [(e, "references", key) for key, e in references.singles.items()]
    jobs += [(e, "references", None) for e in references.compacted]
    listings.append((None, "references", references))
    for lock in references.locks:
        age = None if lock.mtime is None else (now - lock.mtime).total_seconds()
        if lock_live(files, lock.path) is False:
            without = (f"without a heartbeat for {age:.0f} s" if age is not None and age > STALE_AFTER_S
                       else "without a heartbeat (its file is no lock, or dated in the future)")
            report.findings.append(Finding(
                "stale_lock", files.display(lock.path),
                f"reference lock {without} (expiry {STALE_AFTER_S:.0f} s): its worker died; "
                "`explorer check --repair` removes it"))
        else:
            report.findings.append(Finding("lock", files.display(lock.path), "reference being computed (live heartbeat)"))
    for name in sweeps:
        report.findings += [
            Finding("stale_lease", files.display(path), f"claim file that never lapses by itself ({why}): counts as lapsed; "
                                                        "`explorer check --repair` removes it")
            for path, why in malformed_leases(files, name)]
    quarantined = quarantined_files(files)
    if quarantined:
        report.findings.append(Finding(
            "quarantined", files.display(quarantine_root(files)),
            f"{len(quarantined)} file(s) moved aside by `explorer check --quarantine`; never read (see docs/store.md to restore)"))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        footer = list(pool.map(lambda job: _footer_problem(files, *job), jobs))
    report.files_checked = len(jobs)
    bad = frozenset(job[0].path for job, problem in zip(jobs, footer) if problem is not None)
    report.findings += [p for p in footer if p is not None]
    for name, kind, listing in listings:
        resolution = resolve(files, listing, kind, exclude=bad)
        for path in resolution.superseded:
            report.findings.append(Finding("leftover", files.display(path), "every row is also in a newer file (interrupted compaction); views ignore it; `explorer compact` removes it"))
        for path, n in resolution.shadowed.items():
            report.findings.append(Finding("leftover", files.display(path), f"{n} of its {KEY_COLUMN[kind]}s are also in a newer file; views read the newer copy; `explorer compact` tidies it"))
    report.findings += _row_findings(files, sweep, bad, report)
    return report


_DUPLICATE_METRICS = """
SELECT sweep, trial_key, seed, step, count(*) AS n FROM metrics
GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL"""
_DUPLICATE_TRIALS = """
SELECT sweep, trial_key, count(*) AS n FROM trials GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL"""
_MISSING_STEPS = """
WITH per_seed AS (
    SELECT sweep, trial_key, seed, min(step) AS first, max(step) AS last,
           count(DISTINCT step) AS n, max(steps) AS steps, bool_or(status <> 'ok') AS stopped
    FROM metrics GROUP BY sweep, trial_key, seed)
SELECT sweep, trial_key, seed, first, last, n, steps FROM per_seed
WHERE first <> 0 OR n <> last + 1 OR last > steps OR (NOT stopped AND last <> steps)
ORDER BY ALL"""
_MISSING_SEEDS = """
WITH listed AS (SELECT sweep, trial_key, unnest(seeds) AS seed FROM trials),
     present AS (SELECT DISTINCT sweep, trial_key, seed FROM metrics)
SELECT l.sweep, l.trial_key, l.seed FROM listed l
WHERE (l.sweep, l.trial_key) IN (SELECT sweep, trial_key FROM present)
  AND NOT EXISTS (SELECT 1 FROM present p WHERE p.sweep = l.sweep AND p.trial_key = l.trial_key AND p.seed = l.seed)
ORDER BY ALL"""
_NO_TRIAL_ROW = """
SELECT DISTINCT sweep, trial_key FROM metrics
WHERE (sweep, trial_key) NOT IN (SELECT sweep, trial_key FROM trials) ORDER BY ALL"""
_BAD_VALUES = """
SELECT sweep, trial_key, seed, count(*) AS n, min(step) AS step FROM metrics
WHERE status = 'ok' AND (isnan(err_out) OR isinf(err_out) OR err_out < 0
                         OR isnan(err_hidden) OR isinf(err_hidden) OR err_hidden < 0)
GROUP BY ALL ORDER BY ALL"""
_NO_METRICS = """
SELECT DISTINCT sweep, trial_key FROM trials
WHERE (sweep, trial_key) NOT IN (SELECT sweep, trial_key FROM metrics) ORDER BY ALL"""


def _row_findings(files: Files, sweep: str | None, bad: frozenset[str], report: CheckReport) -> list[Finding]:
    con = connect(files, sweep=sweep, exclude=bad, unreadable="skip")
    found: list[Finding] = []
    report.metric_rows = run(con, "SELECT count(*) AS n FROM metrics").column(0)[0].as_py()
    report.trials = run(con, "SELECT count(*) AS n FROM trials").column(0)[0].as_py()
    for r in run(con, _DUPLICATE_METRICS).to_pylist():
        found.append(Finding("duplicate", f"{r['sweep']}/{r['trial_key']}/seed={r['seed']}", f"step {r['step']} appears {r['n']} times in metrics"))
    for r in run(con, _DUPLICATE_TRIALS).to_pylist():
        found.append(Finding("duplicate", f"{r['sweep']}/{r['trial_key']}", f"{r['n']} rows in trials"))
    for r in run(con, _MISSING_STEPS).to_pylist():
        found.append(Finding(
            "missing_steps", f"{r['sweep']}/{r['trial_key']}/seed={r['seed']}",
            f"{r['n']} distinct steps in {r['first']}..{r['last']}, expected every step of 0..{r['steps']} "
            "(or up to the step where the seed diverged)",
        ))
    for r in run(con, _MISSING_SEEDS).to_pylist():
        found.append(Finding("missing_steps", f"{r['sweep']}/{r['trial_key']}/seed={r['seed']}", "seed listed in trials has no metric rows"))
    for r in run(con, _NO_TRIAL_ROW).to_pylist():
        found.append(Finding("incomplete", f"{r['sweep']}/{r['trial_key']}", "metric rows without a trials row (interrupted trial: rerun the sweep)"))
    for r in run(con, _BAD_VALUES).to_pylist():
        found.append(Finding("bad_value", f"{r['sweep']}/{r['trial_key']}/seed={r['seed']}",
                             f"{r['n']} status-ok row(s) from step {r['step']} with a NaN, infinite or negative "
                             "err_out or err_hidden; the fits leave them out"))
    for r in run(con, _NO_METRICS).to_pylist():
        found.append(Finding("incomplete", f"{r['sweep']}/{r['trial_key']}", "trials row without metric rows"))
    con.close()
    return found
