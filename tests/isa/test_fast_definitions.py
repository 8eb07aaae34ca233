"""Each hard instruction's fast path gives the same bits as the plain `definition` beside it
in the instruction module (the page's loop): nc_match_replace8, max8, tensor_tensor_scan."""
from __future__ import annotations

import numpy as np
import pytest

from nkirun.isa import max8, nc_match_replace8, tensor_tensor_scan
from nkirun.isa.fast.match_replace import match_replace8
from nkirun.isa.fast.scan import scan
from nkirun.isa.fast.top8 import top8

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0], np.float32)
SHAPES = [(1, 8), (37, 33), (128, 129)]


def data(rng, p, n, distinct=False):
    if distinct:
        return rng.permutation(p * n).reshape(p, n).astype(np.float32) - p * n / 2
    x = rng.integers(-4, 5, (p, n)).astype(np.float32)  # many ties
    x.reshape(-1)[rng.choice(p * n, min(p * n, 6), replace=False)] = SPECIALS[:min(p * n, 6)]
    return x


def bits(a):
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


@pytest.mark.parametrize("p,n", SHAPES)
@pytest.mark.parametrize("seed", range(3))
def test_top8_is_the_definition(p, n, seed):
    x = data(np.random.default_rng(seed), p, n)
    np.testing.assert_array_equal(bits(top8(x.copy())), bits(max8.definition(x)))


@pytest.mark.parametrize("p,n", SHAPES)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("vals_from", ["top", "random", "dense"])
@pytest.mark.parametrize("masked", [False, True])
def test_match_replace8_is_the_definition(p, n, seed, vals_from, masked):
    rng = np.random.default_rng(seed)
    x = data(rng, p, n)
    if vals_from == "top":
        v = top8(x.copy())
    else:  # values spread over data (forces the candidate narrowing / the dense loop)
        v = x[:, rng.integers(0, n, 8)].copy() if vals_from == "dense" else \
            rng.integers(-5, 6, (p, 8)).astype(np.float32)
    valid = rng.random((p, n)) < 0.7 if masked else None
    for dense_above in (0, 64, 10**9):  # the dense loop, the default, candidates only
        got_x, want_x = x.copy(), x.copy()
        got = match_replace8(got_x, v, np.float32(-7.0), valid, dense_above=dense_above)
        want = nc_match_replace8.definition(want_x, v, np.float32(-7.0), valid)
        np.testing.assert_array_equal(bits(got_x), bits(want_x))
        np.testing.assert_array_equal(got[0][want[1]], want[0][want[1]])
        np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("p,n", [(1, 1), (37, 200), (128, 129)])
@pytest.mark.parametrize("ops", [("add", "multiply"), ("maximum", "subtract"),
                                 ("multiply", "add"), ("minimum", "maximum")])
@pytest.mark.parametrize("reverse", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("masked", [False, True])
def test_scan_is_the_definition(p, n, ops, reverse, masked):
    rng = np.random.default_rng(p * n)
    d0 = (rng.standard_normal((p, n)) * 0.5).astype(np.float32)
    d1 = (rng.standard_normal((p, n)) * 0.5).astype(np.float32)
    d0.reshape(-1)[: min(d0.size, 3)] = [np.inf, -np.inf, np.nan][: min(d0.size, 3)]
    init = rng.standard_normal(p).astype(np.float32)
    valid = rng.random((p, n)) < 0.8 if masked else None
    with np.errstate(all="ignore"):
        got = scan(d0, d1, init, *ops, *reverse, valid)
        want = tensor_tensor_scan.definition(d0, d1, init, *ops, *reverse, valid)
    np.testing.assert_array_equal(bits(got), bits(want))


# ---- tensor_tensor: float32 results computed straight into dst -----------------------------
def _tensor_tensor_program(tmp_path, op, dst_dtype, in_dtype, dtype_kw, masked, layout):
    from prog_helpers import out, sbuf, write_program
    rng = np.random.default_rng(5)
    a = rng.standard_normal((37, 96)).astype(np.float32)
    a.reshape(-1)[:5] = SPECIALS[:5]
    c = rng.standard_normal((37, 96)).astype(np.float32)
    c.reshape(-1)[3:8] = SPECIALS[3:8]
    tensors = {"a": sbuf(a, in_dtype), "c": sbuf(c, in_dtype)}
    if layout == "plain":
        tensors["y"] = out((37, 96), dst_dtype)
    inst = {"dst": "y", "data1": "a", "data2": "c", "op": op}
    if layout == "in_place":  # dst is data1
        tensors["a"] = sbuf(a, in_dtype, output=True)
        inst.update(dst="a")
    elif layout == "shifted":  # dst overlaps data1 one column further on
        tensors["a"] = sbuf(a, in_dtype, output=True)
        inst.update(dst="a[:, 1:65]", data1="a[:, 0:64]", data2="c[:, 0:64]")
    elif layout == "psum":
        tensors["p"] = {"buffer": "psum", "shape": [37, 96], "dtype": dst_dtype}
        tensors["z"] = out((37, 96), "float32")
        inst.update(dst="p")
    if dtype_kw:
        inst["dtype"] = dtype_kw
    if masked:
        inst["mask"] = "p < 20"
    body = [{"tensor_tensor": inst}]
    if masked and layout in ("plain", "psum"):
        body.insert(0, {"memset": {"dst": "y" if layout == "plain" else "p", "value": 0.0}})
    if layout == "psum":
        body.append({"tensor_copy": {"dst": "z", "src": "p"}})
    return write_program(tmp_path, tensors, body)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "minimum", "divide"])
@pytest.mark.parametrize("dst_dtype,in_dtype,dtype_kw", [
    ("float32", "float32", None), ("float32", "float32", "float32"),
    ("float32", "float32", "bfloat16"), ("bfloat16", "float32", None),
    ("float32", "bfloat16", None)])
@pytest.mark.parametrize("layout", ["plain", "in_place", "shifted", "psum"])
@pytest.mark.parametrize("masked", [False, True])
def test_tensor_tensor_into_dst_is_the_definition(tmp_path, monkeypatch, op, dst_dtype,
                                                  in_dtype, dtype_kw, layout, masked):
    from nkirun import api
    from nkirun.isa import tensor_tensor
    path = _tensor_tensor_program(tmp_path, op, dst_dtype, in_dtype, dtype_kw, masked, layout)
    used = []
    monkeypatch.setattr(tensor_tensor, "_INTO", {
        n: (lambda f: lambda *a, **k: used.append(n) or f(*a, **k))(f)
        for n, f in tensor_tensor._INTO.items()})
    fast = api.run(path)
    dst_is = in_dtype if layout in ("in_place", "shifted") else dst_dtype
    # (the plan's form: float operands of any width, no mask, no dtype= other than dst's)
    assert bool(used) == (op != "divide" and not masked and dtype_kw in (None, dst_is))
    monkeypatch.setattr(tensor_tensor, "_INTO", {})  # every instruction: the definition
    plain = api.run(path)
    assert fast.keys() == plain.keys() and fast
    for name in fast:
        np.testing.assert_array_equal(fast[name].view(np.uint8), plain[name].view(np.uint8))
