"""Which code computed a sweep's trials (the ``code_fingerprint`` column of their rows): a sweep
run partly by one checkout or version of the code and partly by another is named, since its
numbers may not be comparable (``explorer fit``, ``explorer report``)."""
from __future__ import annotations

from .queries import query_frame, sweep_is, table_columns

COLUMN = "code_fingerprint"
SHOWN = 4  # fingerprints named in the line, the most common first


def code_mix_line(con, sweep: str) -> str | None:
    """One line naming the code fingerprints of the sweep's trials when there are several (rows
    written before the column, null, are not counted); None when one code computed them all."""
    if COLUMN not in table_columns(con, "trials"):
        return None
    counts = query_frame(con, f"SELECT {COLUMN} AS code, count(*) AS n FROM trials WHERE {sweep_is(sweep)} "
                              f"AND {COLUMN} IS NOT NULL GROUP BY 1 ORDER BY n DESC, code")
    if len(counts) < 2:
        return None
    named = ", ".join(f"{code} ({n} trials)" for code, n in zip(counts["code"][:SHOWN], counts["n"][:SHOWN]))
    more = f" and {len(counts) - SHOWN} more" if len(counts) > SHOWN else ""
    return (f"sweep {sweep!r} holds trials computed by {len(counts)} versions of the code: {named}{more}; its "
            "numbers may not be comparable (`explorer sql \"SELECT code_fingerprint, trial_key FROM trials\"` "
            "lists them; `explorer rm` and a rerun recompute them with one code)")


__all__ = ["code_mix_line"]
