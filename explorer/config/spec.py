"""Reading a sweep spec: the TOML file a user writes, its overrides, and its strict validation.

A spec names a sweep, fixes the problem, model, training and reference settings, and lists grid
axes whose product is the sweep, or whose cases' products' union is (``[[grid.cases]]``; see
docs/sweeps.md for every key). Loading is strict: an
unknown key, a wrong type, a non-positive size or an impossible resource request raises
``SpecError`` with one line naming the key, before anything runs.

The sections and ``SweepSpec`` itself are ``explorer.config.sections``'s (this module reads them
from TOML; ``SweepSpec`` and ``SECTIONS`` are named here too, the loader's result and its tables).
The rules across keys are ``spec_rules``'s: they build the trials package's configurations so
that the trials' own rules judge the spec, and a refusal (``trials.ConfigError``) names its field,
which ``spec_rules.CONFIG_KEYS`` maps to the spec key to blame. Expanding a spec into trials and
references is ``explorer.config.planning``'s job.
"""
from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from pathlib import Path
from typing import Any, Mapping

from ..bounds import MAX_GRID_POINTS, MAX_NESTING, data_nesting, toml_nesting
from ..errors import SpecError, SpecProblems, spec_error
from ..formatting import spec_key, spec_value
from .overrides import apply_overrides, given_data
from .sections import SECTIONS, SweepSpec
from .spec_rules import check_consistency
from .spec_values import InvalidValue, at_most, closest, sweep_name, unknown_key

# A paper spec's [reproduce] table says which points each claim of `explorer reproduce` leaves
# out and why (explorer.reproduce.leave_out reads it); a sweep ignores it, so the spec still runs alone.
READ_BY_REPRODUCE = "reproduce"

# --- loading ---------------------------------------------------------------------------------


def _parse_section(section: str, cls: type, raw: Any, problems: SpecProblems) -> tuple[Any, set[str]]:
    """The section's dataclass, or None when any of its keys is wrong (each mistake added to
    ``problems``); and the keys given, as "section.key"."""
    if not isinstance(raw, dict):
        problems.add(spec_error(f"[{section}]", f"expected a table, got {spec_value(raw)}"))
        return None, set()
    known = {f.name: f for f in dataclasses.fields(cls)}
    before = len(problems.lines)
    for key in raw:
        if key not in known:
            problems.add(spec_error(f"[{section}] {spec_key(key)}", unknown_key(key, known)))
    values = {}
    for name, f in known.items():
        if name not in raw:
            if f.metadata["required"]:
                problems.add(spec_error(f"[{section}] {name}", f"missing; {f.metadata['doc']} are required"))
            continue
        try:
            values[name] = f.metadata["check"](raw[name])
        except InvalidValue as bad:  # a key inside the value (a case of [[grid.cases]]) names itself
            problems.add(spec_error(getattr(bad, "key", f"[{section}] {name}"), str(bad)))
    if len(problems.lines) > before:
        return None, set()
    return cls(**values), {f"{section}.{k}" for k in raw}


def parse_spec(raw: Mapping[str, Any], overrides: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """Validate a spec given as parsed TOML data, after applying ``KEY=VALUE`` overrides.

    Args:
        raw: the TOML document as a dict (``tomllib.load`` output).
        overrides: strings like ``"grid.L=[4, 8]"``, ``"train.steps=5"`` or ``"name=quick2"``;
            the value is read as TOML, and as a bare string when it is not TOML.
            ``"SECTION.KEY="`` (nothing after ``=``) or ``"~SECTION.KEY"`` removes a key (it
            takes its default), e.g. ``"problem.seed="``.

    Returns:
        The validated ``SweepSpec``.

    Raises:
        SpecError: every mistake, one line each naming the key and the problem (first the
            overrides and the keys and values of each section; the rules across keys once
            those hold, since a wrong value would make them judge a default).
    """
    if data_nesting(raw) > MAX_NESTING:  # before any recursive walk of it (a RecursionError otherwise)
        raise spec_error("spec", f"nested more than {MAX_NESTING} deep; a spec's values are numbers, names and lists")
    problems = SpecProblems()
    data = apply_overrides(raw, overrides, SECTIONS, problems)
    try:
        _check_grid_size(data)
    except SpecError as too_large:  # refused before any of its values is checked
        problems.add(too_large)
        problems.raise_any()
    tables = ("name", READ_BY_REPRODUCE, *SECTIONS)
    for key in data:
        if key not in tables:
            near = closest(key, tables)
            hint = f"did you mean {near!r}? " if near else ""
            problems.add(spec_error(spec_key(key), f"unknown key; {hint}expected name or one of the tables "
                                    + ", ".join(f"[{s}]" for s in SECTIONS)))
    if "name" not in data:
        problems.add(spec_error("name", "missing; give the sweep a name, e.g. name = \"quick\""))
    if "grid" not in data:
        problems.add(spec_error("[grid]", "missing; list at least L, M and D"))
    sections, given = {}, set()
    for section, cls in SECTIONS.items():
        if section == "grid" and "grid" not in data:
            continue
        sections[section], keys = _parse_section(section, cls, data.get(section, {}), problems)
        given |= keys
    problems.raise_any()  # the rules across keys judge parsed sections only
    spec = SweepSpec(name=data["name"], given=frozenset(given), **sections)
    check_consistency(spec, problems)
    if not problems.lines:  # last: the store's rule imports the store (pyarrow), which a refused spec need not wait for
        try:
            sweep_name(spec.name)
        except InvalidValue as bad:
            problems.add(spec_error("name", str(bad)))
    problems.raise_any()
    return spec


# --- bounds: a spec is refused before anything large is read or expanded ---------------------

MAX_SPEC_BYTES = 1 << 20  # a spec file above 1 MiB is refused unread (a grid of 10^5 points needs a few KiB)
MAX_POINTS = 100_000  # default of [resources] max_points: planning 10^5 points takes seconds, 10^6 minutes and ~1 GB


def _check_grid_size(data: Mapping[str, Any]) -> None:
    """Refuse a grid whose product of axis lengths exceeds [resources] max_points, from the raw
    lists' lengths: before any value is checked or any point expanded."""
    resources = data.get("resources", {})
    limit = MAX_POINTS
    if isinstance(resources, dict) and "max_points" in resources:
        try:
            limit = at_most(MAX_GRID_POINTS, "points")(resources["max_points"])
        except InvalidValue as bad:
            raise spec_error("[resources] max_points", str(bad)) from None
    grid = data.get("grid")
    if not isinstance(grid, dict):
        return
    lengths = {k: len(v) for k, v in grid.items() if isinstance(v, list) and k != "cases"}
    cases = grid.get("cases")
    cases = [c for c in cases if isinstance(c, dict)] if isinstance(cases, list) else []
    shapes = [{**lengths, **{k: len(v) for k, v in case.items() if isinstance(v, list)}} for case in cases] or [lengths]
    points = sum(math.prod(shape.values()) for shape in shapes)  # at least the union's size
    if points > limit:
        sizes = " + ".join("(" + " x ".join(f"{k} {n}" for k, n in shape.items()) + ")" for shape in shapes) \
            if len(shapes) > 1 else " x ".join(f"{k} {n}" for k, n in lengths.items())
        raise spec_error("[grid]", f"{points:,} grid points ({sizes}) exceed the limit of {limit:,}; "
                         "sweep fewer values, or raise [resources] max_points")


def load_spec(source: SweepSpec | Mapping[str, Any] | str | os.PathLike,
              overrides: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """A validated spec from a TOML file's path, a dict of TOML data, or a ``SweepSpec``, after
    applying ``KEY=VALUE`` overrides (see ``parse_spec``; this is also ``explorer.load_spec``).

    Raises:
        SpecError: a missing or unreadable file, invalid TOML, or any problem ``parse_spec`` finds.
    """
    if isinstance(source, SweepSpec):
        return parse_spec(given_data(source), overrides) if overrides else source
    if isinstance(source, Mapping):
        return parse_spec(source, overrides)
    path = Path(source)
    try:
        with path.open("rb") as handle:
            content = handle.read(MAX_SPEC_BYTES + 1)
        if len(content) > MAX_SPEC_BYTES:
            raise spec_error(str(path), f"the file is larger than {MAX_SPEC_BYTES:,} bytes (1 MiB); a spec is a few KiB")
        text = content.decode()
    except FileNotFoundError:
        raise spec_error(str(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise spec_error(str(path), f"cannot read it ({exc})") from None
    if toml_nesting(text) > MAX_NESTING:  # the TOML parser recurses once per level
        raise spec_error(str(path), f"arrays or tables nested more than {MAX_NESTING} deep; a spec needs 2")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise spec_error(str(path), f"invalid TOML: {exc}") from None
    except RecursionError:
        raise spec_error(str(path), "arrays or tables nested too deep; a spec needs 2") from None
    return parse_spec(raw, overrides)


