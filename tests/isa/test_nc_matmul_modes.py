"""nc_matmul's NKI 0.6 mode keywords against the nc_matmul page and the Trainium2 arch guide:
tile_position/tile_size (no value change, placement rules), perf_mode double_row (fp8
[K, 2, M] x [K, 2, N] contraction over both), is_transpose (bit-accurate stationary.T on
trn2), is_*_onezero hints. (accumulate is tested in test_nc_matmul.py.)"""
import pathlib

import ml_dtypes
import numpy as np
import pytest
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, key_line, out, run_inputs, sbuf,
                          write_program)

from nkirun.api import check_program, cost, run
from nkirun.diagnostics import RunError

BF16 = ml_dtypes.bfloat16


def _retarget(path, target):
    p = pathlib.Path(path)
    p.write_text(p.read_text().replace("version: 1", f"version: 1\ntarget: {target}", 1))
    return path


def _prog(tmp_path, st, mv, dst_shape, dst_dtype="float32", target=None, **kw):
    path = write_program(tmp_path, {"a": sbuf(st), "b": sbuf(mv),
                                    "ps": out(dst_shape, dst_dtype, buffer="psum")},
                         [{"nc_matmul": {"dst": "ps", "stationary": "a", "moving": "b", **kw}}])
    return _retarget(path, target) if target else path


def ints(rng, shape, dtype):
    return rng.integers(-4, 5, shape).astype(np.float32).astype(NP_TYPES[dtype])


# ---- perf_mode double_row ------------------------------------------------------------------
@pytest.mark.parametrize("k,m,n", [(128, 128, 512), (1, 1, 3), (37, 5, 11)])
@pytest.mark.parametrize("dt_a,dt_b", [("float8_e4m3", "float8_e4m3"),
                                       ("float8_e4m3", "float8_e5m2")])
def test_double_row_contracts_over_both_halves(tmp_path, k, m, n, dt_a, dt_b):
    rng = np.random.default_rng(k + m + n)
    st, mv = ints(rng, (k, 2, m), dt_a), ints(rng, (k, 2, n), dt_b)
    want = np.einsum("ktm,ktn->mn", st.astype(np.float64), mv.astype(np.float64))
    got = run(_prog(tmp_path, st, mv, (m, n), perf_mode="nisa.matmul_perf_mode.double_row"))
    np.testing.assert_array_equal(got["ps"], want.astype(np.float32))


def test_double_row_cost_counts_columns_not_halves(tmp_path):
    rng = np.random.default_rng(0)
    st, mv = ints(rng, (128, 2, 128), "float8_e4m3"), ints(rng, (128, 2, 512), "float8_e4m3")
    c = cost(_prog(tmp_path, st, mv, (128, 512), perf_mode="double_row")).slots[0]
    assert c.cycles == 512


@pytest.mark.parametrize("case", ["trn1", "bf16", "layout", "column_tiling", "transpose"])
def test_double_row_rules(tmp_path, case):
    rng = np.random.default_rng(1)
    dt = "bfloat16" if case == "bf16" else "float8_e4m3"
    st, mv = ints(rng, (8, 2, 4), dt), ints(rng, (8, 2, 6), dt)
    kw = {"perf_mode": "double_row"}
    if case == "layout":
        st, mv = ints(rng, (8, 3, 4), dt), ints(rng, (8, 3, 6), dt)
    if case == "column_tiling":
        kw |= {"tile_position": [0, 0], "tile_size": [128, 64]}
    if case == "transpose":
        kw |= {"is_transpose": True}
    path = _prog(tmp_path, st, mv, (4, 6), target="trn1" if case == "trn1" else None, **kw)
    d = check_program(path).diagnostics
    hit = [x for x in d if x.code == "E484"]
    assert hit and hit[0].loc.line == key_line(path, "perf_mode"), codes(d)


# ---- tiling -----------------------------------------------------------------------------------
@pytest.mark.parametrize("pos,size", [([0, 0], [128, 128]), ([64, 0], [64, 128]),
                                      ([32, 96], [32, 32]), ([0, 64], [64, 64])])
def test_tiling_changes_no_value(tmp_path, pos, size):
    rng = np.random.default_rng(2)
    st, mv = ints(rng, (32, 32), "bfloat16"), ints(rng, (32, 40), "bfloat16")
    want = run(_prog(tmp_path, st, mv, (32, 40)))["ps"]
    got = run(_prog(tmp_path, st, mv, (32, 40), tile_position=pos, tile_size=size))["ps"]
    assert_bits_equal(got, want)


@pytest.mark.parametrize("kw,code,key", [
    ({"tile_position": [0, 0]}, "E480", "tile_position"),
    ({"tile_size": [64, 64]}, "E480", "tile_size"),
    ({"tile_position": [0], "tile_size": [64, 64]}, "E480", "tile_position"),
    ({"tile_position": [0, 0], "tile_size": [48, 64]}, "E481", "tile_size"),
    ({"tile_position": [32, 0], "tile_size": [64, 64]}, "E482", "tile_position"),
    ({"tile_position": [0, 128], "tile_size": [64, 64]}, "E482", "tile_position"),
    ({"tile_position": [0, 0], "tile_size": [32, 128]}, "E483", "tile_size"),
])
def test_tiling_rules(tmp_path, kw, code, key):
    st, mv = np.ones((40, 16), np.float32), np.ones((40, 8), np.float32)
    path = _prog(tmp_path, st, mv, (16, 8), **kw)
    d = check_program(path).diagnostics
    hit = [x for x in d if x.code == code]
    assert hit and hit[0].loc.line == key_line(path, key), codes(d)


def test_32_wide_tiles_need_trn2(tmp_path):
    st, mv = np.ones((32, 16), np.float32), np.ones((32, 8), np.float32)
    kw = {"tile_position": [0, 0], "tile_size": [32, 32]}
    assert "E481" in codes(check_program(_prog(tmp_path, st, mv, (16, 8), target="trn1",
                                               **kw)).diagnostics)
    assert codes(check_program(_prog(tmp_path, st, mv, (16, 8), **kw)).diagnostics) == []


# ---- is_transpose -------------------------------------------------------------------------
def _special(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return x.astype(NP_TYPES[dtype])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("k,m", [(128, 128), (37, 5), (1, 64)])
def test_transpose_mode_is_bit_accurate_on_trn2(tmp_path, dtype, k, m):
    rng = np.random.default_rng(k + m)
    st = _special(rng, (k, m), dtype)
    eye = np.eye(k, dtype=np.float32).astype(NP_TYPES[dtype])
    got = run(_prog(tmp_path, st, eye, (m, k), dst_dtype=dtype, is_transpose=True))["ps"]
    assert_bits_equal(got, np.ascontiguousarray(st.T))


def test_transpose_flag_on_trn1_is_an_ordinary_matmul(tmp_path):
    """NeuronCore-v2: is_transpose only labels the instruction; NaN spreads through the sums."""
    st = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
    got = run(_prog(tmp_path, st, np.eye(2, dtype=np.float32), (2, 2), target="trn1",
                    is_transpose=True))["ps"]
    np.testing.assert_array_equal(got, st.T @ np.eye(2, dtype=np.float32))
    assert np.isnan(got[1]).all()


def test_transpose_rules(tmp_path):
    st = np.ones((8, 4), BF16)
    path = _prog(tmp_path, st, np.eye(8, dtype=BF16), (4, 8), dst_dtype="float16",
                 is_transpose=True)
    assert "E485" in codes(check_program(path).diagnostics)
    st32 = np.ones((8, 4), np.float32)  # narrowing fp32 -> bf16 is not a transpose
    path = _prog(tmp_path, st32, np.eye(8, dtype=np.float32), (4, 8), dst_dtype="bfloat16",
                 is_transpose=True)
    assert "E485" in codes(check_program(path).diagnostics)
    path = _prog(tmp_path, st, np.ones((8, 5), BF16), (4, 5), dst_dtype="bfloat16",
                 is_transpose=True)
    assert "E485" in codes(check_program(path).diagnostics)
    path = _prog(tmp_path, st, np.ones((8, 8), BF16), (4, 8), dst_dtype="bfloat16",
                 is_transpose=True)
    with pytest.raises(RunError) as e:
        run(path)
    assert e.value.diagnostics[0].code == "E486"


def test_bf16_dst_without_transpose_is_still_refused(tmp_path):
    path = _prog(tmp_path, np.ones((8, 4), BF16), np.ones((8, 6), BF16), (4, 6),
                 dst_dtype="bfloat16")
    assert codes(check_program(path).diagnostics) == ["E060"]


def test_transpose_mode_halves_fp32_cost(tmp_path):
    st, eye = np.ones((128, 128), np.float32), np.eye(128, dtype=np.float32)
    plain = cost(_prog(tmp_path, st, eye, (128, 128))).slots[0].cycles
    fast = cost(_prog(tmp_path, st, eye, (128, 128), is_transpose=True)).slots[0].cycles
    assert plain == 4 * 128 and fast == 2 * 128


# ---- one/zero hints ------------------------------------------------------------------------
def test_onezero_hints_cost_and_warning(tmp_path):
    st = (np.random.default_rng(3).random((16, 8)) < 0.5).astype(np.float32)
    mv = np.random.default_rng(4).standard_normal((16, 64)).astype(np.float32)
    c0 = cost(_prog(tmp_path, st, mv, (8, 64))).slots[0].cycles
    c1 = cost(_prog(tmp_path, st, mv, (8, 64), is_stationary_onezero=True)).slots[0].cycles
    c2 = cost(_prog(tmp_path, st, mv, (8, 64), is_stationary_onezero=True,
                    is_moving_onezero=True)).slots[0].cycles
    assert (c0, c1, c2) == (4 * 64, 4 * 64, 2 * 64)
    tensors = {"a": sbuf(st), "b": sbuf(mv), "ps": out((8, 64), "float32", buffer="psum")}
    outs, warns = run_inputs(tmp_path, tensors, [{"nc_matmul": {
        "dst": "ps", "stationary": "a", "moving": "b", "is_stationary_onezero": True,
        "is_moving_onezero": True}}])
    assert [w.code for w in warns] == ["W487"] and "moving" in warns[0].message
    np.testing.assert_allclose(outs["ps"], st.T @ mv, rtol=1e-6)


def test_transpose_into_float32_widens_exactly(tmp_path):
    rng = np.random.default_rng(8)
    st = _special(rng, (16, 8), "bfloat16")
    got = run(_prog(tmp_path, st, np.eye(16, dtype=BF16), (8, 16), is_transpose=True))["ps"]
    assert_bits_equal(got, np.ascontiguousarray(st.T).astype(np.float32))


@pytest.mark.parametrize("pos,size", [([], []), ((), ())])
def test_nki_default_empty_tiles_mean_untiled(tmp_path, pos, size):
    """NKI's defaults are tile_position=() and tile_size=(): given explicitly, untiled."""
    from nkirun.diagnostics import Loc
    from nkirun.isa import REGISTRY
    from nkirun.isa.spec import convert
    p = REGISTRY["nc_matmul"].param("tile_position")
    assert convert(p, pos, Loc("x", 1, 1)) == ()
    assert convert(p, (64, 0), Loc("x", 1, 1)) == (64, 0)
    st, mv = np.ones((8, 4), np.float32), np.ones((8, 6), np.float32)
    path = _prog(tmp_path, st, mv, (4, 6), tile_position=list(pos), tile_size=list(size))
    assert codes(check_program(path).diagnostics) == []
