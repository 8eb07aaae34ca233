"""Writing a run's outputs: every `<name>.npy` or none (atomically, with backups)."""
from __future__ import annotations

import os
import secrets
import shutil

import numpy as np

from nkirun import safeio
from nkirun.diagnostics import NkirunError, error


def write_outputs(arrays: dict[str, np.ndarray], out_dir: str) -> list[str]:
    """Write `<out_dir>/<name>.npy` for each array, so that a failure or a signal changes
    nothing: afterwards `out_dir` holds all the new outputs or exactly what it held.

    Every array goes to an exclusive temp file in `out_dir` first (same filesystem, so the
    rename is atomic); only when all are written are they renamed over the final names,
    with signals held back (nkirun.safeio). If a rename fails, the files already replaced
    are restored from hard-link backups; folders this call created are removed again.
    """
    finals = {name: os.path.join(out_dir, f"{name}.npy") for name in arrays}
    for name, final in finals.items():
        if os.path.isdir(final):
            raise NkirunError(error("E080", f"cannot write output `{name}`: {final} is a folder",
                                    hint="remove it, or choose another --out"))
    created = safeio.new_folders(out_dir)
    temps: list[tuple[str, str]] = []
    backups: list[tuple[str, str | None]] = []  # (final, backup of its old content or None)
    try:
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as e:
            raise NkirunError(error("E080", f"cannot create output folder {out_dir}: "
                                    f"{e.strerror or e}")) from None
        for name, arr in arrays.items():
            with safeio.signals_held():  # so that a signal finds the temp file listed
                fd, tmp = safeio.exclusive_temp(out_dir, f"{name}.npy")
                temps.append((tmp, finals[name]))
            with os.fdopen(fd, "wb") as f:
                np.save(f, _savable(arr), allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
        with safeio.signals_held():
            for tmp, final in temps:
                backups.append((final, _backup(final)))
                os.replace(tmp, final)
            safeio.WRITTEN.extend(final for _, final in temps)
    except BaseException as e:  # noqa: BLE001 - undo, then report (or re-raise a bug/^C)
        with safeio.signals_held():
            _undo(temps, backups, created)
        if isinstance(e, OSError):
            raise NkirunError(error("E080", f"cannot write outputs to {out_dir}: "
                                    f"{e.strerror or e}; nothing there was changed")) from None
        raise
    with safeio.signals_held():
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
    """A hard link to `final`'s current content under an unpredictable name (None if it
    does not exist)."""
    if not os.path.lexists(final):
        return None
    folder, name = os.path.split(final)
    for _ in range(100):
        bak = os.path.join(folder, f".{name}.{secrets.token_hex(8)}.bak")
        try:
            os.link(final, bak)  # fails if anything exists under that name
            return bak
        except FileExistsError:
            continue
        except OSError:  # a filesystem without hard links
            fd, bak = safeio.exclusive_temp(folder or ".", name)
            os.close(fd)
            shutil.copy2(final, bak)
            return bak
    raise OSError(f"cannot create a backup of {final}")


def _undo(temps, backups, created: list[str]) -> None:
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
    safeio.remove_folders(created)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
