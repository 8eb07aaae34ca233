"""`run --dump DIR [--after K]`: tensors as .npy files after instructions, for debugging.

Layout: `DIR/<k>_<op>/<tensor>.npy`, k zero-padded to the width of the last index so the
folders sort in program order. Without --after, the first folder holds every tensor that
holds data, and each later one only the tensors that instruction wrote: unchanged inputs
are not dumped again (a tensor's state after instruction k is in the latest folder <= k
that has it). With --after K the one folder holds every tensor. Tensors nothing has
written yet are skipped; for a partly written one `<tensor>.written.npy` (bool) says
which elements hold data (the others are 0). An instruction in a runtime loop body dumps
each time it runs: `<k>_<op>`, then `<k>_<op>_run2`, `_run3`, ...

The dump is written into a hidden staging folder beside DIR and moved into DIR at the
end, with signals held back (nkirun.safeio): after any signal DIR holds the whole new
dump or exactly what it held. A run that fails at run time still gets its dump up to the
failing instruction: that is what it is for.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from nkirun import safeio
from nkirun.diagnostics import NkirunError, error


class Dumper:
    def __init__(self, out_dir: str, count: int, after: int | None = None):
        self.dir, self.after = out_dir, after
        self.width = len(str(max(count - 1, 0)))
        self.folders: list[str] = []  # relative names, in the order written
        self.created = safeio.new_folders(os.path.dirname(os.path.abspath(out_dir)))
        try:
            os.makedirs(os.path.dirname(os.path.abspath(out_dir)), exist_ok=True)
            self.staging = tempfile.mkdtemp(prefix=".nkirun-dump.", dir=os.path.dirname(
                os.path.abspath(out_dir)))
        except OSError as e:
            safeio.remove_folders(self.created)
            raise NkirunError(error("E080", f"--dump: cannot write into {out_dir}: "
                                    f"{e.strerror or e}")) from None

    def __call__(self, b, m) -> None:
        if self.after is not None and b.index != self.after:
            return
        name = f"{b.index:0{self.width}d}_{b.op}"
        runs = self.__dict__.setdefault("runs", {})  # a loop body runs again: `_run2`, ...
        runs[b.index] = runs.get(b.index, 0) + 1
        if runs[b.index] > 1:
            name += f"_run{runs[b.index]}"
        folder = os.path.join(self.staging, name)
        everything = self.after is not None or not self.folders
        wrote = {b.tile(p.name).decl.name for p in b.spec.params
                 if p.out and b.tile(p.name) is not None}
        try:
            os.mkdir(folder)
            for tensor, arr in m.buffers.items():
                w = m.written.get(tensor)
                if (w is not None and not w.any()) or not (everything or tensor in wrote):
                    continue
                np.save(os.path.join(folder, f"{tensor}.npy"), arr, allow_pickle=False)
                if w is not None and not w.all():
                    np.save(os.path.join(folder, f"{tensor}.written.npy"), w,
                            allow_pickle=False)
        except OSError as e:
            raise NkirunError(error("E080", f"--dump: cannot write into {self.dir}: "
                                    f"{e.strerror or e}")) from None
        self.folders.append(name)

    def commit(self) -> str:
        """Move the staged folders into place; returns a "dumped ..." line."""
        trash = None
        try:
            with safeio.signals_held():
                if not os.path.isdir(self.dir):
                    os.rename(self.staging, self.dir)
                else:
                    trash = tempfile.mkdtemp(prefix=".nkirun-old-dump.", dir=self.staging)
                    for name in self.folders:
                        final = os.path.join(self.dir, name)
                        if os.path.lexists(final):
                            os.rename(final, os.path.join(trash, name))
                        os.rename(os.path.join(self.staging, name), final)
                    safeio.WRITTEN.append(self.dir)
        except OSError as e:
            self.abort()
            raise NkirunError(error("E080", f"--dump: cannot write into {self.dir}: "
                                    f"{e.strerror or e}")) from None
        with safeio.signals_held():
            shutil.rmtree(self.staging, ignore_errors=True)
        n = len(self.folders)
        return f"dumped {n} instruction{'s' * (n != 1)} into {self.dir}"

    def abort(self) -> None:
        with safeio.signals_held():
            shutil.rmtree(self.staging, ignore_errors=True)
            safeio.remove_folders(self.created)
