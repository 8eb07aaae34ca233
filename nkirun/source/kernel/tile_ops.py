"""Assignment into tiles and tile arithmetic (the pre-0.2 NKI API, legacy.py):
`t[key] = value`, `t[key] += value`, `a + b`, `-a`, and legacy block buffers
(`nl.ndarray((B, nl.par_dim(P), F))`: B tiles of (P, F))."""
from __future__ import annotations

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.isa import REGISTRY
from nkirun.source.kernel import consts, legacy, tensor
from nkirun.source.kernel.convenience import binary, broadcast_to, combination, negative
from nkirun.source.kernel.tensor import current, ndarray, rec_of_kind
from nkirun.source.kernel.unsupported import call_loc, here, kernel_error, unsupported


def _api(pending):
    """How NKI's API spells the pending instruction (its SPEC.nki), or None."""
    if pending is None:
        return None
    return REGISTRY[pending.op].nki


def _same_view(a, b) -> bool:
    return a._rec is b._rec and a.offset == b.offset and a.get_pattern() == b.get_pattern()


def assign(target, key, value) -> None:
    view = target[key]
    tracer = current()
    p = legacy.take(tracer, value)
    copy_mask = None
    api = _api(p)
    recast = api.recast if api is not None and api.recast \
        and str(p.result.dtype) != str(view.dtype) else ""
    if p is not None and (p.result.buffer is not view.buffer or recast == "copy"):
        # a PSUM result into SBUF (or back), a result into another dtype that its
        # instruction does not cast (nc_transpose): computed in its own tile, then copied
        # under the same mask= (a masked-out result is no value to copy)
        tracer.legacy_pending = p
        copy_mask = p.values.get("mask")
        p = None
    if p is not None:
        p.values["dst"] = legacy.fit(view, p.result.shape)
        if recast:
            p.op = recast  # an instruction that casts instead (load: dma_copy)
        if api.accumulate and p.values.get(api.accumulate) is None:
            p.values[api.accumulate] = False  # `=` overwrites the PSUM tile
        legacy.flush(tracer)
        legacy.record(tracer, p.op, p.values, p.loc, p.tables)
        return
    loc = here()  # (the taken result above keeps its call's location)
    legacy.flush(tracer)
    if isinstance(value, LoopReduce):
        value.into(view, loc)
        return
    if isinstance(value, ndarray):
        if _same_view(view, value):
            return  # `t[k] += x` ends by assigning t[k] to itself
        hbm = not view._rec.on_chip or not value._rec.on_chip
        values = {"dst": legacy.fit(view, value.shape), "src": value}
        if copy_mask is not None:
            values["mask"] = copy_mask
        legacy.record(tracer, "dma_copy" if hbm else "tensor_copy", values, loc)
        return
    if isinstance(value, (int, float)) or hasattr(value, "item"):
        legacy.record(tracer, "memset", {"dst": view, "value": value}, loc)
        return
    raise kernel_error("E603", f"cannot assign {type(value).__name__} into a tensor",
                       hint="assign a tile, a number, or the result of an nl/nisa call")


def inplace(target, other, op: str):
    """`target op= other` (target a view): the result written into target."""
    tracer = current()
    p = legacy.take(tracer, other)
    if p is not None and _api(p).accumulate and op == "add" and target.buffer is consts.psum:
        p.values["dst"] = legacy.fit(target, p.result.shape)  # accumulate: the auto rule
        legacy.flush(tracer)
        legacy.record(tracer, p.op, p.values, p.loc, p.tables)
        return target
    if p is not None:
        tracer.legacy_pending = p
    legacy.flush(tracer)
    combine(target, target, other, op, here())
    return target


def combine(dst, x, y, op: str, loc) -> None:
    """dst = x op y for tiles and numbers (convenience.combination)."""
    instruction, values, _, _ = combination(op, x, y)
    legacy.record_now(instruction, dict(values, dst=dst), loc)


class LoopReduce:
    """`nl.loop_reduce(x, op, loop_indices)` (pre-0.2): assigned into a tile, it reduces x
    over the iterations of the loops named: the first iteration (every index 0) copies x
    in, the later ones combine x into what the tile holds."""

    def __init__(self, x, op, loop_indices, dtype=None, mask=None, **_):
        self.x, self.op, self.mask = x, getattr(op, "__name__", op), mask
        self.first = all(int(i) == 0 for i in loop_indices)

    def into(self, view, loc):
        values = {"mask": self.mask} if self.mask is not None else {}
        x = self.x
        if self.first:
            values.update(dst=legacy.fit(view, x.shape), src=x)
            return legacy.record_now("tensor_copy", values, loc)
        op = getattr(self.op, "ir", self.op)
        op = {"sum": "add", "max": "maximum", "min": "minimum", "amax": "maximum",
              "amin": "minimum"}.get(op, op)
        instruction, more, _, _ = combination(op, view, x)
        values.update(more, dst=view)
        return legacy.record_now(instruction, values, loc)


# ---- block buffers -------------------------------------------------------------------------
class BlockBuffer:
    """`nl.ndarray((B..., nl.par_dim(P), F...))`: one (P, F...) tile per block index, each
    its own tensor (named `name`, `name_1`, ...). Index the block dims with ints first."""

    def __init__(self, shape, dtype, buffer, name, make):
        k = next(i for i, n in enumerate(shape) if isinstance(n, legacy.ParDim))
        self.shape, self.dtype, self.buffer = tuple(int(n) for n in shape), dtype, buffer
        self.blocks = self.shape[:k]
        count = 1
        for n in self.blocks:
            count *= n
        self.tiles = make(count, self.shape[k:])  # (block_tiles)
        self.name = self.tiles[0].name
        self.unfilled, self.fill = set(), None

    def fill_lazily(self, value, loc) -> None:
        """`nl.zeros`/`nl.full` of a block buffer: each block's memset is recorded when the
        block is first used, and not at all when that use overwrites the whole block (a
        compiler sinks such initialisation, so 64 PSUM blocks are not all live at once)."""
        self.fill, self.fill_loc = value, loc
        self.unfilled = set(range(len(self.tiles)))

    def _filled(self, flat: int) -> None:
        if flat in self.unfilled:  # (not flushing a pending result: it may be bound for here)
            self.unfilled.discard(flat)
            legacy.record(current(), "memset", {"dst": self.tiles[flat], "value": self.fill},
                          self.fill_loc)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _split(self, key):
        flat, rest = self._index(key)
        self._filled(flat)
        return self.tiles[flat], rest

    def _index(self, key):
        key = list(key) if isinstance(key, tuple) else [key]
        flat = 0
        for axis, n in enumerate(self.blocks):
            k = key[axis] if axis < len(key) else None
            if k.__class__ is int:  # (the loop variables: what the test below passes)
                i = k
            elif hasattr(k, "__index__") and not isinstance(k, bool) and \
                    getattr(k, "ndim", 0) == 0:
                i = int(k.__index__())
            elif hasattr(k, "size") and k.size == 1 and k.dtype.kind in "iu":
                i = int(k.reshape(-1)[0])
            else:
                raise kernel_error("E607", f"a block buffer's block dims (the dims before "
                                   f"nl.par_dim) are indexed with ints; got {k!r}",
                                   hint="loop over the blocks")
            if not 0 <= i < n:
                raise kernel_error("E603", f"block index {i} is out of bounds for size {n}")
            flat = flat * n + i
        rest = key[len(self.blocks):]
        return flat, tuple(rest)

    def __getitem__(self, key):
        tile, rest = self._split(key)
        return tile[rest] if rest else tile

    def __setitem__(self, key, value):
        flat, rest = self._index(key)
        if flat in self.unfilled and _overwrites(rest, value):
            self.unfilled.discard(flat)  # its fill would never be read
        self._filled(flat)
        self.tiles[flat][rest if rest else ...] = value

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported(f"nki.language.NkiTensor.{name} on a block buffer (index a block "
                          f"first: buf[i].{name})")

    def view(self, dtype):
        """Every block reinterpreted as `dtype` (`t.view(nl.float8_e4m3)` of float32 blocks:
        four bytes per element), as a block buffer of those views."""
        for flat in sorted(self.unfilled):
            self._filled(flat)
        out = object.__new__(BlockBuffer)
        out.unfilled, out.fill = set(), None
        out.tiles = [t.view(dtype) for t in self.tiles]
        out.blocks, out.name = self.blocks, self.name
        out.shape, out.dtype = self.blocks + tuple(out.tiles[0].shape), out.tiles[0].dtype
        out.buffer = self.buffer
        return out

    def __repr__(self) -> str:
        return f"nl.ndarray(name={self.name!r}, shape={self.shape}, blocks={self.blocks})"


def _overwrites(rest, value) -> bool:
    """Whether `block[rest] = value` writes every element of the block: the whole block,
    from an unmasked result or tile that is not itself partly written (legacy.py)."""
    if any(not (k is Ellipsis or isinstance(k, slice) and k == slice(None)) for k in rest):
        return False
    tracer = current()
    valid = tracer.__dict__.get("legacy_valid") or {}
    p = getattr(tracer, "legacy_pending", None)
    if p is not None and p.result is value:
        return p.values.get("mask") is None and not any(
            getattr(v, "_rec", None) in valid for v in p.values.values())
    return getattr(value, "_rec", None) is not None and value._rec not in valid


def block_buffer(shape, dtype, buffer, name):
    """A BlockBuffer when `shape` has nl.par_dim after its first dim, else None."""
    if not any(isinstance(n, legacy.ParDim) for n in shape[1:]):
        return None
    if consts.to_buffer(buffer).ir == "hbm":
        return None  # HBM has no partitions: `(B, nl.par_dim(N), M)` there is one tensor
    return BlockBuffer(shape, dtype, buffer, name,
                       lambda count, tile: block_tiles(count, tile, dtype, buffer, name))


def block_tiles_plain(count: int, tile, dtype, buffer, name) -> list:
    """A block buffer's `count` tiles, each an `nl.ndarray(tile, dtype, buffer, name)`."""
    return [ndarray(tuple(int(n) for n in tile), dtype, buffer, name) for _ in range(count)]


def block_tiles(count: int, tile, dtype, buffer, name) -> list:
    """block_tiles_plain's tiles under speed.BLOCK_TILES: the first through nl.ndarray
    (whose allocation makes or finds the call site's plan), the others named and made from
    that plan as Tracer.allocate's own shortcut makes each, with the call site found once
    (a block buffer of 4,096 blocks walked the kernel's frames 4,096 times); the plain
    twin when there is no plan (tests/kernel/test_block_tiles.py compares the two)."""
    shape = tuple(int(n) for n in tile)
    first = ndarray(shape, dtype, buffer, name)
    if not speed.BLOCK_TILES or not speed.ALLOC_PLANS or count < 2:
        return [first, *block_tiles_plain(count - 1, shape, dtype, buffer, name)]
    tracer, loc = current(), call_loc()
    try:  # (Tracer.allocate's key of its plans; an unhashable dtype or buffer: no plan)
        plan = tracer.alloc_plans.get((id(loc), shape, dtype, buffer, name)) \
            if name.__class__ is str and first._rec.loc is loc else None
    except TypeError:
        plan = None
    if plan is None:
        return [first, *block_tiles_plain(count - 1, shape, dtype, buffer, name)]
    base, kind, unique = plan[0], plan[1], tracer._unique_identifier
    core = tracer.builder.core if tracer.lnc > 1 else None
    tiles = [first]
    for _ in range(count - 1):
        rec = rec_of_kind(unique(base), kind, loc, core)
        v = _new(ndarray)  # (ndarray.__new__'s handle on the whole tensor)
        v._rec, v._v, v._dtype, v._ir, v._lk = rec, rec.whole, rec.dtype, None, None
        tiles.append(v)
    return tiles


_new = object.__new__


# ndarray's operators (tensor.py, below this module) are these
tensor.provide(assign=assign, inplace=inplace, block_buffer=block_buffer, binary=binary,
               negative=negative, broadcast_to=broadcast_to)
