"""Exceptions a user can cause, each mapped to a one-line CLI error and an exit code."""
from __future__ import annotations


class UsageError(Exception):
    """A problem in what the user asked for; the CLI prints it as one line."""

    exit_code = 2


class SpecError(UsageError):
    """A sweep spec that is malformed or asks for something impossible (exit 2)."""


class QueryError(UsageError):
    """A SQL query that DuckDB rejected (exit 2)."""
