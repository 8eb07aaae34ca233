"""local_gather against a loop transcription of the NKI 0.6 page: each GpSimd core (16
partitions) flattens its index slice partition-first, keeps num_valid_indices, and every one
of its partitions reads num_elem_per_idx elements at each index."""
import numpy as np
import pytest
import yaml
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, diagnostics, out, random_floats,
                          reported_at, run_program, sbuf, write_program)

from nkirun.api import run
from nkirun.diagnostics import RunError
from nkirun.isa import REGISTRY


def ref_local_gather(src, index, k, nv=None):
    p = src.shape[0]
    s, ix = src.reshape(p, -1), index.reshape(p, -1)
    nv = nv or 16 * ix.shape[1]
    res = np.empty((p, nv * k), src.dtype)
    for c in range(p // 16):
        flat = [int(ix[16 * c + r, col]) for col in range(ix.shape[1]) for r in range(16)][:nv]
        for q in range(16 * c, 16 * c + 16):
            for j, at in enumerate(flat):
                for e in range(k):
                    res[q, j * k + e] = s[q, at + e]
    return res


@pytest.mark.parametrize("p", [16, 48, 128])
@pytest.mark.parametrize("k,nv,dtype", [(1, None, "float32"), (4, 64, "float32"),
                                        (2, 37, "bfloat16"), (32, 5, "float16"),
                                        (8, 16, "int32"), (1, 3, "uint8")])
def test_matches_reference(tmp_path, p, k, nv, dtype):
    rng = np.random.default_rng(p * 100 + k)
    free = (32, 40)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        src = rng.integers(info.min, info.max, (p, *free), dtype=np.int64).astype(dtype)
    else:
        src = random_floats(rng, (p, *free)).astype(NP_TYPES[dtype])
    f = int(np.prod(free))
    index = rng.integers(0, f - k + 1, (p, 4)).astype(np.uint16)
    n = nv or 16 * 4
    args = {"dst": "o", "src_buffer": "s", "index": "i", "num_elem_per_idx": k}
    if nv is not None:
        args["num_valid_indices"] = nv
    got = run_program(tmp_path, {"s": sbuf(src), "i": sbuf(index), "o": out((p, n * k), dtype)},
                      [{"local_gather": args}])["o"]
    assert_bits_equal(got, ref_local_gather(src, index, k, nv))


def test_page_example_shapes(tmp_path):
    """The page's example: src (128, 512, 4), indices per core (16, 4) replicated 8 times,
    k = 4, element offsets index * 4, 64 valid indices -> dst (128, 4, 16, 4)."""
    rng = np.random.default_rng(0)
    src = (rng.random((128, 512, 4)) * 100).astype(np.float32)
    per_core = rng.integers(0, 512, (16, 4)).astype(np.uint16)
    index = np.tile(per_core, (8, 1))
    got = run_program(tmp_path, {"s": sbuf(src), "i": sbuf(index * 4),
                                 "o": out((128, 4, 16, 4), "float32")},
                      [{"local_gather": {"dst": "o", "src_buffer": "s", "index": "i",
                                         "num_elem_per_idx": 4, "num_valid_indices": 64}}])["o"]
    rows = per_core.flatten(order="F")  # partition dimension first
    want = src[:, rows, :].reshape(128, 4, 16, 4)
    np.testing.assert_array_equal(got, want)


def test_cores_use_their_own_indices(tmp_path):
    src = np.arange(32 * 10, dtype=np.float32).reshape(32, 10)
    index = np.zeros((32, 1), np.uint16)
    index[16:] = 9  # core 1 reads element 9 everywhere; core 0 element 0
    got = run_program(tmp_path, {"s": sbuf(src), "i": sbuf(index), "o": out((32, 16), "float32")},
                      [{"local_gather": {"dst": "o", "src_buffer": "s", "index": "i"}}])["o"]
    np.testing.assert_array_equal(got[:16], np.repeat(src[:16, :1], 16, axis=1))
    np.testing.assert_array_equal(got[16:], np.repeat(src[16:, 9:10], 16, axis=1))


def test_run_past_the_partition_end_is_E416(tmp_path):
    path = write_program(tmp_path, {"s": sbuf(np.zeros((16, 10), np.float32)),
                                    "i": sbuf(np.full((16, 1), 8, np.uint16)),
                                    "o": out((16, 16 * 4), "float32")},
                         [{"local_gather": {"dst": "o", "src_buffer": "s", "index": "i",
                                            "num_elem_per_idx": 4}}])
    with pytest.raises(RunError) as e:
        run(path)
    assert e.value.diagnostics[0].code == "E416"


def test_spec_example_checks_and_runs(tmp_path):
    entry = yaml.safe_load(REGISTRY["local_gather"].example)[0]
    table = np.arange(32 * 64, dtype=np.float32).reshape(32, 64)
    idx = (np.arange(32 * 4).reshape(32, 4) % 16 * 4).astype(np.uint16)
    got = run_program(tmp_path, {"table": sbuf(table), "idx": sbuf(idx),
                                 "g": out((32, 256), "float32")}, [entry])["g"]
    assert_bits_equal(got, ref_local_gather(table, idx, 4, 64))


def _codes(tmp_path, p=16, src_free=10, idx_free=1, dst_free=16, k=1, nv=None,
           dst_dtype="float32", idx_dtype="uint16"):
    args = {"dst": "o", "src_buffer": "s", "index": "i", "num_elem_per_idx": k}
    if nv is not None:
        args["num_valid_indices"] = nv
    return codes(diagnostics(tmp_path, {"s": sbuf(np.zeros((p, src_free), np.float32)),
                                        "i": sbuf(np.zeros((p, idx_free)), idx_dtype),
                                        "o": out((p, dst_free), dst_dtype)},
                             [{"local_gather": args}]))


def test_rules(tmp_path):
    assert _codes(tmp_path) == []
    assert "E410" in _codes(tmp_path, p=20)
    assert "E411" in _codes(tmp_path, k=3)
    assert "E412" in _codes(tmp_path, nv=17)
    assert "E412" in _codes(tmp_path, nv=0)
    assert "E413" in _codes(tmp_path, idx_free=257, dst_free=16 * 257)
    assert "E414" in _codes(tmp_path, dst_free=15)
    assert "E414" in _codes(tmp_path, k=2)  # 16 x 2 = 32 expected
    assert "E415" in _codes(tmp_path, dst_dtype="bfloat16")
    assert "E060" in _codes(tmp_path, idx_dtype="uint32")


def test_errors_located(tmp_path):
    path = write_program(tmp_path, {"s": sbuf(np.zeros((16, 10), np.float32)),
                                    "i": sbuf(np.zeros((16, 1), np.uint16)),
                                    "o": out((16, 16), "float32")},
                         [{"local_gather": {"dst": "o", "src_buffer": "s", "index": "i",
                                            "num_elem_per_idx": 5}}])
    reported_at(path, "E411", "num_elem_per_idx")


def test_cost_formula():
    from types import SimpleNamespace

    from nkirun.hw.targets import TARGETS
    t, spec = TARGETS["trn2"], REGISTRY["local_gather"]
    b = {"num_elem_per_idx": 1, "num_valid_indices": 64,
         "src_buffer": SimpleNamespace(dtype=SimpleNamespace(itemsize=4)),
         "index": SimpleNamespace(free_size=4)}

    class B(dict):
        def get(self, k, d=None):
            return dict.get(self, k, d)
    # C = ((28 + 4) / 4) / min(1, 1) = 8: 150 + 64 / 8
    assert spec.cycles(B(b), t) == t.gpsimd_start + 8


# the example's tensors for the registry-wide tests (tests/spec_examples.py)
EXAMPLE_TENSORS = {
    "g": "{buffer: sbuf, shape: [128, 256], dtype: float32, output: true}"}
