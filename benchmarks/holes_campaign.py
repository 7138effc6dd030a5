"""The cached-file and smaller-hole cases of issue 43 (holes 4, 8, 9, 10, 11, 12), each against the
real `explorer` CLI on a copy of the campaign's tiny store, with the user's cache in its own folder:

- the kept Vega bundle emptied, then put back: each report's page holds the whole bundle (about
  1 MB), or the report fails in one line without writing a page; the fit cache's files altered:
  the report's fits.csv is the fresh one's (but for ``created_at``);
- ``optimum --by M,M`` (the same numbers as ``--by M``) and 300 copies (one line, exit 2);
- a float32 spec with ``alpha = [1.0, 1e300]``, ``lr = 1e39`` (exit 2, one line, nothing written);
- ``--where "L = 999"`` (``no rows match --where``);
- a design written to a file name with a bidi override and a newline (echoed escaped);
- an input a killed compaction moved aside (holding rows newer than the compacted copy) and a trial
  a killed run left in small files: ``check --repair`` puts the aside back, and so does a sweep
  with nothing to run, which then compacts; the newest rows served, each once, ``check`` clean.

Run by ``benchmarks/hostile_probe.py --holes``; a case's violations are listed by name.
"""
from __future__ import annotations

import csv
import dataclasses
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from input_campaign import RAW, SWEEP, escaped
from probe_tools import TINY_SEEDS, TINY_SPEC, TINY_STEPS, TINY_TRIALS, VOLATILE, environment, explorer, run

TIMEOUT_S = 300.0
WHOLE_PAGE_BYTES = 900_000  # the bundle alone is about 0.9 MB; a page without it was 186 KB
ROWS = TINY_TRIALS * TINY_SEEDS * (TINY_STEPS + 1)


@dataclasses.dataclass
class Result:
    hole: str
    case: str
    violations: list[str]
    seconds: float


def _generic(outcome) -> list[str]:
    """The rules every command keeps: no traceback, an error in one line, no raw control or bidi."""
    found = []
    if outcome.timed_out:
        return ["still running at its deadline"]
    text = outcome.stdout + outcome.stderr
    if "Traceback (most recent call last)" in text:
        found.append("traceback")
    errors = [ln for ln in outcome.stderr.splitlines() if ln.strip() and not ln.startswith(("warning:", "note:"))]
    if outcome.rc and len(errors) != 1:
        found.append(f"exit {outcome.rc} with {len(errors)} error lines")
    raw = sorted({c for c in text if c in RAW})
    if raw:
        found.append("raw " + ", ".join(f"U+{ord(c):04X}" for c in raw))
    return found


class HolesCampaign:
    def __init__(self, work: Path, base_store: Path):
        self.work, self.base = work, base_store
        self.results: list[Result] = []

    def place(self, name: str) -> Path:
        place = self.work / name
        shutil.rmtree(place, ignore_errors=True)
        place.mkdir(parents=True)
        shutil.copytree(self.base, place / "store", symlinks=True)
        (place / "cache").mkdir()
        return place

    def cli(self, place: Path, *args: str):
        return run(explorer(*args), TIMEOUT_S, environment(XDG_CACHE_HOME=str(place / "cache")), cwd=place)

    def record(self, hole: str, case: str, outcomes: list, violations: list[str]) -> None:
        for outcome in outcomes:
            violations = _generic(outcome) + violations
        self.results.append(Result(hole, case, violations, sum(o.seconds for o in outcomes)))

    # -- hole 4: the cached Vega bundle and fit-cache files ----------------------------------------
    def bundle(self) -> None:
        place = self.place("bundle")
        report = ("report", "--sweep", SWEEP, "--store", str(place / "store"), "--bootstrap", "20", "--no-save")
        # the bundle made and kept by a report of other options: the report cache holds no page of these
        first = self.cli(place, *report[:-2], "10", "--no-save", "--out", "first")
        kept = sorted((place / "cache" / "resnet-scaling-explorer").glob("vega-bundle-*.js"))
        if first.rc != 0 or not kept:
            self.record("4", "report with a fresh cache", [first], ["no report or no kept bundle"])
            return
        good = kept[0].read_bytes()
        outcomes, found = [first], []
        for step, content in (("emptied", b""), ("restored", good)):
            kept[0].write_bytes(content)
            done = self.cli(place, *report, "--out", step)
            outcomes.append(done)
            page = place / step / "index.html"
            if done.rc == 0:
                size = page.stat().st_size if page.exists() else 0
                if size < WHOLE_PAGE_BYTES or "window.vegaEmbed=" not in page.read_text(encoding="utf-8"):
                    found.append(f"{step}: exit 0 with a page of {size:,} bytes without the Vega bundle")
            elif page.exists():
                found.append(f"{step}: exit {done.rc} but a page was written")
        self.record("4", "kept Vega bundle emptied, then put back", outcomes, found)
        # every kept fit altered by one byte in its middle: the same fits as a fresh cache's
        for path in (place / "cache" / "resnet-scaling-explorer" / "fits").glob("*.pickle"):
            data = bytearray(path.read_bytes())
            data[len(data) // 2] ^= 0x01
            path.write_bytes(bytes(data))
        altered = self.cli(place, *report, "--out", "altered")
        found = []
        if altered.rc != 0 or _fit_rows(place / "altered") != _fit_rows(place / "restored"):
            found.append("fits.csv differs from the fresh cache's (created_at aside)")
        self.record("4", "fit-cache files altered by one byte", [altered], found)

    # -- hole 8: optimum --by repeated ---------------------------------------------------------------
    def by(self) -> None:
        place = self.place("by")
        base = ("optimum", "--sweep", SWEEP, "--store", str(place / "store"), "--axis", "M", "--bootstrap", "20",
                "--no-save")
        once, twice = self.cli(place, *base, "--by", "L"), self.cli(place, *base, "--by", "L,L")
        found = [] if once.rc == 0 and twice.stdout == once.stdout else [f"--by L,L: exit {twice.rc}, not --by L's lines"]
        self.record("8", "optimum --by L,L", [once, twice], found)
        many = self.cli(place, *base, "--by", ",".join(["L"] * 300))
        found = [] if many.rc == 2 and many.seconds < 30 else [f"300 copies: exit {many.rc} after {many.seconds:.0f} s"]
        self.record("8", "optimum --by L x 300", [many], found)

    # -- hole 9: float32 overflow --------------------------------------------------------------------
    def float32(self) -> None:
        for label, old, new in (("alpha = [1.0, 1e300]", "[grid]\n", "[grid]\nalpha = [1.0, 1e300]\n"),
                                ("lr = 1e39", "[train]\n", "[train]\nlr = 1e39\n")):
            place = self.place("float32")
            spec = place / "f32.toml"
            spec.write_text(TINY_SPEC.format(name="f32").replace("[train]\n", '[train]\ndtype = "float32"\n')
                            .replace(old, new, 1))
            done = self.cli(place, "sweep", str(spec), "--store", str(place / "store"))
            found = []
            if done.rc != 2 or "overflows float32" not in done.stderr:
                found.append(f"exit {done.rc}: {escaped(done.stderr.strip()[:160], 160)}")
            if (place / "store" / "sweep=f32").exists():
                found.append("wrote rows of the refused spec")
            self.record("9", f"float32 spec, {label}", [done], found)

    # -- hole 10: a filter matching nothing ----------------------------------------------------------
    def where(self) -> None:
        place = self.place("where")
        done = self.cli(place, "optimum", "--sweep", SWEEP, "--store", str(place / "store"), "--axis", "M",
                        "--where", "L = 999", "--no-save")
        found = [] if done.rc == 2 and "no rows match --where 'L = 999'" in done.stderr else [
            f"exit {done.rc}: {escaped(done.stderr.strip()[:160], 160)}"]
        self.record("10", "optimum --axis M --where 'L = 999'", [done], found)

    # -- hole 11: an echoed file name ----------------------------------------------------------------
    def echoed(self) -> None:
        place = self.place("echoed")
        name = "d\u202eLMTH\nx.toml"
        done = self.cli(place, "design", "--sweep", SWEEP, "--store", str(place / "store"), "--target", "b=0.3",
                        "--out", str(place / name))
        found = []
        if done.rc == 0 and "$'" not in done.stdout:
            found.append("the written file's name is not echoed as an escaped shell word")
        self.record("11", "design --out a name with U+202E and a newline", [done], found)

    # -- hole 12: a killed compaction's aside --------------------------------------------------------
    def aside(self) -> None:
        for how in ("check --repair", "sweep with nothing to run"):
            place = self.place("aside")
            store = place / "store"
            folder = store / f"sweep={SWEEP}" / "kind=metrics"
            compacted = sorted(folder.glob("compacted.*.parquet"))[0]
            table = pq.read_table(compacted)
            keys = sorted(set(table.column("trial_key").to_pylist()))
            key, later = keys[0], keys[1]
            # one trial's file, rewritten (new losses) just before a compaction moved it aside and was
            # killed there (named for a writer past the kernel's largest pid: dead)
            aside = folder / f".tmp.compacting{2**22 + 1}@{_host()}@{'0' * 32}.{key}.parquet"
            mine = table.filter(pc.equal(table.column("trial_key"), key))
            newest = mine.set_column(mine.schema.get_field_index("loss"), "loss", pc.add(mine.column("loss"), 1.0))
            pq.write_table(newest, aside)
            want = sorted(newest.column("loss").to_pylist())
            # and another trial written by a run killed before its end's compaction: small files only
            for kind in ("metrics", "trials"):
                kind_folder = store / f"sweep={SWEEP}" / f"kind={kind}"
                for path in sorted(kind_folder.glob("compacted.*.parquet")):
                    rows = pq.read_table(path)
                    keep = pc.invert(pc.equal(rows.column("trial_key"), later))
                    if not pc.all(keep).as_py():
                        pq.write_table(rows.filter(pc.invert(keep)), kind_folder / f"{later}.parquet")
                        pq.write_table(rows.filter(keep), path)
            outcomes = []
            if how == "check --repair":
                outcomes.append(self.cli(place, "check", "--repair", "--store", str(store)))
            else:
                spec = place / "tiny.toml"
                spec.write_text(TINY_SPEC.format(name=SWEEP))
                outcomes.append(self.cli(place, "sweep", str(spec), "--store", str(store)))
            check = self.cli(place, "check", "--store", str(store))
            count = self.cli(place, "sql", "SELECT count(*) AS n FROM metrics", "--store", str(store), "--format", "csv")
            served = self.cli(place, "sql", f"SELECT loss FROM metrics WHERE trial_key = '{key}' ORDER BY loss",
                              "--store", str(store), "--format", "csv")
            found = []
            if aside.exists():
                found.append("the aside is still there")
            if [float(v) for v in served.stdout.split()[1:]] != want:
                found.append("the aside's newer rows are not served (deleted, not put back)")
            if check.rc != 0:
                found.append(f"check exit {check.rc} afterwards")
            if count.stdout.split()[-1:] != [str(ROWS)]:
                found.append(f"served {count.stdout.split()[-1:]} metric rows, not {ROWS}")
            if how != "check --repair" and [p for p in folder.glob("*.parquet") if not p.name.startswith("compacted.")]:
                found.append("small files left uncompacted")
            self.record("12", f"a killed compaction's aside, then {how}", [*outcomes, count, served], found)

    def run(self, budget) -> None:
        for step in (self.bundle, self.by, self.float32, self.where, self.echoed, self.aside):
            if budget.spent():
                break
            step()

    def table(self) -> list[str]:
        rows = ["| hole | case | seconds | violations |", "|---|---|---|---|"]
        for r in self.results:
            rows.append(f"| {r.hole} | {r.case} | {r.seconds:.1f} | {'; '.join(r.violations) or 0} |")
        return rows

    @property
    def violations(self) -> int:
        return sum(len(r.violations) for r in self.results)


def _fit_rows(folder: Path) -> list[dict]:
    """A report's fits.csv rows without the columns two honest runs differ in (created_at)."""
    path = folder / "fits.csv"
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return [{k: v for k, v in row.items() if k not in VOLATILE} for row in csv.DictReader(f)]


def _host() -> str:
    import re
    import socket

    return re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:255] or "host"


__all__ = ["HolesCampaign"]
