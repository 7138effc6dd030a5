"""Lines above a written report page's first heading: what the page's data is (partial, trials
outside the last run's grid: ``explorer.analysis.data.data_notes``), and for a page that
``explorer watch --html`` rewrites while its sweep runs, a reload every few seconds.

Applied to the page as written (and to a page replayed from the report cache alike), so the
page's own template and summary know nothing of it.
"""
from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path

HEADER_ID = "data-notes"


def with_header(page: str, lines: Sequence[str] = (), reload_s: float | None = None) -> str:
    """``page`` with ``lines`` (escaped) in a ``<p id="data-notes">`` after its first ``</h1>``,
    and with ``reload_s``, a ``<meta http-equiv="refresh">`` in its head."""
    if lines:
        block = f'\n<p id="{HEADER_ID}" class="warn">' + "<br>".join(html.escape(line) for line in lines) + "</p>"
        at = page.find("</h1>")
        page = page[: at + 5] + block + page[at + 5:] if at >= 0 else block + page
    if reload_s is not None:
        meta = f'<meta http-equiv="refresh" content="{max(1, round(reload_s))}">'
        at = page.find("<head>")
        page = page[: at + 6] + meta + page[at + 6:] if at >= 0 else meta + page
    return page


def rewrite_with_header(path, lines: Sequence[str] = (), reload_s: float | None = None) -> None:
    """Rewrite the page at ``path`` with ``with_header`` in one atomic step (a temporary sibling,
    then a rename): a browser reloading it never reads half a page. Nothing to add: untouched."""
    if not lines and reload_s is None:
        return
    path = Path(path)
    page = with_header(path.read_text(encoding="utf-8"), lines, reload_s)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, path)
