"""dma_copy (nki-reference.md §1.16): HBM/SBUF views of equal element counts, dtype conversion
through float32; PSUM is not a DMA operand; NKI 0.6's priority/engine keywords; the keywords
NKI 0.3.0 removed (dst_rmw_op, unique_indices) refused naming the release."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import matrix
import reference as ref
from prog_helpers import (assert_bits_equal, codes, key_line, out, random_floats, reported_at,
                          sbuf, write_program)
from nkirun.api import check_program, cost, run

F32 = np.float32


def _prog(tmp_path, x, dst, src_buffer="sbuf", dst_init=None, **kw):
    t = {"x": sbuf(x, buffer=src_buffer),
         "y": dst_init if dst_init is not None else out(*dst)}
    return write_program(tmp_path, t, [{"dma_copy": {"dst": "y", "src": "x", **kw}}])


@matrix.shapes
@pytest.mark.parametrize("bufs", [("hbm", "sbuf"), ("sbuf", "hbm"), ("hbm", "hbm"),
                                  ("sbuf", "sbuf")])
def test_copy_bit_exact(tmp_path, P, free, bufs):
    x = random_floats(np.random.default_rng(P), (P,) + free)
    got = run(_prog(tmp_path, x, ((P,) + free, "float32", bufs[1]), bufs[0]))["y"]
    assert_bits_equal(got, x)


def test_reshape_and_cast(tmp_path):
    x = random_floats(np.random.default_rng(1), (128, 6))
    got = run(_prog(tmp_path, x, ((64, 12), "bfloat16", "hbm")))["y"]
    assert_bits_equal(got, ref.cast_to(x, "bfloat16").reshape(64, 12))
    xi = np.arange(-50, 50, dtype=np.int16).reshape(4, 25) * np.int16(300)
    got = run(_prog(tmp_path, xi, ((4, 25), "int8", "sbuf")))["y"]
    assert_bits_equal(got, ref.cast_to(xi, "int8"))  # saturating, through float32


@pytest.mark.parametrize("key,value", [("dst_rmw_op", "np.add"), ("unique_indices", True)])
def test_keywords_removed_in_nki_030_name_the_release(tmp_path, key, value):
    """NKI 0.3.0 removed dst_rmw_op and unique_indices from dma_copy (use dma_compute)."""
    path = _prog(tmp_path, np.ones((4, 8), F32), ((4, 8), "float32", "hbm"), **{key: value})
    d = check_program(path).diagnostics
    assert codes(d) == ["E390"] and d[0].loc.line == key_line(path, key)
    assert "NKI 0.3.0" in d[0].message and "dma_compute" in d[0].hint


def test_masked_copy_keeps_other_elements(tmp_path):
    x = np.arange(8 * 6, dtype=F32).reshape(8, 6)
    y0 = np.full((8, 6), -1, F32)
    path = _prog(tmp_path, x, None, dst_init=sbuf(y0, output=True), mask="p < 3 and f >= 2")
    want = y0.copy()
    want[:3, 2:] = x[:3, 2:]
    assert_bits_equal(run(path)["y"], want)


@pytest.mark.parametrize("src_buffer,dst_buffer,code,key", [
    ("psum", "sbuf", "E040", "src"), ("sbuf", "psum", "E040", "dst")])
def test_psum_not_allowed(tmp_path, src_buffer, dst_buffer, code, key):
    path = _prog(tmp_path, np.ones((4, 8), F32), ((4, 8), "float32", dst_buffer), src_buffer)
    d = check_program(path).diagnostics
    assert code in codes(d)
    reported_at(path, code, key)


def test_rules(tmp_path):
    path = _prog(tmp_path, np.ones((4, 8), F32), ((4, 9), "float32", "hbm"))
    reported_at(path, "E180", "src", only=True)


def test_cost_is_a_dma(tmp_path):
    x = np.ones((128, 512), F32)
    path = _prog(tmp_path, x, ((128, 512), "float32", "hbm"))
    t = {"x": sbuf(x), "y": out((128, 512), "float32", "hbm")}
    store = write_program(tmp_path, t, [{"store": {"dst": "y", "src": "x"}}])
    a, b = cost(path).slots[0], cost(store).slots[0]
    assert a.engine == "dma" and a.cycles == b.cycles > 0


# ---- dge_mode / oob_mode (nki-reference.md §1.16) -------------------------------------------
@pytest.mark.parametrize("dge", ["none", "swdge", "hwdge", "unknown", "nisa.dge_mode.hwdge"])
@pytest.mark.parametrize("oob", ["error", "skip", "oob_mode.skip"])
def test_dge_and_oob_modes_change_no_value(tmp_path, dge, oob):
    x = random_floats(np.random.default_rng(3), (37, 129))
    path = _prog(tmp_path, x, ((37, 129), "float32", "hbm"), dge_mode=dge, oob_mode=oob)
    assert check_program(path).diagnostics == []
    assert_bits_equal(run(path)["y"], x)


@pytest.mark.parametrize("dge", ["none", "swdge", "unknown"])
def test_casting_copy_without_hwdge(tmp_path, dge):
    x = random_floats(np.random.default_rng(4), (128, 5))
    got = run(_prog(tmp_path, x, ((128, 5), "bfloat16", "hbm"), dge_mode=dge))["y"]
    assert_bits_equal(got, ref.cast_to(x, "bfloat16"))


@pytest.mark.parametrize("dtypes", [("float32", "bfloat16"), ("bfloat16", "float32"),
                                    ("int32", "float32"), ("float16", "float8_e4m3")])
def test_hwdge_refuses_a_casting_copy(tmp_path, dtypes):
    src, dst = dtypes
    t = {"x": sbuf(np.ones((4, 8)), src), "y": out((4, 8), dst, "hbm")}
    path = write_program(tmp_path, t, [{"dma_copy": {"dst": "y", "src": "x",
                                                     "dge_mode": "hwdge"}}])
    d, diags = reported_at(path, "E182", "dge_mode")
    assert codes(diags) == ["E182"] and src in d.message and dst in d.message


@pytest.mark.parametrize("target,ok", [("trn2", True), ("trn1", False), ("inf2", False)])
def test_hwdge_needs_nc_v3(tmp_path, target, ok):
    t = {"x": sbuf(np.ones((4, 8), F32)), "y": out((4, 8), "float32", "hbm")}
    path = write_program(tmp_path, t, [{"dma_copy": {"dst": "y", "src": "x",
                                                     "dge_mode": "hwdge"}}])
    text = pathlib.Path(path).read_text().replace("version: 1", f"version: 1\ntarget: {target}")
    pathlib.Path(path).write_text(text)
    diags = check_program(path).diagnostics
    assert codes(diags) == ([] if ok else ["E181"])


def test_unknown_modes_are_refused(tmp_path):
    x = np.ones((4, 8), F32)
    path = _prog(tmp_path, x, ((4, 8), "float32", "hbm"), dge_mode="fast")
    reported_at(path, "E025", "dge_mode")
    path = _prog(tmp_path, x, ((4, 8), "float32", "hbm"), oob_mode="wrap")
    reported_at(path, "E025", "oob_mode")


# ---- NKI 0.6: priority and engine -----------------------------------------------------------
def _retarget(path, target):
    text = pathlib.Path(path).read_text().replace("version: 1", f"version: 1\ntarget: {target}", 1)
    pathlib.Path(path).write_text(text)
    return path


def test_priority_is_a_v4_qos_level(tmp_path):
    path = _prog(tmp_path, np.ones((4, 8), F32), ((4, 8), "float32", "hbm"), priority=2)
    d = check_program(path).diagnostics
    assert codes(d) == ["E397"] and d[0].loc.line == key_line(path, "priority")
    path = _prog(tmp_path, np.ones((4, 8), F32), ((4, 8), "float32", "hbm"), priority=4)
    assert codes(check_program(path).diagnostics) == ["E396"]


@pytest.mark.parametrize("engine", ["sync", "scalar", "nisa.engine.sync", "nki.isa.engine.scalar",
                                    "nisa.scalar_engine"])
def test_hwdge_trigger_engine(tmp_path, engine):
    x = random_floats(np.random.default_rng(5), (16, 33))
    path = _prog(tmp_path, x, ((16, 33), "float32", "hbm"), dge_mode="hwdge", engine=engine)
    assert_bits_equal(run(path)["y"], x)


def test_engine_needs_hwdge(tmp_path):
    path = _prog(tmp_path, np.ones((4, 8), F32), ((4, 8), "float32", "hbm"), engine="sync")
    d = check_program(path).diagnostics
    assert codes(d) == ["E398"] and d[0].loc.line == key_line(path, "engine")
    path = _prog(tmp_path, np.ones((4, 8), F32), ((4, 8), "float32", "hbm"), engine="vector")
    assert codes(check_program(path).diagnostics) == ["E025"]
