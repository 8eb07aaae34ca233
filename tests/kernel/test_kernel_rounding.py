"""`nl.floor` / `nl.ceil` (several instructions, docs/kernels.md), tile comparison operators
(`a < b`, `a == 3`: `nl.less` & co.), `nl.invert` / `nl.logical_not`, `nl.mod` / `nl.fmod`,
each against NumPy."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkirun
from nkirun.diagnostics import NkirunError
from tests.kernel.test_kernel_contract import nkirun_kernel, write

HEAD = """\
import nki
import nki.isa as nisa
import nki.language as nl


def out_of(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(o, t)
    return o

"""

ROUNDING = HEAD + """
@nki.jit
def rounding(x, out_dtype=None):
    a = nl.load(x)
    dtype = None if out_dtype is None else getattr(nl, out_dtype)
    return out_of(nl.floor(a, dtype=dtype)), out_of(nl.ceil(a, dtype=dtype))
"""

# ties both ways, negatives, signed zeros, values already integral, beyond 2**23 / 2**24 /
# the int32 range, infinities and NaN
EDGES = np.array([2.5, 3.5, -0.5, -2.5, -3.2, 3.7, 0.0, -0.0, 1.0, -2.0, 0.49999997,
                  -0.49999997, 8388607.5, -8388607.5, 8388609.0, 16777217.0, 3e9, -3e9,
                  1e30, -1e30, np.inf, -np.inf, np.nan], np.float32)


def _line_of(source, text):
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def _data(p, f, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((p, f)) * 50).astype(np.float32)
    flat = x.reshape(-1)
    flat[: min(EDGES.size, flat.size)] = EDGES[: flat.size]
    return x


@pytest.mark.parametrize("p,f", [(1, 23), (37, 7), (128, 33)])
def test_floor_and_ceil_match_numpy_for_every_float(tmp_path, p, f):
    k = nkirun_kernel(write(tmp_path, ROUNDING), "rounding")
    x = _data(p, f)
    lo, hi = nkirun.simulate(k)(x)
    assert lo.dtype == hi.dtype == np.float32
    np.testing.assert_array_equal(lo, np.floor(x))  # NaN == NaN here, -0.0 == 0.0
    np.testing.assert_array_equal(hi, np.ceil(x))


def test_floor_into_int32_saturates_like_a_cast(tmp_path):
    k = nkirun_kernel(write(tmp_path, ROUNDING), "rounding")
    x = _data(37, 33)
    lo, hi = nkirun.simulate(k)(x, out_dtype="int32")
    assert lo.dtype == np.int32
    finite = np.isfinite(x) & (np.abs(x) < 2 ** 31)
    np.testing.assert_array_equal(lo[finite], np.floor(x[finite]).astype(np.int32))
    np.testing.assert_array_equal(hi[finite], np.ceil(x[finite]).astype(np.int32))
    # beyond int32: the documented float->int cast saturates (NaN becomes 0)
    assert lo[np.isposinf(x)].tolist() == [2 ** 31 - 1]
    assert lo[np.isneginf(x)].tolist() == [-2 ** 31]
    assert lo[np.isnan(x)].tolist() == [0]


def test_floor_of_bfloat16_and_of_integers(tmp_path):
    k = nkirun_kernel(write(tmp_path, ROUNDING), "rounding")
    xb = _data(128, 9).astype(ml_dtypes.bfloat16)
    lo, hi = nkirun.simulate(k)(xb)
    assert lo.dtype == ml_dtypes.bfloat16
    want = np.floor(xb.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(lo.astype(np.float32), want.astype(np.float32))
    xi = np.arange(-20, 17, dtype=np.int32).reshape(37, 1)
    lo, hi = nkirun.simulate(k)(xi)
    np.testing.assert_array_equal(lo, xi)  # an integer is its own floor: one tensor_copy
    np.testing.assert_array_equal(hi, xi)


def test_floor_records_located_costed_instructions(tmp_path):
    path = write(tmp_path, ROUNDING)
    k = nkirun_kernel(path, "rounding")
    x = _data(128, 8)
    prog = nkirun.trace(k, x)
    line = _line_of(ROUNDING, "nl.floor(")
    ops = [i.op for i in prog.instructions if i.loc.line == line]
    assert ops == ["tensor_copy", "tensor_tensor", "tensor_tensor", "tensor_scalar",
                   "tensor_copy_predicated"] * 2
    assert {i.loc.file for i in prog.instructions} == {path}
    as_int = [i.op for i in nkirun.trace(k, x, out_dtype="int32").instructions
              if i.loc.line == line]
    assert as_int == ["tensor_copy", "tensor_tensor", "tensor_tensor"] * 2
    sched = nkirun.cost(k, x)
    assert len(sched.slots) == len(prog.instructions) and sched.total_ns > 0


COMPARE = HEAD + """
@nki.jit
def compare(x, y, col):
    a, b, c = nl.load(x), nl.load(y), nl.load(col)
    return tuple(out_of(t) for t in (
        a < b, a <= b, a > b, a >= b, a == b, a != b,
        a < 0.5, 2.0 > a, a == 1.0, a != 1.0, a >= c, c < a,
        nl.less(a, b), nl.greater_equal(a, 1.0),
        nl.invert(nl.load(y.view(nl.int32))), nl.logical_not(a)))
"""


@pytest.mark.parametrize("p,f", [(1, 5), (37, 3), (128, 17)])
def test_tile_comparison_operators_are_nl_comparisons(tmp_path, p, f):
    k = nkirun_kernel(write(tmp_path, COMPARE), "compare")
    rng = np.random.default_rng(p)
    x = rng.integers(-2, 3, (p, f)).astype(np.float32)  # many ties
    y = rng.integers(-2, 3, (p, f)).astype(np.float32)
    x.reshape(-1)[:2] = [np.nan, np.inf]
    col = rng.integers(-2, 3, (p, 1)).astype(np.float32)
    got = nkirun.simulate(k)(x, y, col)
    want = [x < y, x <= y, x > y, x >= y, x == y, x != y, x < 0.5, 2.0 > x, x == 1, x != 1,
            x >= col, col < x, x < y, x >= 1, ~y.view(np.int32), x == 0]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, np.asarray(w).astype(g.dtype), err_msg=f"result {i}")
    assert got[0].dtype == np.float32  # nl.less's default: the input tile's dtype


def test_a_tile_stays_usable_as_a_dict_key_and_compares_to_none(tmp_path):
    path = write(tmp_path, HEAD + """
@nki.jit
def keyed(x):
    a = nl.load(x)
    seen = {a: 1}
    assert a in seen and (a == None) is False and a is not None
    return out_of(a)
""")
    x = np.ones((4, 4), np.float32)
    np.testing.assert_array_equal(nkirun.simulate(nkirun_kernel(path, "keyed"))(x), x)


MODULO = HEAD + """
@nki.jit
def modulo(x, y, k=3.0):
    a = nl.load(x)
    b = nl.load(y)
    return (out_of(nl.mod(a, b)), out_of(nl.fmod(a, b)), out_of(nl.mod(a, k)),
            out_of(nl.fmod(a, k)), out_of(a % b))
"""

# signs of both operands, exact multiples (signed zeros), tiny and huge ratios, zero
# divisors, infinities and NaN on either side
MOD_X = np.array([7.0, -7.0, 7.0, -7.0, 6.0, -6.0, 0.0, -0.0, 5.5, -5.5, 1e30, -1e30, 3.0,
                  3.0, np.inf, -np.inf, 3.0, -3.0, np.nan, 2.0, 1e-30, 0.1], np.float32)
MOD_Y = np.array([3.0, 3.0, -3.0, -3.0, 3.0, -3.0, 3.0, 3.0, 0.25, 2.0, 7.0, 7.0, 0.0,
                  -0.0, 3.0, 3.0, np.inf, np.inf, 2.0, np.nan, 3.0, 1e-30], np.float32)


def _py_mod(a: float, b: float) -> float:
    """The divisor-signed remainder, from math.fmod (exact) and the sign rule, written
    independently of numpy.mod."""
    import math
    if b == 0 or math.isnan(a) or math.isnan(b) or math.isinf(a):
        return math.nan
    if math.isinf(b):
        return a if a == 0 or (a > 0) == (b > 0) else b  # a, or a + b = +-inf
    r = math.fmod(a, b)
    if r != 0 and (r < 0) != (b < 0):
        r += b
    return r if r != 0 else math.copysign(0.0, b)


def _py_fmod(a: float, b: float) -> float:
    import math
    if b == 0 or math.isnan(a) or math.isnan(b) or math.isinf(a):
        return math.nan
    return math.fmod(a, b)


@pytest.mark.parametrize("p", [1, 37, 128])
def test_mod_and_fmod_follow_the_documented_sign_rules(tmp_path, p):
    """nki.language.mod: the sign of the divisor (Python's x % y); fmod: the sign of the
    dividend (C's fmod); both W602 (the release notes: no hardware instruction)."""
    k = nkirun_kernel(write(tmp_path, MODULO), "modulo")
    n = MOD_X.size
    x = np.resize(MOD_X, (p, n)).astype(np.float32)
    y = np.resize(MOD_Y, (p, n)).astype(np.float32)
    got_mod, got_fmod, mod3, fmod3, pct = nkirun.simulate(k)(x, y)
    want_mod = np.vectorize(_py_mod, otypes=[np.float32])(x, y)
    want_fmod = np.vectorize(_py_fmod, otypes=[np.float32])(x, y)
    for got, want in ((got_mod, want_mod), (got_fmod, want_fmod), (pct, want_mod)):
        np.testing.assert_array_equal(got, want)  # NaN where NaN
        num = ~np.isnan(want)
        assert np.array_equal(np.signbit(got[num]), np.signbit(want[num]))  # signed zeros
    np.testing.assert_array_equal(mod3, np.vectorize(_py_mod, otypes=[np.float32])(x, 3.0))
    np.testing.assert_array_equal(fmod3, np.vectorize(_py_fmod, otypes=[np.float32])(x, 3.0))
    diags = nkirun.check(k, x, y)
    warned = [d for d in diags if d.code == "W602"]
    assert len(warned) >= 2 and all("hardware" in d.message for d in warned)
    src = open(write(tmp_path, MODULO)).read()
    assert {d.loc.line for d in warned} >= {_line_of(src, "nl.mod(a, b)")}


MOD_PROGRAM = """version: 1
tensors:
  x: {buffer: sbuf, shape: [2, 3], dtype: float32, data: [[-7, 7, 5.5], [-7, 0, 1]]}
  y: {buffer: sbuf, shape: [2, 3], dtype: float32}
  o: {buffer: hbm, shape: [2, 3], dtype: float32, output: true}
instructions:
  - tensor_scalar: {dst: y, data: x, op0: np.remainder, operand0: -3.0}
  - store: {dst: o, src: y}
"""


def test_mod_in_a_program_warns_and_runs(tmp_path):
    prog = tmp_path / "m.yaml"
    prog.write_text(MOD_PROGRAM)
    assert [d.code for d in nkirun.check(str(prog))] == ["W602"]
    out = nkirun.run(str(prog))["o"]
    want = np.array([[-1.0, -2.0, -0.5], [-1.0, -0.0, -2.0]], np.float32)
    np.testing.assert_array_equal(out, want)
    assert np.array_equal(np.signbit(out), np.signbit(want))


def test_two_copies_of_one_kernel_each_locate_in_their_own_file(tmp_path):
    """Equal code objects from different files compare equal in Python: the position cache
    must still give each copy its own file."""
    paths = [write(tmp_path / d, ROUNDING) for d in ("a", "b") if (tmp_path / d).mkdir() or 1]
    x = _data(4, 4)
    for path in paths:
        prog = nkirun.trace(nkirun_kernel(path, "rounding"), x)
        assert {i.loc.file for i in prog.instructions} == {path}


def test_a_tensor_is_truthy_but_a_comparison_result_has_no_truth_value(tmp_path):
    """`if bias:` tests that a tensor was given (nki-library's moe_tkg); `if a < b:` would
    branch on run-time data: E603 at that line."""
    path = write(tmp_path, HEAD + """
@nki.jit
def branches(x, bias=None, compare=False):
    a = nl.load(x)
    if bias:
        a = nl.add(a, nl.load(bias))
    if compare:
        if a < 1.0:
            a = nl.add(a, 1.0)
    return out_of(a)
""")
    k = nkirun_kernel(path, "branches")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(nkirun.simulate(k)(x, np.ones_like(x)), x + 1)
    np.testing.assert_array_equal(nkirun.simulate(k)(x), x)
    with pytest.raises(NkirunError) as e:
        nkirun.simulate(k)(x, compare=True)
    d = e.value.diagnostics[0]
    assert d.code == "E603" and "truth value" in d.message
    assert d.loc.line == _line_of(open(path).read(), "if a < 1.0")


WHERE = HEAD + """
@nki.jit
def selects(x, y, col):
    a, b, c = nl.load(x), nl.load(y), nl.load(col)
    return tuple(out_of(t) for t in (
        nl.where(a < b, a, b),                            # full-tile y: predicated copy
        nl.where(a >= 0.5, 1.0, b),                       # a number x
        nl.where(a != b, a, c),                           # a column y: select_reduce
        nl.where(nl.less(a, b, dtype=nl.uint8), a, -1.0),
        nl.where(a, b, a)))                               # a float predicate: nonzero
"""


@pytest.mark.parametrize("p,f", [(1, 3), (37, 5), (128, 16)])
def test_where_with_comparison_results_and_full_tiles(tmp_path, p, f):
    k = nkirun_kernel(write(tmp_path, WHERE), "selects")
    rng = np.random.default_rng(p)
    x = rng.integers(-2, 3, (p, f)).astype(np.float32) * 0.5  # ties with y, zeros
    y = rng.integers(-2, 3, (p, f)).astype(np.float32) * 0.5
    x.reshape(-1)[0] = np.nan
    col = rng.standard_normal((p, 1)).astype(np.float32)
    got = nkirun.simulate(k)(x, y, col)
    want = [np.where(x < y, x, y), np.where(x >= 0.5, 1.0, y), np.where(x != y, x, col),
            np.where(x < y, x, -1.0), np.where(x != 0, y, x)]
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w.astype(np.float32), err_msg=f"result {i}")


def test_mod_of_int32_tiles_follows_the_divisor_sign(tmp_path):
    path = write(tmp_path, HEAD + """
@nki.jit
def imod(x, k):
    a = nl.load(x)
    return out_of(nl.mod(a, k, dtype=nl.int32)), out_of(nl.fmod(a, k, dtype=nl.int32))
""")
    x = np.array([[-7, -6, -1, 0, 1, 5, 6, 7, 1000001, -1000001]], np.int32)
    for k in (3, -3):
        m, f = nkirun.simulate(nkirun_kernel(path, "imod"))(x, k=k)
        np.testing.assert_array_equal(m, [[int(v) % k for v in x[0]]])  # Python: divisor sign
        np.testing.assert_array_equal(f, [[int(np.fmod(int(v), k)) for v in x[0]]])
