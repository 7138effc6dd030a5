"""Exceptions a user can cause, each mapped to a one-line CLI error and an exit code."""
from __future__ import annotations

from contextlib import contextmanager


class UsageError(Exception):
    """A problem in what the user asked for; the CLI prints it as one line."""

    exit_code = 2


class SpecError(UsageError):
    """A sweep spec that is malformed or asks for something impossible (exit 2). Its ``args``
    are its lines, one per mistake (``spec error: KEY: PROBLEM``); ``str`` joins them."""

    def __str__(self) -> str:
        return "\n".join(str(line) for line in self.args)


def spec_error(key: str, problem: str) -> SpecError:
    """The one-line spec error about ``key`` (``[grid] L``, ``name``, a file path, an override):
    ``spec error: KEY: PROBLEM``. Every spec refusal is built here, so they all read alike, and
    none prints a control or bidi character raw (``printable_text``: keys and paths come from
    the user)."""
    from .formatting import printable_text

    return SpecError(printable_text(f"spec error: {key}: {problem}"))


# A spec with more mistakes than this (a file of 10,000 unknown keys) is reported by its first
# ones and a count: every line is one the user reads.
SHOWN_SPEC_ERRORS = 20


class SpecProblems:
    """The mistakes of one spec, gathered so that validation reports all of them (one line
    each) instead of stopping at the first: ``with problems.gather(): check()`` records the
    ``SpecError`` that ``check`` raises and goes on; ``raise_any()`` raises them as one."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, error: SpecError) -> None:
        self.lines += [line for line in error.args if line not in self.lines]

    @contextmanager
    def gather(self):
        try:
            yield
        except SpecError as exc:
            self.add(exc)

    def raise_any(self) -> None:
        """Raise every mistake gathered so far as one ``SpecError`` (none: return)."""
        if not self.lines:
            return
        shown = self.lines[:SHOWN_SPEC_ERRORS]
        if len(self.lines) > len(shown):
            shown.append(f"spec error: ... and {len(self.lines) - len(shown):,} more mistakes (fix these first)")
        raise SpecError(*shown)


class QueryError(UsageError):
    """A SQL query that DuckDB rejected (exit 2)."""


class ExpressionError(UsageError):
    """A scaling-law expression that cannot be parsed or uses forbidden syntax (exit 2)."""


class FitError(UsageError):
    """A fit that cannot be done as asked: unknown form or metric, too few points (exit 2)."""


class SweepDataError(UsageError):
    """An analysis asked for a sweep, step or column the store does not hold (exit 2)."""


class StoreAccessError(UsageError):
    """A results store that cannot be opened, read or written, or rows it refused (exit 2)."""


class ClusterError(UsageError):
    """Ray could not be started or the cluster at --address could not be reached (exit 2)."""


class NoDecompositionError(SweepDataError):
    """The store holds no per-seed Gram rows for the asked points (written before they were
    stored): the bias and fluctuation cannot be separated there (exit 2)."""


class MixedReferencesError(SweepDataError):
    """Grid points measured against several references whose newest cannot be told (exit 2)."""


class RunInterrupted(UsageError):
    """A run that a signal stopped before its results were complete: nothing was concluded from
    it (exit 130 for SIGINT, 143 for SIGTERM)."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


class CacheError(UsageError):
    """A file the tool caches (the Vega bundle) that is damaged and cannot be made again: the
    command fails in one line rather than write a broken result (exit 1)."""

    exit_code = 1
