"""PSUM accumulation hazards: where hardware is undefined or a literal port is surprising.

Tracked per PSUM element, in program order (NKI 0.6 `nc_matmul`, "Accumulation mode",
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.nc_matmul.html):
* W053: a Tensor-engine matmul accumulates (accumulate true, or unset over elements that
  hold data) onto PSUM that a non-matmul instruction value-initialised (memset,
  tensor_copy, ...) or that was declared with initial contents. The page: on
  NeuronCore-v2 and -v3 (trn1, inf2, trn2: every nkirun target) this is undefined on
  hardware.
* W054: a matmul result is overwritten (by `accumulate: false`, another Tensor-engine
  write, or any other instruction) before anything read it: the work is lost.
* W055: a matmul with `accumulate` unset lands on a matmul result that was already read.
  NKI's rule accumulates there (the location was written before), which is right for a
  running sum but is the classic bug of a PSUM tile reused for the next output block.

Readings: Tensor-engine writes (nc_matmul, nc_transpose on the PE array) count as matmul
writes; a masked write changes only the elements its mask selects; an instruction that
reads a PSUM operand reads it before it writes (so `tensor_tensor: {dst: c, data1: c}`
is a read, then a non-matmul write).
"""
from __future__ import annotations

import numpy as np

from nkirun.diagnostics import Diagnostic
from nkirun.ir import Program
from nkirun.isa.spec import Bound, param_tables
from nkirun.views.operands import Resolved

EMPTY, MM_UNREAD, MM_READ, OTHER = 0, 1, 2, 3  # element states
INITIAL = -1  # "writer" of declared initial contents


MAX_BOXES = 256  # beyond this many pieces a tile's state is kept per element


class _Tile:
    """The state of one PSUM tensor: disjoint boxes (per dim [lo, hi)) that cover it, each
    with one state and the index of the instruction that last wrote it, which stays cheap
    for the usual whole-tile and sub-tile writes; per-element arrays once a strided view,
    a mask or heavy fragmentation needs them."""

    def __init__(self, shape, initialised: bool):
        self.shape = shape
        self.boxes_whole = tuple((0, n) for n in shape)
        self.boxes = [(self.boxes_whole, OTHER if initialised else EMPTY, INITIAL)]
        self.states: np.ndarray | None = None
        self.whos: np.ndarray | None = None

    def find(self, r: Resolved, box, mask, state: int) -> int | None:
        """The writer of some element of the region (view r, its _box) in `state`, or
        None."""
        box = None if mask is not None else box
        if self.states is None and box is not None:
            for b, s, who in self.boxes:
                if s == state and _overlap(b, box):
                    return who
            return None
        self._to_arrays()
        sel = self.states[r.np_index] == state
        if mask is not None:
            sel &= mask.reshape(sel.shape)
        if not sel.any():
            return None
        return int(self.whos[r.np_index][sel].flat[0])

    def set(self, r: Resolved, box, mask, state: int, who: int | None,
            only: int | None = None) -> None:
        """Region (view r, its _box; where mask holds, and where it is in state `only`)
        := state, and its writer := who (None: keep the writer)."""
        box = None if mask is not None else box
        if box is not None and only is None and box == self.boxes_whole:
            self.boxes, self.states, self.whos = [(box, state, who)], None, None
            return
        if self.states is None and box is not None:
            kept = []
            for b, s, w in self.boxes:
                if (only is not None and s != only) or not _overlap(b, box):
                    kept.append((b, s, w))
                    continue
                kept += [(piece, s, w) for piece in _subtract(b, box)]
                kept.append((_intersect(b, box), state, w if who is None else who))
            self.boxes = kept
            if len(kept) <= MAX_BOXES:
                return
        self._to_arrays()
        sel = self.states[r.np_index]
        hit = np.ones(sel.shape, bool) if only is None else sel == only
        if mask is not None:
            hit &= mask.reshape(sel.shape)
        sel[hit] = state
        if who is not None:
            self.whos[r.np_index][hit] = who

    def _to_arrays(self) -> None:
        if self.states is not None:
            return
        self.states = np.empty(self.shape, np.int8)
        self.whos = np.empty(self.shape, np.int64)
        for b, s, w in self.boxes:
            at = tuple(slice(lo, hi) for lo, hi in b)
            self.states[at], self.whos[at] = s, w


def _box(r: Resolved):
    """The view's region as per-dim [lo, hi), or None for a strided view."""
    if any(step != 1 and count > 1 for _, count, step in r.box):
        return None
    return tuple((start, start + count) for start, count, _ in r.box)


def _overlap(a, b) -> bool:
    return all(alo < bhi and blo < ahi for (alo, ahi), (blo, bhi) in zip(a, b))


def _intersect(a, b):
    return tuple((max(alo, blo), min(ahi, bhi)) for (alo, ahi), (blo, bhi) in zip(a, b))


def _subtract(a, b) -> list:
    """a minus b (overlapping boxes), as disjoint boxes."""
    pieces, core = [], list(a)
    for d, ((alo, ahi), (blo, bhi)) in enumerate(zip(a, b)):
        if alo < blo:
            pieces.append(tuple(core[:d]) + ((alo, blo),) + tuple(a[d + 1:]))
        if bhi < ahi:
            pieces.append(tuple(core[:d]) + ((bhi, ahi),) + tuple(a[d + 1:]))
        core[d] = (max(alo, blo), min(ahi, bhi))
    return pieces


def _psum_operands(b: Bound):
    """((view, its _box) of each PSUM operand read, the same for those written) of b."""
    reads, writes = [], []
    for p in param_tables(b.spec).views:
        r = b.args.get(p.name)
        if isinstance(r, Resolved) and r.buffer == "psum":
            (writes if p.out else reads).append((r, _box(r)))
    return tuple(reads), tuple(writes)


def psum_hazards(program: Program, bound: list[Bound]) -> list[Diagnostic]:
    tiles = {n: _Tile(t.shape, t.init is not None)
             for n, t in program.tensors.items() if t.buffer == "psum"}
    if not tiles:
        return []
    out: list[Diagnostic] = []
    op_at = {b.index: b.op for b in bound}
    name = lambda who: f"{op_at.get(who, 'an instruction')} (instruction {who})"
    ops_of: dict = {}  # id(b.args) -> _psum_operands (see Bound: repeats share args)
    for b in bound:
        if b.index in program.dropped:
            continue
        rw = ops_of.get(id(b.args))
        if rw is None:
            rw = ops_of[id(b.args)] = _psum_operands(b)
        reads, writes = rw
        if not reads and not writes:
            continue
        mask = b.mask if b.spec.mask_on == "dst" else None
        for r, box in reads:  # reads happen before the write
            tiles[r.decl.name].set(r, box, None, MM_READ, None, only=MM_UNREAD)
        for r, box in writes:
            out += _write(b, r, box, tiles[r.decl.name], mask, name)
    return out


def _write(b: Bound, r: Resolved, box, tile: _Tile, mask, writer) -> list[Diagnostic]:
    name, out = r.decl.name, []
    pe = b.engine == "tensor"
    mode = b.args.get("accumulate") if b.spec.param("accumulate") else False
    if pe and mode is not False:  # accumulates where the elements hold data
        who = tile.find(r, box, mask, OTHER)
        if who is not None:
            by = "its declared initial contents" if who == INITIAL else writer(who)
            out.append(b.warn(
                "W053", f"accumulates into `{name}`, which {by} wrote, not a matmul: "
                "undefined on trn1/inf2/trn2 hardware (NeuronCore-v2/v3)", "dst",
                hint="start the accumulation with a matmul (accumulate: false, or unset on "
                     "unwritten PSUM) instead of initialising the PSUM tile"))
        if mode is None:
            who = tile.find(r, box, mask, MM_READ)
            if who is not None:
                out.append(b.warn(
                    "W055", f"`accumulate` is unset, so this adds onto `{name}`'s earlier "
                    f"result from {writer(who)}, which was already read", "dst",
                    hint="a new accumulation group needs `accumulate: false` on its first "
                         "matmul; write `accumulate: true` if adding on is intended"))
    else:
        who = tile.find(r, box, mask, MM_UNREAD)
        if who is not None:
            out.append(b.warn(
                "W054", f"overwrites `{name}`, the result of {writer(who)}, before anything "
                "read it", "dst",
                hint="read the result first, or leave `accumulate` unset / true to add "
                     "onto it" if pe else "read the result first, or drop the matmul"))
    tile.set(r, box, mask, MM_UNREAD if pe else OTHER, b.index)
    return out
