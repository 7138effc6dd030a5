"""``explorer watch``: a sweep followed while it runs, read from the store without a lock.

``watcher`` reads each refresh (counts, pace, the answer so far, how much each interval
narrowed), ``answer`` computes the answer (optima and transfer law, or the default fit),
``display`` shows it (plain lines, JSON, a rich live display) and ``loop`` repeats until the last
run ends. The Python twin is ``explorer.api.watch``.
"""
from .answer import Interval
from .loop import watch_loop, write_page
from .watcher import Snapshot, Watcher

__all__ = ["Interval", "Snapshot", "Watcher", "watch_loop", "write_page"]
