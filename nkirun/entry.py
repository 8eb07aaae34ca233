"""The process around the command line (issue 12): signals, exit codes and a broken stdout.

  * Ctrl-C, SIGTERM and SIGHUP unwind as an exception, so every output being written is
    rolled back (nkirun.safeio); the exit status is 128 + the signal (130 for Ctrl-C) and one
    line says where the run stopped: `nkirun: interrupted at #12 nc_matmul`.
  * A standard output that is closed (`>&-`), gone (`| head`) or full (`>/dev/full`) ends
    the command quietly: what cannot be shown is not an error of the program.
"""
from __future__ import annotations

import errno
import os
import signal
import sys

import click

from nkirun import safeio
from nkirun._startup import IGNORED

_QUIET_ERRNOS = (errno.EPIPE, errno.ENOSPC, errno.EBADF, errno.EIO)


def quiet_stdout_error(e: OSError) -> bool:
    """True (and stdout silenced) if `e` is standard output failing: closed, gone, full."""
    if e.errno not in _QUIET_ERRNOS:
        return False
    _silence_stdout()
    return True


def _install_handlers() -> None:
    handlers = ((signal.SIGINT, signal.default_int_handler),
                (signal.SIGTERM, safeio.raise_terminated),
                (signal.SIGHUP, safeio.raise_terminated))
    try:
        for signum, handler in handlers:
            if signum not in IGNORED:  # (started ignored: stays ignored, _startup.py)
                signal.signal(signum, handler)
    except (ValueError, OSError):  # pragma: no cover - not the main thread
        pass


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null so that the interpreter's exit-time flush of
    what could not be written fails no more."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass


def _interrupted(stop: KeyboardInterrupt) -> int:
    signum = getattr(stop, "signum", signal.SIGINT)
    at = getattr(stop, "nkirun_at", None)
    msg = "nkirun: interrupted" + (f" at {at}" if at else "")
    if signum != signal.SIGINT:
        msg += f" ({signal.Signals(signum).name})"
    msg += ("; wrote " + ", ".join(safeio.WRITTEN) if safeio.WRITTEN
            else "; nothing was written")
    try:
        print(msg, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return 128 + int(signum)


def _find_interrupt(e: BaseException) -> KeyboardInterrupt | None:
    while e is not None:
        if isinstance(e, KeyboardInterrupt):
            return e
        e = e.__cause__ or e.__context__
    return None


def run_main(group: click.Group, args=None) -> None:
    """Run the click group as the `nkirun` process; never returns."""
    _install_handlers()
    if sys.stdout is None:  # started with `>&-`: print nothing, quietly
        sys.stdout = open(os.devnull, "w", encoding="utf-8")
    for stream in (sys.stdout, sys.stderr):  # an ASCII-only terminal or LANG=C: show `?`
        try:  # for what it cannot encode (µ, —, box lines) rather than fail
            stream.reconfigure(errors="replace")
        except (AttributeError, ValueError, OSError):
            pass
    try:
        code = _invoke(group, args)
        sys.stdout.flush()
    except KeyboardInterrupt as stop:
        code = _interrupted(stop)
    except (OSError, ValueError) as e:  # only stdout's flush is left to fail here
        if isinstance(e, OSError) and e.errno not in _QUIET_ERRNOS:
            raise
        _silence_stdout()
        code = 1
    _default_handlers()
    sys.exit(code)


def _default_handlers() -> None:
    """The work is done (or undone) and said: a signal from here on ends the process as its
    default action would (-signal), instead of raising Terminated inside the interpreter's
    shutdown (threading._shutdown), where it would print a traceback."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signum in IGNORED:
            continue
        try:
            signal.signal(signum, signal.SIG_DFL)
        except (ValueError, OSError):  # pragma: no cover - not the main thread
            pass


def _invoke(group: click.Group, args) -> int:
    try:
        rv = group.main(args=args, standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except click.exceptions.Abort as e:
        stop = _find_interrupt(e)
        if stop is None:
            raise
        return _interrupted(stop)
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except OSError as e:
        if e.errno in _QUIET_ERRNOS:
            _silence_stdout()
            return 1
        raise
