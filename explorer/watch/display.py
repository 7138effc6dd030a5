"""How a refresh of ``explorer watch`` is shown: plain lines (off a terminal), one JSON object
(``--json``), or a rich renderable for the live display on a terminal (``rich.live.Live``)."""
from __future__ import annotations

import json

from .watcher import Snapshot


def _number(value: float | None) -> str:
    return "?" if value is None else f"{value:.4g}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def status_line(snap: Snapshot) -> str:
    """``demo: ok 120 | diverged 3 | failed 0 | running 40 | pending 0 | 123/163 of the last run | 2.1/min | ETA 19m``"""
    c = snap.counts
    parts = [f"{snap.sweep}: ok {c.get('ok', 0)}", f"diverged {c.get('diverged', 0)}", f"failed {c.get('failed', 0)}",
             f"running {snap.running}", f"pending {snap.pending}"]
    if snap.total:
        parts.append(f"{snap.done}/{snap.total} of the last run")
    if snap.rate:
        parts.append(f"{snap.rate:.2f}/s" if snap.rate >= 1 else f"{snap.rate * 60:.1f}/min")
    if not snap.ended:
        parts.append(f"ETA {_duration(snap.eta_s)}")
    parts.append("ended" if snap.ended else "running")
    return " | ".join(parts)


def interval_line(interval, narrowed: float | None) -> str:
    text = f"  {interval.name} = {_number(interval.estimate)} [{_number(interval.low)}, {_number(interval.high)}]"
    if interval.note:
        text += f" {interval.note}"
    if narrowed is not None:
        text += f" (narrowed {narrowed:.0%})" if narrowed > 0 else f" (widened {-narrowed:.0%})"
    return text


def plain_lines(snap: Snapshot) -> list[str]:
    """What one refresh prints off a terminal: the status, the data notes, the answer."""
    out = [status_line(snap), *snap.notes]
    if snap.intervals:
        out.append("answer so far:" if not snap.ended else "answer:")
        out += [interval_line(i, snap.narrowed.get(i.name)) for i in snap.intervals]
    elif snap.why_no_answer:
        out.append(f"no answer yet: {snap.why_no_answer}")
    return out


def json_line(snap: Snapshot) -> str:
    return json.dumps(snap.as_dict(), default=str)


def renderable(snap: Snapshot):
    """The live display: a status line, the notes, and a table of the answer's intervals."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title="answer" if snap.ended else "answer so far", title_justify="left")
    for column in ("", "estimate", "95% interval", "", "narrowed"):
        table.add_column(column, justify="left" if not column or column == "" else "right")
    for i in snap.intervals:
        change = snap.narrowed.get(i.name)
        table.add_row(i.name, _number(i.estimate), f"[{_number(i.low)}, {_number(i.high)}]", i.note,
                      "" if change is None else f"{change:+.0%}")
    parts = [Text(status_line(snap), style="bold"), *(Text(n, style="yellow") for n in snap.notes)]
    if snap.intervals:
        parts.append(table)
    elif snap.why_no_answer:
        parts.append(Text(f"no answer yet: {snap.why_no_answer}"))
    return Group(*parts)
