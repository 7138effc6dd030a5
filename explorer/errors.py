"""Exceptions a user can cause, each mapped to a one-line CLI error and an exit code."""
from __future__ import annotations


class UsageError(Exception):
    """A problem in what the user asked for; the CLI prints it as one line."""

    exit_code = 2


class SpecError(UsageError):
    """A sweep spec that is malformed or asks for something impossible (exit 2)."""


def spec_error(key: str, problem: str) -> SpecError:
    """The one-line spec error about ``key`` (``[grid] L``, ``name``, a file path, an override):
    ``spec error: KEY: PROBLEM``. Every spec refusal is built here, so they all read alike."""
    return SpecError(f"spec error: {key}: {problem}")


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
