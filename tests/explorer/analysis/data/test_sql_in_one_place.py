"""The explorer writes SQL in one place: its named queries live in ``explorer/analysis/data/``
(and the store's own queries in ``store/``), so that no module elsewhere in ``explorer/`` holds a
SQL string (issue 44, item 5). Read from the source with ``ast``: every string literal that is not
a docstring, an f-string's text parts joined, is searched for SQL's words (SELECT, FROM, WHERE,
GROUP BY, AND, a ``column = 'text'`` comparison, DuckDB's aggregates ...), so that a new query
written outside the wing fails here, named by file and line.
"""
from __future__ import annotations

import ast
import re

import pytest

from tests.paths import REPO_ROOT

EXPLORER = REPO_ROOT / "explorer"
DATA = EXPLORER / "analysis" / "data"

SQL = re.compile(
    r"\b(SELECT|DESCRIBE|PRAGMA|INSERT INTO|CREATE (OR REPLACE )?(VIEW|TABLE)|DROP (VIEW|TABLE))\b"
    r"|\b(FROM|WHERE|GROUP BY|ORDER BY|LIMIT|JOIN|UNION|HAVING|DISTINCT|FILTER \(|CASE WHEN|IS (NOT )?NULL)\b"
    r"|\b(AND|OR)\b|\bNOT \(|^\s*SET \w+"
    r"|\b\w+\"? (=|<>|!=) '"
    r"|\b(count|any_value|arg_max|bool_or|string_agg|isfinite|coalesce|pragma_table_info|duckdb_views)\("
)

# string literals that hold SQL's words but are no query the explorer builds, each with its reason:
# (path under explorer/, a text the literal contains) -> why.
NOT_QUERIES = {
    ("store_access.py", '`explorer sql "DESCRIBE '): "a hint in an error message: the command a user may type",
    ("reproduce/claims.py", "L > 50 AND M > 10 AND D > 10"): "a claim's fit region: a --where filter, data "
                                                               "in the user's filter language (the authors' region)",
    ("reproduce/claims.py", "D > 10 AND D < 200 AND M > 10"): "a claim's fit region, as above",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def string_literals(source: str):
    """(line, text) of every string literal of ``source`` that is not a docstring; an f-string's
    text parts are joined with ``{}`` where its values go, so a query split by its values is read whole."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(v) for v in node.values)
            for spec in (v.format_spec for v in node.values if isinstance(v, ast.FormattedValue)):
                if spec is not None:
                    skipped.add(id(spec))
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and id(node) not in skipped:
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            yield node.lineno, node.value


def sql_literals(path) -> list[tuple[int, str]]:
    """(line, text) of each literal of ``path`` that reads as SQL and is not in ``NOT_QUERIES``."""
    name = path.relative_to(EXPLORER).as_posix()
    allowed = [text for (where, text) in NOT_QUERIES if where == name]
    return [(line, text) for line, text in string_literals(path.read_text())
            if SQL.search(text) and not any(a in text for a in allowed)]


OUTSIDE = sorted(p for p in EXPLORER.rglob("*.py") if DATA not in p.parents)


def test_the_check_finds_sql_where_it_is():
    found = {path.name: [text for _, text in sql_literals(path)] for path in sorted(DATA.glob("*.py"))}
    assert any("SELECT DISTINCT sweep FROM metrics" in text for text in found["queries.py"])
    assert any("GROUP BY ALL" in text for text in found["run_rows.py"])  # an f-string's parts, read whole
    assert SQL.search("".join(["SELECT * FROM rounds WHERE sweep = '", "{}", "'"]))
    assert SQL.search("sweep = '{}'") and SQL.search('"x" IS NULL') and SQL.search("(a) AND (b)")  # no keyword
    assert not SQL.search("the sweep has no rows; run it again to resume (or narrow with --where)")


def test_the_allowed_literals_exist():
    for (where, text), why in NOT_QUERIES.items():
        held = [t for _, t in string_literals((EXPLORER / where).read_text())]
        assert any(text in t for t in held), f"{where} no longer holds {text!r} ({why}): drop the entry"


@pytest.mark.parametrize("path", OUTSIDE, ids=lambda p: str(p.relative_to(EXPLORER)))
def test_no_sql_outside_the_data_wing(path):
    found = [f"{path.relative_to(REPO_ROOT)}:{line}: {text.strip()[:80]!r}" for line, text in sql_literals(path)]
    assert not found, ("SQL written outside explorer/analysis/data/ (move it into a named query there, or into "
                       "store/ when it reads the store's own files):\n" + "\n".join(found))
