"""``largest``: the companion paper's protocol for D-sweeps (arXiv:2603.18168). A trial is compared
with its own configuration at the grid's largest L, M and D, run with seeds no trial uses
(``trials.largest_reference_config``, computed by ``trials.reference_from_trial``), embeddings
coupled across D by default. It serves every preset and scaling: it is no limit, only a larger
point. Its cost is that point's run without metrics (about half a trial's)."""
from __future__ import annotations

import dataclasses

from trials import TrialConfig, largest_reference_config, largest_reference_key

from ...errors import spec_error
from .. import cost_model as cost

# The fields of a trial config that its largest reference keeps (L, M and D become the grid's maxima).
ALL_BUT_SHAPE = tuple(f.name for f in dataclasses.fields(TrialConfig) if f.name not in ("L", "M", "D"))


class Largest:
    name = "largest"
    description = "the largest grid point of the trial's group, run with seeds no trial uses"
    unused_keys = ("depth", "width", "replicas", "grid")
    measures_error = True
    stored = True
    couples_embeddings = True
    scales_with_particles = False
    config_type = TrialConfig

    def reference_config(self, spec, trial: TrialConfig) -> TrialConfig:
        axes = spec.axes()  # with [[grid.cases]]: the largest of any case
        return largest_reference_config(trial, L=max(axes["L"]), M=max(axes["M"]), D=max(axes["D"]))

    def check_serves(self, spec, trial) -> None:
        pass  # any trial: the largest point is no limit

    def identity(self, spec, trial: TrialConfig):
        # the largest point is the trial's config with L, M and D replaced: every other field
        # (the values of a frozen dataclass, typed alike within a spec) identifies it
        return tuple(getattr(trial, name) for name in ALL_BUT_SHAPE)

    def key(self, config: TrialConfig) -> str:
        return largest_reference_key(config)

    def check_spec(self, spec, problems) -> None:
        p = spec.problem
        if p.coupled_embeddings is False and len(spec.axes()["D"]) > 1 and not p.independent_embeddings:
            problems.add(spec_error("[problem] coupled_embeddings",
                                    'kind = "largest" over several D compares the first D coordinates, so it needs '
                                    "coupled embeddings; set it to true (or set independent_embeddings = true to "
                                    "compare outputs only: err_hidden is then not meaningful)"))

    def bounding_config(self, spec, trial: TrialConfig) -> TrialConfig:
        return trial  # the spec's largest point: its reference's run is its own, without metrics

    def memory_bytes(self, config: TrialConfig) -> int:
        L, M, D, N, R, b = cost.dims(config)
        run = (cost.run_bytes(L, M, D, N, R, b) + cost.problem_bytes(config) + cost.outputs_bytes(config)
               + 2 * cost.trajectory_bytes(config))
        return int(max(cost.draw_bytes(L, M, D, R, b), run, cost.summary_bytes(config, runs=1)))

    def request_bytes(self, config: TrialConfig) -> int:
        return self.memory_bytes(config)

    def seconds(self, config: TrialConfig) -> float:
        return 0.5 * cost.trial_seconds(config)  # without metrics, about as costly as the step itself

    def what(self, config: TrialConfig) -> str:
        return f"largest grid point {cost.point(config)}"

    def dry_run_line(self, spec, count: int) -> str:
        return f"references: {count} largest (the largest grid point of each group, run with its seeds)"

    def compute(self, config: TrialConfig):
        from trials import reference_from_trial

        return reference_from_trial(config)
