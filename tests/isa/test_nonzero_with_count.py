"""nonzero_with_count against the NKI 0.6 page's "Behavior" pseudo-code, run on partitions
0, 16, ..., 112 only (one per GpSimd core); other dst partitions untouched."""
import numpy as np
import pytest
import yaml
from prog_helpers import (assert_bits_equal, codes, out, reported_at, run_program,
                          sbuf, write_program)

from nkirun.isa import REGISTRY


def ref_row(row, offset, pad):
    found = [i + offset for i in range(len(row)) if row[i] != 0]
    return found + [pad] * (len(row) - len(found)) + [len(found)]


def ref_nonzero(src, dst_before, offset=0, pad=-1):
    res = dst_before.copy()
    for p in range(0, src.shape[0], 16):
        res[p] = ref_row(src[p].reshape(-1), offset, pad)
    return res


@pytest.mark.parametrize("p", [1, 16, 37, 128])
@pytest.mark.parametrize("t", [1, 8, 300])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_matches_reference(tmp_path, p, t, dtype):
    rng = np.random.default_rng(p * t)
    src = (rng.random((p, t)) < 0.3) * rng.integers(-5, 5, (p, t))
    src = src.astype(dtype)
    before = np.full((p, t + 1), -99, np.int32)
    got = run_program(tmp_path, {"s": sbuf(src), "d": sbuf(before, output=True)},
                      [{"nonzero_with_count": {"dst": "d", "src": "s", "index_offset": 16,
                                               "padding_val": -1}}])["d"]
    assert_bits_equal(got, ref_nonzero(src, before, 16, -1))


def test_page_example(tmp_path):
    src = np.zeros((16, 8), np.float32)
    src[0] = [0, 1, 1, 0, 0, 1, 0, 0]
    got = run_program(tmp_path, {"s": sbuf(src), "d": sbuf(np.zeros((16, 9), np.int32),
                                                          output=True)},
                      [{"nonzero_with_count": {"dst": "d", "src": "s", "index_offset": 16,
                                               "padding_val": -1}}])["d"]
    np.testing.assert_array_equal(got[0], [17, 18, 21, -1, -1, -1, -1, -1, 3])
    assert (got[1:] == 0).all()


def test_special_values(tmp_path):
    src = np.array([[0.0, -0.0, np.nan, np.inf, 1e-45]], np.float32)
    got = run_program(tmp_path, {"s": sbuf(src), "d": out((1, 6), "int32")},
                      [{"nonzero_with_count": {"dst": "d", "src": "s", "padding_val": 7}}])["d"]
    np.testing.assert_array_equal(got[0], [2, 3, 4, 7, 7, 3])


def test_views_off_the_core_boundary(tmp_path):
    """A view starting at partition 8: its rows 8, 24, ... are partitions 16, 32, ..."""
    rng = np.random.default_rng(1)
    src = (rng.random((64, 5)) < 0.5).astype(np.float32)
    before = np.full((64, 6), -5, np.int32)
    got = run_program(tmp_path, {"s": sbuf(src), "d": sbuf(before, output=True)},
                      [{"nonzero_with_count": {"dst": "d[8:64, :]", "src": "s[8:64, :]"}}])["d"]
    want = before.copy()
    for p in (16, 32, 48):
        want[p] = ref_row(src[p], 0, -1)
    np.testing.assert_array_equal(got, want)


def test_spec_example_checks_and_runs(tmp_path):
    entry = yaml.safe_load(REGISTRY["nonzero_with_count"].example)[0]
    flags = np.eye(16, 10, dtype=np.int32)
    got = run_program(tmp_path, {"flags": sbuf(flags),
                                 "found": sbuf(np.zeros((16, 11), np.int32), output=True)},
                      [entry])["found"]
    np.testing.assert_array_equal(got[0], ref_row(flags[0], 0, -1))


def _codes(tmp_path, src_shape=(16, 4), dst_shape=(16, 5), target=None, dst_view="d",
           src_view="s", **kw):
    path = write_program(tmp_path, {"s": sbuf(np.ones(src_shape), "int32"),
                                    "d": out(dst_shape, "int32")},
                         [{"nonzero_with_count": {"dst": dst_view, "src": src_view, **kw}}])
    if target:
        text = open(path).read().replace("version: 1", f"version: 1\ntarget: {target}", 1)
        open(path, "w").write(text)
    from nkirun.api import check_program
    return codes(check_program(path).diagnostics)


def test_rules(tmp_path):
    assert _codes(tmp_path) == []
    assert "E460" in _codes(tmp_path, target="trn1")
    assert "E461" in _codes(tmp_path, dst_shape=(16, 4))
    assert "E462" in _codes(tmp_path, index_offset=2**31)
    assert "E462" in _codes(tmp_path, padding_val=-2**31 - 1)
    assert "E463" in _codes(tmp_path, src_shape=(32, 4), dst_shape=(32, 5),
                            src_view="s[0:16, :]", dst_view="d[8:24, :]")
    assert "E463" not in _codes(tmp_path, src_shape=(32, 4), dst_shape=(32, 5),
                                src_view="s[16:32, :]", dst_view="d[0:16, :]")


def test_errors_located(tmp_path):
    path = write_program(tmp_path, {"s": sbuf(np.ones((16, 4)), "int32"),
                                    "d": out((16, 4), "int32")},
                         [{"nonzero_with_count": {"dst": "d", "src": "s"}}])
    reported_at(path, "E461", "dst")


def test_general_path_equals_the_row_path(tmp_path, monkeypatch):
    """The masked full-tile write (used for access-pattern views) gives the same result."""
    from nkirun.isa import nonzero_with_count as mod
    rng = np.random.default_rng(4)
    src = (rng.random((48, 7)) < 0.4).astype(np.float32)
    before = np.full((48, 8), -3, np.int32)
    tensors = {"s": sbuf(src), "d": sbuf(before, output=True)}
    instr = [{"nonzero_with_count": {"dst": "d", "src": "s", "index_offset": 5}}]
    fast = run_program(tmp_path, tensors, instr)["d"]
    monkeypatch.setattr(mod, "plain", lambda r: False)
    slow = run_program(tmp_path, tensors, instr)["d"]
    assert_bits_equal(slow, fast)
    assert_bits_equal(fast, ref_nonzero(src, before, 5, -1))


# the example's tensors for the registry-wide tests (tests/spec_examples.py)
EXAMPLE_TENSORS = {
    "flags": "{buffer: sbuf, shape: [1, 512], dtype: float32, fill: 1}",
    "found": "{buffer: sbuf, shape: [1, 513], dtype: int32, output: true}"}
