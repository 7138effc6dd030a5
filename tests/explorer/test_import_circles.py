"""No import circle anywhere in explorer/, and code outside a wing imports only its face.

The graph is read from the source, never imported: every ``import`` and ``from ... import`` of
every module, relative ones resolved, those inside functions and those under ``if TYPE_CHECKING:``
counted too (a circle a type checker walks is one a reader walks). A name taken from a wing's lazy
face (a package whose ``__init__`` serves names from a ``_LAZY`` table) is an edge to the module
that defines it, as it is when the name is first used.

A wing is a package of explorer/ with a lazy face (``__getattr__`` in its ``__init__``): the
modules inside it are its own business, and what is behind the face may move.
"""
from __future__ import annotations

import pathlib

import pytest

from tests.import_graph import find_cycle, import_graph, lazy_faces, rooms
from tests.paths import REPO_ROOT

ROOT = REPO_ROOT


def wings(root: pathlib.Path, top: str = "explorer") -> list[str]:
    """The packages under ``top`` whose ``__init__`` is a lazy face (``__getattr__``, written out or
    bound by ``explorer.faces.lazy_face``): ``tests.import_graph.lazy_faces``."""
    return lazy_faces(root, top)


GRAPH = import_graph(ROOT)
NAMED = import_graph(ROOT, through_faces=False)  # what the import statements name


def test_the_graph_sees_relative_lazy_type_checking_and_face_imports():
    assert "explorer.errors" in GRAPH["explorer.cli.group"]  # relative, at the top
    assert "explorer.config.sections" in GRAPH["explorer.sweeps.adaptive.runners"]  # under TYPE_CHECKING
    assert "explorer.sweeps.adaptive.launch" in GRAPH["explorer.api.sweep"]  # lazily, through the face
    assert "explorer.sweeps.ray" in GRAPH["explorer.sweeps.run.launch"]  # the face itself


def test_no_import_circle_among_the_explorer_modules():
    cycle = find_cycle(GRAPH)
    assert cycle is None, " -> ".join(cycle)


def test_no_import_circle_among_the_explorer_folders():
    cycle = find_cycle(rooms(GRAPH))
    assert cycle is None, " -> ".join(cycle)


def test_a_circle_only_a_type_checker_sees_is_found(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "spec.py").write_text("from .rules import check\n")
    (package / "rules.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .spec import Spec\n")
    (package / "other.py").write_text("def later():\n    from pkg import spec\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.other"] == {"pkg.spec"}  # a lazy import, in a function
    assert find_cycle(graph) == ["pkg.spec", "pkg.rules", "pkg.spec"]


def package_with_a_wing(root: pathlib.Path, loop: str, **modules: str) -> None:
    """``pkg`` holding the wing ``pkg.wing`` (lazy face: ``run`` from ``loop``, whose source is
    ``loop``) and the other modules of ``pkg`` given by name."""
    wing = root / "pkg" / "wing"
    wing.mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (wing / "__init__.py").write_text('_LAZY = {"run": "loop"}\n\ndef __getattr__(name):\n    pass\n')
    (wing / "loop.py").write_text(loop)
    for name, source in modules.items():
        (root / "pkg" / f"{name}.py").write_text(source)


def test_a_name_from_a_lazy_face_is_an_edge_to_the_module_behind_it(tmp_path):
    package_with_a_wing(tmp_path, "from ..user import helper\n", user="def helper():\n    from .wing import run\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.user"] == {"pkg.wing", "pkg.wing.loop"}
    assert find_cycle(graph) == ["pkg.user", "pkg.wing.loop", "pkg.user"]
    assert wings(tmp_path, "pkg") == ["pkg.wing"]


def test_the_wings_are_found():
    # a face written out (cli, adaptive) and one bound by explorer.faces.lazy_face (data, signals)
    assert {"explorer.cli", "explorer.sweeps.adaptive", "explorer.analysis.data", "explorer.signals"} <= set(wings(ROOT))


@pytest.mark.parametrize("wing", wings(ROOT))
def test_code_outside_a_wing_imports_only_its_face(wing):
    inside = f"{wing}."
    bad = sorted(f"{module} imports {target}" for module, targets in NAMED.items()
                 if module != wing and not module.startswith(inside)
                 for target in targets if target.startswith(inside))
    assert not bad, bad


def test_the_face_rule_sees_a_module_named_behind_a_face(tmp_path):
    package_with_a_wing(tmp_path, "", good="from .wing import run\n", bad="from .wing.loop import run\n")
    named = import_graph(tmp_path, "pkg", through_faces=False)
    assert named["pkg.good"] == {"pkg.wing"} and "pkg.wing.loop" in named["pkg.bad"]
