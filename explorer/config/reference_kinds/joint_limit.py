"""``joint_limit``: the exact limit of a trial group (``trials.JointLimitConfig``, computed by
``trials.compute_joint_limit``), an r-dimensional path integrated over depth on an RK4 grid. It
serves identity activations, presets mlu and lazy and mean-field steps only.

Measured with tracemalloc and wall time on this project's 2-core AMD EPYC machine (2026-12-01):
companion-linear-laptop's (K + 1 = 6, grid 128, N = 1, r = 6) 0.057 s and 2.9 MiB; K + 1 = 21,
grid 512, N = 10, r = 10: 3.1 s and 43 MiB. Each step integrates the previous steps' states
again, hence (K + 1)^2 RK4 grids of time. A reference task asks Ray for no memory: it is small."""
from __future__ import annotations

from typing import TYPE_CHECKING

from trials import JointLimitConfig

if TYPE_CHECKING:
    from trials import TrialConfig


COST = {"fixed_bytes": 2 * 2**20, "bytes_per_entry": 40, "fixed_s": 0.01, "per_step_pair_grid": 1.3e-5}


def size(config: JointLimitConfig) -> tuple[int, int, int, int]:
    """(steps + 1, RK4 grid, samples, r = d_in + d_out) of a joint_limit reference."""
    t = config.limit
    return t.steps + 1, config.grid, t.problem.samples, t.problem.d_in + t.problem.d_out


class JointLimit:
    name = "joint_limit"
    description = "the exact joint limit (identity activation, mlu or lazy, mean-field steps), RK4 over depth"
    unused_keys = ("depth", "width", "replicas")
    measures_error = True
    stored = True
    couples_embeddings = False
    scales_with_particles = False
    config_type = JointLimitConfig

    def reference_config(self, spec, trial: "TrialConfig") -> JointLimitConfig:
        return JointLimitConfig(limit=trial, grid=spec.reference.grid)

    def check_serves(self, spec, trial) -> None:
        self.reference_config(spec, trial)  # refuses an activation, preset or scaling it is not exact for

    def identity(self, spec, trial):
        return self.reference_config(spec, trial).limit_identity()

    def key(self, config: JointLimitConfig) -> str:
        return config.key()

    def check_spec(self, spec, problems) -> None:
        pass

    def bounding_config(self, spec, trial) -> JointLimitConfig:
        return self.reference_config(spec, trial)

    def memory_bytes(self, config: JointLimitConfig) -> int:
        steps, grid, N, r = size(config)
        return int(COST["fixed_bytes"] + COST["bytes_per_entry"] * steps * (grid + 1) * N * r)

    def request_bytes(self, config: JointLimitConfig) -> int:
        return 0  # a deterministic low-dimensional solve: small

    def seconds(self, config: JointLimitConfig) -> float:
        steps, grid, _, _ = size(config)
        return COST["fixed_s"] + COST["per_step_pair_grid"] * steps**2 * grid

    def what(self, config: JointLimitConfig) -> str:
        return (f"joint limit at D={config.limit.D}, {config.grid} RK4 steps over depth, "
                f"{config.limit.steps} training steps")

    def dry_run_line(self, spec, count: int) -> str:
        return (f"references: {count} joint_limit (the exact limit, {spec.reference.grid} RK4 steps over depth, "
                "and half that for its error)")

    def compute(self, config: JointLimitConfig):
        from trials import compute_joint_limit

        return compute_joint_limit(config)
