"""Nothing in the repository cites a design document that the repository does not hold: users
have docs/model.md, not the design notes it was written from."""
from __future__ import annotations

import pathlib
import re
import subprocess

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
# "SPEC" alone is the sweep-spec argument of the CLI (`explorer sweep SPEC`); a citation names
# the document or one of its sections.
CITATION = re.compile(r"SPEC\.md|SPEC'?s? sections?\b|SPEC's\b")
SUFFIXES = {".py", ".md", ".toml", ".j2", ".txt", ""}


def tracked_text_files():
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout (an sdist): walk the tree
        return [p for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts]
    return [ROOT / name for name in listed.stdout.splitlines()]


def test_no_file_cites_a_spec_document():
    hits = []
    for path in tracked_text_files():
        if path.suffix not in SUFFIXES or not path.is_file() or path == pathlib.Path(__file__):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if CITATION.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}")
    assert not hits, "cite docs/model.md instead:\n" + "\n".join(hits)


def test_the_pattern_tells_a_citation_from_the_cli_argument():
    assert CITATION.search("the rates of SPEC section 5") and CITATION.search("see SPEC.md")
    assert not CITATION.search("explorer sweep SPEC --dry-run") and not CITATION.search("give a SPEC file")
