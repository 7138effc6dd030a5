"""The input campaign of benchmarks/hostile_probe.py: several hundred hostile inputs, each given to
a real `explorer` command (a subprocess with a deadline and, but for the commands that render
charts, a 6 GiB address-space limit: an unbounded read fails instead of exhausting the machine).

Categories: sweep names, store paths, spec overrides, TOML shapes, law forms (`--form`),
`--where` filters, SQL and its options, output paths (`--out`), environment variables, and
tampered stores (a Parquet file of the wrong types, truncated, foreign; a copied sweep folder;
malformed leases) read by `sql`, `fit` and `check`. The rule for every input:

- it ends within its deadline, with exit 0, 1 or 2 (never a signal, never another code);
- no Python traceback on stdout or stderr;
- an error (non-zero exit) is one line on stderr, besides ``warning:``/``note:`` lines;
- no stderr line longer than 2,000 characters, and no raw control or bidi character echoed;
- no secret of a URL is printed;
- the store's bytes are unchanged (commands that may write, such as `check --repair`, excepted);
- where the input has one right answer, that answer (``expect``: refused, or handled with exit 0;
  a case's own ``verify``: e.g. a user's file left byte-identical, the served row count unchanged).
"""
from __future__ import annotations

import collections
import dataclasses
import resource
import shutil
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from probe_tools import TINY_SPEC, TINY_TRIALS, environment, explorer, files_fingerprint, run

SWEEP = "tiny"
SECRET = "pr0beSECRETvalue"
ADDRESS_SPACE = 6 * 1024**3
TIMEOUT_S = 60.0
MAX_LINE = 2000
# C0 controls but tab and newline, DEL, C1 controls, bidi overrides and isolates, zero-width joiners.
RAW = {chr(c) for c in (*range(0, 9), *range(11, 32), 127, *range(128, 160), *range(0x202A, 0x202F),
                        *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)}


@dataclasses.dataclass
class Case:
    """One hostile input and the command that receives it."""

    category: str
    label: str  # the input, as a reader should see it (escaped by the report)
    args: list  # explorer's arguments; "{store}", "{spec}", "{work}" are filled in
    expect: str = "any"  # any | refused (exit != 0) | handled (exit 0)
    writes: bool = False  # the command may change the store (repairs)
    store: str = "base"  # base, or the name of a tamper (its own copy of the base store)
    verify: Callable | None = None  # (outcome, place) -> a violation or None
    spec_text: str | None = None  # a spec file written for this case as {spec}
    env: dict = dataclasses.field(default_factory=dict)
    timeout_s: float = TIMEOUT_S


@dataclasses.dataclass
class Violation:
    case: Case
    what: str
    first_line: str


# Commands that render charts run V8 (vl-convert), which reserves more address space than the cap
UNCAPPED = ("phase", "report", "design")


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


# -- the inputs -----------------------------------------------------------------------------------
HOSTILE_NAMES = [
    "", " ", ".", "..", "../x", "../../etc", "a/b", "a\\b", "/abs", "~", "tiny/../tiny", "sweep=tiny",
    "tiny ", " tiny", "tiny\n", "x\x01y", "%00", "\u2400", "\x1b]0;pwned\x07", "\x1b[31mred", "\x07bell",
    "a\rb", "\u202eevil", "\u2066x\u2069", "zero\u200bwidth", "ü", "a" * 129, "a" * 5000, "-rf", "--help",
    "*", "tiny'--", "$(id)", "`id`", "con", ".hidden", "-", "tiny;rm", "quarantine", "references",
]
HOSTILE_PATHS = [
    "", " ", "\x1b]0;pwned\x07", "\u202estore", "a" * 5000, "/" + "a/" * 3000, "/dev/null", "/dev/zero",
    "/proc/self", "{spec}", "/nonexistent/deep/store", "s3://", "s3:///", "s3://bucket", "s3://../x",
    f"s3://KEY:{SECRET}@bucket/p", f"s3://bucket/p?secret_key={SECRET}", "file:///nonexistent",
    "hdfs://127.0.0.1:9/y", "http://127.0.0.1:9/x", "mock:///x", "::::", "~nosuchuser/x", "{store}/sweep=tiny",
]
OVERRIDES = [
    ("train.steps=abc", "refused"), ("train.steps=-1", "refused"), ("train.steps=0", "any"),
    ("train.steps=1e100", "refused"), ("train.steps=nan", "refused"), ("train.steps=true", "refused"),
    ('train.steps="5"', "any"), ("train.steps=0x10", "any"), ("train.steps=99999999999999999999999", "refused"),
    ("train.lr=nan", "refused"), ("train.lr=inf", "refused"), ("train.lr=-inf", "refused"),
    ("train.lr=1e309", "refused"), ("train.lr=-1", "refused"), ("train.lr=[1,2]", "any"),
    ("grid.L=[]", "refused"), ("grid.L=[0]", "refused"), ("grid.L=[-1]", "refused"), ('grid.L=["a"]', "refused"),
    ("grid.L=[[1]]", "refused"), ("grid.L=[1e400]", "refused"), ("grid.L=4", "any"), ("grid.L={a=1}", "refused"),
    ("grid.D=[4.5]", "refused"), ("grid.seeds=0", "refused"), ("grid.seeds=1000000000", "refused"),
    ("grid.seeds=-3", "refused"), ("reference.replicas=999999999", "refused"), ("reference.depth=0", "refused"),
    ("problem.seed=99999999999999999999999", "refused"), ("resources.cpus_per_trial=0.00001", "refused"),
    ("resources.cpus_per_trial=nan", "refused"), ("resources.cpus_per_trial=-1", "refused"),
    ("resources.gpus_per_trial=-1", "refused"), ("resources.max_points=0", "refused"),
    ("train.dtype=float16", "refused"), ("model.activation=evil", "refused"), ("model.preset=x", "refused"),
    ("unknown.key=1", "refused"), ("train.stepz=5", "refused"), ("grid.l=[4]", "refused"), ("=5", "refused"),
    ("train.steps", "refused"), ("train.steps==5", "refused"), ("train..steps=5", "refused"),
    ("train.steps=5 6", "refused"), ("name=../x", "refused"), ("name=\u202eevil", "refused"),
    ("name=" + "a" * 100_000, "refused"), ("grid.L=[" + ",".join(["4"] * 20000) + "]", "any"),
    ("model.activation=\x1b]0;pwned\x07", "refused"), ("train." + "a" * 5000 + "=1", "refused"),
]
DATA_HEAVY = ["problem.samples=1000000", "problem.d_in=2000", "problem.d_out=1", "grid.L=[2]", "grid.M=[2]",
              "grid.D=[2]", "reference.depth=2", "reference.width=2"]


def _spec(extra: str = "", replace: tuple[str, str] | None = None) -> str:
    text = TINY_SPEC.format(name="hostile")
    if replace:
        text = text.replace(*replace)
    return text + extra


def toml_shapes() -> list[tuple[str, str, str]]:
    """(label, spec text, expect) for every hostile spec shape."""
    deep = "x = " + "[" * 10_000 + "]" * 10_000 + "\n"
    shapes = [
        ("steps an array", _spec(replace=("steps = 6", "steps = [1, 2]")), "refused"),
        ("steps a table", _spec(replace=("steps = 6", "steps = {a = 1}")), "refused"),
        ("train a value", _spec(replace=("[train]\nsteps = 6", "train = 5")), "refused"),
        ("grid L nested", _spec(replace=("L = [2, 4, 8, 16]", "L = [[2], [4]]")), "refused"),
        ("grid L a table", _spec(replace=("L = [2, 4, 8, 16]", "L = {a = 2}")), "refused"),
        ("grid L a string", _spec(replace=("L = [2, 4, 8, 16]", 'L = "2,4"')), "refused"),
        ("steps a date", _spec(replace=("steps = 6", "steps = 1979-05-27")), "refused"),
        ("steps inf", _spec(replace=("steps = 6", "steps = inf")), "refused"),
        ("lr nan", _spec("", ("steps = 6", "steps = 6\nlr = nan")), "refused"),
        ("name missing", _spec(replace=('name = "hostile"', "")), "any"),
        ("name a number", _spec(replace=('name = "hostile"', "name = 5")), "refused"),
        ("name a path", _spec(replace=('name = "hostile"', 'name = "a/../b"')), "refused"),
        ("name with bidi", _spec(replace=('name = "hostile"', 'name = "\u202eevil"')), "refused"),
        ("name with OSC", _spec(replace=('name = "hostile"', 'name = "\\u001b]0;pwned\\u0007"')), "refused"),
        ("name 900,000 characters", _spec(replace=('name = "hostile"', f'name = "{"a" * 900_000}"')), "refused"),
        ("spec of 2 MB", _spec(f'# {"x" * 2_000_000}\n'), "refused"),
        ("arrays 10,000 deep", _spec(deep), "refused"),
        ("tables 40 deep", _spec("\n" + "[" + ".".join(f"t{i}" for i in range(40)) + "]\nx = 1\n"), "refused"),
        ("unknown section", _spec("\n[foo]\nx = 1\n"), "refused"),
        ("near-miss section", _spec(replace=("[train]", "[trian]")), "refused"),
        ("near-miss key", _spec(replace=("steps = 6", "stesp = 6")), "refused"),
        ("near-miss grids", _spec(replace=("[grid]", "[grids]")), "refused"),
        ("unknown top key", 'colour = "red"\n' + _spec(), "refused"),
        ("duplicate key", _spec(replace=("steps = 6", "steps = 6\nsteps = 7")), "refused"),
        ("invalid TOML", _spec("\n[grid\n"), "refused"),
        ("byte-order mark", "\ufeff" + _spec(), "any"),
        ("empty file", "", "refused"),
        ("binary garbage", "\x00\x01\x02\xff" * 100, "refused"),
        ("huge integer", _spec(replace=("steps = 6", "steps = 6\n[problem]\nseed = 99999999999999999999")), "refused"),
        ("adaptive form unknown", _spec("\n[adaptive]\nform = \"x\"\n"), "refused"),
        ("adaptive targets empty", _spec("\n[adaptive]\ntargets = []\n"), "refused"),
        ("adaptive batch huge", _spec("\n[adaptive]\nbatch = 1e30\n"), "refused"),
        ("resources nan cpus", _spec(replace=("points_per_trial = 1", "points_per_trial = 1\ncpus_per_trial = nan")),
         "refused"),
        ("resources tiny cpus", _spec(replace=("points_per_trial = 1",
                                               "points_per_trial = 1\ncpus_per_trial = 0.00001")), "refused"),
        ("axis of 10,000 values", _spec(replace=("L = [2, 4, 8, 16]",
                                                 "L = [" + ", ".join(str(i) for i in range(1, 10_001)) + "]")), "any"),
        ("reference kind unknown", _spec(replace=("[reference]", "[reference]\nkind = \"x\"")), "refused"),
    ]
    return shapes


LAWS = [
    "__import__('os').system('id')", "c1*L**-a; import os", "c1*L**-a#", "<script>alert(1)</script>",
    "c1*L**-99999999999999999999", "1e999*L", "c1*L**-a + " + "c" * 10_000, "(" * 1000 + "L" + ")" * 1000,
    "L" + "*L" * 5000, "exp(exp(exp(L)))", "c1/0*L", "c1*sqrt(-L)", "unknown", "powr", "", " ", "c1*L**-a\n",
    "lambda: 1", "c1*X", " + ".join(f"c{i}*L**-a{i}" for i in range(60)), "9**9**9**9", "L**L**L**L",
    "c1*L**-a.__class__", "c1*L**-a if 1 else 0", "[c1]", "c1*L**-a, c2", "c1 L", "c1*L**-a\x01",
    "c1*L**-a\u202e", "\x1b]0;pwned\x07", "DECOMPOSED", "decomposed ", "free_rss;", "c1*L**-a" * 2000,
]
WHERES = [
    "1=1) OR (1=1", "1=1; DROP TABLE metrics", "1=1 --", "/* */ 1=1", "alpha = 1 UNION SELECT * FROM trials",
    "read_csv('/etc/passwd') IS NOT NULL", "(SELECT count(*) FROM read_text('/etc/passwd')) > 0", "$1 = 1",
    "L = 'x'", "nonexistent_col = 1", "", " ", "1", "true", "getenv('HOME') IS NOT NULL",
    "current_setting('enable_external_access')", "L IN (SELECT L FROM trials)", "\u202eL = 1",
    "L = 1 AND " * 3000 + "1=1", "(" * 3000 + "1=1" + ")" * 3000, "1=1)) --", "COPY metrics TO '/tmp/x'",
    "alpha = 1e400", "L = 99999999999999999999999999", "'\x1b]0;pwned\x07' = ''", "L = 4 OR",
    "EXISTS (SELECT 1)", "L = (SELECT max(L) FROM metrics)", "1=1 LIMIT 1", "L = 4 ORDER BY L",
]
SQL = [
    ("DROP TABLE metrics", "refused"), ("SELECT 1; SELECT 2", "refused"), ("COPY metrics TO '/tmp/probe-x'", "refused"),
    ("ATTACH '/tmp/x.db'", "refused"), ("SELECT * FROM read_csv('/etc/passwd')", "refused"),
    ("INSTALL httpfs", "refused"), ("SET enable_external_access = true", "refused"), ("PRAGMA threads = 1", "refused"),
    ("SELECT getenv('HOME')", "any"), ("SELECT '\x1b]0;pwned\x07' AS x", "any"), ("SELECT '\u202eevil' AS x", "any"),
    ("SELECT chr(27) || ']0;pwned' || chr(7) AS x", "any"), ("SELECT repeat('a', 100000) AS x", "any"),
    ("", "refused"), ("SELEC 1", "refused"), ("SELECT * FROM nosuch", "refused"),
    ("EXPLAIN ANALYZE DELETE FROM metrics", "refused"), ("CALL pragma_version()", "refused"),
    ("SELECT count(*) FROM metrics", "handled"), ('SELECT * FROM "references" LIMIT 1', "handled"),
]
SQL_OPTIONS = [
    (["--timeout", "nan"], "refused"), (["--timeout", "inf"], "refused"), (["--timeout", "-1"], "refused"),
    (["--timeout", "0"], "refused"), (["--timeout", "1e308"], "refused"), (["--memory-limit", "abc"], "refused"),
    (["--memory-limit", "0"], "refused"), (["--memory-limit", "1000TB"], "any"), (["--memory-limit", "-5GB"], "refused"),
    (["--memory-limit", "nan%"], "refused"), (["--format", "xml"], "refused"), (["--sweep", "../x"], "refused"),
]
ENVIRONMENT = [
    ("EXPLORER_TORCH_THREADS", "0"), ("EXPLORER_TORCH_THREADS", "nan"), ("EXPLORER_LEASE_TTL_S", "inf"),
    ("EXPLORER_LEASE_TTL_S", "-1"), ("EXPLORER_S3_MAX_ATTEMPTS", "1e9"), ("EXPLORER_S3_CONNECT_TIMEOUT_S", "nan"),
    ("EXPLORER_STORE", "\x1b]0;pwned\x07"), ("EXPLORER_STORE", "../../.."),
]


def _unchanged(path: str) -> Callable:
    """A verify: the user's file at ``path`` (under the case's place) is byte-identical afterwards."""
    def verify(outcome, place: Path):
        target = place / path
        if not target.is_file() or target.read_bytes() != b"precious\n":
            return f"replaced or removed the user's file {path}"
        return None
    return verify


def _served_rows(expected: int) -> Callable:
    def verify(outcome, place: Path):
        if outcome.rc == 0 and f"{expected}" not in outcome.stdout:
            return f"served another row count than the clean store's {expected}: {outcome.stdout.strip()[:120]!r}"
        return None
    return verify


def cases() -> list[Case]:
    """Every hostile input, in a fixed order."""
    out: list[Case] = []
    for name in HOSTILE_NAMES:
        out += [Case("names", name, ["status", "--sweep", name, "--store", "{store}"]),
                Case("names", name, ["rm", "--sweep", name, "--store", "{store}", "--yes"],
                     expect="refused" if name.strip() != SWEEP else "any"),
                Case("names", name, ["sweep", "{spec}", "--dry-run", "--store", "{store}"],
                     spec_text=_spec(replace=('name = "hostile"', f"name = {_toml_string(name)}")))]
    for path in HOSTILE_PATHS:
        for command in (["ls"], ["check"], ["sql", "SELECT count(*) FROM metrics"]):
            out.append(Case("store paths", path, [*command, "--store", path], spec_text=_spec()))
    for override, expect in OVERRIDES:
        out.append(Case("overrides", override, ["sweep", "{spec}", "--dry-run", "--store", "{store}", override],
                        expect=expect, spec_text=_spec()))
    out.append(Case("overrides", " ".join(DATA_HEAVY), ["sweep", "{spec}", "--dry-run", "--store", "{store}",
                                                         *DATA_HEAVY], expect="refused", spec_text=_spec()))
    for label, text, expect in toml_shapes():
        out.append(Case("toml shapes", label, ["sweep", "{spec}", "--dry-run", "--store", "{store}"],
                        expect=expect, spec_text=text))
    out += [Case("toml shapes", "spec is /dev/zero", ["sweep", "/dev/zero", "--dry-run", "--store", "{store}"],
                 expect="refused"),
            Case("toml shapes", "spec is a folder", ["sweep", "{work}", "--dry-run", "--store", "{store}"],
                 expect="refused")]
    for law in LAWS:
        out.append(Case("law forms", law, ["fit", "--sweep", SWEEP, "--store", "{store}", "--form", law, "--no-save",
                                           "--bootstrap", "0"]))
    for index, where in enumerate(WHERES):
        out.append(Case("where", where, ["fit", "--sweep", SWEEP, "--store", "{store}", "--where", where,
                                         "--no-save", "--bootstrap", "0"]))
        if index < 10:  # phase pastes the filter the same way: the first ten are enough to tell
            out.append(Case("where", where, ["phase", "--sweep", SWEEP, "--store", "{store}", "--where", where]))
    for query, expect in SQL:
        out.append(Case("sql", query, ["sql", query, "--store", "{store}"], expect=expect))
        out.append(Case("sql", query, ["sql", query, "--store", "{store}", "--format", "csv"], expect=expect))
    for options, expect in SQL_OPTIONS:
        out.append(Case("sql", " ".join(options), ["sql", "SELECT count(*) FROM metrics", "--store", "{store}",
                                                    *options], expect=expect))
    out += output_cases()
    for variable, value in ENVIRONMENT:
        if variable == "EXPLORER_STORE":  # the store itself: --store would override it
            out.append(Case("environment", f"{variable}={value}", ["ls"], env={variable: value}))
        else:
            out.append(Case("environment", f"{variable}={value}", ["ls", "--store", "{store}"], expect="refused",
                            env={variable: value}))
    out += tamper_cases()
    return out


def output_cases() -> list[Case]:
    design = ["design", "--sweep", SWEEP, "--store", "{store}", "--target", "b=0.3"]
    return [
        Case("outputs", "design --out an existing file", [*design, "--out", "{work}/precious.txt"], expect="refused",
             verify=_unchanged("precious.txt")),
        Case("outputs", "design --out in a missing folder", [*design, "--out", "{work}/missing/d.toml"], expect="refused"),
        Case("outputs", "design --out /dev/null", [*design, "--out", "/dev/null"], expect="refused"),
        Case("outputs", "phase --out an existing file", ["phase", "--sweep", SWEEP, "--store", "{store}", "--out",
                                                          "{work}/precious.txt"], expect="refused",
             verify=_unchanged("precious.txt")),
        Case("outputs", "phase --out a folder with a user's file", ["phase", "--sweep", SWEEP, "--store", "{store}",
                                                                    "--out", "{work}/userdir"], expect="refused",
             verify=_unchanged("userdir/phase.png")),
    ]


# -- tampered stores ------------------------------------------------------------------------------
def _first(store: Path, kind: str) -> Path:
    return sorted((store / f"sweep={SWEEP}" / f"kind={kind}").glob("*.parquet"))[0]


def _retype(store: Path, column: str, to: pa.DataType) -> None:
    path = _first(store, "metrics")
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    pq.write_table(table.set_column(index, column, table.column(column).cast(to)), path)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _nan_errors(store: Path) -> None:
    path = _first(store, "metrics")
    table = pq.read_table(path)
    index = table.schema.get_field_index("err_out")
    pq.write_table(table.set_column(index, "err_out", pa.array([float("nan")] * len(table))), path)


def _lease(content: bytes | None = None, target: str | None = None):
    def tamper(store: Path) -> None:
        leases = store / f"sweep={SWEEP}" / ".leases"
        leases.mkdir(exist_ok=True)
        key = _first(store, "trials").stem
        if target:
            (leases / key).symlink_to(target)
        else:
            (leases / key).write_bytes(content)
    return tamper


TAMPERS: dict[str, Callable[[Path], None]] = {
    "err_out as string": lambda s: _retype(s, "err_out", pa.string()),
    "step as float": lambda s: _retype(s, "step", pa.float64()),
    "trial_key as binary": lambda s: _retype(s, "trial_key", pa.binary()),
    "metrics file truncated": lambda s: _truncate(_first(s, "metrics")),
    "metrics file empty": lambda s: _first(s, "metrics").write_bytes(b""),
    "foreign bytes as parquet": lambda s: (s / f"sweep={SWEEP}" / "kind=metrics" / "0123456789abcdef.parquet")
    .write_bytes(b"PAR1 not really" * 50),
    "foreign schema parquet": lambda s: pq.write_table(pa.table({"x": [1, 2]}),
                                                       s / f"sweep={SWEEP}" / "kind=metrics" / "fedcba9876543210.parquet"),
    "reference truncated": lambda s: _truncate(sorted((s / "references").glob("*.parquet"))[0]),
    "copied sweep folder": lambda s: shutil.copytree(s / f"sweep={SWEEP}", s / f"sweep={SWEEP}_backup"),
    "nan errors in ok rows": _nan_errors,
    "symlink to /etc/passwd": lambda s: (s / f"sweep={SWEEP}" / "kind=metrics" / "aaaaaaaaaaaaaaaa.parquet")
    .symlink_to("/etc/passwd"),
    "lease holding null": _lease(b"null"),
    "lease holding a list": _lease(b"[]"),
    "lease holding garbage": _lease(b"\xff\x00garbage"),
    "lease symlink to /dev/zero": _lease(target="/dev/zero"),
}
# What the clean store serves, which a tamper may not change (copies and foreign files are screened).
# A file under a trial's name that is not Parquet is corrupt, not foreign: it stops queries, by design.
TAMPER_EXPECT = {"copied sweep folder": "rows", "foreign schema parquet": "rows", "reference truncated": "rows"}


def tamper_cases() -> list[Case]:
    out = []
    count = "SELECT count(*) AS n FROM metrics"
    rows = TINY_TRIALS * 2 * 7  # trials x seeds x steps 0..6
    for name in TAMPERS:
        served = _served_rows(rows) if TAMPER_EXPECT.get(name) == "rows" else None
        out += [Case("tampered stores", name, ["sql", count, "--store", "{store}"], store=name, verify=served,
                     expect="handled" if served else "any"),
                Case("tampered stores", name, ["fit", "--sweep", SWEEP, "--store", "{store}", "--no-save",
                                               "--bootstrap", "0"], store=name),
                Case("tampered stores", name, ["check", "--store", "{store}"], store=name,
                     expect="refused" if name != "symlink to /etc/passwd" else "any")]
        if name.startswith("lease"):
            out.append(Case("tampered stores", name, ["check", "--repair", "--store", "{store}"], store=name,
                            writes=True))
    return out


def _toml_string(text: str) -> str:
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" for c in text) + '"'


# -- running them ---------------------------------------------------------------------------------
def escaped(text: str, limit: int = 80) -> str:
    shown = text.encode("unicode_escape").decode()
    return shown if len(shown) <= limit else f"{shown[:limit]}... ({len(text)} characters)"


def violations_of(case: Case, outcome, before: str, after: str, place: Path) -> list[str]:
    found = []
    if outcome.timed_out:
        return [f"still running at its {case.timeout_s:.0f} s deadline"]
    text = outcome.stdout + outcome.stderr
    if outcome.rc not in (0, 1, 2):
        found.append(f"exit {outcome.rc}")
    if "Traceback (most recent call last)" in text:
        found.append("traceback")
    errors = [line for line in outcome.stderr.splitlines()
              if line.strip() and not line.startswith(("warning:", "note:"))]
    if outcome.rc and len(errors) > 1:
        found.append(f"error in {len(errors)} lines")
    # what the tool says, not what a user's own query returns (SELECT repeat('a', 100000) is data)
    longest = max((len(line) for line in outcome.stderr.splitlines()), default=0)
    if longest > MAX_LINE:
        found.append(f"a line of {longest} characters")
    raw = sorted({c for c in text if c in RAW})
    if raw:
        found.append("raw " + ", ".join(f"U+{ord(c):04X}" for c in raw))
    if SECRET in text:
        found.append("printed the URL's secret")
    if before != after and not case.writes:
        found.append("changed the store")
    if case.expect == "refused" and outcome.rc == 0:
        found.append("exit 0 where a refusal (for `check`: a finding) is due")
    if case.expect == "handled" and outcome.rc != 0:
        found.append(f"refused (exit {outcome.rc}) an input it should handle")
    if case.verify and (problem := case.verify(outcome, place)):
        found.append(problem)
    return found


class InputCampaign:
    """Every case in a fresh place (a copy of the base store, tampered when the case says so)."""

    def __init__(self, work: Path, base_store: Path, budget):
        self.work, self.base, self.budget = work, base_store, budget
        self.results: list[tuple[Case, object]] = []
        self.violations: list[Violation] = []
        self.not_run = 0

    def place_for(self, case: Case, index: int) -> Path:
        place = self.work / f"input{index:04d}"
        shutil.rmtree(place, ignore_errors=True)
        place.mkdir(parents=True)
        shutil.copytree(self.base, place / "store", symlinks=True)
        if case.store != "base":
            TAMPERS[case.store](place / "store")
        (place / "precious.txt").write_bytes(b"precious\n")
        (place / "userdir").mkdir()
        (place / "userdir" / "phase.png").write_bytes(b"precious\n")
        return place

    def run_case(self, case: Case, index: int) -> None:
        place = self.place_for(case, index)
        spec = place / "spec.toml"
        spec.write_text(case.spec_text if case.spec_text is not None else _spec(), encoding="utf-8",
                        errors="surrogatepass")
        fill = {"{store}": str(place / "store"), "{spec}": str(spec), "{work}": str(place)}
        args = [_fill(a, fill) for a in case.args]
        before = files_fingerprint(place / "store")
        outcome = run(explorer(*args), case.timeout_s, environment(**case.env), cwd=place,
                      preexec=None if args[0] in UNCAPPED else _limits)
        after = files_fingerprint(place / "store")
        self.results.append((case, outcome))
        for what in violations_of(case, outcome, before, after, place):
            line = next((ln for ln in (outcome.stderr + outcome.stdout).splitlines() if ln.strip()), "")
            self.violations.append(Violation(case, what, line))
        shutil.rmtree(place, ignore_errors=True)

    def run(self, chosen: list[Case]) -> None:
        for index, case in enumerate(chosen):
            if self.budget.spent():
                self.not_run = len(chosen) - index
                break
            self.run_case(case, index)

    def summary(self) -> list[str]:
        """Counts per category (inputs, exit codes, violations) as a Markdown table."""
        by = collections.defaultdict(lambda: {"n": 0, "codes": collections.Counter(), "bad": set()})
        for case, outcome in self.results:
            entry = by[case.category]
            entry["n"] += 1
            entry["codes"]["timeout" if outcome.timed_out else outcome.rc] += 1
        for v in self.violations:
            by[v.case.category]["bad"].add(id(v.case))
        rows = ["| category | inputs | exit 0 | exit 1 | exit 2 | other | inputs with a violation |",
                "|---|---|---|---|---|---|---|"]
        total = [0] * 6
        for name, e in by.items():
            codes = e["codes"]
            other = e["n"] - codes[0] - codes[1] - codes[2]
            cells = [e["n"], codes[0], codes[1], codes[2], other, len(e["bad"])]
            total = [a + b for a, b in zip(total, cells)]
            rows.append(f"| {name} | " + " | ".join(map(str, cells)) + " |")
        rows.append("| all | " + " | ".join(map(str, total)) + " |")
        return rows

    def violation_lines(self) -> list[str]:
        return [f"- [{v.case.category}] `{escaped(v.case.label)}` -> `{' '.join(escaped(a, 40) for a in v.case.args[:1])}`"
                f": {v.what}; first line: {escaped(v.first_line, 160)!s}" for v in self.violations]


def _fill(arg: str, fill: dict) -> str:
    for key, value in fill.items():
        arg = arg.replace(key, value)
    return arg


def quick_selection(all_cases: list[Case], n: int) -> list[Case]:
    """``n`` cases spread over every category (every k-th of each), in the campaign's order."""
    by = collections.defaultdict(list)
    for case in all_cases:
        by[case.category].append(case)
    share = max(1, n // len(by))
    chosen = {id(c) for group in by.values() for c in group[:: max(1, len(group) // share)][:share]}
    return [c for c in all_cases if id(c) in chosen]
