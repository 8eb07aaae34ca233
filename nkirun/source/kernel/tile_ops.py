"""Assignment into tiles and tile arithmetic (the pre-0.2 NKI API, legacy.py):
`t[key] = value`, `t[key] += value`, `a + b`, `-a`, and legacy block buffers
(`nl.ndarray((B, nl.par_dim(P), F))`: B tiles of (P, F))."""
from __future__ import annotations

from nkirun.isa import REGISTRY
from nkirun.source.kernel import consts, legacy
from nkirun.source.kernel.unsupported import here, kernel_error


def _tracer():
    from nkirun.source.kernel.session import current
    return current()


def record(op: str, values: dict, loc=None, tables=None) -> None:
    """Record one instruction now (after the pending one), honouring its `mask=`."""
    tracer = _tracer()
    legacy.flush(tracer)
    legacy.record(tracer, op, values, loc or here(), tables)


def fit(view, shape):
    """`view` with the shape `shape` when the two differ only in size-1 dims."""
    shape = tuple(shape)
    if tuple(view.shape) == shape:
        return view
    pairs = [(s, c) for s, c in view.get_pattern() if c != 1]
    if [c for c in shape if c != 1] != [c for _, c in pairs]:
        raise kernel_error("E603", f"cannot assign a {list(shape)} value into a "
                           f"{list(view.shape)} view of {view.name}")
    it = iter(pairs)
    pattern = [next(it) if c != 1 else (1, 1) for c in shape]
    from nkirun.source.kernel.views import with_pattern
    return with_pattern(view, pattern, view.offset)


def _api(pending):
    """How NKI's API spells the pending instruction (its SPEC.nki), or None."""
    if pending is None:
        return None
    return REGISTRY[pending.op].nki


def _same_view(a, b) -> bool:
    return a._rec is b._rec and a.offset == b.offset and a.get_pattern() == b.get_pattern()


def assign(target, key, value) -> None:
    from nkirun.source.kernel.tensor import ndarray
    view = target[key]
    tracer = _tracer()
    loc = here()
    p = legacy.take(tracer, value)
    api = _api(p)
    recast = api.recast if api is not None and api.recast \
        and str(p.result.dtype) != str(view.dtype) else ""
    if p is not None and (p.result.buffer is not view.buffer or recast == "copy"):
        # a PSUM result into SBUF (or back), a result into another dtype that its
        # instruction does not cast (nc_transpose): computed in its own tile, then copied
        tracer.legacy_pending = p
        p = None
    if p is not None:
        p.values["dst"] = fit(view, p.result.shape)
        if recast:
            p.op = recast  # an instruction that casts instead (load: dma_copy)
        if api.accumulate and p.values.get(api.accumulate) is None:
            p.values[api.accumulate] = False  # `=` overwrites the PSUM tile
        legacy.flush(tracer)
        legacy.record(tracer, p.op, p.values, p.loc, p.tables)
        return
    legacy.flush(tracer)
    if isinstance(value, LoopReduce):
        value.into(view, loc)
        return
    if isinstance(value, ndarray):
        if _same_view(view, value):
            return  # `t[k] += x` ends by assigning t[k] to itself
        hbm = not view._rec.on_chip or not value._rec.on_chip
        legacy.record(tracer, "dma_copy" if hbm else "tensor_copy",
                      {"dst": fit(view, value.shape), "src": value}, loc)
        return
    if isinstance(value, (int, float)) or hasattr(value, "item"):
        legacy.record(tracer, "memset", {"dst": view, "value": value}, loc)
        return
    raise kernel_error("E603", f"cannot assign {type(value).__name__} into a tensor",
                       hint="assign a tile, a number, or the result of an nl/nisa call")


def inplace(target, other, op: str):
    """`target op= other` (target a view): the result written into target."""
    tracer = _tracer()
    p = legacy.take(tracer, other)
    if p is not None and _api(p).accumulate and op == "add" and target.buffer is consts.psum:
        p.values["dst"] = fit(target, p.result.shape)  # accumulate: the auto rule
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
    from nkirun.source.kernel.convenience import combination
    instruction, values, _, _ = combination(op, x, y)
    record(instruction, dict(values, dst=dst), loc)


class LoopReduce:
    """`nl.loop_reduce(x, op, loop_indices)` (pre-0.2): assigned into a tile, it reduces x
    over the iterations of the loops named: the first iteration (every index 0) copies x
    in, the later ones combine x into what the tile holds."""

    def __init__(self, x, op, loop_indices, dtype=None, mask=None, **_):
        self.x, self.op, self.mask = x, getattr(op, "__name__", op), mask
        self.first = all(int(i) == 0 for i in loop_indices)

    def into(self, view, loc):
        from nkirun.source.kernel.convenience import combination
        values = {"mask": self.mask} if self.mask is not None else {}
        x = self.x
        if self.first:
            values.update(dst=fit(view, x.shape), src=x)
            return record("tensor_copy", values, loc)
        op = getattr(self.op, "ir", self.op)
        op = {"sum": "add", "max": "maximum", "min": "minimum", "amax": "maximum",
              "amin": "minimum"}.get(op, op)
        instruction, more, _, _ = combination(op, view, x)
        values.update(more, dst=view)
        return record(instruction, values, loc)


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
        self.tiles = [make(self.shape[k:]) for _ in range(count)]
        self.name = self.tiles[0].name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _split(self, key):
        key = list(key) if isinstance(key, tuple) else [key]
        flat = 0
        for axis, n in enumerate(self.blocks):
            k = key[axis] if axis < len(key) else None
            if hasattr(k, "__index__") and not isinstance(k, bool) and \
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
        return self.tiles[flat], tuple(rest)

    def __getitem__(self, key):
        tile, rest = self._split(key)
        return tile[rest] if rest else tile

    def __setitem__(self, key, value):
        tile, rest = self._split(key)
        tile[rest if rest else ...] = value

    def __repr__(self) -> str:
        return f"nl.ndarray(name={self.name!r}, shape={self.shape}, blocks={self.blocks})"


def block_buffer(shape, dtype, buffer, name):
    """A BlockBuffer when `shape` has nl.par_dim after its first dim, else None."""
    if not any(isinstance(n, legacy.ParDim) for n in shape[1:]):
        return None
    from nkirun.source.kernel.tensor import ndarray
    return BlockBuffer(shape, dtype, buffer, name,
                       lambda tile: ndarray(tuple(int(n) for n in tile), dtype, buffer, name))
