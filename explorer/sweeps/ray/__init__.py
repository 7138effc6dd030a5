"""Ray itself: importing it (``imports``: ``ray``, ``tune``, the environment it is imported
with), reaching one (``connection.ray_session``: an embedded Ray, a cluster, or the session Ray),
the session Ray kept between commands (``session``: its holder process, ``python -m
explorer.sweeps.ray.session``, and ``explorer ray start|stop|status``), what the private Ray folder
records (``records``, read without Ray; ``probe``: whether a Ray answers at an address), the
drivers joined to the session (``session_drivers``) and processes told apart across reboots
(``processes``); what a trial or reference asks of Ray (``resources``), torch's threads in a
worker (``threads``), credentials kept out of runtime envs (``runtime_env``), and a spec checked
before Ray is imported (``runnable``).

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "NodeAffinitySchedulingStrategy": "imports",
    "environment": "imports",
    "ray": "imports",
    "tune": "imports",
    "SESSION_ADDRESS": "probe",
    "start_estimate": "records",
    "ray_session": "connection",
    "start_lines": "session",
    "status_lines": "session",
    "stop_lines": "session",
    "check_resources": "resources",
    "largest_node_memory": "resources",
    "memory_request": "resources",
    "reference_need": "resources",
    "apply_torch_threads": "threads",
    "no_secrets_in_runtime_env": "runtime_env",
    "runnable_spec": "runnable",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
