"""``train_trial``: one grid point, all its seeds, trained and measured against its reference.

Pure: a validated config and a reference in, metric rows (plain dicts) out. No I/O, no Ray.
"""
from __future__ import annotations

import time

import torch

from .config import TrialConfig
from .metrics import METRICS, Baseline, Snapshot
from .model import ResNet
from .reference import Reference

STATUS_OK = "ok"
STATUS_DIVERGED = "diverged"


def check_compatible(config: TrialConfig, reference: Reference) -> None:
    """A reference can serve a trial only if it was trained for as many steps, on outputs and
    hidden states it can be compared with."""
    out, hidden = reference.arrays["out"], reference.arrays["hidden"]
    p = config.problem
    if out.shape[0] != config.steps + 1:
        raise ValueError(f"reference {reference.key} has {out.shape[0] - 1} steps, the trial has steps={config.steps}")
    if out.shape[1:] != (p.samples, p.d_out):
        raise ValueError(f"reference {reference.key} outputs have shape {out.shape[1:]}, the trial needs {(p.samples, p.d_out)}")
    if hidden.shape[2] < config.D:
        raise ValueError(f"reference {reference.key} has hidden width {hidden.shape[2]} < D={config.D}")


def train_trial(config: TrialConfig, reference: Reference) -> list[dict]:
    """Train every seed of ``config`` for K steps and measure each step k = 0..K.

    Args:
        config: the grid point; its seeds run as one batch.
        reference: the trial's reference (same data, embeddings and limit knobs, K steps).

    Returns:
        One dict per (seed, step): ``config.columns()`` plus seed, step, the METRICS values,
        ref_loss, ref_err_out, ref_err_hidden, status, ref_key, ref_kind, device, wall_s. A seed
        whose output turns NaN/Inf or exceeds ``divergence_threshold`` gets a last row with status
        "diverged" and no further rows; divergence never raises.

    Raises:
        ValueError: the reference does not fit the trial (steps, output shape, width).
    """
    check_compatible(config, reference)
    started = time.perf_counter()
    net = ResNet(config)
    units0 = net.units.clone()
    ref_out = torch.as_tensor(reference.arrays["out"], device=net.device, dtype=net.dtype)
    ref_hidden = torch.as_tensor(reference.arrays["hidden"][:, :, : config.D], device=net.device, dtype=net.dtype)
    ref_columns = {
        name: reference.arrays[source].tolist()
        for name, source in (("ref_loss", "loss"), ("ref_err_out", "err_out"), ("ref_err_hidden", "err_hidden"))
    }
    base = dict(config.columns(), ref_key=reference.key, ref_kind=reference.kind, device=net.device.type)
    alive = list(range(len(net.seeds)))
    rows: list[dict] = []
    baseline = None
    for k, fwd in net.trajectory():
        if baseline is None:
            baseline = Baseline(units0, fwd.out.clone())
        snapshot = Snapshot(net, fwd, baseline, ref_out[k], ref_hidden[k])
        values = {name: fn(snapshot).to(torch.float64).cpu().tolist() for name, fn in METRICS.items()}
        blown = ~torch.isfinite(fwd.out).all(dim=(1, 2)) | (fwd.out.abs().amax(dim=(1, 2)) > config.divergence_threshold)
        blown = blown.cpu().tolist()
        for r in list(alive):
            row = dict(base, seed=net.seeds[r], step=k)
            row.update({name: v[r] for name, v in values.items()})
            row.update({name: v[k] for name, v in ref_columns.items()})
            row["status"] = STATUS_DIVERGED if blown[r] else STATUS_OK
            rows.append(row)
            if blown[r]:
                alive.remove(r)
        if not alive:
            break
    wall_s = time.perf_counter() - started
    for row in rows:
        row["wall_s"] = wall_s
    rows.sort(key=lambda row: (row["seed"], row["step"]))
    return rows
