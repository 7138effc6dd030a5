"""The whole-study tests run real sweeps on a local Ray: they use the sweep tests' Ray environment
(set when that conftest is imported) and fixtures."""
from tests.explorer.conftest import local_ray, metric_row_counts

__all__ = ["local_ray", "metric_row_counts"]
