"""SIGINT and SIGTERM in the explorer, in one wing: every way a signal ends a command or a sweep
cleanly (one line, exit 130 or 143, no traceback, the command that resumes).

- ``hold``: the start-up window. ``explorer/__init__`` records the signals from the process's first
  line (``hold_startup_signals``) until a command's work begins (``begin_work``, which imports
  what the command needs while a signal still ends it: ``import_held``).
- ``handlers``: how every command ends on a signal (``OneLineSignals``, the CLI group's part;
  ``Terminated``, ``EXIT_CODES``, ``interrupted_signal``, ``terminate_as_exception``).
- ``interrupts``: a sweep's driver (``SignalGuard`` records the signal, the driver raises
  ``SweepInterrupted`` where stopping is safe; ``SIGNAL_POLL_S``; ``resume_command``).

The store's own part (a remote call's wait that a signal cuts short) stays in the store:
``store.interrupt``, which calls the hold's or the guard's ``stop_waiting()``.

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this wing
imports these names, never a module inside it. The face imports only ``explorer.faces``, so that
``explorer/__init__`` reaches the hold before anything heavy is imported.
"""
from ..faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "HOLD": "hold",
    "StartupHold": "hold",
    "abandoned_imports": "hold",
    "begin_work": "hold",
    "hold_startup_signals": "hold",
    "import_held": "hold",
    "is_cli_process": "hold",
    "EXIT_CODES": "handlers",
    "OneLineSignals": "handlers",
    "Terminated": "handlers",
    "exit_now_if_abandoned": "handlers",
    "interrupted_signal": "handlers",
    "is_interrupted_query": "handlers",
    "terminate_as_exception": "handlers",
    "SIGNALS": "interrupts",
    "SIGNAL_POLL_S": "interrupts",
    "SignalGuard": "interrupts",
    "SweepInterrupted": "interrupts",
    "resume_command": "interrupts",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
