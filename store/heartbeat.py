"""How long a claim lives without its heartbeat: a driver's lease on a trial key and a worker's
lock on a reference are both refreshed by touching their file, and both lapse after this.

Kept apart from the modules that use it so that reading it imports nothing (the CLI checks its
environment settings against it before it loads pyarrow).
"""
DEFAULT_TTL_S = 60.0
