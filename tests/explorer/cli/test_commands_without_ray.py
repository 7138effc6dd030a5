"""Ray only where trials run: the real CLI (``python -m explorer.cli``), run on a store that
already has everything, imports neither Ray nor torch, as ``sys.modules`` says at its exit."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from store import Store

from tests.explorer.analysis_data import law_rows, write_to_store
from tests.explorer.cli.test_cli_sweep import GOOD

# The real command line, as `python -m explorer.cli ARGS` runs it, that writes at exit which of
# the heavy packages it imported.
PROBE = textwrap.dedent("""\
    import atexit, os, runpy, sys
    HEAVY = ("ray", "torch")
    atexit.register(lambda: open(os.environ["IMPORTED_OUT"], "w").write(" ".join(m for m in HEAVY if m in sys.modules)))
    sys.argv = ["explorer", *sys.argv[1:]]
    runpy.run_module("explorer.cli", run_name="__main__", alter_sys=True)
""")
ENV = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")


def imported_by(args: list[str], tmp_path, cwd=None) -> tuple[list[str], subprocess.CompletedProcess]:
    """Run the CLI with ``args``; return the heavy packages it imported and the finished process."""
    out = tmp_path / "imported.txt"
    done = subprocess.run([sys.executable, "-c", PROBE, *args], env=dict(ENV, IMPORTED_OUT=str(out)), cwd=cwd or tmp_path,
                          capture_output=True, text=True, timeout=600)
    return out.read_text().split(), done


def test_fit_on_a_stored_sweep_imports_neither_ray_nor_torch(tmp_path):
    st = Store(tmp_path / "results")  # not ./store: the probe runs from tmp_path, first on sys.path
    write_to_store(law_rows(lambda L, M, D: 0.5 / L + 0.3 / M, Ls=(2, 4, 8), Ms=(1, 4, 16), seeds=2, sweep="s"), st)
    heavy, done = imported_by(["fit", "--sweep", "s", "--form", "free", "--bootstrap", "5", "--store", st.uri], tmp_path)
    assert done.returncode == 0 and "form free" in done.stdout, done.stderr[-2000:]
    assert heavy == [], heavy


def test_the_papers_experiments_are_listed_without_ray_or_torch(tmp_path):
    heavy, done = imported_by(["reproduce", "--list"], tmp_path)  # every paper spec read, joint_limit ones too
    assert done.returncode == 0 and "companion-linear" in done.stdout, done.stderr[-2000:]
    assert heavy == [], heavy


TINY = GOOD.replace('name = "cli"', 'name = "tiny"').replace("L = [2, 4]\nM = [1]",
                                                            'L = [2, 4, 8]\nM = [1, 4]\npreset = ["mlu", "completep"]')


@pytest.fixture(scope="module")
def complete(tmp_path_factory):
    """A small sweep run to completion (on Ray, once) in a store."""
    root = tmp_path_factory.mktemp("complete")
    (root / "tiny.toml").write_text(TINY)
    done = subprocess.run([sys.executable, "-m", "explorer.cli", "sweep", "tiny.toml", "--store", "results"], cwd=root,
                          env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return root


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["sweep", "tiny.toml"],
    ["status", "tiny.toml"],
    ["status", "--sweep", "tiny"],
    ["fit", "--sweep", "tiny", "--bootstrap", "10"],
    ["report", "--sweep", "tiny", "--bootstrap", "10", "--out", "report"],
    ["compare", "--sweep", "tiny", "--by", "preset", "--bootstrap", "10"],
    ["design", "--sweep", "tiny", "--target", "a=0.5", "--out", "designed.toml"],
], ids=lambda args: args[0] + ("-spec" if args[-1].endswith(".toml") and args[0] == "status" else ""))
def test_a_command_on_a_complete_store_imports_neither_ray_nor_torch(complete, args, tmp_path):
    heavy, done = imported_by([*args, "--store", str(complete / "results")], tmp_path, cwd=complete)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-2000:]
    if args[0] == "sweep":
        assert done.returncode == 0 and "12 already complete, nothing to run" in done.stdout, done.stdout + done.stderr
    assert heavy == [], (heavy, done.stdout[-1000:], done.stderr[-1000:])


@pytest.mark.slow
def test_a_reproduction_rerun_on_a_complete_store_imports_neither_ray_nor_torch(tmp_path):
    args = ["reproduce", "companion-linear", "--scale", "tiny", "--store", "results"]  # joint_limit references
    first = subprocess.run([sys.executable, "-m", "explorer.cli", *args, "--out", "first"], cwd=tmp_path, env=ENV,
                           capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    heavy, again = imported_by([*args, "--out", "again"], tmp_path)
    assert again.returncode == 0 and "report: " in again.stdout, again.stderr[-2000:]
    assert heavy == [], heavy
