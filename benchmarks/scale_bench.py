"""Scale benchmark: how the tool's costs grow with the number of trials (docs/benchmarks.md).

Parts (``--only``, default all that the machine's modules allow):
- ``sweep``: real sweeps of tiny trials (L = 2, 4; M = 1, 2; D = 2; 2 steps; one lr per four
  trials; ``reference.kind = "largest"``), each into a fresh store, run as ``explorer sweep`` in
  a subprocess whose RSS (the driver's) is sampled every ``--sample-s``: wall time, trials per
  second, the driver's peak RSS, the files in the store and the reference files among them, the
  first ETA printed in the trial phase against the time the phase actually had left, whether
  ``explorer check`` is clean, and a second sweep over an eighth of the same references (found by key in the compacted
  reference files, not computed again). Sizes: ``--sweeps 1000,6400,10000``.
- ``floor``: a bare Ray Tune run of as many no-op trials (each reports once) as the tool
  submitted Tune trials for the largest sweep, in the same sitting: Tune's own floor, beside
  the tool's overhead (wall minus compute).
- ``compaction``: a sweep's end without the sweep: ``--compaction 1000,10000,30000`` tiny trials
  written as small files by the store's writer, then ``explorer compact`` with its RSS sampled
  (``--code DIR`` runs another checkout's code, e.g. the one before streaming compaction).
- ``synthetic``: a store written with the store's own schema and Parquet writer at each size of
  ``--synthetic 100000,1000000`` trials x 20 steps, as a sweep's end leaves it (compacted files),
  then the time of ``explorer status``, ``ls``, ``sql "SELECT count(*) FROM points"``, ``fit``
  (default form) and ``report`` (no exports), each a subprocess; and the time to read one
  reference by key among ``--references`` compacted references. Needs only pyarrow, duckdb and
  the repository (no Ray, no torch).

    python benchmarks/scale_bench.py                         # everything
    python benchmarks/scale_bench.py --only sweep --sweeps 6400
    python benchmarks/scale_bench.py --only synthetic --device cuda   # e.g. on a GPU machine without Ray

``--device`` is recorded with the figures and passed to the sweeps' trials (``resources.device``
where the spec has it); the synthetic part does not use it. Output: one JSON object per
measurement on standard output, a table on standard error.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EXPLORER = [sys.executable, "-m", "explorer.cli"]
# a private runtime folder: the sweeps start their own embedded Ray, never join a session Ray
_PRIVATE = tempfile.mkdtemp(prefix="scale-bench-run-")
ENV = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1",
           XDG_RUNTIME_DIR=_PRIVATE, XDG_CACHE_HOME=_PRIVATE)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {os.cpu_count()} CPUs"


# --- the driver's memory ----------------------------------------------------------------------

def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class Sampler(threading.Thread):
    """Samples one process's RSS every ``every_s`` until it ends; ``peak`` and ``samples``."""

    def __init__(self, pid: int, every_s: float):
        super().__init__(daemon=True)
        self.pid, self.every_s, self.peak, self.samples = pid, every_s, 0.0, []
        self.t0 = time.monotonic()

    def run(self) -> None:
        while True:
            value = rss_mb(self.pid)
            if value is None:
                return
            self.samples.append((round(time.monotonic() - self.t0, 2), round(value, 1)))
            self.peak = max(self.peak, value)
            time.sleep(self.every_s)


def run_timed(args: list[str], every_s: float = 0.5, timeout: float | None = None, cwd: str | None = None):
    """(seconds, return code, stdout, stderr lines with their times, peak RSS MB) of one command."""
    t0 = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=cwd)
    sampler = Sampler(proc.pid, every_s)
    sampler.start()
    lines: list[tuple[float, str]] = []

    def read_err():
        for line in proc.stderr:
            lines.append((time.monotonic() - t0, line.rstrip("\n")))

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    try:
        out = proc.stdout.read()
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    reader.join(timeout=5)
    sampler.join(timeout=5)
    return time.monotonic() - t0, proc.returncode, out, lines, sampler.peak


# --- real sweeps --------------------------------------------------------------------------------

def spec_text(name: str, trials: int, device: str | None, keep: int | None = None) -> str:
    """The spec of ``trials`` tiny trials (``keep``: only the trials of the first ``keep`` lr
    values, the same values: a sweep over some of the same references)."""
    n_lr = max(1, trials // 4)
    lrs = ", ".join(f"{0.05 + 0.9 * i / max(n_lr - 1, 1):.6f}" for i in range(n_lr)[:keep])
    gpu = bool(device and device != "cpu")
    device_line = f'device = "{device}"\n' if gpu else ""
    return (f'name = "{name}"\n[problem]\nd_in = 2\nd_out = 2\nsamples = 4\nseed = 1\n'
            f'[train]\nsteps = 2\ndtype = "float64"\n{device_line}[reference]\nkind = "largest"\n'
            f'[grid]\nL = [2, 4]\nM = [1, 2]\nD = [2]\nlr = [{lrs}]\nseeds = 1\n'
            f'[resources]\ncpus_per_trial = 1\ngpus_per_trial = {0.1 if gpu else 0}\n')


def count_files(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*.parquet") if not p.name.startswith(".")]
    return len(files), sum(1 for p in files if p.parent.name == "references")


def first_trial_eta(lines: list[tuple[float, str]], measured: bool = False) -> tuple[float | None, str | None, float | None]:
    """(time it was printed, its text, seconds it predicted) of the first ETA of the trial phase
    (``measured``: the first from the measured rate, not the dry run's estimate; of an estimate
    ``~low-high``, the middle of the range)."""
    for t, line in lines:
        for part in line.replace("\r", "\n").split("\n"):
            match = re.search(r"trials \d+/\d+ .*ETA (~?)([0-9hms.]+)(?:-([0-9hms.]+))?", part)
            if match and not (measured and match.group(1)):
                low = parse_duration(match.group(2))
                high = parse_duration(match.group(3)) if match.group(3) else low
                return t, part.strip(), None if low is None or high is None else (low + high) / 2
    return None, None, None


def parse_duration(text: str) -> float | None:
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:([0-9.]+)s)?", text)
    if not match or not text:
        return None
    h, m, s = match.groups()
    return int(h or 0) * 3600 + int(m or 0) * 60 + float(s or 0)


def trial_phase_end(lines: list[tuple[float, str]]) -> float | None:
    ends = [t for t, line in lines if re.search(r"trials (\d+)/\1 ", line)]
    return ends[0] if ends else None


def sweep_part(sizes: list[int], device: str | None, every_s: float) -> list[dict]:
    records = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix=f"scale-{n}-") as tmp:
            spec = Path(tmp, "spec.toml")
            spec.write_text(spec_text(f"scale{n}", n, device))
            store = Path(tmp, "results")
            log(f"sweep of {n} trials ({load()})")
            wall, rc, out, lines, peak = run_timed(EXPLORER + ["sweep", str(spec), "--store", str(store)], every_s)
            files, ref_files = count_files(store)
            eta_at, eta_line, eta_s = first_trial_eta(lines)
            measured_at, measured_line, measured_s = first_trial_eta(lines, measured=True)
            end = trial_phase_end(lines)
            tune_trials = next((int(m.group(1)) for _, l in lines if (m := re.search(r"as (\d+) Tune trials", l))), None)
            check_wall, check_rc, check_out, _, _ = run_timed(EXPLORER + ["check", "--store", str(store)], every_s)
            compute = _compute_seconds(store, f"scale{n}")
            again = Path(tmp, "again.toml")
            again.write_text(spec_text(f"again{n}", n, device, keep=max(1, n // 32)))  # an eighth of the references
            wall2, rc2, _, lines2, peak2 = run_timed(EXPLORER + ["sweep", str(again), "--store", str(store)], every_s)
            found = any("found in the store" in l for _, l in lines2)
            computed = any(re.search(r"references: \d+ to compute", l) for _, l in lines2)
            record = {
                "part": "sweep", "trials": n, "wall_s": round(wall, 1), "rc": rc, "trials_per_s": round(n / wall, 1),
                "driver_peak_rss_mb": round(peak), "files": files, "reference_files": ref_files,
                "check_clean": check_rc == 0, "check_s": round(check_wall, 1), "tune_trials": tune_trials,
                "compute_s": round(compute, 1) if compute is not None else None,
                "first_eta_line": eta_line, "first_eta_s": eta_s,
                "actual_left_s": round(end - eta_at, 1) if end is not None and eta_at is not None else None,
                "first_measured_eta_line": measured_line, "first_measured_eta_s": measured_s,
                "actual_left_at_measured_s": round(end - measured_at, 1) if end is not None and measured_at is not None else None,
                "second_sweep_wall_s": round(wall2, 1), "second_sweep_rc": rc2, "second_sweep_peak_rss_mb": round(peak2),
                "second_sweep_references_found": found and not computed, "device": device or "cpu", "load": load(),
            }
            if rc != 0:
                record["stderr_tail"] = [l for _, l in lines[-5:]]
            emit(record)
            records.append(record)
    return records


def _compute_seconds(store: Path, sweep: str) -> float | None:
    try:
        from store import Store

        return Store(store).query("SELECT sum(wall_s) AS s FROM trials", sweep=sweep).column(0)[0].as_py()
    except Exception:  # noqa: BLE001 - a figure left out, not a failed benchmark
        return None


# --- Tune's floor -------------------------------------------------------------------------------

def floor_part(tune_trials: int) -> dict:
    """A bare Ray Tune run of ``tune_trials`` no-op trials at 2 CPUs, each reporting once."""
    code = f"""
import os, time
os.environ.setdefault("RAY_AUTH_MODE", "disabled"); os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
import ray
from ray import tune
t0 = time.perf_counter()
ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
started = time.perf_counter()
def noop(config):
    tune.report({{"done": 1}})
tune.Tuner(noop, param_space={{"i": tune.grid_search(list(range({tune_trials})))}},
           tune_config=tune.TuneConfig(reuse_actors=True)).fit()
print(time.perf_counter() - started, started - t0)
"""
    wall, rc, out, lines, _ = run_timed([sys.executable, "-c", code])
    parts = out.split()
    record = {"part": "floor", "tune_trials": tune_trials, "rc": rc,
              "tune_wall_s": round(float(parts[-2]), 1) if rc == 0 else None,
              "ray_start_s": round(float(parts[-1]), 1) if rc == 0 else None, "load": load()}
    emit(record)
    return record


# --- the synthetic store ------------------------------------------------------------------------

def _template(steps: int):
    """One real trial (2 seeds, Gram rows consistent with its errors) through the store's own
    writer into a scratch store: its metrics and trials rows, as the views read them."""
    import store_testkit as kit

    from store import Store

    key, rows, trial = kit.trial(L=2, M=1, steps=steps, seeds=(0, 1))
    by = {(r["seed"], r["step"]): r for r in rows}
    for r in rows:
        for metric, gram in (("err_out", "gram_out"), ("err_hidden", "gram_hidden")):
            e = r[metric]
            r[gram] = [e * by[(t, r["step"])][metric] * (1.0 if t == r["seed"] else 0.5) for t in (0, 1)]
    with tempfile.TemporaryDirectory(prefix="template-") as tmp:
        st = Store(Path(tmp, "results"))
        st.write_trial("synth", key, rows, trial)
        return st.query("SELECT * FROM metrics ORDER BY seed, step", sweep="synth"), st.query("SELECT * FROM trials", sweep="synth")


def write_synthetic(root: Path, trials: int, steps: int = 20, chunk: int = 50_000) -> float:
    """``trials`` trials x 2 seeds x (steps + 1) metric rows, as a sweep's end leaves them
    (compacted files of the sweep ``synth``, one per ``chunk`` trials), with the store's schema
    and Parquet writer; each trial a distinct (L, M), its errors scaled by 1/sqrt(L M) with
    noise (and its Gram rows by the square). Returns seconds."""
    import numpy as np
    import pyarrow as pa

    from store import Store
    from store.layout import compacted_name, join, kind_dir
    from store.schema import schema
    from store.status_counts import footer_metadata
    from store.write import parquet_bytes

    sys.path.insert(0, str(ROOT / "tests" / "store"))
    template_m, template_t = _template(steps)
    st = Store(root)
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    for n_chunk, start in enumerate(range(0, trials, chunk)):
        n = min(chunk, trials - start)
        index = np.arange(start, start + n)
        keys = np.array([f"{i:016x}" for i in index])
        Ls, Ms = 2 + index % 1000, 1 + index // 1000
        factor = np.sqrt(1.0 / (Ls * Ms)) * (1 + 0.05 * rng.standard_normal(n))
        for kind, template in (("metrics", template_m), ("trials", template_t)):
            reps = template.num_rows
            f_rows = np.repeat(factor, reps)
            columns = {}
            for name in template.schema.names:
                base = template.column(name).combine_chunks()
                if name == "trial_key":
                    columns[name] = pa.array(np.repeat(keys, reps))
                elif name in ("L", "M"):
                    columns[name] = pa.array(np.repeat(Ls if name == "L" else Ms, reps).astype(np.int64))
                elif name in ("err_out", "err_hidden", "final_err_out", "final_err_hidden") and pa.types.is_floating(base.type):
                    values = np.tile(base.to_numpy(zero_copy_only=False), n)
                    columns[name] = pa.array(values * f_rows)
                elif name in ("gram_out", "gram_hidden"):
                    lists = pa.concat_arrays([base] * n)
                    width = np.asarray(lists.value_lengths().fill_null(0))
                    values = lists.flatten().to_numpy(zero_copy_only=False) * np.repeat(f_rows ** 2, width)
                    columns[name] = pa.ListArray.from_arrays(lists.offsets, pa.array(values))
                else:
                    columns[name] = pa.concat_arrays([base] * n)
            # the store's own column types (a query gives timestamps as Etc/UTC: the screen would refuse them)
            table = pa.table(columns).cast(pa.schema([schema(kind).field(name) for name in template.schema.names]))
            path = join(kind_dir(st.files.root, "synth", kind), compacted_name(f"{time.time_ns():020d}{n_chunk:08x}", 0))
            # as compaction writes them: a trials file keeps its rows by status in its footer
            st.files.put(path, parquet_bytes(table, metadata=footer_metadata(table) if kind == "trials" else None,
                                             compression="zstd"))
    return time.perf_counter() - t0


def synthetic_part(sizes: list[int], references: int, timeout: float, only: set[str] | None = None) -> list[dict]:
    records = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix=f"synth-{n}-") as tmp:
            root = Path(tmp, "results")
            log(f"synthetic store of {n} trials ({load()})")
            written = write_synthetic(root, n)
            record = {"part": "synthetic", "trials": n, "steps": 20, "write_s": round(written, 1), "load": load()}
            commands = {
                "status": ["status", "--sweep", "synth", "--store", str(root)],
                "ls": ["ls", "--store", str(root)],
                "sql_count_points": ["sql", "SELECT count(*) FROM points", "--store", str(root)],
                "fit": ["fit", "--sweep", "synth", "--store", str(root)],
                "report": ["report", "--sweep", "synth", "--store", str(root), "--out", str(Path(tmp, "report"))],
            }
            for name, args in commands.items():
                if only and name not in only:
                    continue
                wall, rc, out, lines, peak = run_timed(EXPLORER + args, timeout=timeout)
                record[f"{name}_s"] = round(wall, 2) if rc == 0 else None
                record[f"{name}_rc"] = rc
                record[f"{name}_peak_rss_mb"] = round(peak)
                if rc != 0:
                    record[f"{name}_error"] = [l for _, l in lines[-2:]]
                log(f"  {name}: {wall:.2f} s (rc {rc}, peak {peak:.0f} MB)")
            emit(record)
            records.append(record)
    if references:
        records.append(reference_lookup(references))
    return records


def reference_lookup(n: int) -> dict:
    """Seconds to read one reference by key among ``n`` compacted references (8 float64 each)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from store import Store
    from store.compaction import REFERENCE_ROW_GROUP_ROWS
    from store.layout import compacted_name, join, references_dir
    from store.schema import SCHEMA_VERSION, schema

    with tempfile.TemporaryDirectory(prefix="refs-") as tmp:
        st = Store(Path(tmp, "results"))
        keys = [f"{i:016x}" for i in range(n)]
        data = np.arange(8, dtype=np.float64).tobytes()
        table = pa.table({"ref_key": keys, "name": ["f_ref"] * n, "dtype": ["<f8"] * n, "shape": [[8]] * n,
                          "data": [data] * n, "meta_json": ["{}"] * n, "schema_version": [SCHEMA_VERSION] * n,
                          "package_version": ["bench"] * n})
        table = table.select(schema("references").names).cast(schema("references"))
        path = join(references_dir(st.files.root), compacted_name(f"{time.time_ns():020d}00000000", 0))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(table, path, row_group_size=REFERENCE_ROW_GROUP_ROWS, compression="zstd")
        t0 = time.perf_counter()
        st.read_reference(keys[n // 2])
        first = time.perf_counter() - t0
        picks = np.random.default_rng(0).choice(n, size=200, replace=False)
        t0 = time.perf_counter()
        for i in picks:
            assert st.read_reference(keys[i]) is not None
        each = (time.perf_counter() - t0) / len(picks)
        t0 = time.perf_counter()
        cached = st.has_reference(keys[-1])
        has_s = time.perf_counter() - t0
    record = {"part": "reference_lookup", "references": n, "first_read_s": round(first, 4),
              "read_by_key_s": round(each, 5), "has_reference_first_s": round(has_s, 4), "found": cached, "load": load()}
    emit(record)
    return record


def _copies(st, key: str, n: int) -> None:
    """``n`` trials as small files: the template trial's tables with another key (and lr), each
    serialized and written by the store's own ``parquet_bytes`` and ``Files.put``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from store.layout import key_file
    from store.write import parquet_bytes

    tables = {kind: pq.read_table(key_file(st.files.root, "small", kind, key)) for kind in ("metrics", "trials")}
    for kind in tables:
        st.files.delete(key_file(st.files.root, "small", kind, key))
    for i in range(n):
        k = f"{i:016x}"
        for kind, table in tables.items():
            t = table.set_column(table.schema.get_field_index("trial_key"), "trial_key", pa.array([k] * table.num_rows))
            t = t.set_column(t.schema.get_field_index("lr"), "lr", pa.array([0.01 + i * 1e-6] * t.num_rows))
            st.files.put(key_file(st.files.root, "small", kind, k), parquet_bytes(t))


# --- compaction of many small files -----------------------------------------------------------

def compaction_part(sizes: list[int], every_s: float, code: str | None) -> list[dict]:
    """A sweep's end without the sweep: ``n`` tiny trials written as small files by the store's
    writer (3 metric rows each, as the sweep part's trials), then ``explorer compact`` in a
    subprocess with its RSS sampled. ``code``: a checkout whose ``store`` and ``explorer`` to run
    instead (e.g. the code before streaming compaction), put first on PYTHONPATH."""
    sys.path.insert(0, str(ROOT / "tests" / "store"))
    import store_testkit as kit

    from store import Store

    records = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix=f"compact-{n}-") as tmp:
            st = Store(Path(tmp, "results"), durable=False)
            key, rows, trial = kit.trial(L=2, M=1, steps=2, seeds=(0,))
            st.write_trial("small", key, rows, trial)  # the store's writer once: its files are the template
            t0 = time.perf_counter()
            _copies(st, key, n)
            written = time.perf_counter() - t0
            env_code = dict(ENV, PYTHONPATH=code) if code else ENV
            log(f"compact {n} trials ({2 * n} small files; {load()})")
            t0 = time.monotonic()
            proc = subprocess.Popen(EXPLORER + ["compact", "--store", str(st.uri)], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, env=env_code, cwd=tmp)
            sampler = Sampler(proc.pid, every_s)
            sampler.start()
            out = proc.communicate()[0]
            sampler.join(timeout=5)
            record = {"part": "compaction", "trials": n, "small_files": 2 * n, "write_s": round(written, 1),
                      "compact_s": round(time.monotonic() - t0, 1), "rc": proc.returncode,
                      "peak_rss_mb": round(sampler.peak), "code": code or "this checkout", "load": load(),
                      "output": out.strip().splitlines()[-2:]}
            emit(record)
            records.append(record)
    return records


def exponent(records: list[dict], size_key: str, value_key: str) -> float | None:
    """The slope of log(value) against log(size) between the smallest and the largest size."""
    points = [(r[size_key], r[value_key]) for r in records if r.get(value_key)]
    if len(points) < 2:
        return None
    (n0, v0), (n1, v1) = min(points), max(points)
    return round(math.log(v1 / v0) / math.log(n1 / n0), 2) if n1 != n0 and v0 > 0 and v1 > 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("sweep", "floor", "synthetic", "compaction"), action="append")
    parser.add_argument("--compaction", default="1000,10000,30000", help="trials per compaction of small files")
    parser.add_argument("--code", default=None, help="compaction part: run the store code of this checkout instead")
    parser.add_argument("--sweeps", default="1000,6400,10000", help="trials per real sweep")
    parser.add_argument("--synthetic", default="100000,1000000", help="trials per synthetic store")
    parser.add_argument("--references", type=int, default=100_000, help="compacted references for the by-key read (0: skip)")
    parser.add_argument("--floor-trials", type=int, default=16, help="floor part alone: Tune trials (a 6,400-trial sweep submits 16)")
    parser.add_argument("--sample-s", type=float, default=0.5, help="seconds between RSS samples of the driver")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per synthetic-store command")
    parser.add_argument("--commands", default="", help="synthetic part: only these commands (comma-separated: status,ls,"
                        "sql_count_points,fit,report; default all)")
    parser.add_argument("--device", default=None, help="the device the sweeps' trials run on (cpu, cuda); recorded")
    args = parser.parse_args()
    parts = args.only or ["sweep", "floor", "compaction", "synthetic"]
    log(f"scale_bench on {platform.node()} ({platform.processor() or platform.machine()}), {load()}, device {args.device or 'cpu'}")
    sweeps: list[dict] = []
    if "sweep" in parts:
        sweeps = sweep_part([int(x) for x in args.sweeps.split(",") if x], args.device, args.sample_s)
        log(f"peak RSS exponent: {exponent(sweeps, 'trials', 'driver_peak_rss_mb')}; wall exponent: {exponent(sweeps, 'trials', 'wall_s')}")
    if "floor" in parts:
        tune_trials = max((r.get("tune_trials") or 0 for r in sweeps), default=0) or args.floor_trials
        floor = floor_part(tune_trials)
        big = max(sweeps, key=lambda r: r["trials"]) if sweeps else None
        if big and floor.get("tune_wall_s") and big.get("compute_s") is not None:
            overhead = big["wall_s"] - big["compute_s"] / 2
            per_trial, floor_per_trial = overhead / big["trials"], floor["tune_wall_s"] / big["trials"]
            log(f"tool overhead {overhead:.1f} s (wall - compute/2; {per_trial * 1e3:.1f} ms a trial) vs bare Tune "
                f"{floor['tune_wall_s']:.1f} s for {floor['tune_trials']} Tune trials ({floor_per_trial * 1e3:.1f} ms a "
                f"trial of the sweep): ratio {overhead / floor['tune_wall_s']:.2f}")
            emit({"part": "overhead", "trials": big["trials"], "tool_overhead_s": round(overhead, 1),
                  "tool_overhead_per_trial_ms": round(per_trial * 1e3, 2), "tune_floor_s": floor["tune_wall_s"],
                  "tune_floor_per_trial_ms": round(floor_per_trial * 1e3, 2),
                  "ratio": round(overhead / floor["tune_wall_s"], 2), "load": load()})
    if "compaction" in parts:
        compactions = compaction_part([int(x) for x in args.compaction.split(",") if x], args.sample_s, args.code)
        log(f"compaction peak RSS exponent: {exponent(compactions, 'trials', 'peak_rss_mb')}")
    if "synthetic" in parts:
        synth = synthetic_part([int(x) for x in args.synthetic.split(",") if x], args.references, args.timeout,
                              {c for c in args.commands.split(",") if c})
        for name in ("status", "ls", "sql_count_points", "fit", "report"):
            log(f"{name}: exponent {exponent([r for r in synth if r['part'] == 'synthetic'], 'trials', name + '_s')}")


if __name__ == "__main__":
    main()
