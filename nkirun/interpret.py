"""Executing a validated program, and writing its outputs atomically."""
from __future__ import annotations

import os
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
    buffers, written = initial_buffers(program, inputs)
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
    """Write `<out_dir>/<name>.npy` for each array: all to temp files first, then renamed,
    so a failure leaves `out_dir` as it was."""
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise NkirunError(error("E080", f"cannot create output folder {out_dir}: {e.strerror}"))
    temps, done = [], []
    try:
        for name, arr in arrays.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".npy.tmp", dir=out_dir)
            temps.append((tmp, os.path.join(out_dir, f"{name}.npy")))
            with os.fdopen(fd, "wb") as f:
                np.save(f, arr, allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
        for tmp, final in temps:
            os.replace(tmp, final)
            done.append(final)
    except OSError as e:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise NkirunError(error("E080", f"cannot write outputs to {out_dir}: {e.strerror}"))
    return done
