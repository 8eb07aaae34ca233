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

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.checker.intern import PendingOperands
from nkirun.diagnostics import Diagnostic
from nkirun.ir import Program
from nkirun.isa.bound import raw_args
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
            if box == self.boxes_whole:  # (every box inside: each either kept or set whole)
                self.boxes = [(b, state, w if who is None else who) if s == only
                              else (b, s, w) for b, s, w in self.boxes]
                return
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
    """((tensor, view, its _box) of each PSUM operand read, the same for those written)
    of b, and its `accumulate` mode (False where it has none)."""
    reads, writes = [], []
    for p in param_tables(b.spec).views:
        r = b.args.get(p.name)
        if isinstance(r, Resolved) and r.buffer == "psum":
            (writes if p.out else reads).append((r.decl.name, r, _box(r)))
    return tuple(reads), tuple(writes), _mode(b.spec, b.args)


def _mode(spec, args):
    return args.get("accumulate") if spec.param("accumulate") else False


def _form_operands(spec, pending):
    """_psum_operands of every instance of a call-site form (checker/intern.py
    PendingOperands), without making its Operands: its views are the template's rebased
    onto its own tensors (same index, same box), so per PSUM operand (position of its
    tensor among the instance's names or None: the template's own tensor, view, _box);
    its other values are the template's."""
    template, at = pending.template, {k: j for j, (k, _, _) in enumerate(pending.views)}
    reads, writes = [], []
    for p in param_tables(spec).views:
        r = template.get(p.name)
        if isinstance(r, Resolved) and r.buffer == "psum":
            (writes if p.out else reads).append((at.get(p.name), r, _box(r)))
    return tuple(reads), tuple(writes), _mode(spec, template)


def psum_hazards(program: Program, bound: list[Bound]) -> list[Diagnostic]:
    """W053-W055 over the program. speed.PSUM_BY_FORM: an instance of a call-site form
    whose Operands are not made yet is read through its form (_form_operands), and they
    stay unmade; twin: every instance's Operands read (tests/checker/test_psum_forms.py)."""
    tiles = {n: _Tile(t.shape, t.init is not None)
             for n, t in program.tensors.items() if t.buffer == "psum"}
    if not tiles:
        return []
    out: list[Diagnostic] = []
    op_at: dict = {}  # instruction index -> its op, made when a warning first names one

    def name(who):
        if not op_at:
            op_at.update((b.index, b.op) for b in bound)
        return f"{op_at.get(who, 'an instruction')} (instruction {who})"
    ops_of: dict = {}  # id(b.args) -> _psum_operands (see Bound: repeats share args)
    by_form: dict = {}  # id(template Operands) -> _form_operands
    forms = speed.PSUM_BY_FORM
    dropped = program.dropped
    for b in bound:
        if b.index in dropped:
            continue
        args = raw_args(b)
        if forms and args.__class__ is PendingOperands:
            rw = by_form.get(id(args.template))
            if rw is None:
                rw = by_form[id(args.template)] = _form_operands(b.spec, args)
            reads, writes, mode = rw
            if not reads and not writes:
                continue
            names = args.names_in
            for j, r, box in reads:  # (as below, each tensor named by the instance)
                tiles[r.decl.name if j is None else names[j]].set(r, box, None, MM_READ,
                                                                  None, only=MM_UNREAD)
            for j, r, box in writes:
                t = r.decl.name if j is None else names[j]
                out += _write(b, t, r, box, tiles[t], None, name, mode)
            continue
        else:
            rw = ops_of.get(id(b.args))
            if rw is None:
                rw = ops_of[id(b.args)] = _psum_operands(b)
            reads, writes, mode = rw
            if not reads and not writes:
                continue
        mask = b.mask if b.spec.mask_on == "dst" else None
        for t, r, box in reads:  # reads happen before the write
            tiles[t].set(r, box, None, MM_READ, None, only=MM_UNREAD)
        for t, r, box in writes:
            out += _write(b, t, r, box, tiles[t], mask, name, mode)
    return out


def _write(b: Bound, name: str, r: Resolved, box, tile: _Tile, mask, writer, mode
           ) -> list[Diagnostic]:
    out = []
    pe = b.engine == "tensor"
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
