"""The `nl` compute functions NKI 0.3+ documents as convenience wrappers of `nki.isa`
instructions: each allocates its result tile in SBUF (PSUM for matmul/transpose) and
records the instruction(s) it stands for.

Readings (the docs name the wrapped instruction, not the exact lowering):
- `nl.load`/`nl.store` are nkirun's `load`/`store` (a `dma_copy` when `dtype=` casts);
  `nl.copy` is `tensor_copy`; `nl.zeros/ones/full` are `memset`.
- Element-wise: two tiles -> `tensor_tensor`; a tile and a number, or a tile and a (P, 1)
  tile -> `tensor_scalar` (`reverse0` when the tile is the second operand); a function
  of one tile -> `activation`; `nl.negative` -> `tensor_scalar` multiply by -1. A (P, 1)
  column that is not float32 (tensor_scalar's arithmetic operand tiles are) is read
  through a zero-step view by a `tensor_tensor` instead. Tile operators `a < b` & co. are
  `nl.less` & co.; `nl.invert`/`nl.logical_not` are a one-operand `tensor_scalar`.
- `nl.floor`/`nl.ceil`: NKI documents the result only; `rounding` builds it exactly from
  documented instructions (see there).
- Reductions -> `tensor_reduce` (`nl.mean` adds a `tensor_scalar` multiply by 1/n).
- `nl.broadcast_to` across partitions ((1, F) -> (P, F)) copies row 0 with `dma_copy` and
  doubles the filled rows with further `dma_copy`s (1 + ceil(log2 P) DMAs, exact); along
  a free dim ((P, 1) -> (P, F)) it is `memset` 0 then `tensor_scalar` add.
- `nl.transpose` -> `nc_transpose` into PSUM; `nl.matmul(x, y, transpose_x=True)` ->
  `nc_matmul` into PSUM (without transpose_x, x is first transposed through PSUM/SBUF).
- The result dtype is `dtype=` when given, else the first tile operand's dtype.
"""
from __future__ import annotations

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.source.kernel import consts, copy_chains, legacy
from nkirun.source.kernel.index_arrays import with_pattern
from nkirun.source.kernel.tensor import current, ndarray
from nkirun.source.kernel.unsupported import here, kernel_error


def _emit(instruction, /, **values):
    legacy.record_now(instruction, values, here())


def _result(t, instruction, /, **values):
    """t, the result of `instruction` (recorded lazily: legacy.py)."""
    return legacy.defer(current(), t, instruction, values, here())


def _new(shape, dtype, buffer=consts.sbuf, name=""):
    return ndarray(tuple(shape), dtype, buffer, name)


def _is_tile(x) -> bool:
    return isinstance(x, ndarray)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) or hasattr(x, "item")


# ---- memory ----------------------------------------------------------------------------
def full(shape, fill_value, dtype, buffer=consts.sbuf, name="", mask=None, **_):
    t = _new((shape,) if isinstance(shape, int) else shape, dtype, buffer, name)
    if not isinstance(t, ndarray):  # a legacy block buffer: each block filled at first use
        t.fill_lazily(fill_value, here())
        return t
    return _result(t, "memset", dst=t, value=fill_value, mask=mask)


def zeros(shape, dtype, buffer=consts.sbuf, name="", mask=None, **_):
    return full(shape, 0.0, dtype, buffer, name, mask)


def ones(shape, dtype, buffer=consts.sbuf, name="", mask=None, **_):
    return full(shape, 1.0, dtype, buffer, name, mask)


def zeros_like(x, dtype=None, buffer=None, name="", mask=None, **_):
    return zeros(x.shape, dtype or x.dtype, buffer or x.buffer, name, mask)


def empty_like(x, dtype=None, buffer=None, name=""):
    return ndarray(x.shape, dtype or x.dtype, buffer or x.buffer, name)


def load(src, dtype=None, mask=None, **_):
    t = _new(src.shape, dtype or src.dtype)
    return _result(t, "load" if dtype is None or str(dtype) == str(src.dtype) else
                   "dma_copy", dst=t, src=src, mask=mask)


def store(dst, value, mask=None, **_):
    if not _is_tile(value) and _number(value):  # `nl.store(t, 100)`: a memset of t (NKI docs)
        tile = _new(dst.shape, dst.dtype)
        _emit("memset", dst=tile, value=value)
        value = tile
    if not _is_tile(value):
        raise kernel_error("E603", f"nl.store: value must be a tile, got {value!r}")
    _emit("store", dst=legacy.fit(dst, value.shape), src=value, mask=mask)


def copy(x, dtype=None, mask=None, **_):
    t = _new(x.shape, dtype or x.dtype)
    return _result(t, "tensor_copy", dst=t, src=x, mask=mask)


# ---- element-wise --------------------------------------------------------------------------
def combination(op: str, x, y):
    """(instruction, its values without dst, the result's shape and dtype) for x op y."""
    if _is_tile(x) and _is_tile(y):
        if x.shape == y.shape:
            return "tensor_tensor", dict(data1=x, data2=y, op=op), x.shape, x.dtype
        if y.shape == (x.shape[0], 1):
            return _tile_scalar(op, x, y, False)
        if x.shape == (y.shape[0], 1):
            return _tile_scalar(op, y, x, True)
        shape = _broadcast_shape(x.shape, y.shape)
        if shape is not None:  # NKI's broadcasting: one partition across P, then columns
            return combination(op, _across_partitions(x, shape),
                               _across_partitions(y, shape))
        raise kernel_error("E603", f"nl.{op}: shapes {list(x.shape)} and {list(y.shape)} "
                           "do not broadcast (nkirun broadcasts a one-partition tile across "
                           "partitions and a (P, 1) column along a 2-D tile's free dim)")
    if _is_tile(x) and _number(y):
        return _tile_scalar(op, x, y, False)
    if _is_tile(y) and _number(x):
        return _tile_scalar(op, y, x, True)
    raise kernel_error("E603", f"nl.{op} needs at least one tile, got {x!r} and {y!r}")


def _broadcast_shape(a: tuple, b: tuple):
    """The 2-D shape two tile shapes broadcast to (NumPy's rule), or None."""
    if len(a) != 2 or len(b) != 2:
        return None
    if any(m != n and 1 not in (m, n) for m, n in zip(a, b)):
        return None
    return tuple(max(m, n) for m, n in zip(a, b))


def _across_partitions(t, shape):
    """t, a one-partition tile, copied to every partition of `shape` (broadcast_to's DMA);
    a (P, 1) column stays a column (tensor_scalar's operand)."""
    if t.shape[0] == 1 and shape[0] > 1:
        t = broadcast_to(t, (shape[0],) + tuple(t.shape[1:]))
    if tuple(t.shape) not in (shape, (shape[0], 1)):
        t = broadcast_to(t, shape)
    return t


def binary(op: str):
    from nkirun.hw.alu import COMPARISONS
    compares = op in COMPARISONS

    def fn(x, y, dtype=None, mask=None, **_):
        instruction, values, shape, first = combination(op, x, y)
        t = _new(shape, dtype or first)
        if compares:
            t._rec.compared = True
        return _result(t, instruction, dst=t, mask=mask, **values)
    fn.__name__ = op
    return fn


def _tile_scalar(op, tile, operand, reverse):
    if _is_tile(operand) and str(operand.dtype) != "float32" and not _bitwise(op):
        # tensor_scalar's arithmetic operand tiles are float32: another column is read as
        # a zero-step view along tile's free dims by a tensor_tensor (the same values)
        col = column_broadcast(operand, tile.shape)
        data1, data2 = (col, tile) if reverse else (tile, col)
        return "tensor_tensor", dict(data1=data1, data2=data2, op=op), tile.shape, tile.dtype
    return ("tensor_scalar", dict(data=tile, op0=op, operand0=operand, reverse0=reverse),
            tile.shape, tile.dtype)


def _bitwise(op: str) -> bool:
    from nkirun.hw.alu import BITWISE, OPS
    return getattr(OPS.get(op), "kind", None) == BITWISE


def column_broadcast(col, shape):
    """The (P, 1) tile `col` read as `shape` (P, F, ...): its free dims with step 0."""
    (p_step, p_count), *_ = col.get_pattern()
    return with_pattern(col, [(p_step, p_count)] + [(0, n) for n in shape[1:]], col.offset)


def unary(func: str):
    def fn(x, dtype=None, mask=None, **_):
        t = _new(x.shape, dtype or x.dtype)
        return _result(t, "activation", dst=t, op=func, data=x, mask=mask)
    fn.__name__ = func
    return fn


def negative(x, dtype=None, mask=None, **_):
    return binary("multiply")(x, -1.0, dtype, mask)


def unary_alu(op: str):
    """`nl.invert` / `nl.logical_not`: a Vector-engine ALU operator of one operand, i.e. a
    `tensor_scalar` whose operand is 0 (the ALU operator table)."""
    def fn(x, dtype=None, mask=None, **_):
        t = _new(x.shape, dtype or x.dtype)
        return _result(t, "tensor_scalar", dst=t, data=x, op0=op, operand0=0, mask=mask)
    fn.__name__ = op
    return fn


# ---- rounding to an integer (nl.floor, nl.ceil) -------------------------------------------
INTEGRAL_FROM = 2.0 ** 23  # every float32 (and narrower float) this large is an integer


def _is_integer(dtype) -> bool:
    return str(dtype).startswith(("int", "uint")) or str(dtype) == "bool"


def rounding(name: str, beyond: str, fix: str):
    """`nl.floor` (beyond "greater", fix "subtract") and `nl.ceil` ("less", "add").

    NKI documents the result (NumPy's floor/ceil), not the instructions; nkirun lowers it to
    instructions whose documented semantics give exactly that: `tensor_copy` into int32
    (round to nearest even), then `tensor_tensor` (r > x) and r - (r > x) for floor. A float
    result adds a `tensor_scalar` (|x| < 2**23) and a `tensor_copy_predicated` that keeps x
    where it is already integral, infinite or NaN (where the int32 cast would saturate)."""
    def fn(x, dtype=None, mask=None, **_):
        out = consts.to_dtype(dtype) if dtype is not None else x.dtype
        if _is_integer(x.dtype):
            return copy(x, out, mask)
        i32, f32, u8 = (consts.DTYPES[n] for n in ("int32", "float32", "uint8"))
        nearest, past = _new(x.shape, i32), _new(x.shape, f32)
        _emit("tensor_copy", dst=nearest, src=x, mask=mask)
        _emit("tensor_tensor", dst=past, data1=nearest, data2=x, op=beyond, mask=mask)
        t = _new(x.shape, out)
        if _is_integer(out):
            return _result(t, "tensor_tensor", dst=t, data1=nearest, data2=past, op=fix,
                           mask=mask)
        _emit("tensor_tensor", dst=t, data1=nearest, data2=past, op=fix, mask=mask)
        small = _new(x.shape, u8)
        _emit("tensor_scalar", dst=small, data=x, op0="abs", operand0=0.0, op1="less",
              operand1=INTEGRAL_FROM, mask=mask)
        keep = x if str(x.dtype) == str(out) else copy(x, out, mask)
        _emit("tensor_copy_predicated", dst=t, src=keep, predicate=small, reverse_pred=True,
              mask=mask)
        return t
    fn.__name__ = name
    return fn


# ---- reductions ----------------------------------------------------------------------------
def reduction(op: str, name: str):
    def fn(x, axis, dtype=None, keepdims=False, mask=None, **_):
        axes = [axis] if isinstance(axis, int) else list(axis)
        axes = [a + len(x.shape) if a < 0 else a for a in axes]
        shape = [n for i, n in enumerate(x.shape) if i not in axes or keepdims]
        shape = [1 if i in axes else n for i, n in enumerate(x.shape)] if keepdims else shape
        if len(shape) == 1:
            shape.append(1)
        t = _new(shape, dtype or x.dtype)
        dst, n = t, len(x.shape)
        if 0 not in axes and sorted(axes) != list(range(n - len(axes), n)):
            # tensor_reduce reduces the last free axes: move the reduced ones last (a view)
            kept = [i for i in range(n) if i not in axes]
            x = x.permute(kept + sorted(axes))
            axes = list(range(len(kept), n))
            if keepdims:
                dst = legacy.fit(t, [x.shape[i] for i in range(len(kept))] + [1] * len(axes))
        return _result(t, "tensor_reduce", dst=dst, op=op, data=x, axis=axes,
                       keepdims=keepdims, mask=mask)
    fn.__name__ = name
    return fn


def mean(x, axis, dtype=None, keepdims=False, mask=None, **_):
    total = reduction("add", "sum")(x, axis, dtype, keepdims, mask)
    axes = [axis] if isinstance(axis, int) else list(axis)
    n = 1
    for a in axes:
        n *= x.shape[a]
    _emit("tensor_scalar", dst=total, data=total, op0="multiply", operand0=1.0 / n)
    return total


# ---- data movement ---------------------------------------------------------------------------
def broadcast_to(x, shape, dtype=None):
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x if dtype is None or str(dtype) == str(x.dtype) else copy(x, dtype)
    if len(shape) != len(x.shape) or any(a != b and a != 1 for a, b in zip(x.shape, shape)):
        raise kernel_error("E603", f"nl.broadcast_to: cannot broadcast {list(x.shape)} to "
                           f"{list(shape)}")
    t = _new(shape, dtype or x.dtype)
    if x.shape[0] == 1 and shape[0] > 1 and x.shape[1:] == shape[1:]:
        planned = copy_chains.broadcast_rows(current(), x, t, shape[0]) \
            if speed.COPY_CHAINS else False  # (the same chain from a plan: copy_chains.py)
        if planned:
            return t
        _emit("dma_copy", dst=t[0:1], src=x)
        filled = 1
        while filled < shape[0]:
            n = min(filled, shape[0] - filled)
            _emit("dma_copy", dst=t[filled:filled + n], src=t[0:n])
            filled += n
        if planned is None:
            copy_chains.make_plan(current(), x, t, shape[0])
        return t
    if x.shape[0] == shape[0] and len(shape) == 2 and x.shape[1] == 1:
        _emit("memset", dst=t, value=0.0)
        _emit("tensor_scalar", dst=t, data=t, op0="add", operand0=x)
        return t
    raise kernel_error("E603", f"nl.broadcast_to {list(x.shape)} -> {list(shape)}: nkirun "
                       "broadcasts a (1, F) row across partitions or a (P, 1) column along "
                       "the free dim")


def transpose(x, dtype=None, mask=None, **_):
    if _is_tile(x) and max(x.shape) > 32:  # the Tensor engine's transpose: from SBUF
        x = _in_sbuf(x)
    t = _new((x.shape[1], x.shape[0]), dtype or x.dtype, consts.psum)
    return _result(t, "nc_transpose", dst=t, data=x, mask=mask)


def _in_sbuf(x):
    """x, or a copy of it in SBUF when it is in PSUM (the Tensor engine reads SBUF; NKI's
    compiler inserts the same copy)."""
    if _is_tile(x) and x.buffer is consts.psum:
        t = _new(x.shape, x.dtype)
        _emit("tensor_copy", dst=t, src=x)
        return t
    return x


def load_transpose2d(src, dtype=None, mask=None, **_):
    """A DMA transpose; with a dtype cast, a casting DMA through a transposed view."""
    t = _new((src.shape[1], src.shape[0]), dtype or src.dtype)
    if dtype is None or str(dtype) == str(src.dtype):
        return _result(t, "dma_transpose", dst=t, src=src, mask=mask)
    (s0, n0), (s1, n1) = src.get_pattern()
    return _result(t, "dma_copy", dst=t, src=with_pattern(src, [(s1, n1), (s0, n0)],
                                                         src.offset), mask=mask)


def matmul(x, y, transpose_x=False, mask=None, **_):
    x, y = _in_sbuf(x), _in_sbuf(y)
    if not transpose_x:
        xt = _new((x.shape[1], x.shape[0]), x.dtype)
        _emit("tensor_copy", dst=xt, src=transpose(x))
        x = xt
    t = _new((x.shape[1], y.shape[1]), consts.DTYPES["float32"], consts.psum)
    return _result(t, "nc_matmul", dst=t, stationary=x, moving=y, mask=mask)


def where(condition, x, y, dtype=None, mask=None, **_):
    """`select_reduce` when y is a number or a (P, 1) column; with a full tile y, y is
    copied and x copied over it where the condition holds (`tensor_copy_predicated`). A
    predicate of another dtype than the instruction takes (a float comparison result) is
    first made uint8 by a `tensor_scalar` `not_equal` 0 (nonzero selects, exactly)."""
    t = _new(condition.shape, dtype or (x.dtype if _is_tile(x) else y.dtype))
    full_y = _is_tile(y) and tuple(y.shape) != (condition.shape[0], 1)
    allowed = ("uint8", "uint16", "uint32") if full_y else ("uint8", "uint16", "int8",
                                                             "int16")
    if str(condition.dtype) not in allowed:
        pred = _new(condition.shape, consts.DTYPES["uint8"])
        _emit("tensor_scalar", dst=pred, data=condition, op0="not_equal", operand0=0.0,
              mask=mask)
        condition = pred
    if not full_y:
        return _result(t, "select_reduce", dst=t, predicate=condition, on_true=x,
                       on_false=y, mask=mask)
    _emit("tensor_copy", dst=t, src=y, mask=mask)
    if _is_tile(x) and str(x.dtype) != str(t.dtype):
        x = copy(x, t.dtype, mask)
    _emit("tensor_copy_predicated", dst=t, src=x, predicate=condition, mask=mask)
    return t


BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal",
          "not_equal", "less", "less_equal", "greater", "greater_equal", "bitwise_and",
          "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "logical_and",
          "logical_or", "logical_xor", "mod", "fmod")
UNARY = ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_dx",
         "gelu_apprx_tanh", "gelu_apprx_sigmoid", "silu", "silu_dx", "softplus", "mish", "erf",
         "erf_dx", "sign", "abs", "square", "reciprocal", "sin", "arctan")
