"""How a twin that prints as it goes hands each line over: ``Echo`` receives it when it is ready
(the CLI passes ``click.echo``); ``quiet``, the default, drops it, for a Python caller reads the
returned value instead."""
from __future__ import annotations

from collections.abc import Callable

Echo = Callable[[str], object]  # receives each line a command prints, as it is ready


def quiet(line: str) -> None:
    """The default ``echo``: a Python caller reads the returned value instead."""


__all__ = ["Echo", "quiet"]
