"""The spec ``explorer design --out`` writes: the pilot's problem, model and training, the designed
grid, seeds, draws and reference, and comments that say what was chosen and why."""
from __future__ import annotations

import json
import os
import stat
import tempfile

from ..errors import UsageError
from .design_model import PilotModel

_PROBLEM = ("d_in", "d_out", "samples", "data", "data_seed", "independent_embeddings")
_MODEL = ("activation", "preset", "block", "sigma_u", "sigma_v", "antithetic")
_TRAIN = ("steps", "lr", "dtype", "divergence_factor", "divergence_bound", "init_noise_limit", "chaos_check")
_DEFAULT_PROBLEM = {"data": "gaussian", "independent_embeddings": False}


def problem_seeds(model: PilotModel, draws: int) -> list[int]:
    """The designed draws: the pilot's first draw, then the next integers (the pilot's first draw
    is the one its laws were measured on)."""
    first = model.draws[0] if model.draws and model.draws[0] is not None else model.config["problem"]["seed"]
    return [int(first) + i for i in range(draws)]


def spec_data(model: PilotModel, candidate, name: str) -> dict:
    """The designed sweep as TOML data (what ``explorer.spec.parse_spec`` reads)."""
    config = model.config
    problem = {k: config["problem"][k] for k in _PROBLEM
               if config["problem"].get(k) is not None and config["problem"].get(k) != _DEFAULT_PROBLEM.get(k)}
    return {
        "name": name,
        "problem": problem,
        "model": {k: config[k] for k in _MODEL if k in config},
        "train": {k: config[k] for k in _TRAIN if k in config},
        "reference": {"kind": "mean_ode", "depth": candidate.ref_depth, "width": candidate.ref_width,
                      "replicas": model.ref_replicas},
        "grid": {"L": list(candidate.Ls), "M": list(candidate.Ms), "D": [candidate.D], "alpha": [config["alpha"]],
                 "problem_seeds": problem_seeds(model, candidate.draws), "seeds": candidate.seeds},
        "resources": {"cpus_per_trial": 1, "gpus_per_trial": 0},
    }


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def spec_text(data: dict, header: list[str], notes: dict | None = None) -> str:
    """TOML text of ``data``: ``header`` lines as comments on top, ``notes`` (section -> comment
    lines) above their section."""
    notes = notes or {}
    lines = [f"# {line}" if line else "#" for line in header]
    lines += ["", f"name = {_value(data['name'])}"]
    for section, values in data.items():
        if section == "name":
            continue
        lines.append("")
        lines += [f"# {line}" for line in notes.get(section, [])]
        lines.append(f"[{section}]")
        lines += [f"{key} = {_value(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


# The first line of every spec ``explorer design`` writes (``designer._header``): a file that
# starts with it is one design wrote, which a later ``--out`` may replace without ``--force``.
DESIGN_MARK = "# Designed by `explorer design "
_MARK_BYTES = len(DESIGN_MARK.encode())


class DesignOutputError(UsageError):
    """An ``--out`` path that design may not write: someone else's file, not a regular file, or a
    folder that is missing or read-only (exit 2)."""


def _written_by_design(path: str) -> bool:
    """Whether the regular file at ``path`` starts with ``DESIGN_MARK`` (read without following
    a link, without blocking on a FIFO, and no further than the mark)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, _MARK_BYTES) == DESIGN_MARK.encode()
    except OSError:
        return False
    finally:
        os.close(fd)


def check_out(path: str | os.PathLike, force: bool = False) -> None:
    """Refuse an ``--out`` that may not be written, before anything is computed: a path whose
    folder is missing or read-only, anything there that is not a regular file (a device, a
    FIFO, a folder, a symbolic link: never replaced, even with ``force``), or a regular file
    design did not write (``DESIGN_MARK``) unless ``force``.

    Raises:
        DesignOutputError: one line naming the path and what to do.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise DesignOutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a folder" if stat.S_ISDIR(info.st_mode) \
                else "not a regular file"
            raise DesignOutputError(f"{path} exists and is {kind}; design writes a new regular file only: "
                                    "choose another --out")
        if not force and not _written_by_design(path):
            raise DesignOutputError(f"{path} exists and was not written by explorer design; pass --force to replace "
                                    "it, or choose another --out")
    if not os.path.isdir(folder):
        raise DesignOutputError(f"cannot write {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DesignOutputError(f"cannot write {path}: the folder {folder} is not writable")


def write_text(path: str | os.PathLike, text: str, force: bool = False) -> None:
    """Write ``text`` to ``path`` atomically (a temporary file in its folder, then a rename: a
    reader never sees half a spec), after ``check_out`` (again: the folder may have changed
    while the design was searched).

    Raises:
        DesignOutputError: ``check_out``'s refusals, or the write failed (disk full, ...).
    """
    check_out(path, force)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".design-", suffix=".toml", dir=folder)  # O_EXCL: never through a link
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise DesignOutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


__all__ = ["DESIGN_MARK", "DesignOutputError", "check_out", "problem_seeds", "spec_data", "spec_text", "write_text"]
