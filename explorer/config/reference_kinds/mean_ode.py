"""``mean_ode``: a particle solution of the Neural Mean ODE (``trials.ReferenceConfig``, computed by
``trials.compute_reference``), the limit of the trial's limit-defining fields at resolution
(depth, width) with ``replicas`` independent particle systems. It serves the presets and
scalings that have a Mean ODE limit (mean-field steps; not depth_mup).

Its memory: the particle units and their half-depth copy (4 W b at L_ref x M_ref x R_ref) plus
one run's buffers and data, every step's output and last hidden state (three such trajectories at
once while the half-depth run stacks its own), then the spread's temporaries or the targets' data
drawn again. Its time: the particles at full and half depth, without metrics (about half a
trial's step each)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from trials import ReferenceConfig

from .. import cost_model as cost

if TYPE_CHECKING:
    from trials import TrialConfig



class MeanOde:
    name = "mean_ode"
    description = "a particle solution of the Mean ODE (depth x width particles, replicas for its error)"
    unused_keys = ("grid",)
    measures_error = True
    stored = True
    couples_embeddings = False
    scales_with_particles = True
    config_type = ReferenceConfig

    def reference_config(self, spec, trial: "TrialConfig") -> ReferenceConfig:
        ref = spec.reference
        return ReferenceConfig(limit=trial, depth=ref.depth, width=ref.width, replicas=ref.replicas,
                               device=spec.train.device)

    def check_serves(self, spec, trial) -> None:
        self.reference_config(spec, trial)  # refuses a trial without a Mean ODE limit

    def identity(self, spec, trial):
        return self.reference_config(spec, trial).limit_identity()  # built: the trial is judged too

    def key(self, config: ReferenceConfig) -> str:
        return config.key()

    def check_spec(self, spec, problems) -> None:
        pass

    def bounding_config(self, spec, trial) -> ReferenceConfig:
        return self.reference_config(spec, trial)

    def memory_bytes(self, config: ReferenceConfig) -> int:
        full = config.particle_config(config.depth)
        L, M, D, N, R, b = cost.dims(full)
        W = L * R * D * M
        trajectory = cost.trajectory_bytes(full)
        # the particles and their halved copy, one run's buffers and data; the full run's outputs
        # kept while the half run's are listed and stacked (three trajectories at once)
        run = (2 * W * b + cost.run_bytes(L, M, D, N, R, b) + cost.problem_bytes(full) + cost.outputs_bytes(full)
               + 3 * trajectory)
        return int(max(cost.draw_bytes(L, M, D, R, b) + 2 * W * b, run, cost.summary_bytes(full, runs=2)))

    def request_bytes(self, config: ReferenceConfig) -> int:
        return self.memory_bytes(config)

    def seconds(self, config: ReferenceConfig) -> float:
        full = config.particle_config(config.depth)
        half = full.replace(L=config.depth // 2, M=2 * config.width)
        return 0.5 * (cost.trial_seconds(full) + cost.trial_seconds(half))

    def what(self, config: ReferenceConfig) -> str:
        return (f"at D={config.limit.D} ({config.depth} x {config.width} particles, {config.replicas} replicas, "
                f"{config.limit.dtype})")

    def dry_run_line(self, spec, count: int) -> str:
        ref = spec.reference
        return (f"references: {count} mean_ode, {ref.depth} x {ref.width} particles (depth x width), "
                f"{ref.replicas} replicas, plus their half-depth twins")

    def compute(self, config: ReferenceConfig):
        from trials import compute_reference

        return compute_reference(config)
