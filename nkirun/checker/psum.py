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
from nkirun.source.operands import Resolved

EMPTY, MM_UNREAD, MM_READ, OTHER = 0, 1, 2, 3  # element states
INITIAL = -1  # "writer" of declared initial contents


class _Tile:
    """The state of one PSUM tensor: one value for every element while that holds (the
    common case of whole-tile writes), else per-element arrays; `who` is the index of
    the instruction that last wrote each element."""

    def __init__(self, shape, initialised: bool):
        self.shape = shape
        self.state, self.who = (OTHER, INITIAL) if initialised else (EMPTY, INITIAL)
        self.states: np.ndarray | None = None
        self.whos: np.ndarray | None = None

    def find(self, r: Resolved, mask, state: int) -> int | None:
        """The writer of some element of the region in `state`, or None."""
        if self.states is None:
            return self.who if self.state == state else None
        sel = self.states[r.np_index] == state
        if mask is not None:
            sel &= mask.reshape(sel.shape)
        if not sel.any():
            return None
        return int(self.whos[r.np_index][sel].flat[0])

    def set(self, r: Resolved, mask, state: int, who: int | None,
            only: int | None = None) -> None:
        """Region (where mask holds, and where it is in state `only`) := state, and its
        writer := who (None: keep the writer)."""
        if self.states is None:
            if only is not None and self.state != only:
                return  # uniform and not in `only`: nothing to change
            if mask is None and r.is_whole:
                self.state, self.who = state, self.who if who is None else who
                return
            self.states = np.full(self.shape, self.state, np.int8)
            self.whos = np.full(self.shape, self.who, np.int64)
        elif mask is None and r.is_whole and only is None:
            self.state, self.who, self.states, self.whos = state, who, None, None
            return
        sel = self.states[r.np_index]
        hit = np.ones(sel.shape, bool) if only is None else sel == only
        if mask is not None:
            hit &= mask.reshape(sel.shape)
        sel[hit] = state
        if who is not None:
            self.whos[r.np_index][hit] = who


def _psum_operands(b: Bound):
    """(PSUM operands read, PSUM operands written) of b."""
    reads, writes = [], []
    for p in param_tables(b.spec).views:
        r = b.args.get(p.name)
        if isinstance(r, Resolved) and r.buffer == "psum":
            (writes if p.out else reads).append(r)
    return tuple(reads), tuple(writes)


def psum_hazards(program: Program, bound: list[Bound]) -> list[Diagnostic]:
    tiles = {n: _Tile(t.shape, t.init is not None)
             for n, t in program.tensors.items() if t.buffer == "psum"}
    if not tiles:
        return []
    out: list[Diagnostic] = []
    op_at = {b.index: b.op for b in bound}
    name = lambda who: f"{op_at.get(who, 'an instruction')} (instruction {who})"  # noqa: E731
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
        for r in reads:  # reads happen before the write
            tiles[r.decl.name].set(r, None, MM_READ, None, only=MM_UNREAD)
        for r in writes:
            out += _write(b, r, tiles[r.decl.name], mask, name)
    return out


def _write(b: Bound, r: Resolved, tile: _Tile, mask, writer) -> list[Diagnostic]:
    name, out = r.decl.name, []
    pe = b.engine == "tensor"
    mode = b.args.get("accumulate") if b.spec.param("accumulate") else False
    if pe and mode is not False:  # accumulates where the elements hold data
        who = tile.find(r, mask, OTHER)
        if who is not None:
            by = "its declared initial contents" if who == INITIAL else writer(who)
            out.append(b.warn(
                "W053", f"accumulates into `{name}`, which {by} wrote, not a matmul: "
                "undefined on trn1/inf2/trn2 hardware (NeuronCore-v2/v3)", "dst",
                hint="start the accumulation with a matmul (accumulate: false, or unset on "
                     "unwritten PSUM) instead of initialising the PSUM tile"))
        if mode is None:
            who = tile.find(r, mask, MM_READ)
            if who is not None:
                out.append(b.warn(
                    "W055", f"`accumulate` is unset, so this adds onto `{name}`'s earlier "
                    f"result from {writer(who)}, which was already read", "dst",
                    hint="a new accumulation group needs `accumulate: false` on its first "
                         "matmul; write `accumulate: true` if adding on is intended"))
    else:
        who = tile.find(r, mask, MM_UNREAD)
        if who is not None:
            out.append(b.warn(
                "W054", f"overwrites `{name}`, the result of {writer(who)}, before anything "
                "read it", "dst",
                hint="read the result first, or leave `accumulate` unset / true to add "
                     "onto it" if pe else "read the result first, or drop the matmul"))
    tile.set(r, mask, MM_UNREAD if pe else OTHER, b.index)
    return out
