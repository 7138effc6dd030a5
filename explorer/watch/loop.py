"""``explorer watch``'s loop: refresh, show, (rewrite the report page,) wait; until the sweep's
last run ends, then once more with the final answer."""
from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import UsageError
from .display import json_line, plain_lines, renderable
from .watcher import Snapshot, Watcher

MIN_EVERY_S = 0.5


MakeReport = Callable[[Path, "float | None"], object]  # (folder, reload_s): ``explorer.api.report`` into it


def write_page(make_report: MakeReport, snap: Snapshot, out: str | os.PathLike, every: float) -> str | None:
    """Rewrite the report page in ``out`` (``make_report``: ``explorer report`` of the rows so far,
    fits not saved), each file replaced in one step, the page reloading itself every ``every``
    seconds until the sweep ends; None, or why the page could not be made yet (one line)."""
    out = Path(out)
    staging = out.parent / f".{out.name}.watch-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        make_report(staging, None if snap.ended else every)
        out.mkdir(parents=True, exist_ok=True)
        for path in sorted(staging.rglob("*")):
            if path.is_file():
                target = out / path.relative_to(staging)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
        return None
    except UsageError as exc:
        return str(exc).splitlines()[0]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def watch_loop(watcher: Watcher, *, every: float = 10.0, once: bool = False, as_json: bool = False,
               html: str | os.PathLike | None = None, make_report: MakeReport | None = None, echo: Callable[[str], object] = print,
               live: bool | None = None, sleep: Callable[[float], object] = time.sleep) -> Snapshot:
    """Refresh until the last run ends (or once); returns the last ``Snapshot``."""
    every = max(float(every), MIN_EVERY_S)
    live = (not as_json and sys.stdout.isatty()) if live is None else live
    display = None
    if live:
        from rich.live import Live

        display = Live(refresh_per_second=4, transient=False)
        display.start()
    seen_rows = -1
    try:
        while True:
            snap = watcher.refresh()
            rows = len(watcher.statuses)
            if html is not None and make_report is not None and (rows != seen_rows or snap.ended):
                why = write_page(make_report, snap, html, every)
                if why:
                    snap.notes.append(f"report page not written yet: {why}")
            seen_rows = rows
            if display is not None:
                display.update(renderable(snap))
            elif as_json:
                echo(json_line(snap))
            else:
                for line in plain_lines(snap):
                    echo(line)
            if once or (snap.ended and watcher.read_problem is None):
                return snap
            sleep(every)
    finally:
        if display is not None:
            display.stop()
        watcher.close()
