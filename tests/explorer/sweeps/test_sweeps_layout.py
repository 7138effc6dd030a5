"""``explorer/sweeps/`` stays in wings (issue 44, item 4): at most ``MAX_CHILDREN`` direct
children, no two modules whose names are the same words in another order (``session_ray`` and
``ray_session`` were two different modules), and the adaptive wing reaches the rest of the
package only through the faces of its wings, with nothing of the package's run importing it back
from the dry run. The imports are read from the source (``tests.import_graph``), never imported."""
from __future__ import annotations

import pathlib

from tests import import_graph
from tests.paths import REPO_ROOT

SWEEPS = REPO_ROOT / "explorer" / "sweeps"
MAX_CHILDREN = 8  # modules and packages directly under explorer/sweeps/, its __init__ counted


def children(folder: pathlib.Path) -> list[str]:
    """The modules and packages directly in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file())


def same_words_reordered(names: list[str]) -> list[tuple[str, str]]:
    """The pairs of different names made of the same words (``session_ray``, ``ray_session``)."""
    names = sorted(set(names))
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
            if sorted(a.split("_")) == sorted(b.split("_"))]


def module_names(folder: pathlib.Path) -> list[str]:
    """The names of every module and package under ``folder`` (``__init__`` left out)."""
    return [p.stem if p.name != "__init__.py" else p.parent.name for p in folder.rglob("*.py")
            if p.parent != folder or p.name != "__init__.py"]


def wing_faces() -> set[str]:
    return {import_graph.module_name(p, REPO_ROOT) for p in SWEEPS.glob("*/__init__.py")}


def test_sweeps_has_few_direct_children():
    assert len(children(SWEEPS)) <= MAX_CHILDREN, children(SWEEPS)


def test_no_two_modules_of_sweeps_are_the_same_words_in_another_order():
    assert not same_words_reordered(module_names(SWEEPS)), same_words_reordered(module_names(SWEEPS))


def test_the_word_order_check_sees_a_pair():
    assert same_words_reordered(["session_ray", "ray_session", "ray", "session", "run_record"]) == [
        ("ray_session", "session_ray")]


def test_adaptive_imports_only_the_faces_of_the_other_wings():
    adaptive = SWEEPS / "adaptive"
    faces = wing_faces()
    bad = []
    for path in sorted(adaptive.rglob("*.py")):
        for module, _, line in import_graph.imports(path, REPO_ROOT):
            if module.startswith("explorer.sweeps") and not module.startswith("explorer.sweeps.adaptive") \
                    and module not in faces:
                bad.append(f"{path.relative_to(REPO_ROOT)}:{line} imports {module}")
    assert faces >= {"explorer.sweeps.ray", "explorer.sweeps.tracking", "explorer.sweeps.references",
                     "explorer.sweeps.worker"}
    assert not bad, bad


def test_the_dry_run_does_not_import_the_adaptive_wing():
    dry_run = SWEEPS / "run" / "dry_run.py"
    back = [f"{module}:{line}" for module, _, line in import_graph.imports(dry_run, REPO_ROOT)
            if module.startswith("explorer.sweeps.adaptive")]
    assert not back, back
