"""Pre-0.2 `mask=` predicates that are no rectangle (legacy_mask.py): triangles, bounds on
a flattened index, 3-D masks, masked reductions; the rectangle narrowing; what NKI
rejects (E608). Each against an independent NumPy reference of "masked-off elements are
neither computed nor written"."""
from __future__ import annotations

import numpy as np
import pytest

import nkirun
from nkirun.diagnostics import NkirunError
from tests.kernel.test_kernel_contract import nkirun_kernel, write

HEAD = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

"""

# masked load, masked compute, masked store over a tile that starts as `fill`: elements
# outside the mask keep `fill` in the output
TRIANGLE = HEAD + """
@nki.jit
def lower(x, fill=-1.0, rows=None):
    P, F = x.shape
    rows = P if rows is None else rows
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(P)[:, None]
    jf = nl.arange(F)[None, :]
    nl.store(out[ip, jf], value=nl.full((P, F), fill, dtype=x.dtype))
    keep = (jf <= ip) & (ip < rows)
    t = nl.load(x[ip, jf], mask=keep)
    y = nl.multiply(t, 3.0, mask=keep)
    nl.store(out[ip, jf], value=y, mask=keep)
    return out
"""


@pytest.mark.parametrize("p,f,rows", [(1, 1, 1), (37, 5, 37), (128, 37, 100), (64, 130, 64)])
def test_triangle_masks_compute_and_write_only_the_triangle(tmp_path, p, f, rows):
    k = nkirun_kernel(write(tmp_path, TRIANGLE), "lower")
    x = np.random.default_rng(p).standard_normal((p, f)).astype(np.float32)
    got = nkirun.simulate(k)(x, rows=rows)
    i, j = np.indices((p, f))
    want = np.where((j <= i) & (i < rows), x * np.float32(3), np.float32(-1))
    np.testing.assert_array_equal(got, want)


FLAT = HEAD + """
@nki.jit
def first_n(x, n):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:P, 0:F]
    nl.store(out[ip, jf], value=nl.zeros((P, F), dtype=x.dtype))
    inside = ip * F + jf < n   # the first n elements in row-major order
    t = nl.load(x[ip, jf], mask=inside)
    nl.store(out[ip, jf], value=nl.exp(t, mask=inside), mask=inside)
    return out
"""


@pytest.mark.parametrize("n", [1, 7, 100, 127, 128 * 8 - 3])
def test_a_bound_on_the_flattened_index(tmp_path, n):
    k = nkirun_kernel(write(tmp_path, FLAT), "first_n")
    x = np.linspace(-2, 2, 128 * 8, dtype=np.float32).reshape(128, 8)
    got = nkirun.simulate(k)(x, n=n)
    want = np.zeros_like(x).reshape(-1)
    want[:n] = np.exp(x.reshape(-1)[:n])
    np.testing.assert_allclose(got.reshape(-1), want, rtol=1e-6)
    assert (got.reshape(-1)[n:] == 0).all()


THREE_D = HEAD + """
@nki.jit
def band(x):
    P, A, B = x.shape
    out = nl.ndarray((P, A, B), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, ia, ib = nl.mgrid[0:P, 0:A, 0:B]
    nl.store(out[ip, ia, ib], value=nl.zeros((P, A, B), dtype=x.dtype))
    m = (ia - ib <= 1) & (ib - ia <= 1) & (ip >= 2)   # a band in the free dims
    t = nl.load(x[ip, ia, ib], mask=m)
    nl.store(out[ip, ia, ib], value=t, mask=m)
    return out
"""


def test_a_band_over_two_free_dims(tmp_path):
    k = nkirun_kernel(write(tmp_path, THREE_D), "band")
    x = np.random.default_rng(3).standard_normal((6, 5, 7)).astype(np.float32)
    got = nkirun.simulate(k)(x)
    p, a, b = np.indices(x.shape)
    np.testing.assert_array_equal(got, np.where((abs(a - b) <= 1) & (p >= 2), x, 0))


REDUCE = HEAD + """
@nki.jit
def row_sums(x):
    P, F = x.shape
    out = nl.ndarray((P, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(P)[:, None]
    jf = nl.arange(F)[None, :]
    t = nl.load(x)
    s = nl.sum(t, axis=1, mask=(jf <= ip + 2))   # each row sums its first p + 3 elements
    nl.store(out, value=s)
    return out
"""


def test_a_masked_reduction_sees_only_the_selected_elements(tmp_path):
    k = nkirun_kernel(write(tmp_path, REDUCE), "row_sums")
    x = np.random.default_rng(4).standard_normal((16, 12)).astype(np.float32)
    got = nkirun.simulate(k)(x)
    want = np.array([[x[p, :p + 3].astype(np.float64).sum()] for p in range(16)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_cost_charges_the_masks_rectangle(tmp_path):
    """A triangle inside rows 0..63 costs what the unmasked 64-row instruction costs."""
    src = HEAD + """
@nki.jit
def pair(x):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(P)[:, None]
    jf = nl.arange(F)[None, :]
    t = nl.load(x)
    a = nl.multiply(t, 2.0, mask=(jf <= ip) & (ip < 64))
    b = nl.multiply(t[0:64, :], 2.0)
    nl.store(out[0:64, :], value=a[0:64, :])
    nl.store(out[0:64, :], value=b)
    return out
"""
    k = nkirun_kernel(write(tmp_path, src), "pair")
    x = np.ones((128, 64), np.float32)
    prog = nkirun.trace(k, x)
    masked = [i for i in prog.instructions if i.args.get("mask")]
    assert len(masked) == 1 and "p" in masked[0].args["mask"]
    sched = nkirun.cost(k, x)
    mults = [s for s in sched.slots if s.op == "tensor_scalar"]
    assert len(mults) == 2 and mults[0].cycles == mults[1].cycles


def test_convert_keeps_the_predicate_and_runs_the_same(tmp_path):
    k = nkirun_kernel(write(tmp_path, TRIANGLE), "lower")
    x = np.random.default_rng(5).standard_normal((40, 9)).astype(np.float32)
    prog = nkirun.trace(k, x)
    text = prog.to_text()
    assert 'mask="' in text
    path = tmp_path / "lower.nkis"
    path.write_text(text)
    got = nkirun.run(str(path), inputs={"x": x})
    np.testing.assert_array_equal(list(got.values())[0], nkirun.simulate(k)(x))


@pytest.mark.parametrize("mask,why", [
    ("(ip < 8) | (jf < 4)", "`&`"),
    ("~(jf <= ip)", "`&`"),
    ("(jf % 2 == 0)", "affine"),
    ("(ip < 8) and (jf < 4)", "`&`"),
    ("(ip * ip < jf)", "affine"),
])
def test_what_nki_rejects_is_a_located_e608(tmp_path, mask, why):
    path = write(tmp_path, HEAD + f"""
@nki.jit
def bad(x):
    out = nl.ndarray((16, 16), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(16)[:, None]
    jf = nl.arange(16)[None, :]
    t = nl.load(x[ip, jf], mask={mask})
    nl.store(out[ip, jf], value=t)
    return out
""")
    with pytest.raises(NkirunError) as e:
        nkirun.check(nkirun_kernel(path, "bad"), np.ones((16, 16), np.float32))
    d = e.value.diagnostics[0]
    assert d.code == "E608" and why in d.message, d.message
    lines = open(path).read().splitlines()
    assert "nl.load(" in lines[d.loc.line - 1]


def test_rectangles_still_narrow_without_a_predicate(tmp_path):
    path = write(tmp_path, HEAD + """
@nki.jit
def rect(x):
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(64)[None, :]
    nl.store(out[ip, jf], value=nl.zeros((128, 64), dtype=x.dtype))
    t = nl.load(x[ip, jf], mask=(ip < 64) & (jf < 32))
    nl.store(out[ip, jf], value=t, mask=(ip < 64) & (jf < 32))
    return out
""")
    k = nkirun_kernel(path, "rect")
    x = np.random.default_rng(6).standard_normal((128, 64)).astype(np.float32)
    prog = nkirun.trace(k, x)
    assert not any(i.args.get("mask") for i in prog.instructions)
    want = np.zeros_like(x)
    want[:64, :32] = x[:64, :32]
    np.testing.assert_array_equal(nkirun.simulate(k)(x), want)
