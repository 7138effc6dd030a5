"""Command-line overrides of a spec (``KEY=VALUE``, ``SECTION.KEY=`` or ``~SECTION.KEY`` to remove a
key), applied to the spec's TOML data before it is parsed; and a parsed spec back as the data the
user gave, so that overrides apply to a loaded spec too."""
from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Mapping
from typing import Any

from ..bounds import MAX_NESTING, toml_nesting
from ..errors import SpecProblems, spec_error
from ..formatting import shown_text, spec_value
from .sections import SweepSpec
from .spec_values import closest, unknown_key


def given_data(spec: SweepSpec) -> dict:
    """A spec back as TOML data, with only the keys the user gave (so defaults stay defaults)."""
    raw = spec.to_dict()
    for section, keys in raw.items():
        if isinstance(keys, dict):
            raw[section] = {k: v for k, v in keys.items() if f"{section}.{k}" in spec.given}
    return raw


def parse_override_value(text: str) -> Any:
    """An override's value as TOML reads it; a bare word (relu, float32) as text."""
    if toml_nesting(text) > MAX_NESTING:  # the TOML parser recurses once per level
        raise spec_error(f"override value {shown_text(text, 40)!r}", f"nested more than {MAX_NESTING} deep")
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word such as relu or float32


def _override(item: str) -> str:
    """An override as its errors show it: quoted, escaped and cut (it may be a pasted file)."""
    return repr(shown_text(item))


def _known_key(key: str, sections: Mapping[str, type]) -> str | None:
    """The problem of ``SECTION.KEY`` (a section and a key of it), or None."""
    path = key.strip().split(".")
    if len(path) != 2 or path[0] not in sections:
        names = [f"{s}.{f.name}" for s, cls in sections.items() for f in dataclasses.fields(cls)]
        near = closest(key.strip(), ["name", *names])
        hint = f" (did you mean {near!r}?)" if near else ""
        return (f"unknown key {shown_text(key, 40)!r}{hint}; expected name or SECTION.KEY with SECTION one of "
                + ", ".join(sections))
    known = [f.name for f in dataclasses.fields(sections[path[0]])]
    if path[1] not in known:
        return unknown_key(path[1], known)
    return None


def remove_key(data: dict, item: str, key: str, sections: Mapping[str, type]) -> None:
    """``SECTION.KEY=`` (nothing after ``=``) or ``~SECTION.KEY``: remove that key from the spec,
    so that it takes its default, or leaves room for the [grid] list that replaces it
    (``problem.seed= grid.problem_seeds=[1,2]``)."""
    path = key.strip().split(".")
    if len(path) != 2 or path[0] not in sections:
        raise spec_error(f"override {_override(item)}", "expected SECTION.KEY= or ~SECTION.KEY (removes that key: it "
                         "takes its default), e.g. problem.seed=")
    problem = _known_key(key, sections)
    if problem:
        raise spec_error(f"override {_override(item)}", problem)
    section = data.get(path[0])
    if isinstance(section, dict):
        section.pop(path[1], None)  # a key the file does not set is already at its default


# grid.cases[1].lr: one key of one [[grid.cases]] case, counted from 0
CASE_KEY = re.compile(r"^\s*grid\.cases\[(\d+)\]\.([^.=\s]+)\s*$")


def _case_override(data: dict, item: str, index: int, axis: str, value: str | None) -> None:
    """``grid.cases[i].AXIS=VALUE`` sets (or, ``value`` None, removes) an axis of case i, which must
    exist (the case's keys are the [grid]'s to judge)."""
    grid = data.get("grid")
    cases = grid.get("cases") if isinstance(grid, dict) else None
    if not isinstance(cases, list) or not cases:
        raise spec_error(f"override {_override(item)}", "the spec has no [[grid.cases]]; a case is reached by its "
                         "index once the spec lists cases")
    if index >= len(cases):
        raise spec_error(f"override {_override(item)}", f"no case {index}: the spec lists {len(cases)} case(s), "
                         f"numbered from 0 (grid.cases[0] .. grid.cases[{len(cases) - 1}])")
    cases = grid["cases"] = [dict(c) if isinstance(c, dict) else c for c in cases]  # the caller's data untouched
    case = cases[index]
    if not isinstance(case, dict):
        raise spec_error(f"[grid.cases][{index}]", f"expected a table, got {spec_value(case)}")
    if value is None:
        case.pop(axis, None)
    else:
        case[axis] = parse_override_value(value.strip())


def apply_override(data: dict, item: str, sections: Mapping[str, type]) -> None:
    """Apply one override to ``data`` in place (``apply_overrides``); ``grid.cases[i].AXIS=VALUE``
    reaches case i of ``[[grid.cases]]`` (``grid.cases[i].AXIS=`` or ``~grid.cases[i].AXIS``
    removes that axis from it)."""
    text = item.lstrip("-")
    if text.startswith("~") and "=" not in text:
        case = CASE_KEY.match(text[1:])
        if case:
            _case_override(data, item, int(case.group(1)), case.group(2), None)
            return
        remove_key(data, item, text[1:], sections)
        return
    key, sep, value = text.partition("=")
    case = CASE_KEY.match(key) if sep else None
    if case:
        _case_override(data, item, int(case.group(1)), case.group(2), value if value.strip() else None)
        return
    if sep and key and not value.strip():
        remove_key(data, item, key, sections)
        return
    if not sep or not key:
        raise spec_error(f"override {_override(item)}", "expected KEY=VALUE, e.g. train.steps=5 or grid.L=[4,8], "
                         "or SECTION.KEY= to remove a key")
    path = key.strip().split(".")
    if len(path) == 1 and path[0] == "name":
        data["name"] = parse_override_value(value.strip())
    elif len(path) == 2 and path[0] in sections:
        section = data.setdefault(path[0], {})
        if not isinstance(section, dict):
            raise spec_error(f"[{path[0]}]", f"expected a table, got {spec_value(section)}")
        section[path[1]] = parse_override_value(value.strip())  # an unknown key is the section's to name
    else:
        raise spec_error(f"override {_override(item)}", _known_key(key, sections) or "expected SECTION.KEY=VALUE")


def apply_overrides(raw: Mapping[str, Any], overrides, sections: Mapping[str, type],
                    problems: SpecProblems | None = None) -> dict:
    """``raw`` with the overrides applied (``sections``: section name -> its dataclass, for the
    keys it knows). A refused override is added to ``problems`` and the others still apply
    (without ``problems``, the first refusal is raised)."""
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for item in overrides:
        if problems is None:
            apply_override(data, item, sections)
            continue
        with problems.gather():
            apply_override(data, item, sections)
    return data
