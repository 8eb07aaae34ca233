"""reciprocal against a NumPy reference written from its NKI page: the input cast to
float32, 1/x in float32 math, one cast to dst's dtype."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, out, random_floats, run_program,
                          sbuf)
from nkirun.api import cost

F32 = np.float32


def ref_reciprocal(x, out_dtype="float32"):
    """1/x of the float32 input: the exact quotient in float64, rounded to float32 (division
    rounds innocuously twice: float64 has more than 2*24+2 bits)."""
    with np.errstate(divide="ignore"):
        q = (1.0 / x.astype(F32).astype(np.float64)).astype(F32)
    return ref.cast_to(q, out_dtype)


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(5,), (129,), (3, 7)])
def test_shapes_and_special_values(tmp_path, P, free):
    rng = np.random.default_rng(P + len(free))
    x = random_floats(rng, (P,) + free)
    x.reshape(-1)[:2] = [0.0, -0.0] if x.size >= 2 else [0.0]
    got = run_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32")},
                      [{"reciprocal": {"dst": "y", "data": "x"}}])["y"]
    assert_bits_equal(got, ref_reciprocal(x))


@pytest.mark.parametrize("src,dst", [("bfloat16", "bfloat16"), ("float16", "float8_e4m3"),
                                     ("int16", "float32"), ("float32", "int8"),
                                     ("float8_e5m2", "float32")])
def test_dtypes(tmp_path, src, dst):
    rng = np.random.default_rng(3)
    x = ref.cast_to(random_floats(rng, (37, 40), special=False) + F32(0.25), src)
    got = run_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, dst)},
                      [{"reciprocal": {"dst": "y", "data": "x"}}])["y"]
    assert_bits_equal(got, ref_reciprocal(x, dst))


def test_sdk_example_golden(tmp_path):
    """The SDK's doc test: a [128, 512] tile of values in [0, 100) against np.reciprocal."""
    rng = np.random.default_rng(0)
    x = (rng.random((128, 512)) * 100).astype(F32)
    got = run_program(tmp_path, {"x": sbuf(x, buffer="psum"),
                                 "y": out(x.shape, "float32")},
                      [{"nisa.reciprocal": {"dst": "y", "data": "x"}}])["y"]
    np.testing.assert_allclose(got, np.reciprocal(x), rtol=1e-7)


def test_legacy_dtype_and_mask(tmp_path):
    x = np.arange(1, 9, dtype=F32).reshape(2, 4)
    got = run_program(tmp_path, {"x": sbuf(x), "y": sbuf(np.zeros((2, 4), F32), output=True)},
                      [{"reciprocal": {"dst": "y", "data": "x", "dtype": "bfloat16",
                                       "mask": "f < 2"}}])["y"]
    want = np.zeros((2, 4), F32)
    want[:, :2] = ref.cast_to(ref_reciprocal(x[:, :2]), "bfloat16").astype(F32)
    assert_bits_equal(got, want)


def test_shape_mismatch_is_located(tmp_path):
    d = diagnostics(tmp_path, {"x": sbuf(np.ones((4, 8), F32)), "y": out((4, 9), "float32")},
                    [{"reciprocal": {"dst": "y", "data": "x"}}])
    assert "E063" in codes(d)


@pytest.mark.parametrize("n,cycles", [(4, 64), (8, 64), (100, 800)])
def test_cost_is_eight_cycles_per_element(tmp_path, n, cycles):
    # the Vector form's documented cost; scheduled alone, the compiler's choice puts it on
    # the idle Scalar engine as activation(reciprocal), max(MIN_II, N) cycles
    # (schedule/placement.py)
    import types
    from prog_helpers import write_program
    from nkirun.hw.targets import TARGETS
    from nkirun.isa import reciprocal
    data = {"data": types.SimpleNamespace(free_size=n)}
    assert reciprocal.cycles(data, TARGETS["trn2"]) == cycles
    path = write_program(tmp_path, {"x": sbuf(np.ones((128, n), F32)),
                                    "y": out((128, n), "float32")},
                         [{"reciprocal": {"dst": "y", "data": "x"}}])
    slot = cost(path).slots[0]
    assert (slot.engine, slot.cycles) == ("scalar", max(64, n))


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "x": sbuf(np.arange(1, 9, dtype=np.float32).reshape(2, 4)),
        "inv": out((2, 4), "float32"),
    }
    outs = run_spec_example(tmp_path, "reciprocal", tensors)
    np.testing.assert_array_equal(outs["inv"], 1 / np.arange(1, 9, dtype=np.float32).reshape(2, 4))
