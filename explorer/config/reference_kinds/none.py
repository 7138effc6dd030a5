"""``none``: no reference, for a study that reads the loss alone (an optimum of the learning rate,
its transfer across width or depth). Nothing is planned, priced, computed or stored: each worker
makes the empty reference of its trial's shape (``trials.empty_reference``), and the rows' errors
(``err_out``, ``err_hidden``, their Gram rows, the reference's own columns) are null. An analysis
that needs an error refuses such a sweep in one line naming the kind. It serves every preset and
scaling. The example of a kind: this module and one entry of ``registry.KINDS``."""
from __future__ import annotations

from trials import NoReferenceConfig


class NoReference:
    name = "none"
    description = "no reference: the loss alone is measured (errors are null), for optima and transfer"
    unused_keys = ("depth", "width", "replicas", "grid")
    measures_error = False
    stored = False
    couples_embeddings = False
    scales_with_particles = False
    config_type = NoReferenceConfig

    def reference_config(self, spec, trial) -> NoReferenceConfig:
        return NoReferenceConfig(trial)

    def check_serves(self, spec, trial) -> None:
        pass

    def identity(self, spec, trial):
        return NoReferenceConfig(trial).shape()

    def key(self, config: NoReferenceConfig) -> str:
        return config.key()

    def check_spec(self, spec, problems) -> None:
        pass

    def bounding_config(self, spec, trial) -> None:
        return None

    def memory_bytes(self, config: NoReferenceConfig) -> int:
        return 0

    def request_bytes(self, config: NoReferenceConfig) -> int:
        return 0

    def seconds(self, config: NoReferenceConfig) -> float:
        return 0.0

    def what(self, config: NoReferenceConfig) -> str:
        return "none"

    def dry_run_line(self, spec, count: int) -> str:
        return "references: 0 (kind none: nothing computed; the rows measure the loss, their errors are null)"

    def compute(self, config: NoReferenceConfig):
        from trials import empty_reference

        return empty_reference(config)
