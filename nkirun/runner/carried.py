"""Elements that hold no data, carried as such instead of read as values.

A transfer between the cores (sendrecv) moves a whole tile. nki-library kernels send
fixed-size buffers of which only some partitions were written (attention_tkg exchanges a
16-partition max buffer holding 4 rows): on hardware the other partitions carry whatever
SBUF held, and nothing reads them. So a transfer does not read its source's elements as
values (no E090 there): the destination's elements whose source held no data hold no data
either. Any other instruction that reads unwritten elements is run on fills of them, and
what it writes that depends on them holds no data either (below). The run stops (E090)
only where such an element is needed.
"""
from __future__ import annotations

import copy

import numpy as np

from nkirun.diagnostics import NkirunError


# ---- instructions that read elements nothing wrote ---------------------------------------
# Under the default policy ("error") an instruction may read elements nothing wrote, as
# kernels correct on hardware do (a transpose of a partly written tile whose garbage rows
# are never read back): the values it computes from them are garbage too, and so are
# marked unwritten. The run stops (E090, at the read that started it) only when such a
# value is needed: by an output at the end of the run, as an index (indirect DMA), or in a
# register (loop bounds, branches). Policy "strict" stops at the read itself.
#
# Which results depend on the unwritten elements is found by running the instruction
# once per fill of those elements with these bytes (0, all ones = NaN / -1, a middle value,
# +-huge): a written element whose bytes differ between the runs depends on them. Every
# instruction is tried this way, whatever its semantics; a dependence no fill shows (a
# garbage value compared for equality with one particular number) goes unseen.
FILLS = (0x00, 0xFF, 0x41, 0x7E, 0xFE)


class Replan(Exception):
    """Raised in a planned run (runner/plan.py) when garbage lands in a tensor the plan
    does not track: the run restarts on the plain path, which tracks every tensor."""


def execute_one(b, m, run, last=None) -> None:
    """Execute b (`run()`; `last()`: the final run, when it must differ, e.g. a shadow
    run's step), carrying unwritten inputs into unwritten results under the "error"
    policy (module comment above)."""
    if not m.carry or b.spec.meeting is not None or b.spec.collective:
        (last or run)()  # (a meeting's exchange moves unwritten elements itself: above)
    elif _reads_unwritten(b, m):
        _carry(b, m, run, last or run)
    else:  # every element it reads holds data: its reads need not look again
        m.lenient = True
        try:
            (last or run)()
        finally:
            m.lenient = False


def _reads_unwritten(b, m) -> bool:
    written = m.written
    for _, r in b.accesses().reads:
        w = written.get(r.decl.name)
        if w is not None and not m._selected_written(r, w).all():
            return True
    return False


def _carry(b, m, run, last) -> None:
    acc = b.accesses()
    snap = _Snapshot(m, acc.writes)
    n_warn = len(m.warnings)
    results = []
    for k, fill in enumerate(FILLS):
        if k:  # back to the state before the instruction
            snap.restore()
            del m.warnings[n_warn:]  # (each run warns alike: keep the last run's)
        _fill_unwritten(m, acc.reads, fill)
        m.lenient = True
        try:
            (last if k == len(FILLS) - 1 else run)()
        except NkirunError:  # the garbage made it fail (an index, a value it refuses)
            m.lenient = False
            snap.restore()
            for _, r in acc.reads:  # the E090 of its first unwritten read
                m._check_defined(r)
            raise
        finally:
            m.lenient = False
        results.append(snap.now())
    origin = _origin(b, m, acc.reads)
    for i, (n, index) in enumerate(snap.regions):
        differs = _differs([r[0][i] for r in results])
        if differs.any():
            if m.planned and snap.masks[i][0] is None:
                raise Replan()
            _mark_garbage(m, n, index, differs, origin)
    for a, vals in zip(snap.accs, zip(*(r[1] for r in results))):
        lanes = _differs(list(vals)).reshape(-1)
        a.defined[lanes] = False  # (a later `reduce` onto them is W052)


class _Snapshot:
    """What an instruction may change, saved before it runs: the regions of the tensors
    it writes (a plain view's box; the whole tensor for an access pattern, which may
    address any element), their written-masks and counts, the accumulators, the random
    number generators."""

    def __init__(self, m, writes):
        self.m = m
        seen, self.regions = set(), []
        for _, r in writes:
            index = None if r.ap is not None else tuple(  # (ints as slices: a view)
                slice(k, k + 1) if isinstance(k, (int, np.integer)) else k
                for k in (r.np_index if isinstance(r.np_index, tuple) else (r.np_index,)))
            key = (r.decl.name, repr(index))
            if key not in seen:
                seen.add(key)
                self.regions.append((r.decl.name, index))
        self.values = [self._region(n, i).copy() for n, i in self.regions]
        self.masks = []
        for n, i in self.regions:
            w = m.written.get(n)
            self.masks.append((w, None if w is None else (w if i is None else w[i]).copy(),
                               m._unwritten.get(n)))
        self.accs = (m.vector_acc, m.scalar_acc)
        self.acc_values = [(a.value.copy(), a.defined.copy()) for a in self.accs]
        self.prng = copy.deepcopy(getattr(m, "prng", None))  # (hw/prng.py: drawn from)

    def _region(self, name, index):
        buf = self.m.buffers[name]
        return buf if index is None else buf[index]

    def now(self) -> tuple:
        return ([self._region(n, i).copy() for n, i in self.regions],
                [a.value.copy() for a in self.accs])

    def restore(self) -> None:
        m = self.m
        for (n, i), v, (w, part, left) in zip(self.regions, self.values, self.masks):
            np.copyto(self._region(n, i), v)
            if w is not None and part is not None:
                (w if i is None else w[i])[...] = part
            m.written[n] = w
            if left is None:
                m._unwritten.pop(n, None)
            else:
                m._unwritten[n] = left
        for a, (v, d) in zip(self.accs, self.acc_values):
            np.copyto(a.value, v)
            np.copyto(a.defined, d)
        m.prng = copy.deepcopy(self.prng)


def _fill_unwritten(m, reads, fill: int) -> None:
    """Every byte of the unwritten elements each read may touch := `fill`: those of its
    box (the bounding box of what it reads), not the whole tensor (a matmul reading one
    128 x 128 tile of a large, partly written buffer filled all of it five times)."""
    for _, r in reads:
        w = m.written.get(r.decl.name)
        if w is None:
            continue
        buf = m.buffers[r.decl.name]
        box = _read_box(r, w.ndim)
        if box is not None:
            buf, w = buf[box], w[box]
        if w.all():
            continue
        unsigned = _UNSIGNED.get(buf.itemsize)
        if unsigned is None:  # (no unsigned integer of its size: byte by byte)
            raw = np.ascontiguousarray(buf).reshape(-1).view(np.uint8).reshape(buf.size, -1)
            raw[~w.reshape(-1)] = fill
            buf[...] = raw.view(buf.dtype).reshape(buf.shape)
            continue
        np.copyto(buf.view(unsigned), unsigned(int.from_bytes(bytes([fill]) * buf.itemsize,
                                                              "little")), where=~w)


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _read_box(r, ndim: int):
    """The NumPy basic index of the region of its tensor a read stays in, or None (the
    whole tensor: a runtime-indexed pattern, or one reinterpreting the tensor's dtype,
    whose box is not in the tensor's own elements)."""
    if r.ap is not None and (r.ap.indirect is not None or r.ap.dtype != r.decl.dtype):
        return None
    if len(r.box) != ndim or any(t <= 0 for _, _, t in r.box):
        return None
    return tuple(slice(s, s + (c - 1) * t + 1, t) for s, c, t in r.box)


def _differs(arrays: list) -> np.ndarray:
    """Which elements' bytes differ between the arrays (all of one shape and dtype)."""
    first = arrays[0]
    size = first.itemsize
    unsigned = _UNSIGNED.get(size)
    if unsigned is not None:  # one comparison per element, not per byte
        base = first.view(unsigned) if first.ndim else first.reshape(1).view(unsigned)
        out = np.zeros(base.shape, bool)
        for a in arrays[1:]:
            out |= (a.view(unsigned) if a.ndim else a.reshape(1).view(unsigned)) != base
        return out.reshape(first.shape)
    return differs_bytewise(arrays)


def differs_bytewise(arrays: list) -> np.ndarray:
    """_differs byte by byte (its plain twin, for any element size)."""
    first = arrays[0]
    size = first.itemsize
    out = np.zeros(first.size, bool)
    base = np.ascontiguousarray(first).reshape(-1).view(np.uint8).reshape(-1, size)
    for a in arrays[1:]:
        raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(-1, size)
        out |= (raw != base).any(axis=1)
    return out.reshape(first.shape)


def _origin(b, m, reads):
    """The read that started the garbage b computes on: an earlier one carried into a
    tensor b reads, else b's own first read of an unwritten element, as (instruction,
    tensor, where in it)."""
    from nkirun.runner.machine import _first_missing, _unwritten_hint
    for _, r in reads:
        o = m.garbage.get(r.decl.name)
        if o is not None:
            return o
    for _, r in reads:
        w = m.written.get(r.decl.name)
        if w is None:
            continue
        sel = m._selected_written(r, w)
        if not sel.all():
            off = m.indirect_rows(r)[0] if r.ap is not None and r.ap.indirect is not None \
                else None
            missing = ~sel.reshape(sel.shape if r.ap is None else r.shape)
            at = _first_missing(r, missing, sel.shape, off)
            where = (f"partition {at[0]}, free index {tuple(at[1:])}" if r.decl.on_chip
                     else f"index {tuple(at)}")
            where += (f" before anything wrote it ({int(missing.sum())} of the "
                      f"{missing.size} elements it reads are unwritten)")
            return (b, r.decl.name, where,
                    _unwritten_hint(r, missing.reshape(r.shape), policy=False))
    return None


def _mark_garbage(m, name: str, index, elements: np.ndarray, origin) -> None:
    """The `elements` (bool, of the region `index` of the tensor; None: all of it) hold
    garbage now: unwritten."""
    w = m.written.get(name)
    if w is None:
        w = m.written[name] = np.ones(m.buffers[name].shape, bool)
    region = w if index is None else w[index]
    region[elements.reshape(region.shape)] = False
    m._unwritten[name] = int(w.size - np.count_nonzero(w))
    if origin is not None:
        m.garbage.setdefault(name, origin)
        held = m.garbage_at.get(name)
        if held is None:
            held = m.garbage_at[name] = np.zeros(w.shape, bool)
        (held if index is None else held[index])[elements.reshape(region.shape)] = True


def garbage_error(m, name: str, what: str, region=None):
    """The E090 for garbage reaching `what` (an output, ...): tensor `name` (seen through
    `region`, a function from a tensor-shaped array to the part that matters) holds an
    unwritten element that some instruction computed from unwritten memory. Located at the
    read that started it; None when the unwritten elements are only never written."""
    from nkirun.diagnostics import RunError, error
    origin, held, w = m.garbage.get(name), m.garbage_at.get(name), m.written.get(name)
    if origin is None or held is None or w is None:
        return None
    region = region or (lambda a: a)
    bad = np.argwhere(region(held) & ~region(w))
    if not len(bad):
        return None
    index = tuple(int(i) for i in bad[0])
    b, tensor, where, hint = origin
    return RunError(error(
        "E090", f"{b.op} reads `{tensor}` at {where}; values computed from them reach "
        f"{what} `{name}` at index {index}", b.loc(), b.index, hint=hint))
