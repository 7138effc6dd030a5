"""The joint_limit reference (trials/joint_limit.py) and the linear experiment's protocol
(trials/data.py): closed forms, the finite network converging to it, and the authors' update."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from trials import ConfigError, ProblemConfig, Reference, TrialConfig, train_trial
from tests import naive
from trials.joint_limit import (JointLimitConfig, backward_along_depth, compute_joint_limit, depth_max_mean_abs,
                                hidden_along_depth, solve_linear_limit)
from trials.metrics import DEPTH_METRICS
from trials.model import ResNet
from trials.reference import ReferenceDiverged, trajectory

LINEAR = ProblemConfig(d_in=3, d_out=3, samples=1, data="linear_target", data_seed=42, seed=1)  # the authors' sample


def _limit_config(**changes) -> TrialConfig:
    base = dict(L=2, M=2, D=8, problem=LINEAR, activation="identity", lr=0.1, steps=5, device="cpu")
    return TrialConfig(**{**base, **changes})


def _rms_steps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """RMS over everything but the leading step axis, with b broadcast over repetitions."""
    return np.sqrt(((a - b) ** 2).reshape(a.shape[0], -1).mean(axis=1))


# --- refusals and bookkeeping ----------------------------------------------------------------


@pytest.mark.parametrize("activation", ["tanh", "gelu", "relu"])
def test_refuses_nonlinear_activations_in_one_line(activation):
    with pytest.raises(ConfigError) as exc:
        JointLimitConfig(_limit_config(activation=activation))
    assert exc.value.field == "activation" and "\n" not in str(exc.value) and "identity" in str(exc.value)


def test_refuses_other_presets_and_odd_grids():
    with pytest.raises(ConfigError) as exc:
        JointLimitConfig(_limit_config(preset="completep"))
    assert exc.value.field == "preset"
    with pytest.raises(ConfigError) as exc:
        JointLimitConfig(_limit_config(), grid=7)
    assert exc.value.field == "reference.grid"


def test_key_ignores_L_M_seeds_and_record_roundtrips():
    a = JointLimitConfig(_limit_config(L=4, M=8, seeds=(0, 1)))
    b = JointLimitConfig(_limit_config(L=64, M=2, seeds=(5,)))
    assert a.key() == b.key()
    assert a.key() != JointLimitConfig(_limit_config(D=16)).key()  # hidden is written in this D's embeddings
    assert a.key() != JointLimitConfig(_limit_config(), grid=128).key()
    ref = compute_joint_limit(a)
    again = Reference.from_record(*ref.to_record())
    assert again.kind == "joint_limit" and again.key == ref.key
    assert ref.arrays["out"].shape == (6, 1, 3) and ref.arrays["hidden"].shape == (6, 1, 8)


def test_a_trial_is_measured_against_it():
    cfg = _limit_config(L=8, M=8, D=16, seeds=(0, 1))
    ref = compute_joint_limit(JointLimitConfig(cfg))
    rows = train_trial(cfg, ref)
    assert len(rows) == 2 * 6 and all(r["status"] == "ok" and r["ref_kind"] == "joint_limit" for r in rows)
    assert all(0 < r["err_out"] < 2 and 0 < r["err_hidden"] < 2 and r["ref_err_out"] < 1e-9 for r in rows if r["step"] > 0)


# --- the data protocol -----------------------------------------------------------------------


def test_default_problem_keys_and_data_are_unchanged():
    cfg = TrialConfig(L=2, M=2, D=4)
    assert not {"data", "data_seed", "independent_embeddings"} & set(cfg.numerics()["problem"])
    # Stated explicitly at their defaults, the data options leave the key as it was without them.
    explicit = ProblemConfig(data="gaussian", data_seed=None, independent_embeddings=False)
    assert TrialConfig(L=2, M=2, D=4, problem=explicit).key() == cfg.key()
    assert TrialConfig(L=2, M=2, D=4, problem=ProblemConfig(independent_embeddings=True)).key() != cfg.key()


def test_linear_target_data_and_data_seed():
    with pytest.raises(ConfigError) as exc:
        ProblemConfig(data="images")
    assert exc.value.field == "problem.data"
    p = ProblemConfig(d_in=3, d_out=2, samples=4, data="linear_target", seed=3)
    net = ResNet(TrialConfig(L=1, M=1, D=5, problem=p, device="cpu"))
    x = net.problem.x.numpy() / math.sqrt(3)  # back in the authors' units
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 0.8)
    # data_seed = 42 is the authors' sample (MAIN_SEED = 42 in linear_experiments_python/exp_cvg_rate.ipynb)
    authors = ResNet(TrialConfig(L=1, M=1, D=5, problem=ProblemConfig(d_in=3, d_out=3, samples=1, data="linear_target", data_seed=42), device="cpu"))
    np.testing.assert_allclose(authors.problem.x.numpy()[0] / math.sqrt(3), [0.48000164, -0.13361224, 0.62589632], atol=5e-9)
    np.testing.assert_allclose(authors.problem.y.numpy()[0] / math.sqrt(3), [0.62789524, 0.26597976, -0.05539644], atol=5e-9)
    # data_seed fixes X, Y across problem seeds, which then vary W_E, W_U only
    nets = [ResNet(TrialConfig(L=1, M=1, D=5, problem=ProblemConfig(data="linear_target", data_seed=0, seed=s), device="cpu"))
            for s in (1, 2)]
    assert torch.equal(nets[0].problem.x, nets[1].problem.x) and torch.equal(nets[0].problem.y, nets[1].problem.y)
    assert not torch.equal(nets[0].problem.embed, nets[1].problem.embed)


def test_independent_embeddings_differ_across_D_and_keep_the_data():
    p = ProblemConfig(seed=3)
    shared = [ResNet(TrialConfig(L=1, M=1, D=D, problem=p, device="cpu")).problem for D in (64, 128)]
    assert torch.equal(shared[0].embed, shared[1].embed[:64])  # why the option exists (torch's chunked randn)
    q = ProblemConfig(seed=3, independent_embeddings=True)
    own = [ResNet(TrialConfig(L=1, M=1, D=D, problem=q, device="cpu")).problem for D in (64, 128)]
    assert (own[0].embed != own[1].embed[:64]).all() and (own[0].readout != own[1].readout[:64]).all()
    assert torch.equal(own[0].x, shared[0].x) and torch.equal(own[0].y, shared[0].y)
    with pytest.raises(ConfigError) as exc:
        ProblemConfig(independent_embeddings=True, coupled_dim=8)
    assert exc.value.field == "problem.independent_embeddings"


@pytest.mark.parametrize("activation,alpha", [("identity", 1.0), ("tanh", 1.5)])
def test_training_is_the_authors_update(activation, alpha):
    """A transcription of FiniteResNetWithEmbedding.step (linear_experiments_python/src/resnet/)
    with W_e = sqrt(d_in) W_E, W_u = W_U / sqrt(d_out), eta_0 = 0.1 and each matrix's rate
    multiplied by D, against this project's training with lr = 0.1 on linear_target data."""
    L, M, D, K = 3, 4, 6, 3
    cfg = TrialConfig(L=L, M=M, D=D, problem=LINEAR, activation=activation, alpha=alpha, lr=0.1, steps=K, device="cpu")
    net = ResNet(cfg)
    d_in, d_out = LINEAR.d_in, LINEAR.d_out
    to_np = lambda t: t.detach().numpy().copy()
    U = [to_np(net.units.u[l, 0]) for l in range(L)]
    V = [to_np(net.units.v[l, 0]) for l in range(L)]
    W_e, W_u = to_np(net.problem.embed) * math.sqrt(d_in), to_np(net.problem.readout) / math.sqrt(d_out)
    X, Y = to_np(net.problem.x).T / math.sqrt(d_in), to_np(net.problem.y).T / math.sqrt(d_out)
    sig, dsig = (np.tanh, lambda p: 1 - np.tanh(p) ** 2) if activation == "tanh" else ((lambda p: p), np.ones_like)
    N, eta, eta_u = X.shape[1], 0.1, D
    for k, fwd in net.trajectory():
        H, P = [W_e @ X], []
        for l in range(L):
            P.append(U[l].T @ H[l] / D)
            H.append(H[l] + alpha / (L * M) * V[l] @ sig(P[l]))
        out = W_u.T @ H[L] / D
        np.testing.assert_allclose(to_np(fwd.out[0]).T, math.sqrt(d_out) * out, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(to_np(fwd.hidden[-1, 0]).T, H[L], rtol=1e-10, atol=1e-12)
        B = [None] * (L + 1)
        B[L] = W_u @ (out - Y) / D
        Q = [None] * L
        for l in reversed(range(L)):
            Q[l] = dsig(P[l]) * (V[l].T @ B[l + 1])
            B[l] = B[l + 1] + alpha / (L * M * D) * U[l] @ Q[l]
        for l in range(L):
            U[l] = U[l] - eta_u * (eta / alpha) / N * (H[l] @ Q[l].T / D)
            V[l] = V[l] - eta_u * (eta / alpha) / N * (B[l + 1] @ sig(P[l]).T)


# --- closed forms ----------------------------------------------------------------------------


def test_step_zero_is_the_identity_map():
    cfg = _limit_config(steps=0, problem=ProblemConfig(d_in=2, d_out=3, samples=4, seed=2))
    ref = compute_joint_limit(JointLimitConfig(cfg))
    net = ResNet(cfg)
    np.testing.assert_allclose(ref.arrays["hidden"][0], (net.problem.x @ net.problem.embed.T).numpy(), atol=1e-12)
    np.testing.assert_array_equal(ref.arrays["out"][0], 0.0)  # W_E and W_U are orthogonal in the limit


def test_one_step_matches_the_matrix_exponential():
    """After one step E[v u^T] / D = -(eta / alpha)(sigma_u^2 + sigma_v^2) sum_n b_n h_n^T is constant in
    depth, so h_1(1) = expm(-eta (sigma_u^2 + sigma_v^2) g0 H0^T) H0 exactly (in the scaled basis)."""
    d_in, d_out, n = 2, 3, 4
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((n, d_in)), rng.standard_normal((n, d_out))
    w_in, w_out = rng.standard_normal((5, d_in)) / 2, rng.standard_normal((5, d_out))  # any Gram
    lr, alpha, su, sv = 0.3, 2.0, 0.7, 1.3
    out, path, backward = solve_linear_limit(w_in, w_out, x, y, alpha=alpha, lr=lr, sigma_u=su, sigma_v=sv, steps=1, grid=512)
    h0 = w_in @ x.T
    g0 = w_out @ ((w_out.T @ h0).T - y).T / (n * d_out)
    expm = lambda a: torch.linalg.matrix_exp(torch.as_tensor(a)).numpy()
    A = -lr * (su**2 + sv**2) * g0 @ h0.T  # dh/ds = A h
    h1 = expm(A) @ h0
    np.testing.assert_allclose(path[1, -1], h1.T, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(path[1, 256], (expm(0.5 * A) @ h0).T, rtol=1e-12, atol=1e-13)  # half way down: half the exponent
    np.testing.assert_allclose(out[1], (w_out.T @ h1).T, rtol=1e-12, atol=1e-13)
    # the backward state: db/ds = -A^T b, so b(s) = expm((1 - s) A^T) b(1), b(1) = w_out (f_1 - y)^T / (N d_out)
    b1 = w_out @ (out[1] - y).T / (n * d_out)
    np.testing.assert_allclose(backward[1, -1], b1.T, rtol=1e-15, atol=1e-16)
    for i in (0, 128, 256):
        np.testing.assert_allclose(backward[1, i], (expm((1 - i / 512) * A.T) @ b1).T, rtol=1e-11, atol=1e-13)
    # step 0: the limit is the identity map, so b is constant along depth
    np.testing.assert_allclose(backward[0], np.broadcast_to(backward[0, -1], backward[0].shape), rtol=1e-12, atol=1e-14)


def test_a_diverging_limit_is_refused():
    with pytest.raises(ReferenceDiverged):
        compute_joint_limit(JointLimitConfig(_limit_config(lr=20.0, steps=10), grid=16))


def test_its_error_estimate_bounds_its_error():
    """|grid - grid/2| bounds the error at grid (RK4's is about 1/15 of it asymptotically; the
    ratio wanders at coarse grids, hence a bound checked on several)."""
    limit = _limit_config(steps=8, lr=0.5)
    fine = compute_joint_limit(JointLimitConfig(limit, grid=1024))
    for grid in (8, 16, 32):
        coarse = compute_joint_limit(JointLimitConfig(limit, grid=grid))
        for name in ("out", "hidden"):
            true_err = _rms_steps(coarse.arrays[name], fine.arrays[name])
            assert (true_err <= coarse.arrays[f"err_{name}"] + 1e-13).all(), (grid, name)
    default = compute_joint_limit(JointLimitConfig(limit))
    assert (default.arrays["err_out"] < 1e-10).all() and (default.arrays["err_hidden"] < 1e-10).all()
    assert (default.arrays["err_out_sampling"] == 0).all()


def test_hidden_along_depth_follows_the_finite_network():
    cfg = _limit_config(L=32, M=32, D=8, steps=3, seeds=(0, 1, 2, 3))
    jl = JointLimitConfig(cfg, gram="empirical", grid=64)
    ref = compute_joint_limit(jl)
    along = hidden_along_depth(ref, jl, 32)
    assert along.shape == (4, 33, 1, 8)
    np.testing.assert_allclose(along[:, -1], ref.arrays["hidden"], atol=1e-12)
    np.testing.assert_allclose(hidden_along_depth(ref, jl, 64)[:, ::2], along, atol=1e-12)  # grid points: no interpolation
    net = ResNet(cfg)
    for k, fwd in net.trajectory():
        finite = fwd.hidden.numpy()  # (L+1, R, N, D)
        err = depth_max_mean_abs(finite, along[k])
        assert err.shape == (4,) and (err < 0.25 * np.abs(along[k]).mean()).all(), (k, err)
        assert depth_max_mean_abs(finite.mean(axis=1, keepdims=True), along[k])[0] < 0.1 * np.abs(along[k]).mean()


def test_key_follows_the_joint_limit_version(monkeypatch):
    """A change to the joint limit's arrays (JOINT_LIMIT_VERSION: version 2 added backward_path)
    gives its records new keys, so that a cache holding the old ones computes them again."""
    import trials.config as trial_configs  # JointLimitConfig lives there (reading a spec imports no torch)

    config = JointLimitConfig(_limit_config())
    key = config.key()
    monkeypatch.setattr(trial_configs, "JOINT_LIMIT_VERSION", trial_configs.JOINT_LIMIT_VERSION + 1)
    assert config.key() != key


def test_backward_along_depth_follows_the_finite_network():
    """The engine's backward states B_l = (D / 2) dl/dh_l approach the fixed-D limit's b(l / L)
    as L M grows (identity activation, this D's embeddings): 16x L M, about 4x less error."""
    cfg = _limit_config(D=8, steps=3, seeds=(0, 1, 2, 3))
    jl = JointLimitConfig(cfg, gram="empirical", grid=64)
    ref = compute_joint_limit(jl)
    assert ref.arrays["backward_path"].shape == ref.arrays["path"].shape
    errs = []
    for L in (8, 32):
        along = backward_along_depth(ref, jl, L)
        np.testing.assert_allclose(backward_along_depth(ref, jl, 2 * L)[:, ::2], along, atol=1e-14)
        net = ResNet(cfg.replace(L=L, M=L))
        worst = 0.0
        for k, fwd in net.trajectory():
            states = net.backward_states(fwd).numpy()  # (L+1, R, N, D)
            worst = max(worst, float(depth_max_mean_abs(states, along[k]).mean() / np.abs(along[k]).mean()))
        errs.append(worst)
    assert errs[1] < 0.25 and 2.5 < errs[0] / errs[1] < 7.0, errs  # measured 0.62, 0.16


def _along_by_interp(path: np.ndarray, embed: np.ndarray, readout: np.ndarray, L: int) -> np.ndarray:
    """The expected-Gram path (K+1, grid+1, N, r) in these embeddings at s = l / L, by np.interp
    entry by entry: h = sqrt(d_in) W_E a + W_U b / sqrt(d_out) for the coordinates (a, b)."""
    d_in, d_out = embed.shape[1], readout.shape[1]
    embedded = path[..., :d_in] @ (math.sqrt(d_in) * embed.T) + path[..., d_in:] @ (readout.T / math.sqrt(d_out))
    grid = np.linspace(0.0, 1.0, path.shape[1])
    K1, _, N, D = embedded.shape
    out = np.empty((K1, L + 1, N, D))
    for k in range(K1):
        for n in range(N):
            for d in range(D):
                out[k, :, n, d] = np.interp(np.arange(L + 1) / L, grid, embedded[k, :, n, d])
    return out


@pytest.mark.parametrize("samples", [1, 3])
def test_depth_errors_match_a_naive_computation(samples):
    """err_hidden_depthmax, err_hidden_depthmean and err_backward as train_trial writes them, against
    tests/naive.py: the network trained and its backward states taken by the chain rule layer by
    layer, the reference's paths interpolated entry by entry, the errors summed by loops."""
    problem = ProblemConfig(d_in=3, d_out=2, samples=samples, data="linear_target", data_seed=7, seed=2)
    cfg = _limit_config(L=6, M=4, D=5, problem=problem, steps=3, seeds=(0, 1), alpha=1.5, lr=0.3)
    ref = compute_joint_limit(JointLimitConfig(cfg, grid=16))
    rows = sorted(train_trial(cfg, ref), key=lambda r: (r["seed"], r["step"]))
    net = ResNet(cfg)
    to_np = lambda t: t.numpy().copy()
    x, y, W_E, W_U = to_np(net.problem.x).T, to_np(net.problem.y).T, to_np(net.problem.embed), to_np(net.problem.readout)
    along_h, along_b = (_along_by_interp(ref.arrays[name], W_E, W_U, cfg.L) for name in ("path", "backward_path"))
    for r, seed in enumerate(cfg.seeds):
        U, V = ([to_np(w[l, r]) for l in range(cfg.L)] for w in (net.units.u, net.units.v))
        hidden, backward = naive.states_along_depth(x, y, W_E, W_U, U, V, cfg.residual_scale, "identity", cfg.lr,
                                                    cfg.L, cfg.M, cfg.steps)
        for k in range(cfg.steps + 1):
            h_errors = naive.depth_mean_abs_errors(hidden[k], along_h[k])
            b_errors = naive.depth_mean_abs_errors(backward[k], along_b[k])
            row = rows[r * (cfg.steps + 1) + k]
            assert (row["seed"], row["step"]) == (seed, k)
            np.testing.assert_allclose(row["err_hidden_depthmax"], max(h_errors), rtol=1e-9)
            np.testing.assert_allclose(row["err_hidden_depthmean"], sum(h_errors) / len(h_errors), rtol=1e-9)
            np.testing.assert_allclose(row["err_backward"], max(b_errors), rtol=1e-9)
            assert row["err_backward"] > 0 and row["err_hidden_depthmean"] < row["err_hidden_depthmax"]


def test_a_record_without_the_backward_path_leaves_err_backward_null():
    """A joint_limit record made before JOINT_LIMIT_VERSION 2 (no backward_path): the hidden
    errors are measured, err_backward is None, never a made-up number."""
    cfg = _limit_config(L=4, M=4, D=8, steps=2, seeds=(0,))
    ref = compute_joint_limit(JointLimitConfig(cfg, grid=16))
    old = Reference(ref.key, ref.kind, {k: v for k, v in ref.arrays.items() if k != "backward_path"}, ref.meta)
    rows, old_rows = train_trial(cfg, ref), train_trial(cfg, old)
    assert {r["err_backward"] for r in old_rows} == {None} and all(r["err_backward"] > 0 for r in rows)
    assert [r["err_hidden_depthmean"] for r in old_rows] == [r["err_hidden_depthmean"] for r in rows]


def test_trials_store_the_depth_max_hidden_error_against_a_joint_limit():
    """err_hidden_depthmax, as train_trial writes it, is depth_max_mean_abs of the network's block
    outputs (numpy, float64) against the reference path; absent (None) for another reference."""
    cfg = _limit_config(L=12, M=16, D=8, steps=3, seeds=(0, 1, 2))
    jl = JointLimitConfig(cfg, gram="expected", grid=32)
    ref = compute_joint_limit(jl)
    rows = train_trial(cfg, ref)
    along = hidden_along_depth(ref, jl, 12)
    for k, fwd in ResNet(cfg).trajectory():
        expected = depth_max_mean_abs(fwd.hidden.numpy(), along[k])
        got = [r["err_hidden_depthmax"] for r in sorted(rows, key=lambda r: r["seed"]) if r["step"] == k]
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert all(r["err_hidden_depthmax"] > 0 for r in rows)
    other = Reference(ref.key, "largest", {k: v for k, v in ref.arrays.items() if k not in ("path", "backward_path")}, ref.meta)
    assert {r[name] for r in train_trial(cfg, other) for name in DEPTH_METRICS} == {None}


# --- independent solutions: the finite network, and D -> infinity ----------------------------


def test_fixed_D_limit_converges_to_the_joint_limit_like_one_over_sqrt_D():
    """The exact fixed-D Mean ODE (this D's embeddings) against the joint limit, RMS over 8
    embedding draws: 16x D, about 4x less distance (the companion's 1/sqrt(D) term)."""
    errs = []
    for D in (16, 256, 4096):
        sq = []
        for seed in range(1, 9):
            cfg = _limit_config(D=D, problem=ProblemConfig(d_in=3, d_out=3, samples=1, data="linear_target", data_seed=42, seed=seed))
            exact_d = compute_joint_limit(JointLimitConfig(cfg, gram="empirical", grid=32)).arrays["out"]
            joint = compute_joint_limit(JointLimitConfig(cfg, grid=32)).arrays["out"]
            sq.append((_rms_steps(exact_d, joint)[1:] ** 2).mean())
        errs.append(math.sqrt(np.mean(sq)))
    ratios = [errs[0] / errs[1], errs[1] / errs[2]]
    assert all(2.5 < r < 6.5 for r in ratios), (errs, ratios)


def test_finite_network_converges_to_its_fixed_D_limit():
    """L, M -> infinity at D = 8: the finite network (identity activation) approaches the exact
    Mean ODE at this D's embeddings like 1/sqrt(L M) (16x L M: 4x less error)."""
    cfg = _limit_config(steps=4)
    ref = compute_joint_limit(JointLimitConfig(cfg, gram="empirical", grid=64)).arrays
    errs = []
    for L, M in ((8, 8), (32, 32)):
        out, hidden, _ = trajectory(cfg.replace(L=L, M=M, seeds=(0, 1, 2, 3)))
        errs.append((_rms_steps(out, ref["out"][:, None]).mean(), _rms_steps(hidden, ref["hidden"][:, None]).mean()))
    for small, large in zip(*errs):
        assert 2.5 < small / large < 7.0, errs


@pytest.mark.slow
def test_finite_network_approaches_the_joint_limit_as_D_grows():
    """At L = M = 64 the sampling term D / (L M) is small up to D = 64, so the error against the
    joint limit is the 1/sqrt(D) term: 16x D, about 2.5x (hidden) and 4x (output) less error
    (the companion's fit: hidden^2 = 0.67 D/(LM) + 0.44/D, output^2 = 0.027 (D/(LM))^2 + 0.25/D)."""
    errs = []
    for D in (4, 64):
        cfg = _limit_config(L=64, M=64, D=D, steps=5)
        ref = compute_joint_limit(JointLimitConfig(cfg, grid=64)).arrays
        out, hidden, _ = trajectory(cfg.replace(seeds=(0, 1, 2, 3)))
        errs.append((_rms_steps(out, ref["out"][:, None])[5], _rms_steps(hidden, ref["hidden"][:, None])[5]))
    assert errs[1][0] < errs[0][0] / 2.5 and errs[1][1] < errs[0][1] / 1.8, errs
