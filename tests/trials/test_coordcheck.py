"""The coordinate-check columns (trials/coordcheck.py) against a naive reimplementation: a plain
numpy loop over steps, layers, samples and coordinates that trains the network itself (the
mean-field step or raw SGD on W1 = u / D, W2 = c v) and computes each block's branch output
from its units, not from the engine's states."""
from __future__ import annotations

import math

import pytest

from store.schema import COORD_BINS as STORE_BINS, column_names
from tests import naive
from tests.trials.conftest import seed_weights
from trials import ProblemConfig, ReferenceConfig, TrialConfig, compute_reference, reference_from_trial, train_trial
from trials.coordcheck import COORD_BINS, COORD_COLUMNS
from trials.model import ResNet
from trials.train import train_fused


def naive_coordcheck(config: TrialConfig, r: int) -> list[dict[str, float | None]]:
    """Per step k, the coordinate-check columns of repetition r, by loops."""
    net = ResNet(config.replace(device="cpu"))
    x, y, W_E, W_U, U, V = seed_weights(net, r)
    L, M, D, act, lr = config.L, config.M, config.D, config.activation, config.lr
    c = config.residual_scale
    h0 = None
    out = []
    for k in range(config.steps + 1):
        hs, _, _ = naive.forward(x, W_E, W_U, U, V, c, act)
        if h0 is None:
            h0 = hs
        update, branch = [], []
        for l in range(1, L + 1):
            rows, cols = hs[l].shape
            update.append(math.sqrt(sum((hs[l][i, n] - h0[l][i, n]) ** 2 for i in range(rows) for n in range(cols)) / (rows * cols)))
            out_l = c * V[l - 1] @ naive.sigma(act, U[l - 1].T @ hs[l - 1] / D)  # c sum_j v_j sigma(p_j), (D, N)
            branch.append(math.sqrt(sum(out_l[i, n] ** 2 for i in range(rows) for n in range(cols)) / (rows * cols)))
        row = {}
        for kind, per_block in (("update", update), ("branch", branch)):
            for b in range(4):
                blocks = [per_block[l - 1] for l in range(1, L + 1) if 4 * (l - 1) // L == b]
                row[f"coord_{kind}_b{b}"] = sum(blocks) / len(blocks) if blocks else None
        out.append(row)
        if k < config.steps:
            gU, gV = naive.gradients(x, y, W_E, W_U, U, V, c, act)
            if config.lr_scaling == "raw":  # W1 = U / D, W2 = c V: dl/dW1 = D dl/dU, dl/dW2 = dl/dV / c
                U = [u - lr * D * D * g for u, g in zip(U, gU)]
                V = [v - lr / (c * c) * g for v, g in zip(V, gV)]
            else:
                step = lr * D / (2.0 * c * c * L * M)
                U = [u - step * g for u, g in zip(U, gU)]
                V = [v - step * g for v, g in zip(V, gV)]
    return out


def _reference(config: TrialConfig):
    if config.limit_alpha is None:
        return reference_from_trial(config.replace(seeds=(100, 101)))
    return compute_reference(ReferenceConfig(limit=config, depth=8, width=4, device="cpu"))


@pytest.mark.parametrize("changes", [
    {"L": 6},  # bins of 2, 1, 2 and 1 blocks
    {"L": 3, "preset": "completep", "lr": 2.0},  # the last bin holds no block: null
    {"L": 8, "preset": "standard", "lr_scaling": "raw", "lr": 0.05},
    {"L": 4, "preset": "lazy", "alpha": 8.0, "dtype": "float32"},  # small updates, taken in float64
])
def test_coordinate_columns_match_a_naive_loop(changes):
    config = TrialConfig(**{"L": 4, "M": 3, "D": 4, "steps": 3, "seeds": (0, 3), "device": "cpu",
                            "problem": ProblemConfig(d_in=3, d_out=2, samples=5), **changes})
    rows = train_trial(config, _reference(config))
    assert {r["status"] for r in rows} == {"ok"}
    tolerance = 1e-5 if config.dtype == "float32" else 1e-11
    for r, seed in enumerate(config.seeds):
        got = [row for row in rows if row["seed"] == seed]
        expected = naive_coordcheck(config, r)
        assert len(got) == len(expected) == config.steps + 1
        for row, want in zip(got, expected):
            for name in COORD_COLUMNS:
                if want[name] is None:
                    assert row[name] is None, name
                else:
                    assert row[name] == pytest.approx(want[name], rel=tolerance, abs=1e-14), (name, row["step"])
        assert all(row[f"coord_update_b{b}"] == 0.0 for row in got[:1] for b in range(COORD_BINS) if row[f"coord_update_b{b}"] is not None)
        assert got[-1]["coord_update_b0"] > 0  # it trained


def test_fused_packs_write_the_same_coordinate_columns():
    base = dict(L=5, M=4, D=3, steps=2, device="cpu", problem=ProblemConfig(d_in=2, d_out=2, samples=3))
    configs = [TrialConfig(seeds=(0, 1), **base), TrialConfig(seeds=(1,), preset="standard", lr=0.1, lr_scaling="raw", **base)]
    references = [_reference(c) for c in configs]
    for batched in (True, False):
        for config, reference, rows in zip(configs, references, train_fused(configs, references, batched=batched)):
            alone = train_trial(config, reference)
            assert [[row[n] for n in COORD_COLUMNS] for row in rows] == [[row[n] for n in COORD_COLUMNS] for row in alone]


def test_the_store_declares_the_coordinate_columns():
    assert COORD_BINS == STORE_BINS
    assert set(COORD_COLUMNS) <= set(column_names("metrics"))
