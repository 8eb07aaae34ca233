"""Access-pattern views (`t.ap([[step, num], ...], offset=, dtype=)`) read and written by
real instructions, against an independent NumPy construction of NKI's definition: element
(k0, k1, ...) of the view is flat storage element `offset + sum(step_i * k_i)` of the
tensor (reinterpreted as `dtype` when given)."""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from nkirun.api import check_program, run
from nkirun.diagnostics import NkirunError
from prog_helpers import codes, diagnostics, out, run_program, sbuf, tmp, write_program

RNG = np.random.default_rng(14)


def gather(storage: np.ndarray, pattern, offset: int, as_dtype=None) -> np.ndarray:
    """NKI's `.ap` by its loop-nest definition: one flat element per index tuple."""
    flat = storage.reshape(-1)
    if as_dtype is not None:
        flat = flat.view(np.uint8).view(as_dtype)
    shape = [n for _, n in pattern]
    got = np.empty(shape, flat.dtype)
    for k in itertools.product(*(range(n) for n in shape)):
        got[k] = flat[offset + sum(s * i for (s, _), i in zip(pattern, k))]
    return got


def ap(name, pattern, offset=0, dtype=None) -> str:
    extra = (f", offset={offset}" if offset else "") + (f", dtype={dtype}" if dtype else "")
    return f"{name}.ap({[list(e) for e in pattern]}{extra})"


@pytest.mark.parametrize("P", [1, 37, 128])
def test_strided_read_with_step_offset_and_third_dim(tmp_path, P):
    F = 24
    x = RNG.standard_normal((P, F)).astype(np.float32)
    pattern = [[F, P], [6, 3], [2, 3]]  # (P, 3, 3): every other element of 3 rows of 6
    got = run_program(tmp_path, {"x": sbuf(x), "y": out((P, 3, 3), "float32")},
                      [{"tensor_copy": {"dst": "y", "src": ap("x", pattern, offset=F * 0 + 1)}}])
    np.testing.assert_array_equal(got["y"], gather(x, pattern, 1))


def test_zero_free_step_broadcasts_a_column(tmp_path):
    # cascaded-max style: a (R, 1) tile read 8 times along the free axis
    R = 37
    x = RNG.standard_normal((R, 1)).astype(np.float32)
    got = run_program(tmp_path, {"x": sbuf(x), "y": out((R, 8), "float32")},
                      [{"tensor_copy": {"dst": "y", "src": ap("x", [[1, R], [0, 8]])}}])
    np.testing.assert_array_equal(got["y"], np.repeat(x, 8, axis=1))


def test_zero_partition_step_on_hbm_broadcasts_a_row_to_every_partition(tmp_path):
    S = 40
    row = RNG.standard_normal((1, S)).astype(np.float32)
    got = run_program(tmp_path, {"h": sbuf(row, buffer="hbm"), "y": out((128, S), "float32")},
                      [{"dma_copy": {"dst": "y", "src": ap("h", [[0, 128], [1, S]])}}])
    np.testing.assert_array_equal(got["y"], np.repeat(row, 128, axis=0))


def test_negative_step_reads_backwards(tmp_path):
    x = RNG.standard_normal((16, 10)).astype(np.float32)
    pattern = [[10, 16], [-1, 10]]
    got = run_program(tmp_path, {"x": sbuf(x), "y": out((16, 10), "float32")},
                      [{"tensor_copy": {"dst": "y", "src": ap("x", pattern, offset=9)}}])
    np.testing.assert_array_equal(got["y"], x[:, ::-1])


def test_strided_write_leaves_the_other_elements(tmp_path):
    P, F = 37, 12
    base = RNG.standard_normal((P, F)).astype(np.float32)
    src = RNG.standard_normal((P, 3, 2)).astype(np.float32)
    pattern = [[F, P], [4, 3], [2, 2]]  # elements 1,3,5,7,9,11 of each partition
    got = run_program(tmp_path, {"y": sbuf(base, output=True), "s": sbuf(src)},
                      [{"tensor_copy": {"dst": ap("y", pattern, offset=1), "src": "s"}}])
    want = base.copy().reshape(-1)
    for k in itertools.product(range(P), range(3), range(2)):
        want[1 + k[0] * F + 4 * k[1] + 2 * k[2]] = src[k]
    np.testing.assert_array_equal(got["y"], want.reshape(P, F))


def test_on_chip_offset_selects_partition_and_start(tmp_path):
    x = RNG.standard_normal((8, 6)).astype(np.float32)
    got = run_program(tmp_path, {"x": sbuf(x), "y": out((3, 2), "float32")},
                      [{"tensor_copy": {"dst": "y", "src": ap("x", [[6, 3], [1, 2]], offset=2 * 6 + 4)}}])
    np.testing.assert_array_equal(got["y"], x[2:5, 4:6])


def test_reinterpret_int32_as_bfloat16_doubles_the_elements(tmp_path):
    # the NKI deep-dive's example: a (128, 256) int32 tile seen as (128, 512) bf16
    bits = RNG.integers(0, 2**31, (128, 256), dtype=np.int64).astype(np.int32)
    bits &= 0x3F7F3F7F  # finite bf16 halves
    got = run_program(tmp_path, {"t": sbuf(bits), "y": out((128, 512), "bfloat16")},
                      [{"tensor_copy": {"dst": "y", "src": ap("t", [[512, 128], [1, 512]],
                                                             dtype="bfloat16")}}])
    want = bits.view(np.uint16).reshape(128, 512)
    np.testing.assert_array_equal(got["y"].view(np.uint16), want)


def test_reinterpreting_write_changes_the_bytes_of_the_storage(tmp_path):
    vals = np.arange(4 * 8, dtype=np.uint8).reshape(4, 8)
    got = run_program(tmp_path, {"v": sbuf(vals), "y": out((4, 2), "float32", "sbuf")},
                      [{"tensor_copy": {"dst": ap("y", [[8, 4], [1, 8]], dtype="uint8"),
                                        "src": "v"}}])
    np.testing.assert_array_equal(got["y"].view(np.uint8).reshape(4, 8), vals)


def test_reading_unwritten_elements_through_a_pattern_is_E090(tmp_path):
    path = write_program(tmp_path, {"x": sbuf(np.ones((4, 8), np.float32)),
                                    "t": tmp((4, 8), "float32"), "y": out((4, 4), "float32")},
                         [{"tensor_copy": {"dst": ap("t", [[8, 4], [2, 4]]), "src": "x[:, 0:4]"}},
                          {"tensor_copy": {"dst": "y", "src": ap("t", [[8, 4], [2, 4]])}},
                          {"tensor_copy": {"dst": "y", "src": ap("t", [[8, 4], [2, 4]], offset=1)}}])
    with pytest.raises(NkirunError) as e:
        run(path)
    d = e.value.diagnostics[0]
    assert d.code == "E090" and d.instruction == 2
    assert "partition 0, free index (1,)" in d.message


def test_pattern_and_basic_views_give_the_same_run_and_schedule(tmp_path):
    x = RNG.standard_normal((64, 32)).astype(np.float32)
    basic = [{"tensor_copy": {"dst": "y[:, 0:16]", "src": "x[:, 16:32]"}},
             {"tensor_copy": {"dst": "y[:, 16:32]", "src": "y[:, 0:16]"}}]
    pat = [{"tensor_copy": {"dst": ap("y", [[32, 64], [1, 16]]),
                            "src": ap("x", [[32, 64], [1, 16]], offset=16)}},
           {"tensor_copy": {"dst": ap("y", [[32, 64], [1, 16]], offset=16),
                            "src": ap("y", [[32, 64], [1, 16]])}}]
    tensors = {"x": sbuf(x), "y": out((64, 32), "float32")}
    a, b = run_program(tmp_path, tensors, basic), run_program(tmp_path, tensors, pat)
    np.testing.assert_array_equal(a["y"], b["y"])
    from nkirun.api import cost
    ca = cost(write_program(tmp_path, tensors, basic))
    cb = cost(write_program(tmp_path, tensors, pat))
    assert [(s.start_ns, s.wait_kind) for s in ca.slots] == \
        [(s.start_ns, s.wait_kind) for s in cb.slots]


def test_scheduler_waits_on_a_strided_write_it_overlaps_only(tmp_path):
    from nkirun.api import cost
    x = np.ones((8, 16), np.float32)
    tensors = {"x": sbuf(x), "t": tmp((8, 16), "float32"), "y": out((8, 8), "float32"),
               "z": out((8, 4), "float32")}
    prog = [{"tensor_copy": {"dst": ap("t", [[16, 8], [2, 8]]), "src": "x[:, 0:8]"}},
            # reads odd elements (untouched by the write): no wait on instruction 0
            {"activation": {"dst": "z", "op": "copy", "data": "x[:, 1:8:2]"}},
            # reads element 0 of t: must wait for the write
            {"activation": {"dst": "y", "op": "copy", "data": "t[:, 0:16:2]"}}]
    s = cost(write_program(tmp_path, tensors, prog))
    assert s.slots[2].waited_on == 0 and s.slots[2].wait_kind == "data"


def test_check_reports_invalid_patterns_with_codes(tmp_path):
    x = sbuf(np.ones((8, 16), np.float32))
    cases = {
        "E036": ap("x", [[8, 8], [1, 8]]),              # partition step is not 16
        "E038": ap("x", [[16, 8], [1, 16]], offset=3),  # runs past the partition
        "E037": ap("w", [[1, 8], [1, 1]], dtype="float16"),  # 3 bytes per partition
        "E035": ap("x", [[16, 8], [1, 0]]),             # num 0
    }
    for code, src in cases.items():
        tensors = {"x": x, "w": sbuf(np.ones((8, 3), np.uint8)), "y": out((8, 16), "float32")}
        d = diagnostics(tmp_path, tensors, [{"tensor_copy": {"dst": "y", "src": src}}])
        assert code in codes(d), (code, [(x.code, x.message) for x in d])


def test_overlapping_write_is_E039_but_overlapping_read_is_fine(tmp_path):
    tensors = {"x": sbuf(np.ones((8, 4), np.float32)), "y": out((8, 4), "float32")}
    bad = diagnostics(tmp_path, tensors, [{"tensor_copy": {
        "dst": ap("y", [[4, 8], [0, 4]]), "src": "x"}}])
    assert "E039" in codes(bad)
    ok = diagnostics(tmp_path, tensors, [{"tensor_copy": {
        "dst": "y", "src": ap("x", [[4, 8], [0, 4]])}}])
    assert not [d for d in ok if d.severity == "error"]


# ---- spellings ---------------------------------------------------------------------------------
ROUND_TRIP_YAML = """\
version: 1
tensors:
  x: {buffer: sbuf, shape: [8, 16], dtype: int32, fill: 7}
  h: {buffer: hbm, shape: [1, 16], dtype: float32, fill: 2.0}
  y: {buffer: sbuf, shape: [8, 32], dtype: bfloat16, output: true}
  z: {buffer: sbuf, shape: [8, 4, 16], dtype: float32, output: true}
instructions:
  - tensor_copy: {dst: y, src: "x.ap([[32, 8], [1, 32]], dtype=bf16)"}
  - dma_copy:
      dst: z
      src: {tensor: h, pattern: [[0, 8], [0, 4], [1, 16]]}
  - tensor_copy: {dst: "z.ap(pattern=[[64,8],[16,2],[1,16]], offset=32)", src: "z[:, 0:2, :]"}
"""


def test_convert_round_trips_access_patterns_both_ways(tmp_path):
    from nkirun.source.text_front import parse_text
    from nkirun.source.write import to_text, to_yaml
    from nkirun.source.yaml_front import parse_yaml
    original, d0 = parse_yaml(ROUND_TRIP_YAML, "p.yaml", ".")
    assert d0 == []
    text = to_text(original)
    assert "src=x.ap([[32,8],[1,32]],dtype=bfloat16)" in text
    assert "src=h.ap([[0,8],[0,4],[1,16]])" in text  # the mapping form, spelled as .ap
    as_text, d1 = parse_text(text, "p.nkis", ".")
    back, d2 = parse_yaml(to_yaml(as_text), "p.yaml", ".")
    assert d1 == d2 == []

    def ir(p):
        return [(i.op, sorted((k, (v.tensor, v.index) if hasattr(v, "tensor") else v)
                              for k, v in i.args.items())) for i in p.instructions]
    assert ir(original) == ir(as_text) == ir(back)
    assert to_text(back) == text
    # and the three run alike
    outs = [run(str(_write(tmp_path, n, s))) for n, s in
            (("a.yaml", ROUND_TRIP_YAML), ("b.nkis", text), ("c.yaml", to_yaml(as_text)))]
    for o in outs[1:]:
        for k in o:
            np.testing.assert_array_equal(o[k].view(np.uint8), outs[0][k].view(np.uint8))
    z = outs[0]["z"]
    assert (z == 2.0).all()


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_text_form_reads_an_access_pattern_with_blanks_and_keywords(tmp_path):
    prog = ("version 1\ntensor x sbuf [4, 8] float32 fill=1\n"
            "tensor y sbuf [4, 4] float32 output\n"
            "tensor_copy dst=y src=x.ap( [[8, 4], [2, 4]] , offset = 1 )\n")
    got = run(str(_write(tmp_path, "p.nkis", prog)))
    assert (got["y"] == 1).all()


@pytest.mark.parametrize("spelling, words", [
    ("x.ap([[8, 4], [2, 4]], offset=1.5)", "offset"),
    ("x.ap([[8, 4], [2]])", "pattern"),
    ("x.ap([[8, 4]], colour=3)", "colour"),
    ("x.ap([[8, 4]], dtype=float64)", "dtype"),
    ("x.ap([[8, 4]]", "expected"),
    ("x.ap([[8, 4], [1, 8]]).ap([[1, 1]])", "one `.ap(...)`"),
    ("x.ap([[8, 4], [1.5, 8]])", "integer pairs"),
    ("x.ap([[8, 4]], pattern=[[8, 4]])", "repeated"),
])
def test_bad_spellings_are_E034(tmp_path, spelling, words):
    d = diagnostics(tmp_path, {"x": sbuf(np.ones((4, 8), np.float32)),
                               "y": out((4, 4), "float32")},
                    [{"tensor_copy": {"dst": "y", "src": spelling}}])
    assert codes(d) == ["E034"], [x.message for x in d]
    assert words in d[0].message


def test_mask_selects_elements_of_a_pattern_destination(tmp_path):
    P, F = 16, 8
    base = np.zeros((P, 2 * F), np.float32)
    src = RNG.standard_normal((P, F)).astype(np.float32)
    got = run_program(tmp_path, {"y": sbuf(base, output=True), "s": sbuf(src)},
                      [{"tensor_copy": {"dst": ap("y", [[2 * F, P], [2, F]]), "src": "s",
                                        "mask": "p < 5 and f >= 3"}}])
    want = base.copy()
    sel = (np.arange(P)[:, None] < 5) & (np.arange(F)[None, :] >= 3)
    want[:, 0::2] = np.where(sel, src, 0)
    np.testing.assert_array_equal(got["y"], want)


def test_tensor_tensor_cost_sees_a_strided_pattern_operand(tmp_path):
    from nkirun.api import cost
    x = np.ones((128, 64), np.float32)
    prog = [{"tensor_tensor": {"dst": "y", "data1": ap("x", [[64, 128], [2, 32]]),
                               "data2": ap("x", [[64, 128], [1, 32]]), "op": "add"}}]
    s = cost(write_program(tmp_path, {"x": sbuf(x), "y": out((128, 32), "float32")}, prog))
    assert s.slots[0].cycles > 0


@pytest.mark.parametrize("seed", range(12))
def test_random_patterns_read_what_the_definition_says(tmp_path, seed):
    rng = np.random.default_rng(seed)
    P, F = int(rng.integers(1, 20)), int(rng.integers(4, 30))
    x = rng.standard_normal((P, F)).astype(np.float32)
    for _ in range(20):  # find a pattern that stays inside a partition
        free = [(int(rng.integers(-2, 5)), int(rng.integers(1, 5)))
                for _ in range(int(rng.integers(1, 4)))]
        lo = sum(min(0, s * (n - 1)) for s, n in free)
        hi = sum(max(0, s * (n - 1)) for s, n in free)
        if hi - lo < F:
            break
    else:
        pytest.skip("no pattern fits")
    start = int(rng.integers(-lo, F - hi))
    p0 = int(rng.integers(0, P))
    pn = int(rng.integers(1, P - p0 + 1))
    pattern = [[F, pn]] + [list(e) for e in free]
    offset = p0 * F + start
    shape = [pn] + [n for _, n in free]
    got = run_program(tmp_path, {"x": sbuf(x), "y": out(shape, "float32")},
                      [{"tensor_copy": {"dst": "y", "src": ap("x", pattern, offset)}}])
    np.testing.assert_array_equal(got["y"], gather(x, pattern, offset))


@pytest.mark.parametrize("second", [
    "y.ap([[16, 4], [1, 8]], offset=8)",          # exact box: the other half
    "y.ap([[16, 4], [2, 4], [1, 2]], offset=8)",  # same elements, split differently
])
def test_written_tracking_through_patterns_completes_the_tensor(tmp_path, second):
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    got = run_program(tmp_path, {"x": sbuf(x), "y": out((4, 16), "float32")},
                      [{"tensor_copy": {"dst": ap("y", [[16, 4], [1, 8]]), "src": "x"}},
                       {"tensor_copy": {"dst": second, "src": "x"}}])
    np.testing.assert_array_equal(got["y"], np.concatenate([x, x], axis=1))


def test_masked_pattern_write_leaves_the_rest_unwritten(tmp_path):
    x = np.ones((4, 8), np.float32)
    path = write_program(tmp_path, {"x": sbuf(x), "t": tmp((4, 8), "float32"),
                                    "y": out((4, 8), "float32")},
                         [{"tensor_copy": {"dst": ap("t", [[8, 4], [1, 8]]), "src": "x",
                                           "mask": "f < 5"}},
                          {"tensor_copy": {"dst": "y", "src": "t"}}])
    with pytest.raises(NkirunError) as e:
        run(path)
    assert e.value.diagnostics[0].code == "E090"
    assert "free index (5,)" in e.value.diagnostics[0].message


def test_positional_arguments_follow_nki_order(tmp_path):
    # ap(pattern, offset, scalar_offset, vector_offset, indirect_dim, dtype)
    x = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
    got = run_program(tmp_path, {"x": sbuf(x), "y": out((4, 2), "float32")},
                      [{"tensor_copy": {"dst": "y", "src": "x.ap([[8, 4], [3, 2]], 1, None, None, 0, 'float32')"}}])
    np.testing.assert_array_equal(got["y"], x[:, 1:5:3])
