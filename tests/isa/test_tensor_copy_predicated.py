"""tensor_copy_predicated against its NKI page's behaviour: where the predicate is true
(nonzero) dst receives src (a tile, bit for bit, or a number); elsewhere dst is unmodified;
reverse_pred inverts the predicate."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, random_floats, run_program,
                          sbuf, write_program)
from nkirun.api import cost

F32 = np.float32


def ref_copy_predicated(dst, src, predicate, reverse_pred=False):
    out = dst.copy()
    for idx in np.ndindex(dst.shape):
        take = predicate[idx] != 0
        if reverse_pred:
            take = not take
        if take:
            out[idx] = src[idx] if isinstance(src, np.ndarray) else dst.dtype.type(src)
    return out


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(5,), (33,), (3, 7)])
@pytest.mark.parametrize("pdtype", ["uint8", "uint16", "uint32"])
def test_tile_source(tmp_path, P, free, pdtype):
    rng = np.random.default_rng(P + len(free))
    shape = (P,) + free
    src, dst = random_floats(rng, shape), random_floats(rng, shape)
    src.reshape(-1)[:1] = np.frombuffer(np.uint32(0x7FC00123).tobytes(), F32)  # NaN payload
    pred = (rng.integers(0, 3, shape) * 7).astype(pdtype)
    for reverse in (False, True):
        outs = run_program(tmp_path, {"s": sbuf(src), "d": sbuf(dst, output=True),
                                      "p": sbuf(pred)},
                           [{"tensor_copy_predicated": {"dst": "d", "src": "s", "predicate": "p",
                                                        "reverse_pred": reverse}}])
        assert_bits_equal(outs["d"], ref_copy_predicated(dst, src, pred, reverse))


@pytest.mark.parametrize("dtype,value", [("bfloat16", 2.7), ("int8", 300.0), ("float32", "-inf")])
def test_scalar_source(tmp_path, dtype, value):
    dst = ref.cast_to(np.arange(12, dtype=F32).reshape(3, 4), dtype)
    pred = (np.arange(12).reshape(3, 4) % 2).astype(np.uint8)
    outs = run_program(tmp_path, {"d": sbuf(dst, output=True), "p": sbuf(pred)},
                       [{"tensor_copy_predicated": {"dst": "d", "src": value,
                                                    "predicate": "p"}}])
    v = float(value)
    want = ref_copy_predicated(dst, ref.cast_to(np.array(v, F32), dtype).item(), pred)
    assert_bits_equal(outs["d"], want)


def test_sdk_example_golden(tmp_path):
    rng = np.random.default_rng(0)
    a = (rng.random((128, 512)) * 100).astype(F32)
    b = (rng.random((128, 512)) * 100).astype(F32)
    pred = np.less_equal(a, 0.8).astype(np.uint8)
    outs = run_program(tmp_path, {"a": sbuf(a), "b": sbuf(b, output=True), "p": sbuf(pred)},
                       [{"nisa.tensor_copy_predicated": {"src": "a", "dst": "b",
                                                         "predicate": "p"}}])
    assert_bits_equal(outs["b"], np.where(pred != 0, a, b))


def test_rules(tmp_path):
    t = np.ones((4, 8), F32)
    d = diagnostics(tmp_path, {"s": sbuf(t, buffer="psum"), "p": sbuf(np.ones((4, 8), np.uint8),
                                                                    buffer="psum"),
                               "d": sbuf(t, output=True), "h": sbuf(t.astype(np.float16)),
                               "i": sbuf(np.ones((4, 8), np.int8))},
                    [{"tensor_copy_predicated": {"dst": "d", "src": "s", "predicate": "p"}},
                     {"tensor_copy_predicated": {"dst": "d", "src": "h", "predicate": "p"}},
                     {"tensor_copy_predicated": {"dst": "d", "src": "d", "predicate": "i"}}])
    got = codes(d)
    for code in ("E351", "E350", "E060"):
        assert code in got, (code, got)


def test_unselected_elements_of_an_undefined_dst_stay_undefined(tmp_path):
    from nkirun.api import run
    from prog_helpers import out
    pred = np.array([[1, 0]], np.uint8)
    path = write_program(tmp_path, {"s": sbuf(np.ones((1, 2), F32)), "p": sbuf(pred),
                                    "d": {"buffer": "sbuf", "shape": [1, 2],
                                          "dtype": "float32"}, "o": out((1, 2), "float32")},
                         [{"tensor_copy_predicated": {"dst": "d", "src": "s", "predicate": "p"}},
                          {"tensor_copy": {"dst": "o", "src": "d"}}])
    with pytest.raises(Exception) as e:
        run(path)
    assert "E090" in str(e.value) or "before anything wrote it" in str(e.value)


@pytest.mark.parametrize("src_buf,pred_buf,cycles", [("sbuf", "sbuf", 200), ("psum", "sbuf", 100),
                                                      ("sbuf", "psum", 100)])
def test_cost(tmp_path, src_buf, pred_buf, cycles):
    t = np.ones((128, 100), F32)
    path = write_program(tmp_path, {"s": sbuf(t, buffer=src_buf),
                                    "p": sbuf(np.ones((128, 100), np.uint8), buffer=pred_buf),
                                    "d": sbuf(t, output=True)},
                         [{"tensor_copy_predicated": {"dst": "d", "src": "s", "predicate": "p"}}])
    assert cost(path).slots[0].cycles == cycles


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "candidate": sbuf(np.ones((4, 8), np.float32)),
        "better": sbuf(np.eye(4, 8, dtype=np.uint8)),
        "acc": sbuf(np.zeros((4, 8), np.float32), output=True),
    }
    outs = run_spec_example(tmp_path, "tensor_copy_predicated", tensors)
    np.testing.assert_array_equal(outs["acc"], np.eye(4, 8, dtype=np.float32))
