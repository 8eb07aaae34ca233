"""Reading and writing the files a person names, safely (issue 12, "Reliability").

Inputs: anything that is not a regular file (a FIFO, a device, a socket) is refused before
it is opened, so a FIFO can never block a read forever.

Outputs (`convert -o`, `cost --trace-out`, the trace of `--dump`, the `.npy` outputs):
  * `-` is standard output; a path that is not a regular file (`/dev/stdout`, a character
    device, a FIFO) is written in place as a stream, never renamed over;
  * a regular file is replaced atomically: its new content goes to a temporary file made
    exclusively (O_EXCL) under an unpredictable name in the destination folder, with the
    mode the umask gives, and is renamed over the target only when complete;
  * the rename and every clean-up run with SIGINT/SIGTERM/SIGHUP held back, so a signal
    leaves the old content or the new one, never a temporary file. The command line turns
    SIGTERM/SIGHUP into an exception (`Terminated`) so that the clean-up runs at all.
"""
from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import tempfile
import threading

STDOUT = "-"
WRITTEN: list[str] = []  # what this process has written (the interrupt message says so)
_HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: unwind like Ctrl-C, exit 128 + signal number."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def raise_terminated(signum, _frame):
    raise Terminated(signum)


@contextlib.contextmanager
def signals_held():
    """Hold SIGINT/SIGTERM/SIGHUP back: one that arrives inside the block is delivered
    (its handler runs) when the block ends.

    The handlers are swapped for one that only remembers the signal. A thread's signal
    mask would not do: the kernel hands a process signal to any thread that does not
    block it (OpenBLAS's workers, started when NumPy loads), and Python then runs the
    handler in the main thread anyway, inside the block. Off the main thread (the API
    called from a thread) no Python handler can run here, so there is nothing to hold."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old: dict[int, object] = {}
    try:
        for signum in _HELD:
            old[signum] = signal.signal(signum, lambda s, _f: pending.append(s))
    except (ValueError, OSError):  # no signal support
        _restore(old)
        yield
        return
    try:
        yield
    finally:
        _restore(old)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)  # the restored handler runs (raises) here


def _restore(old: dict) -> None:
    for signum, handler in old.items():
        # None: a handler installed from C, which Python cannot put back; the default
        signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def not_regular(path: str) -> str | None:
    """Why `path` cannot be read as a data file without risk ("a FIFO", "a device", ...),
    or None for a regular file (or one that does not exist: opening it says so)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def is_stream(path: str) -> bool:
    """Write `path` in place (stream) rather than through a temporary file and a rename."""
    if path == STDOUT:
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) or os.path.realpath(path).startswith(("/dev/", "/proc/"))


def shown(path: str) -> str:
    return "standard output" if path == STDOUT else path


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def exclusive_temp(folder: str, name: str) -> tuple[int, str]:
    """A new file in `folder` under an unpredictable name (O_EXCL: never an existing file,
    link or folder planted there), readable as the umask allows (not mkstemp's 0600)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
    except OSError:
        pass
    return fd, tmp


def unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _write_all(f, data) -> None:
    """`data`: bytes, or an iterable of bytes chunks written as they are made (a large
    document need not exist whole in memory)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        f.write(data)
        return
    for chunk in data:
        f.write(chunk)


def write_file(path: str, data) -> str:
    """Write `data` (bytes, or an iterable of bytes chunks) to `path` as the module
    docstring says; returns where it went (for "wrote ..." messages). Raises OSError on
    failure, leaving `path` as it was (standard output and streams excepted)."""
    if path == STDOUT:
        out = sys.stdout.buffer
        _write_all(out, data)
        out.flush()
        WRITTEN.append(shown(path))
        return shown(path)
    if is_stream(path):
        with open(path, "wb") as f:
            _write_all(f, data)
        WRITTEN.append(path)
        return path
    target = os.path.realpath(path)  # a symlink to a regular file stays a symlink
    tmp = None
    try:
        with signals_held():  # a signal right after mkstemp still finds `tmp` to remove
            fd, tmp = exclusive_temp(os.path.dirname(target) or ".", os.path.basename(target))
        with os.fdopen(fd, "wb") as f:
            _write_all(f, data)
            f.flush()
            os.fsync(f.fileno())
        with signals_held():
            os.replace(tmp, target)
            WRITTEN.append(path)
    except BaseException:
        with signals_held():
            if tmp is not None:
                unlink_quietly(tmp)
        raise
    return path


def new_folders(path: str) -> list[str]:
    """The folders `os.makedirs(path)` would create, outermost first."""
    missing = []
    path = os.path.abspath(path)
    while path and not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing[::-1]


def remove_folders(created: list[str]) -> None:
    """Remove folders this process created (innermost first), if they are still empty."""
    for folder in reversed(created):
        try:
            os.rmdir(folder)
        except OSError:
            pass
