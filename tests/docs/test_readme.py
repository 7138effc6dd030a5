"""The README is a short user guide: at most ``MAX_LINES`` lines, the detail on the docs/ pages it
links, and every page it links or names exists."""
from __future__ import annotations

import re

from tests.paths import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()
MAX_LINES = 160
LINK = re.compile(r"\]\(([^)#\s]+)")  # a markdown link's target, its #anchor left out
NAMED_DOC = re.compile(r"(?<![\w/.-])(docs/[\w.-]+\.md)\b")


def test_the_readme_is_short():
    assert len(README.splitlines()) <= MAX_LINES, f"{len(README.splitlines())} lines; move detail to a docs/ page"


def test_every_page_the_readme_links_or_names_exists():
    linked = {target for target in LINK.findall(README) if "://" not in target} | set(NAMED_DOC.findall(README))
    assert "docs/guide.md" in linked and "CHANGELOG.md" in linked  # the check reads both kinds
    assert not sorted(target for target in linked if not (REPO_ROOT / target).is_file())


def test_every_docs_page_is_linked_from_the_readme():
    pages = {f"docs/{p.name}" for p in (REPO_ROOT / "docs").glob("*.md")}
    assert not sorted(pages - set(LINK.findall(README)))
