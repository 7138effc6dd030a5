"""Ceilings on every count a user gives, checked before anything of that size is built.

A count is refused with one line when it is above its ceiling, so that a typo (``seeds =
1000000000``) never reaches ``tuple(range(seeds))`` or a bootstrap array: the process would grow
until the machine kills it. The ceilings are far above any sweep the project runs (docs/sweeps.md
lists them); beyond them the memory estimate (``explorer.config.memory_refusal``) judges what fits.

- ``INT64_MAX``: every integer that lands in an int64 column (seeds, problem draws, sizes,
  steps) is at most this; Parquet cannot store a larger one.
- ``MAX_SEEDS``, ``MAX_REPLICAS``: seeds per grid point ([grid] seeds) and particle replicas
  of the reference ([reference] replicas); each is one batched copy of the network.
- ``MAX_RESAMPLES``: bootstrap resamples of a fit (``explorer fit --bootstrap``,
  ``[adaptive] resamples``); each is one refit.
- ``MAX_GRID_POINTS``: the highest ``[resources] max_points`` (and so also the most points per
  Tune trial and per adaptive round).
- ``MAX_NESTING``: arrays and tables nested in a spec (a spec needs 2); a deeper one is refused
  before the TOML parser recurses into it.
- ``MAX_LIST_ITEMS``: the items of one command-line list (``optimum --by L,M``, a repeated
  ``--target``, ``--at``, ``--across``, ``--budget``); a repeated column is merged first.
"""
from __future__ import annotations

from collections.abc import Mapping

INT64_MAX = 2**63 - 1
MAX_SEEDS = 10_000
MAX_REPLICAS = 10_000
MAX_RESAMPLES = 100_000
MAX_GRID_POINTS = 10_000_000
MAX_NESTING = 32
MAX_LIST_ITEMS = 64


def toml_nesting(text: str) -> int:
    """The deepest nesting of ``[`` / ``{`` in TOML text, strings and comments skipped.

    Table headers (``[grid]``, ``[[x]]``) count as the arrays they look like, which is harmless:
    they close on their own line.
    """
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                i += 2 if (text[i] == "\\" and quote[0] == '"') else 1
            i += len(quote)
            continue
        if ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
        i += 1
    return deepest


def data_nesting(value: object) -> int:
    """The deepest nesting of lists and dicts in parsed data (iterative: any depth is safe)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_NESTING:  # no need to walk the rest
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def bounded_items(option: str, items) -> list:
    """``items`` (a command-line list) as a list, when there are at most ``MAX_LIST_ITEMS``.

    Raises:
        UsageError: one line naming the option, the count and the ceiling.
    """
    from .errors import UsageError

    items = list(items)
    if len(items) > MAX_LIST_ITEMS:
        raise UsageError(f"{option}: {len(items):,} items; at most {MAX_LIST_ITEMS} are accepted")
    return items
