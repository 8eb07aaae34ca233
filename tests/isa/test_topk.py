"""topk against a loop reading of the NKI 0.6 page: each 16-partition group is a snake of n
bf16 values (element i at partition i % 16, column i // 16); the K largest go out in ascending
order, in the same snake layout, with their snake indices."""
import math

import ml_dtypes
import numpy as np
import pytest
import yaml
from prog_helpers import assert_bits_equal, codes, diagnostics, out, reported_at, run_program, \
    sbuf, write_program

from nkirun.isa import REGISTRY

BF16 = ml_dtypes.bfloat16


def ref_topk(src, n, k):
    """Python lists and sorted(): per group, the K largest (NaN largest, ties by lower index),
    listed ascending (ties by lower index), placed back in snake layout."""
    p = src.shape[0]
    val = np.full((p, k), -np.inf, BF16)  # nkirun's filler for slots j >= K of a position
    idx = np.full((p, k), 0xFFFFFFFF, np.uint32)
    written = np.zeros((p, k), bool)
    written[:, :math.ceil(k / 16)] = True  # whole positions are written
    for g in range(p // 16):
        snake = [float(src[16 * g + i % 16, i // 16]) for i in range(n)]
        rank = lambda i: (math.isnan(snake[i]), snake[i] if not math.isnan(snake[i]) else 0)  # noqa
        chosen = sorted(range(n), key=lambda i: (-rank(i)[0], -rank(i)[1], i))[:k]
        listed = sorted(chosen, key=lambda i: (rank(i), i))
        for j, i in enumerate(listed):
            val[16 * g + j % 16, j // 16] = snake[i]
            idx[16 * g + j % 16, j // 16] = i
    return val, idx, written


def _run(tmp_path, src, n, k):
    p = src.shape[0]
    val0 = np.full((p, k), -7, BF16)
    idx0 = np.full((p, k), 12345, np.uint32)
    got = run_program(tmp_path, {"s": sbuf(src), "v": sbuf(val0, output=True),
                                 "i": sbuf(idx0, output=True)},
                      [{"topk": {"val_dst": "v", "idx_dst": "i", "src": "s", "n": n}}])
    return got["v"], got["i"], val0, idx0


@pytest.mark.parametrize("p", [16, 48, 128])
@pytest.mark.parametrize("n,k", [(8, 1), (42, 8), (42, 17), (100, 64), (256, 256), (33, 33)])
def test_matches_reference(tmp_path, p, n, k):
    rng = np.random.default_rng(p + n + k)
    cols = math.ceil(n / 16) + 1  # a spare column: storage past n is ignored
    src = rng.standard_normal((p, cols)).astype(np.float32).astype(BF16)
    v, i, v0, i0 = _run(tmp_path, src, n, k)
    rv, ri, w = ref_topk(src, n, k)
    assert_bits_equal(v, np.where(w, rv, v0))
    assert_bits_equal(i, np.where(w, ri, i0))


def test_ties_nan_and_inf(tmp_path):
    src = np.zeros((16, 2), np.float32)
    snake = [3, 1, 3, np.nan, -np.inf, np.inf, 3, 0, 1, 2, 2, 2, 5, -1, 0, 3, 7, 7, 1, 1]
    for i, x in enumerate(snake):
        src[i % 16, i // 16] = x
    src = src.astype(BF16)
    v, i, v0, i0 = _run(tmp_path, src, len(snake), 9)
    rv, ri, w = ref_topk(src, len(snake), 9)
    assert_bits_equal(v, np.where(w, rv, v0))
    assert_bits_equal(i, np.where(w, ri, i0))
    # ascending: NaN last (slot 8 = partition 8, column 0), +inf before it
    assert np.isnan(float(v[8, 0])) and i[8, 0] == 3 and float(v[7, 0]) == np.inf


def test_groups_are_independent(tmp_path):
    src = np.zeros((32, 1), np.float32)
    src[:16, 0] = np.arange(16)
    src[16:, 0] = -np.arange(16)
    v, i, _, _ = _run(tmp_path, src.astype(BF16), 16, 2)
    assert [float(x) for x in v[0:2, 0]] == [14, 15] and list(i[0:2, 0]) == [14, 15]
    assert [float(x) for x in v[16:18, 0]] == [-1, 0] and list(i[16:18, 0]) == [1, 0]


def test_spec_example_checks_and_runs(tmp_path):
    entry = yaml.safe_load(REGISTRY["topk"].example)[0]
    rng = np.random.default_rng(3)
    snake = rng.standard_normal((16, 3)).astype(np.float32).astype(BF16)
    got = run_program(tmp_path, {"snake": sbuf(snake),
                                 "top_v": sbuf(np.zeros((16, 8), BF16), output=True),
                                 "top_i": sbuf(np.zeros((16, 8), np.uint32), output=True)},
                      [entry])
    rv, ri, w = ref_topk(snake, 42, 8)
    assert_bits_equal(got["top_v"][w], rv[w])
    assert_bits_equal(got["top_i"][w], ri[w])


def _codes(tmp_path, p=16, cols=3, n=42, k=8, ki=None, src_dtype="bfloat16"):
    return codes(diagnostics(tmp_path, {
        "s": sbuf(np.zeros((p, cols)), src_dtype),
        "v": out((p, k), "bfloat16"), "i": out((p, ki or k), "uint32")},
        [{"topk": {"val_dst": "v", "idx_dst": "i", "src": "s", "n": n}}]))


def test_rules(tmp_path):
    assert _codes(tmp_path) == []
    assert "E470" in _codes(tmp_path, p=24)
    assert "E471" in _codes(tmp_path, n=7, k=4)
    assert "E471" in _codes(tmp_path, n=65536, cols=4096)
    assert "E472" in _codes(tmp_path, n=10, k=11)
    assert "E473" in _codes(tmp_path, ki=9)
    assert "E474" in _codes(tmp_path, cols=2)
    assert "E060" in _codes(tmp_path, src_dtype="float32")


def test_errors_located(tmp_path):
    path = write_program(tmp_path, {"s": sbuf(np.zeros((16, 3)), "bfloat16"),
                                    "v": out((16, 8), "bfloat16"), "i": out((16, 8), "uint32")},
                         [{"topk": {"val_dst": "v", "idx_dst": "i", "src": "s", "n": 5}}])
    reported_at(path, "E471", "n")


def test_cost_is_the_documented_formula():
    from types import SimpleNamespace

    from nkirun.hw.targets import TARGETS
    b = {"n": 42, "val_dst": SimpleNamespace(free_size=8)}
    assert REGISTRY["topk"].cycles(b, TARGETS["trn2"]) == 4 * 42 + 8


def test_unwritten_positions_are_not_written(tmp_path):
    """K = 20: positions 0 and 1 are written (slots 20..31 with the filler), 2.. are not."""
    from nkirun.api import run
    from nkirun.diagnostics import RunError
    src = np.arange(16 * 3, dtype=np.float32).reshape(16, 3).astype(BF16)
    path = write_program(tmp_path, {"s": sbuf(src), "v": out((16, 20), "bfloat16"),
                                    "i": out((16, 20), "uint32")},
                         [{"topk": {"val_dst": "v", "idx_dst": "i", "src": "s", "n": 48}}])
    with pytest.raises(RunError) as e:  # the output has position 2 never written
        run(path)
    assert e.value.diagnostics[0].code == "E092" and "(0, 2)" in e.value.diagnostics[0].message
    v, i, v0, _ = _run(tmp_path, src, 48, 20)
    assert np.isneginf(v[4:16, 1].astype(np.float32)).all() and (i[4:16, 1] == 0xFFFFFFFF).all()
    assert (v[:, 2:] == v0[:, 2:]).all()


# the example's tensors for the registry-wide tests (tests/spec_examples.py)
EXAMPLE_TENSORS = {
    "snake": "{buffer: sbuf, shape: [128, 3], dtype: bfloat16, fill: 1}",
    "top_v": "{buffer: sbuf, shape: [128, 1], dtype: bfloat16, output: true}",
    "top_i": "{buffer: sbuf, shape: [128, 1], dtype: uint32, output: true}"}
