"""dma_copy with indirect access patterns (issue 15): `.ap(vector_offset=idx)` gathers or
scatters one row per partition, `.ap(scalar_offset=s, indirect_dim=d)` moves a dynamic
row; compared with NumPy fancy indexing; oob_mode error (E093) and skip."""
from __future__ import annotations

import numpy as np
import pytest

from nkirun.api import cost, run
from nkirun.diagnostics import NkirunError
from prog_helpers import codes, diagnostics, out, run_program, sbuf, tmp, write_program

RNG = np.random.default_rng(15)


def gather_program(data, idx, oob_mode=None):
    P, F = idx.shape[0], data.shape[1]
    inst = {"dst": "t", "src": f"data.ap([[{F}, {P}], [1, {F}]], vector_offset=i, indirect_dim=0)"}
    if oob_mode:
        inst["oob_mode"] = oob_mode
    tensors = {"data": sbuf(data, buffer="hbm"), "ih": sbuf(idx, buffer="hbm"),
               "i": tmp((P, 1), str(idx.dtype)), "t": sbuf(np.full((P, F), -1, np.float32)),
               "y": out((P, F), "float32", "hbm")}
    return tensors, [{"dma_copy": {"dst": "i", "src": "ih"}}, {"dma_copy": inst},
                     {"dma_copy": {"dst": "y", "src": "t"}}]


@pytest.mark.parametrize("P", [1, 37, 128])
def test_vector_offset_gathers_one_row_per_partition(tmp_path, P):
    data = RNG.standard_normal((200, 24)).astype(np.float32)
    idx = RNG.integers(0, 200, (P, 1)).astype(np.uint32)
    got = run_program(tmp_path, *gather_program(data, idx))
    np.testing.assert_array_equal(got["y"], data[idx[:, 0]])


def test_vector_offset_scatters_rows(tmp_path):
    P, F = 16, 8
    src = RNG.standard_normal((P, F)).astype(np.float32)
    idx = RNG.permutation(40)[:P].astype(np.int32).reshape(P, 1)
    base = np.zeros((40, F), np.float32)
    got = run_program(tmp_path, {"s": sbuf(src), "i": sbuf(idx),
                                 "o": sbuf(base, buffer="hbm", output=True)},
                      [{"dma_copy": {"dst": f"o.ap([[{F}, {P}], [1, {F}]], vector_offset=i)",
                                     "src": "s"}}])
    want = base.copy()
    want[idx[:, 0]] = src
    np.testing.assert_array_equal(got["o"], want)


def test_scalar_offset_picks_a_dynamic_row_for_every_partition(tmp_path):
    data = RNG.standard_normal((6, 4, 10)).astype(np.float32)  # (batch, P, F)
    s = np.array([[3]], np.int32)
    got = run_program(tmp_path, {"d": sbuf(data, buffer="hbm"), "s": sbuf(s),
                                 "y": out((4, 10), "float32")},
                      [{"dma_copy": {"dst": "y", "src": "d.ap([[10, 4], [1, 10]], "
                                     "scalar_offset=s, indirect_dim=0)"}}])
    np.testing.assert_array_equal(got["y"], data[3])


def test_out_of_bounds_index_is_E093_or_skipped(tmp_path):
    data = RNG.standard_normal((10, 6)).astype(np.float32)
    idx = np.array([[1], [12], [3], [9]], np.uint32)
    with pytest.raises(NkirunError) as e:
        run_program(tmp_path, *gather_program(data, idx))
    d = e.value.diagnostics[0]
    assert d.code == "E093" and "index 12" in d.message and "partition 1" in d.message
    got = run_program(tmp_path, *gather_program(data, idx, oob_mode="skip"))
    want = data[[1, 0, 3, 9]]
    want[1] = -1  # skipped: dst keeps its value
    np.testing.assert_array_equal(got["y"], want)


def test_indirect_views_are_checked(tmp_path):
    h = sbuf(np.ones((10, 4), np.float32), buffer="hbm")
    t = sbuf(np.ones((8, 4), np.float32))
    i8 = sbuf(np.zeros((8, 1), np.int32))
    f8 = sbuf(np.zeros((8, 1), np.float32))
    cases = [
        ({"dst": "y", "src": "t.ap([[4, 8], [1, 4]], vector_offset=i)"}, "HBM"),  # on chip
        ({"dst": "y", "src": "h.ap([[4, 8], [1, 4]], vector_offset=f)"}, "integer"),
        ({"dst": "y", "src": "h.ap([[4, 8], [1, 4]], vector_offset=i[0:4, :])"}, "shape"),
        ({"dst": "y", "src": "h.ap([[4, 8], [1, 4]], vector_offset=nope)"}, "unknown"),
        ({"dst": "y", "src": "h.ap([[4, 8], [1, 4]], indirect_dim=3, scalar_offset=i)"}, "dim"),
    ]
    for inst, words in cases:
        d = diagnostics(tmp_path, {"h": h, "t": t, "i": i8, "f": f8,
                                   "y": out((8, 4), "float32")}, [{"dma_copy": inst}])
        assert "E035" in codes(d) and any(words in x.message for x in d), (inst, d)
    d = diagnostics(tmp_path, {"h": h, "i": i8, "y": out((8, 4), "float32")},
                    [{"tensor_copy": {"dst": "y", "src": "h.ap([[4, 8], [1, 4]], vector_offset=i)"}}])
    assert "E035" in codes(d)


def test_the_index_is_a_dependence_and_a_read(tmp_path):
    data = RNG.standard_normal((50, 16)).astype(np.float32)
    idx = RNG.integers(0, 50, (8, 1)).astype(np.uint32)
    tensors, prog = gather_program(data, idx)
    s = cost(write_program(tmp_path, tensors, prog))
    assert s.slots[1].waited_on == 0 and s.slots[1].wait_tensor == "i"
    # reading the index before anything wrote it: E050
    d = diagnostics(tmp_path, tensors, prog[1:])
    assert "E050" in codes(d)


def test_text_form_and_convert_keep_the_index(tmp_path):
    from nkirun.source.text_front import parse_text
    from nkirun.source.write import to_text, to_yaml
    from nkirun.source.yaml_front import parse_yaml
    data = RNG.standard_normal((30, 4)).astype(np.float32)
    idx = RNG.integers(0, 30, (4, 1)).astype(np.int32)
    tensors = {"d": sbuf(data, buffer="hbm"), "i": sbuf(idx), "y": out((4, 4), "float32")}
    path = write_program(tmp_path, tensors, [{"dma_copy": {
        "dst": "y", "src": "d.ap([[4, 4], [1, 4]], vector_offset=i[0:4, 0:1])"}}])
    prog, _ = parse_yaml(open(path).read(), path, str(tmp_path))
    text = to_text(prog)
    assert "vector_offset=i[0:4, 0:1]" in text
    back, diags = parse_text(text, "p.nkis", ".")
    assert diags == [] and back.instructions[0].args["src"].index == \
        prog.instructions[0].args["src"].index
    assert to_yaml(back).count("vector_offset") == 1
    np.testing.assert_array_equal(run(path)["y"], data[idx[:, 0]])


def test_python_views_with_runtime_indices_lower_to_indirect_patterns(tmp_path):
    from nkirun.hw import dtypes as dt
    from nkirun.ir import TensorDecl
    from nkirun.views.reshape import ViewError
    from nkirun.views.strided import StridedView
    f32, i32 = dt.DTYPES["float32"], dt.DTYPES["int32"]
    data = StridedView.of(TensorDecl("d", "hbm", (6, 4, 10), f32))
    idx = StridedView.of(TensorDecl("i", "sbuf", (4, 1), i32))
    s = StridedView.of(TensorDecl("s", "sbuf", (1, 1), i32))
    gather = data.reshape((24, 10)).ap([[10, 4], [1, 10]], vector_offset=idx)
    assert str(gather.to_ir()) == "d.ap([[10,4],[1,10]],vector_offset=i,indirect_dim=1)"
    picked = data.select(0, s)  # (4, 10): row s of dim 0
    assert picked.shape == (4, 10)
    assert str(picked.to_ir()) == "d.ap([[10,4],[1,10]],scalar_offset=s)"
    rows = data[:, 0, :].vector_select(0, idx)
    assert rows.shape == (4, 10)
    assert str(rows.to_ir()) == "d.ap([[40,4],[1,10]],vector_offset=i)"
    with pytest.raises(ViewError, match="cannot be viewed further"):
        picked[:, 0:2]
    with pytest.raises(ViewError, match="HBM"):
        idx.ap([[1, 4], [1, 1]], scalar_offset=s)
    # and they run: compare with NumPy
    arr = RNG.standard_normal((6, 4, 10)).astype(np.float32)
    iv = np.array([[5], [0], [2], [5]], np.int32)
    got = run_program(tmp_path, {"d": sbuf(arr, buffer="hbm"), "i": sbuf(iv),
                                 "s": sbuf(np.array([[2]], np.int32)),
                                 "y": out((4, 10), "float32"), "z": out((4, 10), "float32"),
                                 "w": out((4, 10), "float32")},
                      [{"dma_copy": {"dst": "y", "src": str(gather.to_ir())}},
                       {"dma_copy": {"dst": "z", "src": str(picked.to_ir())}},
                       {"dma_copy": {"dst": "w", "src": str(rows.to_ir())}}])
    flat = arr.reshape(24, 10)
    np.testing.assert_array_equal(got["y"], flat[iv[:, 0] * 1])  # dim 1 of (6,4,10): stride 10
    np.testing.assert_array_equal(got["z"], arr[2])
    np.testing.assert_array_equal(got["w"], arr[iv[:, 0], 0, :])


def test_scatter_with_skip_leaves_out_of_bounds_rows_out(tmp_path):
    P, F = 4, 3
    src = RNG.standard_normal((P, F)).astype(np.float32)
    idx = np.array([[2], [7], [0], [-1]], np.int32)  # 7 and -1 are outside 5 rows
    base = np.full((5, F), 9, np.float32)
    tensors = {"s": sbuf(src), "i": sbuf(idx), "o": sbuf(base, buffer="hbm", output=True)}
    inst = {"dst": f"o.ap([[{F}, {P}], [1, {F}]], vector_offset=i)", "src": "s"}
    got = run_program(tmp_path, tensors, [{"dma_copy": dict(inst, oob_mode="skip")}])
    want = base.copy()
    want[2], want[0] = src[0], src[2]
    np.testing.assert_array_equal(got["o"], want)
    with pytest.raises(NkirunError) as e:
        run_program(tmp_path, tensors, [{"dma_copy": inst}])
    assert e.value.diagnostics[0].code == "E093" and "index 7" in e.value.diagnostics[0].message


@pytest.mark.parametrize("start", [0, 5, 8, 9, 12, -2])
def test_scalar_offset_skip_moves_the_rows_that_fit(tmp_path, start):
    """oob_mode skip with one index for all rows: each row (partition) past the tensor's
    end is skipped, the rows that fit are written (nki-library's indexed_flatten writes
    blocks at a dynamic offset so); error mode stops at the first row outside."""
    P, F, R = 4, 3, 10
    src = RNG.standard_normal((P, F)).astype(np.float32)
    base = np.full((R, F), 7, np.float32)
    tensors = {"s": sbuf(src), "i": sbuf(np.array([[start]], np.int32)),
               "o": sbuf(base, buffer="hbm", output=True)}
    inst = {"dst": f"o.ap([[{F}, {P}], [1, {F}]], scalar_offset=i, indirect_dim=0)",
            "src": "s", "oob_mode": "skip"}
    got = run_program(tmp_path, tensors, [{"dma_copy": inst}])
    want = base.copy()
    for p in range(P):  # independent reference: row start + p lands when inside [0, R)
        if 0 <= start + p < R:
            want[start + p] = src[p]
    np.testing.assert_array_equal(got["o"], want)
    if not 0 <= start <= R - P:
        del inst["oob_mode"]
        with pytest.raises(NkirunError) as e:
            run_program(tmp_path, tensors, [{"dma_copy": inst}])
        assert e.value.diagnostics[0].code == "E093"


def test_scalar_offset_skip_on_a_gather_keeps_the_rows_it_skips(tmp_path):
    data = RNG.standard_normal((6, 5)).astype(np.float32)
    tensors = {"d": sbuf(data, buffer="hbm"), "i": sbuf(np.array([[4]], np.int32)),
               "t": sbuf(np.full((4, 5), -1, np.float32)), "y": out((4, 5), "float32", "hbm")}
    got = run_program(tmp_path, tensors, [
        {"dma_copy": {"dst": "t", "src": "d.ap([[5, 4], [1, 5]], scalar_offset=i, "
                      "indirect_dim=0)", "oob_mode": "skip"}},
        {"dma_copy": {"dst": "y", "src": "t"}}])
    want = np.full((4, 5), -1, np.float32)
    want[:2] = data[4:6]  # rows 4, 5 fit; 6, 7 do not
    np.testing.assert_array_equal(got["y"], want)
