"""Executing a validated program, and writing its outputs atomically."""
from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from .errors import NkirunError, RunError, error
from .ir import Program
from .loader import initial_buffers
from .machine import Machine


class InternalError(Exception):
    """A bug in nkirun itself (not in the user's program). Exit status 3."""

    def __init__(self, where: str, exc: BaseException):
        super().__init__(f"{where}: {type(exc).__name__}: {exc}")
        self.where = where
        self.exc = exc


def execute(program: Program, bound, inputs=None, after_each=None) -> Machine:
    """Run every instruction in order; `after_each(bound, machine)` is called after each."""
    try:
        with np.errstate(all="ignore"):  # e.g. `data: [1e300]` saturates to inf in float32
            buffers, written = initial_buffers(program, inputs)
    except MemoryError:
        raise RunError(error("E091", "out of memory while allocating the program's tensors",
                             hint="lower the tensor sizes; --max-hbm-bytes bounds HBM tensors"))
    m = Machine(buffers, written)
    b = None
    try:
        with np.errstate(all="ignore"):  # inf/nan flow through as on hardware, silently
            for b in bound:
                m.current = b
                b.spec.execute(b, m)
                if after_each is not None:
                    after_each(b, m)
    except NkirunError:
        raise
    except MemoryError:
        raise RunError(error("E091", "out of memory while executing "
                             f"{b.op if b else 'the program'}", b.loc() if b else None))
    except Exception as exc:  # noqa: BLE001 - reported as a bug with its instruction
        where = f"instruction {b.index} ({b.op}) at {b.loc()}" if b else "program start"
        raise InternalError(where, exc) from exc
    m.current = None
    return m


def outputs(program: Program, m: Machine) -> dict[str, np.ndarray]:
    """The `output: true` tensors; reading one that was never (fully) written is an error."""
    result = {}
    for name, t in program.tensors.items():
        if not t.output:
            continue
        w = m.written.get(name)
        if w is not None and not w.all():
            bad = tuple(int(i) for i in np.argwhere(~w)[0])
            raise RunError(error("E092", f"output `{name}` was never written at index {bad}",
                                 t.loc, hint="store into every element of an output tensor"))
        result[name] = m.buffers[name]
    return result


def write_outputs(arrays: dict[str, np.ndarray], out_dir: str) -> list[str]:
    """Write `<out_dir>/<name>.npy` for each array, so that a failure changes nothing.

    Every array goes to a temp file in `out_dir` first (same filesystem, so the rename is
    atomic); only when all are written are they renamed over the final names. If a rename
    fails, the files already replaced are restored from hard-link backups; a folder this
    call created is removed again.
    """
    finals = {name: os.path.join(out_dir, f"{name}.npy") for name in arrays}
    for name, final in finals.items():
        if os.path.isdir(final):
            raise NkirunError(error("E080", f"cannot write output `{name}`: {final} is a folder",
                                    hint="remove it, or choose another --out"))
    created = not os.path.isdir(out_dir)
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise NkirunError(error("E080", f"cannot create output folder {out_dir}: "
                                f"{e.strerror or e}")) from None
    umask = os.umask(0)
    os.umask(umask)
    temps: list[tuple[str, str]] = []
    backups: list[tuple[str, str | None]] = []  # (final, backup of its old content or None)
    try:
        for name, arr in arrays.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".npy.tmp", dir=out_dir)
            temps.append((tmp, finals[name]))
            os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; outputs get normal modes
            with os.fdopen(fd, "wb") as f:
                np.save(f, _savable(arr), allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
        for tmp, final in temps:
            backups.append((final, _backup(final)))
            os.replace(tmp, final)
    except BaseException as e:  # noqa: BLE001 - undo, then report (or re-raise a bug/^C)
        _undo(temps, backups, out_dir if created else None)
        if isinstance(e, OSError):
            raise NkirunError(error("E080", f"cannot write outputs to {out_dir}: "
                                    f"{e.strerror or e}; nothing there was changed")) from None
        raise
    for _, bak in backups:
        if bak is not None:
            _unlink(bak)
    return [final for _, final in temps]


def _savable(arr: np.ndarray) -> np.ndarray:
    """ml_dtypes' float8_e5m2 would be saved with descr '<f1', which np.load cannot read;
    save its raw bytes (|V1), as np.save does by itself for bfloat16 and float8_e4m3."""
    if arr.dtype.kind == "f" and arr.dtype.itemsize == 1:
        return arr.view(np.dtype("V1"))
    return arr


def _backup(final: str) -> str | None:
    """A hard link to `final`'s current content (None if it does not exist)."""
    if not os.path.lexists(final):
        return None
    bak = final + f".{os.getpid()}.bak"
    _unlink(bak)
    try:
        os.link(final, bak)
    except OSError:  # a filesystem without hard links
        shutil.copy2(final, bak)
    return bak


def _undo(temps, backups, created_dir: str | None) -> None:
    for final, bak in reversed(backups):
        try:
            if bak is None:
                _unlink(final)  # it did not exist before this call
            else:
                os.replace(bak, final)
        except OSError:
            pass
    for tmp, _ in temps:
        _unlink(tmp)
    if created_dir is not None:
        try:
            os.rmdir(created_dir)
        except OSError:
            pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
