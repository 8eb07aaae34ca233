"""Imported first by the package: when this process is the `nkirun` command, a signal that
arrives while it is still starting (importing NumPy, rich, ...) ends it quietly with
128 + the signal number instead of a KeyboardInterrupt traceback. Nothing has been written
by then, so nothing needs undoing; `nkirun.cli.main` installs the real handlers. As a
library (`import nkirun`) nothing changes."""
from __future__ import annotations

import os
import signal
import sys


def _is_command() -> bool:
    argv = getattr(sys, "orig_argv", None) or sys.argv
    if os.path.basename(sys.argv[0] if sys.argv else "") == "nkirun":
        return True
    return any(a == "-m" and b in ("nkirun", "nkirun.cli") for a, b in zip(argv, argv[1:]))


def _quit(signum, _frame):
    try:
        os.write(2, b"nkirun: interrupted while starting; nothing was written\n")
    finally:
        os._exit(128 + signum)


# The signals this command was started with ignored stay ignored, as is the convention
# (`nohup` ignores SIGHUP, a script's background job SIGINT): no handler of nkirun's is
# ever installed for them (entry.py reads this too).
IGNORED: frozenset = frozenset()

if _is_command():
    IGNORED = frozenset(s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
                        if signal.getsignal(s) == signal.SIG_IGN)
    for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if _sig in IGNORED:
            continue
        try:
            signal.signal(_sig, _quit)
        except (ValueError, OSError):  # pragma: no cover - not the main thread
            pass
