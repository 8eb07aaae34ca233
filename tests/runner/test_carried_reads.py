"""Reads of elements nothing wrote under the default policy (runner/carried.py): the values
computed from them are unwritten too, and the run stops (E090, at the read that started
it) only when one reaches an output, an index or a register. `strict` stops at the read;
`nan` / `zero` read NaN / 0. Each case is checked against the values NumPy gives for the
written part."""
from __future__ import annotations

import numpy as np
import pytest
from prog_helpers import out, sbuf, tmp, write_program

from nkirun.api import run
from nkirun.diagnostics import NkirunError

RNG = np.random.default_rng(90)


def _partly_written(P=8, F=6, written=3):
    """t: rows 0..written-1 loaded from x; then u = t * 2 + t over every row."""
    x = RNG.standard_normal((P, F)).astype(np.float32)
    tensors = {"x": sbuf(x, buffer="hbm"), "t": tmp((P, F), "float32"),
               "u": tmp((P, F), "float32"), "v": tmp((P, F), "float32")}
    steps = [{"load": {"dst": f"t[0:{written}, :]", "src": f"x[0:{written}, :]"}},
             {"tensor_scalar": {"dst": "u", "data": "t", "op0": "multiply", "operand0": 2.0}},
             {"tensor_tensor": {"dst": "v", "data1": "u", "data2": "t", "op": "add"}}]
    return x, tensors, steps


@pytest.mark.parametrize("P,F,written", [(2, 1, 1), (8, 6, 3), (37, 5, 36), (128, 33, 64)])
def test_garbage_that_never_reaches_an_output_is_harmless(tmp_path, P, F, written):
    x, tensors, steps = _partly_written(P, F, written)
    tensors["y"] = out((written, F), "float32", "hbm")
    steps.append({"store": {"dst": "y", "src": f"v[0:{written}, :]"}})
    got = run(write_program(tmp_path, tensors, steps))
    np.testing.assert_array_equal(got["y"], x[:written] * np.float32(2) + x[:written])
    with pytest.raises(NkirunError) as e:  # strict: at the first read (the multiply)
        run(write_program(tmp_path, tensors, steps), uninitialized="strict")
    d = e.value.diagnostics[0]
    assert d.code == "E090" and d.instruction == 1 and "reads `t`" in d.message


def test_garbage_reaching_an_output_is_e090_at_the_read_that_started_it(tmp_path):
    x, tensors, steps = _partly_written()
    tensors["y"] = out((8, 6), "float32", "hbm")
    steps.append({"store": {"dst": "y", "src": "v"}})
    with pytest.raises(NkirunError) as e:
        run(write_program(tmp_path, tensors, steps))
    (d,) = e.value.diagnostics
    assert d.code == "E090" and d.instruction == 1  # the multiply read t's rows 3..7
    assert "tensor_scalar reads `t` at partition 3, free index (0,)" in d.message
    assert "reach output `y` at index (3, 0)" in d.message
    assert "t[0:3" in d.hint  # the written rows, as for a strict E090


def test_a_transpose_moves_garbage_to_columns_and_a_copy_of_the_written_ones_runs(tmp_path):
    """find_nonzero_indices' pattern: a tile written in one row, transposed, and only the
    column of that row read back."""
    x = RNG.standard_normal((1, 16)).astype(np.float32)
    tensors = {"x": sbuf(x, buffer="hbm"), "t": tmp((16, 16), "float32"),
               "tp": tmp((16, 16), "float32", "psum"), "s": tmp((16, 1), "float32"),
               "y": out((16, 1), "float32", "hbm")}
    steps = [{"load": {"dst": "t[0:1, :]", "src": "x"}},
             {"nc_transpose": {"dst": "tp", "data": "t"}},
             {"tensor_copy": {"dst": "s", "src": "tp[:, 0:1]"}},
             {"store": {"dst": "y", "src": "s"}}]
    got = run(write_program(tmp_path, tensors, steps))
    np.testing.assert_array_equal(got["y"], x.T)
    steps[2]["tensor_copy"]["src"] = "tp[:, 1:2]"  # a column of garbage
    with pytest.raises(NkirunError) as e:
        run(write_program(tmp_path, tensors, steps))
    assert e.value.diagnostics[0].code == "E090" and "nc_transpose reads `t`" in \
        e.value.diagnostics[0].message


def test_a_row_reduction_of_garbage_rows_stays_in_those_rows(tmp_path):
    x, tensors, steps = _partly_written(8, 6, 5)
    tensors.update(r=tmp((8, 1), "float32"), y=out((5, 1), "float32", "hbm"))
    steps += [{"tensor_reduce": {"dst": "r", "data": "v", "op": "add", "axis": 1}},
              {"store": {"dst": "y", "src": "r[0:5, :]"}}]
    got = run(write_program(tmp_path, tensors, steps))
    np.testing.assert_allclose(got["y"], (x[:5] * 3).sum(axis=1, keepdims=True), rtol=1e-6)


def test_garbage_scaled_by_zero_is_still_garbage(tmp_path):
    """Unwritten memory may hold NaN or inf (NKI's simulator fills new tiles with NaN), and
    NaN * 0 is NaN: a product with 0 does not clean garbage."""
    x, tensors, steps = _partly_written(4, 4, 2)
    steps[1]["tensor_scalar"]["operand0"] = 0.0
    tensors["y"] = out((4, 4), "float32", "hbm")
    steps = steps[:2] + [{"store": {"dst": "y", "src": "u"}}]
    with pytest.raises(NkirunError) as e:
        run(write_program(tmp_path, tensors, steps))
    assert e.value.diagnostics[0].code == "E090"
    got = run(write_program(tmp_path, tensors, steps), uninitialized="zero")
    np.testing.assert_array_equal(got["y"], np.zeros((4, 4), np.float32))


def test_garbage_as_an_indirect_index_stops_at_once(tmp_path):
    data = RNG.standard_normal((10, 4)).astype(np.float32)
    tensors = {"d": sbuf(data, buffer="hbm"), "ih": sbuf(np.array([[1], [2]], np.int32),
                                                       buffer="hbm"),
               "i": tmp((4, 1), "int32"), "t": tmp((4, 4), "float32"),
               "y": out((2, 4), "float32", "hbm")}
    steps = [{"dma_copy": {"dst": "i[0:2, :]", "src": "ih"}},  # rows 2, 3 of the index unset
             {"dma_copy": {"dst": "t", "src": "d.ap([[4, 4], [1, 4]], vector_offset=i)"}},
             {"store": {"dst": "y", "src": "t[0:2, :]"}}]
    with pytest.raises(NkirunError) as e:
        run(write_program(tmp_path, tensors, steps))
    d = e.value.diagnostics[0]
    assert d.code == "E090" and d.instruction == 1 and "`i`" in d.message


def test_garbage_loaded_into_a_register_stops_at_once(tmp_path):
    tensors = {"c": tmp((1, 2), "int32"), "y": out((1, 1), "int32", "hbm")}
    steps = [{"memset": {"dst": "c[:, 0:1]", "value": 3}},
             {"register_alloc": {"dst": "r"}},
             {"register_load": {"dst": "r", "src": "c[:, 1:2]"}},
             {"store": {"dst": "y", "src": "c[:, 0:1]"}}]
    prog = write_program(tmp_path, tensors, steps)
    with pytest.raises(NkirunError) as e:
        run(prog)
    d = e.value.diagnostics[0]
    assert d.code == "E090" and d.instruction == 2 and "register_load reads `c`" in d.message


def test_garbage_stored_element_by_element_into_a_larger_output(tmp_path):
    """Writes through an integer index (one row of an HBM tensor) carry garbage too: the
    written elements are unwritten afterwards, the rest of the output untouched."""
    x, tensors, steps = _partly_written(4, 3, 2)
    tensors["y"] = sbuf(np.zeros((4, 3), np.float32), buffer="hbm", output=True)
    steps += [{"store": {"dst": "y[0, 1:2]", "src": "v[0:1, 1:2]"}},   # written: fine
              {"store": {"dst": "y[3, 2:3]", "src": "v[3:4, 2:3]"}}]   # garbage
    with pytest.raises(NkirunError) as e:
        run(write_program(tmp_path, tensors, steps))
    d = e.value.diagnostics[0]
    assert d.code == "E090" and "reach output `y` at index (3, 2)" in d.message
    steps.pop()
    got = run(write_program(tmp_path, tensors, steps))
    want = np.zeros((4, 3), np.float32)
    want[0, 1] = x[0, 1] * 3
    np.testing.assert_array_equal(got["y"], want)


def test_the_command_line_policies(tmp_path):
    from prog_helpers import invoke
    x, tensors, steps = _partly_written()
    tensors["y"] = out((3, 6), "float32", "hbm")
    steps.append({"store": {"dst": "y", "src": "v[0:3, :]"}})
    path = write_program(tmp_path, tensors, steps)
    r = invoke("run", path, "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    r = invoke("run", path, "--out", tmp_path / "o2", "--uninitialized", "strict")
    assert r.exit_code == 1 and "E090" in r.output + r.stderr
    steps[-1]["store"] = {"dst": "y", "src": "v[2:5, :]"}  # rows 3, 4 are garbage
    path = write_program(tmp_path, tensors, steps)
    r = invoke("run", path, "--out", tmp_path / "o3")
    text = r.output + r.stderr
    assert r.exit_code == 1 and "E090" in text and "reach output `y`" in text
    assert "--uninitialized" not in text  # (NaN or 0 would not make this output right)


def test_a_random_instruction_draws_once_whatever_garbage_it_reads(tmp_path):
    """Running an instruction on several fills restores the random number generators
    between the runs: the written rows get exactly the numbers of a run without garbage."""
    def prog(written):
        tensors = {"lo": tmp((8, 1), "float32"), "r": tmp((8, 16), "float32"),
                   "y": out((4, 16), "float32", "hbm")}
        steps = [{"memset": {"dst": f"lo[0:{written}, :]", "value": -1.0}},
                 {"rand2": {"dst": "r", "min": "lo", "max": 1.0}},
                 {"rand2": {"dst": "r", "min": -1.0, "max": 1.0}},  # draws again after
                 {"store": {"dst": "y", "src": "r[0:4, :]"}}]
        return write_program(tmp_path, tensors, steps, target="trn3")
    clean = run(prog(8))["y"]
    carried = run(prog(4))["y"]
    np.testing.assert_array_equal(carried, clean)


def test_garbage_that_makes_an_instruction_fail_is_e090_at_its_read(tmp_path):
    """nc_n_gather's indices are values it checks (E423 past the data): garbage indices make
    some fill fail, which is reported as the unwritten read it is."""
    data = RNG.standard_normal((4, 8)).astype(np.float32)
    tensors = {"d": sbuf(data), "i": tmp((4, 2), "uint32"), "g": tmp((4, 2), "float32"),
               "y": out((2, 2), "float32", "hbm")}
    steps = [{"memset": {"dst": "i[0:2, :]", "value": 3}},
             {"nc_n_gather": {"dst": "g", "data": "d", "indices": "i"}},
             {"store": {"dst": "y", "src": "g[0:2, :]"}}]
    with pytest.raises(NkirunError) as e:
        run(write_program(tmp_path, tensors, steps))
    d = e.value.diagnostics[0]
    assert d.code == "E090" and d.instruction == 1 and "reads `i`" in d.message


def test_a_shadow_run_carries_garbage_the_same_way(tmp_path):
    from nkirun.api import shadow
    x, tensors, steps = _partly_written(8, 6, 3)
    tensors["y"] = out((3, 6), "float32", "hbm")
    steps.append({"store": {"dst": "y", "src": "v[0:3, :]"}})
    report = shadow(write_program(tmp_path, tensors, steps))
    np.testing.assert_array_equal(report.outputs["y"], x[:3] * np.float32(2) + x[:3])


def test_an_output_with_garbage_and_never_written_elements_names_each_rightly(tmp_path):
    x, tensors, steps = _partly_written(8, 6, 3)
    tensors["y"] = out((8, 6), "float32", "hbm")
    steps += [{"store": {"dst": "y[0:3, :]", "src": "v[0:3, :]"}},
              {"store": {"dst": "y[5:6, :]", "src": "v[3:4, :]"}}]  # garbage into row 5
    with pytest.raises(NkirunError) as e:
        run(write_program(tmp_path, tensors, steps))
    d = e.value.diagnostics[0]  # rows 3, 4 were never written: the garbage is at row 5
    assert d.code == "E090" and "reach output `y` at index (5, 0)" in d.message
    steps.pop()  # rows 3..7 never written, no garbage
    with pytest.raises(NkirunError) as e:
        run(write_program(tmp_path, tensors, steps))
    assert e.value.diagnostics[0].code == "E092"


@pytest.mark.parametrize("rows", ["0:2", "0:4"])
def test_garbage_into_a_tensor_the_plan_does_not_track(tmp_path, rows):
    """`u` is first written whole by a planned memset, so the execution plan does not track
    it; garbage landing in it later restarts the run on the plain path (same results)."""
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    tensors = {"x": sbuf(x, buffer="hbm"), "t": tmp((4, 5), "float32"),
               "u": tmp((4, 5), "float32"), "y": out((int(rows[-1]), 5), "float32", "hbm")}
    steps = [{"memset": {"dst": "u", "value": 1.0}},
             {"load": {"dst": "t[0:2, :]", "src": "x[0:2, :]"}},
             {"tensor_copy": {"dst": "u", "src": "t"}},
             {"store": {"dst": "y", "src": f"u[{rows}, :]"}}]
    path = write_program(tmp_path, tensors, steps)
    if rows == "0:2":
        np.testing.assert_array_equal(run(path)["y"], x[:2])
    else:
        with pytest.raises(NkirunError) as e:
            run(path)
        assert e.value.diagnostics[0].code == "E090" and "tensor_copy reads `t`" in \
            e.value.diagnostics[0].message


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8"])
def test_the_fills_touch_only_the_box_a_read_stays_in(dtype):
    """find_nonzero_indices transposes 128 x 128 tiles of a (128, 80, 128) buffer written
    in one column of 16: filling the whole buffer's unwritten bytes for each of them made
    the run 100 s; a fill covers the read's box, with the same bytes as before there."""
    from types import SimpleNamespace

    from nkirun.hw import dtypes as dt
    from nkirun.runner.carried import _fill_unwritten
    buf = np.zeros((4, 3, 8), dt.numpy_dtype(dtype))
    w = np.zeros(buf.shape, bool)
    w[:, :, 0] = True
    m = SimpleNamespace(written={"t": w}, buffers={"t": buf})
    read = SimpleNamespace(decl=SimpleNamespace(name="t", dtype=dt.lookup(dtype)), ap=None,
                           box=((0, 4, 1), (1, 1, 1), (0, 4, 2)))  # t[:, 1, 0:8:2]
    _fill_unwritten(m, [(None, read)], 0x7E)
    raw = buf.view(np.uint8).reshape(4, 3, 8, -1)
    filled = np.zeros(buf.shape, bool)
    filled[:, 1, 2:8:2] = True
    assert (raw[filled] == 0x7E).all() and (raw[~filled] == 0).all()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8", "float64"])
def test_which_elements_differ_per_element_equals_byte_by_byte(dtype):
    from nkirun.hw import dtypes as dt
    from nkirun.runner.carried import _differs, differs_bytewise
    np_dtype = dt.numpy_dtype(dtype) if dt.lookup(dtype) else np.dtype(dtype)
    raw = RNG.integers(0, 4, (5, 3, 7 * np_dtype.itemsize), dtype=np.uint8)
    arrays = [raw.copy().view(np_dtype) for _ in range(4)]
    for k, a in enumerate(arrays[1:]):  # a few bytes changed, NaN payloads and -0 included
        a.view(np.uint8).reshape(-1)[RNG.integers(0, raw.size, 6 + k)] ^= 0x80
    np.testing.assert_array_equal(_differs(arrays), differs_bytewise(arrays))
    assert _differs(arrays).any() and not _differs([arrays[0], arrays[0].copy()]).any()
