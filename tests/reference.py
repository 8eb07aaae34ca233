"""Slow reference implementations of NKI instructions, used by the tests.

This is a deliberately slow, loop-based reference transcribed from the
instruction reference pages in /work/shared/seeds/ (and nki-reference.md
sections 1.10-1.12). It does not depend on nkirun's implementation, so the
tests can compare nkirun with it bit for bit.

Conventions: every function takes numpy arrays and returns NEW arrays (the
inputs are never mutated). Arithmetic is done in float32, with inputs upcast
through .astype(np.float32). The result is cast once at the end with
cast_to(x, dtype_name).
"""
import ml_dtypes
import numpy as np

FP32_MIN = np.float32(np.finfo(np.float32).min)  # -3.4028235e38, nl.fp32.min

_FLOATS = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
           "float8_e4m3": ml_dtypes.float8_e4m3, "float8_e5m2": ml_dtypes.float8_e5m2}
_INTS = {n: getattr(np, n) for n in
         ("int8", "uint8", "int16", "uint16", "int32", "uint32")}
_FLOAT_BITS = {"float8_e4m3": 8, "float8_e5m2": 8, "float16": 16, "bfloat16": 16,
               "tfloat32": 31, "float32": 32}  # tfloat32 ranks just below float32


def dtype_name(arr):
    return np.dtype(np.asarray(arr).dtype).name


def cast_to(x, name):
    """Cast a float32 array (integer arrays are also accepted) to dtype `name`.

    Floats use ml_dtypes round-to-nearest-even, so out-of-range values become
    +-inf (FP32_MIN -> -inf for bf16/fp16/fp8). tfloat32 is stored as float32
    with the mantissa rounded to 10 bits (RNE on the bit pattern; NaN and inf
    are left unchanged). Integers are rounded half to even, saturated, and
    NaN becomes 0.
    """
    with np.errstate(all="ignore"):
        x = np.asarray(x)
        if name in _INTS:
            info = np.iinfo(_INTS[name])
            v = np.rint(x.astype(np.float64))     # exact for float32 and for ints < 2^53
            v = np.where(np.isnan(v), 0.0, np.clip(v, info.min, info.max))
            return v.astype(_INTS[name])
        x32 = x.astype(np.float32)
        if name == "tfloat32":
            bits = x32.view(np.uint32).copy()
            finite = np.isfinite(x32)
            lsb = (bits >> np.uint32(13)) & np.uint32(1)
            rounded = (bits + np.uint32(0x0FFF) + lsb) & np.uint32(0xFFFFE000)
            return np.where(finite, rounded, bits).view(np.float32)
        if name in _FLOATS:
            return x32.astype(_FLOATS[name])
        raise ValueError(f"unknown dtype name {name!r}")


def promote(a, b):
    """NKI type promotion (nki-reference.md 2.4) for two dtype names."""
    if a == b:
        return a
    fa, fb = a in _FLOAT_BITS, b in _FLOAT_BITS
    if fa and fb:
        if "float32" in (a, b) or {a, b} == {"float16", "bfloat16"}:
            return "float32"
        if {a, b} == {"float8_e4m3", "float8_e5m2"}:
            return "bfloat16"
        return a if _FLOAT_BITS[a] > _FLOAT_BITS[b] else b
    if fa or fb:
        return a if fa else b
    ia, ib = np.iinfo(_INTS[a]), np.iinfo(_INTS[b])
    if (ia.min < 0) == (ib.min < 0):
        return a if ia.bits > ib.bits else b
    s, u = (ia, ib) if ia.min < 0 else (ib, ia)
    if s.bits > u.bits:
        return f"int{s.bits}"
    return f"int{2 * u.bits}" if 2 * u.bits <= 32 else "float32"


def _per_partition(v, P):
    """Python float or (P,1) tile -> float32 vector of length P."""
    v = np.asarray(v, dtype=np.float32)
    return np.full(P, v, np.float32) if v.ndim == 0 else v.reshape(P).copy()


def _pattern_loop(pattern):
    """Yield the affine sum w*sw + z*sz + y*sy + x*sx in w,z,y,x loop order.

    The pattern is padded at the FRONT to 4-D with [0, 1] (affine_select page).
    """
    pat = [[0, 1]] * (4 - len(pattern)) + [list(p) for p in pattern]
    (sw, nw), (sz, nz), (sy, ny), (sx, nx) = [(int(s), int(n)) for s, n in pat]
    for w in range(nw):
        for z in range(nz):
            for y in range(ny):
                for x in range(nx):
                    yield w * sw + z * sz + y * sy + x * sx


# Page: seeds/000_094c4bead2e3e7f9.txt (nki.isa.range_select), "Numpy equivalent".
def range_select(on_true_tile, comp_op0, comp_op1, bound0, bound1, range_start=0,
                 on_false_value=FP32_MIN, out_dtype=None):
    out_dtype = out_dtype or dtype_name(on_true_tile)
    P = on_true_tile.shape[0]
    src = on_true_tile.astype(np.float32).reshape(P, -1)
    b0, b1 = _per_partition(bound0, P), _per_partition(bound1, P)
    fill = np.float32(on_false_value)
    indices = np.float32(range_start) + np.arange(src.shape[1]).astype(np.float32)
    sel = np.empty_like(src)
    for p in range(P):
        for k in range(src.shape[1]):
            take = comp_op0(indices[k], b0[p]) and comp_op1(indices[k], b1[p])
            sel[p, k] = src[p, k] if take else fill
    rowmax = np.max(sel, axis=1, keepdims=True).astype(np.float32)  # reduce_op = np.max
    return cast_to(sel.reshape(on_true_tile.shape), out_dtype), rowmax


# Page: seeds/001_8513c7a3e381a0f1.txt (nki.isa.select_reduce), NumPy expression.
# The page writes `~predicate`. On an integer tile that is bitwise NOT, which would
# leave 0 and 1 both "true", so reverse_pred is read as a logical NOT (the page's
# Example 3 says "select on_true where predicate is FALSE").
def select_reduce(predicate, on_true, on_false, reverse_pred=False, out_dtype=None):
    out_dtype = out_dtype or dtype_name(on_true)
    P = on_true.shape[0]
    src = on_true.astype(np.float32).reshape(P, -1)
    pred = np.asarray(predicate).reshape(P, -1)
    fill = _per_partition(on_false, P)
    result = np.empty_like(src)
    for p in range(P):
        for k in range(src.shape[1]):
            take = pred[p, k] != 0
            if reverse_pred:
                take = not take
            result[p, k] = src[p, k] if take else fill[p]
    rowmax = np.max(result, axis=1, keepdims=True).astype(np.float32)
    return cast_to(result.reshape(on_true.shape), out_dtype), rowmax


# Page: seeds/002_e703d9c770e12f4a.txt (nki.isa.affine_select), pseudo-code loop.
# Per the page, selected elements go through FP32 only when the output dtype
# differs from the input dtype. When the dtypes match they are copied unchanged,
# which matters only for int32/uint32 values beyond 2^24.
def affine_select(on_true_tile, pattern, offset, channel_multiplier, on_false_value,
                  cmp_op=np.equal, out_dtype=None):
    out_dtype = out_dtype or dtype_name(on_true_tile)
    P = on_true_tile.shape[0]
    src = on_true_tile.reshape(P, -1)
    src32 = src.astype(np.float32)
    result = np.empty(src.shape, np.float32)
    chosen = np.zeros(src.shape, bool)
    for channel_id in range(P):
        for k, s in enumerate(_pattern_loop(pattern)):
            affine_value = int(offset) + channel_id * int(channel_multiplier) + s
            chosen[channel_id, k] = bool(cmp_op(affine_value, 0))
            result[channel_id, k] = src32[channel_id, k] if chosen[channel_id, k] \
                else np.float32(on_false_value)
        assert k + 1 == src.shape[1], "pattern size must equal elements per partition"
    out = cast_to(result, out_dtype)
    if out_dtype == dtype_name(on_true_tile):
        out[chosen] = src[chosen]
    return out.reshape(on_true_tile.shape)


# Page: nki-reference.md 1.10 (nki.isa.iota): offset + channel_id*channel_multiplier
# + sum(idx_k*step_k), with the same 4-D pattern loop as affine_select. Values are
# computed as integers and cast once at the end.
def iota(shape, pattern, offset=0, channel_multiplier=0, out_dtype="int32"):
    P = shape[0]
    vals = np.zeros((P, int(np.prod(shape[1:], dtype=np.int64))), np.int64)
    for channel_id in range(P):
        for k, s in enumerate(_pattern_loop(pattern)):
            vals[channel_id, k] = int(offset) + channel_id * int(channel_multiplier) + s
        assert k + 1 == vals.shape[1], "pattern size must equal elements per partition"
    return cast_to(vals, out_dtype).reshape(shape)


# Page: nki-reference.md 1.11 (nki.isa.memset): a tile of `shape` filled with `value`.
def memset(shape, value, dtype):
    return cast_to(np.full(shape, value, np.float64), dtype)


# Page: nki-reference.md 1.12 (nki.isa.max8): the 8 largest values of each partition, in
# descending order, computed in fp32. NaN handling is not documented. Here NaN sorts as
# the largest value: np.sort puts NaN last, so reversing the sort puts it first. Ties
# between -0.0 and +0.0 keep np.sort's order, reversed.
def max8(src):
    P = src.shape[0]
    flat = src.astype(np.float32).reshape(P, -1)
    assert 8 <= flat.shape[1] <= 16384, "max8 needs 8..16384 elements per partition"
    out = np.empty((P, 8), np.float32)
    for p in range(P):
        out[p] = np.sort(flat[p])[::-1][:8]
    return out


# Page: seeds/003_42a38540055ba313.txt (nki.isa.nc_match_replace8), "NumPy equivalent".
# This follows the page's loop literally: vals are taken in order j = 0..7, each
# matches the first remaining occurrence, and unmatched slots keep index 0. The newer
# API (nki-reference.md 1.13) processes vals in reverse order instead.
def nc_match_replace8(data, vals, imm, out_dtype=None):
    out_dtype = out_dtype or dtype_name(data)
    data_2d = data.astype(np.float32).reshape(data.shape[0], -1)   # a copy
    vals_2d = vals.astype(np.float32).reshape(vals.shape[0], -1)
    indices = np.zeros(vals_2d.shape, dtype=np.uint32)
    for i in range(data_2d.shape[0]):
        for j in range(vals_2d.shape[1]):
            val = vals_2d[i, j]
            matches = np.where(data_2d[i, :] == val)[0]
            if matches.size > 0:
                indices[i, j] = matches[0]
                data_2d[i, matches[0]] = np.float32(imm)
    return cast_to(data_2d.reshape(data.shape), out_dtype), indices.reshape(vals.shape)


# Page: seeds/004_278dd0f9795377dc.txt (nki.isa.tensor_tensor_scan), per-partition loop.
# The running value stays in float32 (the engine "performs the computation in float32
# math"). The page's `np.ndarray(..., dtype=data0.dtype)` is not read as rounding each step.
def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False,
                       out_dtype=None):
    out_dtype = out_dtype or promote(dtype_name(data0), dtype_name(data1))
    P = data0.shape[0]
    d0 = data0.astype(np.float32).reshape(P, -1)
    d1 = data1.astype(np.float32).reshape(P, -1)
    result = np.empty(d0.shape, np.float32)
    prev = _per_partition(initial, P)
    with np.errstate(all="ignore"):
        for i in range(d0.shape[1]):
            a = op0(prev, d0[:, i]) if reverse0 else op0(d0[:, i], prev)
            a = np.asarray(a).astype(np.float32)
            r = op1(d1[:, i], a) if reverse1 else op1(a, d1[:, i])
            result[:, i] = prev = np.asarray(r).astype(np.float32)
    return cast_to(result.reshape(data0.shape), out_dtype)


# Page: nki-reference.md 1.16 (nl.load / nl.store / dma_copy): the elements copied in row-major
# order into a destination of the same element count; equal dtypes copy the bits unchanged,
# otherwise each value goes src -> float32 -> dst.
def dma(src, dst_shape, dst_dtype):
    src = np.asarray(src)
    assert src.size == int(np.prod(dst_shape)), "a DMA needs equal element counts"
    if dtype_name(src) == dst_dtype:
        return src.reshape(dst_shape).copy()
    return cast_to(src.astype(np.float32), dst_dtype).reshape(dst_shape)


# The five seed pages by number, as the contract tests (tests/contract/test_seed_numpy.py)
# cite them: the same functions as above, so there is one reference per instruction.
page000 = range_select          # seeds/000 nki.isa.range_select
page001 = select_reduce         # seeds/001 nki.isa.select_reduce
page002 = affine_select         # seeds/002 nki.isa.affine_select
page003 = nc_match_replace8     # seeds/003 nki.isa.nc_match_replace8
page004 = tensor_tensor_scan    # seeds/004 nki.isa.tensor_tensor_scan


class VectorAccumulator:
    """The shared Vector-engine max accumulator that range_select / select_reduce chain on.

    Pages 000 (range_select) and 001 (select_reduce) and nki-reference.md section 4:
    reset_reduce sets acc to -inf and then takes max(acc, rowmax); reduce takes
    max(acc, rowmax); reset sets acc to -inf; idle leaves acc unchanged.
    """

    def __init__(self, num_partitions=None):
        self.value = None if num_partitions is None else \
            np.full((num_partitions, 1), -np.inf, np.float32)

    def apply(self, reduce_cmd, rowmax):
        rowmax = np.asarray(rowmax, np.float32).reshape(-1, 1)
        if self.value is None or reduce_cmd in ("reset", "reset_reduce"):
            self.value = np.full(rowmax.shape, -np.inf, np.float32)
        if reduce_cmd in ("reduce", "reset_reduce"):
            self.value = np.maximum(self.value, rowmax).astype(np.float32)
        elif reduce_cmd not in ("idle", "reset"):
            raise ValueError(f"unknown reduce_cmd {reduce_cmd!r}")
        return self.value


def self_check():
    """Hand-worked cases of each reference (run by tests/contract/test_seed_numpy.py)."""
    eq = np.testing.assert_array_equal
    f32 = lambda *v: np.array(v, np.float32)
    # cast_to
    assert np.isneginf(cast_to(f32(FP32_MIN), "bfloat16")[0])
    assert np.isneginf(cast_to(f32(FP32_MIN), "float8_e4m3")[0].astype(np.float32))
    eq(cast_to(f32(1 + 2**-11, 1 + 3 * 2**-11, np.inf, np.nan), "tfloat32")[:3],
       f32(1.0, 1 + 2**-9, np.inf))
    assert np.isnan(cast_to(f32(np.nan), "tfloat32")[0])
    eq(cast_to(f32(127.5, 2.5, -3.5, np.nan, 300, -np.inf), "int8"), [127, 2, -4, 0, 127, -128])
    eq(cast_to(f32(-1, 70000.4), "uint16"), [0, 65535])
    assert promote("float16", "bfloat16") == "float32" and promote("int8", "uint8") == "int16"
    # range_select: bound0 <= range_start + index < bound1
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    x_before = x.copy()
    out, rm = range_select(x, np.greater_equal, np.less, f32(1, 2).reshape(2, 1),
                           f32(3, 5).reshape(2, 1))
    eq(out, [[FP32_MIN, 1, 2, FP32_MIN, FP32_MIN], [FP32_MIN, FP32_MIN, 7, 8, 9]])
    eq(rm, [[2], [9]])
    eq(x, x_before)
    out, rm = range_select(x, np.greater_equal, np.less, f32(12, 0).reshape(2, 1),
                           f32(13, 1).reshape(2, 1), range_start=10, out_dtype="bfloat16")
    assert out.dtype == ml_dtypes.bfloat16 and np.isneginf(out[1].astype(np.float32)).all()
    eq(out[0].astype(np.float32), [-np.inf, -np.inf, 2, -np.inf, -np.inf])
    eq(rm, [[2], [FP32_MIN]])   # rowmax is taken before the cast: FP32_MIN, not -inf
    # select_reduce
    pred = np.array([[1, 0, 2, 0], [0, 0, 0, 0]], np.uint8)
    y = f32(1, 2, 3, 4, 5, 6, 7, 8).reshape(2, 4)
    out, rm = select_reduce(pred, y, -1.0)
    eq(out, [[1, -1, 3, -1], [-1, -1, -1, -1]]); eq(rm, [[3], [-1]])
    out, rm = select_reduce(pred, y, f32(-7, -9).reshape(2, 1), reverse_pred=True)
    eq(out, [[-7, 2, -7, 4], [5, 6, 7, 8]]); eq(rm, [[4], [8]])
    acc = VectorAccumulator()
    acc.apply("reset_reduce", f32(1, 5)); acc.apply("idle", f32(9, 9))
    eq(acc.apply("reduce", f32(3, 2)), [[3], [5]])
    eq(acc.apply("reset", f32(0, 0)), [[-np.inf], [-np.inf]])
    # affine_select: causal mask, keep where channel_id - x >= 0
    ones = np.ones((3, 3), np.float32)
    eq(affine_select(ones, [[-1, 3]], 0, 1, -9.0, cmp_op=np.greater_equal),
       [[1, -9, -9], [1, 1, -9], [1, 1, 1]])
    eq(affine_select(ones, [[1, 3]], -1, 0, 0.0), [[0, 1, 0]] * 3)  # default cmp_op = equal
    big = np.array([[2**24 + 1]], np.int32)
    eq(affine_select(big, [[0, 1]], 0, 0, 0.0), big)   # same dtype: copied unchanged
    # iota
    eq(iota((2, 4), [[1, 4]], channel_multiplier=4), np.arange(8).reshape(2, 4))
    eq(iota((1, 2, 3), [[10, 2], [1, 3]], offset=5), [[[5, 6, 7], [15, 16, 17]]])
    assert iota((1, 3), [[-1, 3]], out_dtype="uint8").tolist() == [[0, 0, 0]]
    # memset
    m = memset((2, 8), 0, "uint32"); assert m.dtype == np.uint32 and not m.any()
    assert memset((1, 2), 1.5, "bfloat16").dtype == ml_dtypes.bfloat16
    _self_check_top8_and_scan()


def _self_check_top8_and_scan():
    eq = np.testing.assert_array_equal
    f32 = lambda *v: np.array(v, np.float32)  # noqa: E731
    # max8
    z = f32(5, 1, 9, 3, 7, 2, 8, 4, 6, 0).reshape(1, 10)
    eq(max8(z), [[9, 8, 7, 6, 5, 4, 3, 2]])
    z[0, 3] = np.nan
    assert np.isnan(max8(z)[0, 0]) and max8(z)[0, 1] == 9
    # nc_match_replace8: the page loop, vals taken in order, first occurrence
    data = f32(1, 2, 3, 4, *[8] * 7).reshape(1, 11)
    vals = f32(3, *[8] * 7).reshape(1, 8)
    out, idx = nc_match_replace8(data, vals, -np.inf)
    eq(idx, [[2, 4, 5, 6, 7, 8, 9, 10]]); assert idx.dtype == np.uint32
    eq(out, [[1, 2, -np.inf, 4] + [-np.inf] * 7]); eq(data, f32(1, 2, 3, 4, *[8] * 7)[None])
    d3 = np.random.default_rng(0).random((2, 3, 6)).astype(np.float32)
    out, idx = nc_match_replace8(d3, max8(d3), 0.0, out_dtype="bfloat16")
    assert out.shape == d3.shape and (out.astype(np.float32) == 0).sum() == 16
    # tensor_tensor_scan: golden[:, i] = a[:, i] * golden[:, i-1] + b[:, i]
    a = f32(1, 2, 3, 0.5, 0.5, 0.5).reshape(2, 3)
    b = f32(1, 1, 1, 2, 2, 2).reshape(2, 3)
    eq(tensor_tensor_scan(a, b, 0.0, np.multiply, np.add), [[1, 3, 10], [2, 3, 3.5]])
    eq(tensor_tensor_scan(a, b, f32(1, 4).reshape(2, 1), np.multiply, np.add),
       [[2, 5, 16], [4, 4, 4]])
    # reverse0: op0(prev, d0) = prev - d0; reverse1: op1(d1, r) = d1 - r
    eq(tensor_tensor_scan(a, b, 10.0, np.subtract, np.subtract, reverse0=True, reverse1=True),
       [[-8, 11, -7], [-7.5, 10, -7.5]])
    t = tensor_tensor_scan(np.ones((1, 3), np.float32), f32(2**-24, 2**-24, 2**-24)[None],
                           1.0, np.multiply, np.add)
    eq(t, [[1, 1, 1]])  # each step rounds to float32, so 1 + 2^-24 stays 1
    assert tensor_tensor_scan(a.astype(np.float16), b.astype(ml_dtypes.bfloat16), 0.0,
                              np.multiply, np.add).dtype == np.float32


if __name__ == "__main__":
    self_check()
    print("reference.py self-check: OK")
