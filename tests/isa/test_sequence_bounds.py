"""sequence_bounds against the NKI 0.6 page's NumPy equivalent (runs of equal ids; id 0 is
padding with start n and end -1), transcribed as two loops."""
import numpy as np
import pytest
import yaml
from prog_helpers import codes, diagnostics, out, reported_at, run_program, sbuf, write_program

from nkirun.api import run
from nkirun.diagnostics import RunError
from nkirun.isa import REGISTRY


def ref_bounds(seq):
    n = len(seq)
    lo, hi = np.zeros(n), np.zeros(n)
    lo[0] = 0 if seq[0] != 0 else n
    for i in range(1, n):
        lo[i] = n if seq[i] == 0 else (lo[i - 1] if seq[i] == seq[i - 1] else i)
    hi[-1] = n if seq[-1] != 0 else -1
    for i in range(n - 2, -1, -1):
        hi[i] = -1 if seq[i] == 0 else (hi[i + 1] if seq[i] == seq[i + 1] else i + 1)
    return np.vstack([lo, hi])


def _run(tmp_path, ids, dst_dtype):
    n = ids.size
    return run_program(tmp_path, {"s": sbuf(ids), "d": out((1, 2, n), dst_dtype)},
                       [{"sequence_bounds": {"dst": "d", "segment_ids": "s"}}])["d"]


def test_page_example(tmp_path):
    ids = np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3]], np.int32)
    got = _run(tmp_path, ids, "int32")
    np.testing.assert_array_equal(got[0], [[9, 1, 1, 3, 3, 3, 9, 7, 7],
                                           [-1, 3, 3, 6, 6, 6, -1, 9, 9]])


@pytest.mark.parametrize("n", [1, 2, 33, 512, 4097])
@pytest.mark.parametrize("ids_dtype,dst_dtype", [("float32", "float32"), ("int32", "int32"),
                                                 ("int32", "float32"), ("float32", "int32")])
def test_matches_reference(tmp_path, n, ids_dtype, dst_dtype):
    rng = np.random.default_rng(n)
    ids = np.sort(rng.integers(0, max(2, n // 3), n)).astype(ids_dtype)
    ids[rng.random(n) < 0.1] = 0  # padding inside runs too
    ids = ids.reshape(1, n)
    got = _run(tmp_path, ids, dst_dtype)
    np.testing.assert_array_equal(got[0], ref_bounds(ids[0]).astype(dst_dtype))


def test_repeated_id_in_separate_runs_is_two_segments(tmp_path):
    ids = np.array([[5, 5, 7, 5]], np.float32)
    got = _run(tmp_path, ids, "float32")
    np.testing.assert_array_equal(got[0], [[0, 0, 2, 3], [2, 2, 3, 4]])


def test_all_padding(tmp_path):
    got = _run(tmp_path, np.zeros((1, 6), np.int32), "int32")
    np.testing.assert_array_equal(got[0], [[6] * 6, [-1] * 6])


def test_multi_dim_ids_are_flattened(tmp_path):
    ids = np.array([[[1, 1], [2, 0]]], np.int32)
    got = run_program(tmp_path, {"s": sbuf(ids), "d": out((1, 8), "int32")},
                      [{"sequence_bounds": {"dst": "d", "segment_ids": "s"}}])["d"]
    np.testing.assert_array_equal(got[0], [0, 0, 2, 4, 2, 2, 3, -1])


@pytest.mark.parametrize("ids", [np.array([[1, -2, 3]], np.int32),
                                 np.array([[1, 2.5, 3]], np.float32),
                                 np.array([[1, np.nan, 3]], np.float32)])
def test_ids_not_non_negative_integers_are_a_run_time_error_E452(tmp_path, ids):
    path = write_program(tmp_path, {"s": sbuf(ids), "d": out((1, 2, 3), "int32")},
                         [{"sequence_bounds": {"dst": "d", "segment_ids": "s"}}])
    with pytest.raises(RunError) as e:
        run(path)
    assert e.value.diagnostics[0].code == "E452" and "[0, 1]" in e.value.diagnostics[0].message


def test_spec_example_checks_and_runs(tmp_path):
    entry = yaml.safe_load(REGISTRY["sequence_bounds"].example)[0]
    ids = np.array([[1, 1, 0, 2]], np.float32)
    got = run_program(tmp_path, {"ids": sbuf(ids), "bounds": out((1, 2, 4), "float32")},
                      [entry])["bounds"]
    np.testing.assert_array_equal(got[0], ref_bounds(ids[0]))


def test_rules(tmp_path):
    def c(ids_shape=(1, 4), dst_shape=(1, 2, 4), ids_dtype="int32", dst_dtype="int32"):
        return codes(diagnostics(tmp_path, {"s": sbuf(np.ones(ids_shape), ids_dtype),
                                            "d": out(dst_shape, dst_dtype)},
                                 [{"sequence_bounds": {"dst": "d", "segment_ids": "s"}}]))
    assert c() == []
    assert "E450" in c(ids_shape=(2, 4), dst_shape=(2, 2, 4))
    assert "E451" in c(dst_shape=(1, 2, 5))
    assert "E060" in c(ids_dtype="int16")
    assert "E060" in c(dst_dtype="bfloat16")


def test_errors_located(tmp_path):
    path = write_program(tmp_path, {"s": sbuf(np.ones((1, 4)), "int32"),
                                    "d": out((1, 9), "int32")},
                         [{"sequence_bounds": {"dst": "d", "segment_ids": "s"}}])
    reported_at(path, "E451", "dst")


# the example's tensors for the registry-wide tests (tests/spec_examples.py)
EXAMPLE_TENSORS = {
    "bounds": "{buffer: sbuf, shape: [1, 2, 512], dtype: float32, output: true}",
    "ids": "{buffer: sbuf, shape: [1, 512], dtype: float32, fill: 1}"}
