"""The spec ``explorer design --out`` writes: the pilot's problem, model and training, the designed
grid, seeds, draws and reference, and comments that say what was chosen and why."""
from __future__ import annotations

import json
import os
import tempfile

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


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` atomically (a temporary file, then a rename): a reader never sees half a spec."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".design-", suffix=".toml", dir=folder)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


__all__ = ["problem_seeds", "spec_data", "spec_text", "write_text"]
