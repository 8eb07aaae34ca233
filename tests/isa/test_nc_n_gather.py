"""nc_n_gather against a loop over the NKI 0.6 page's definition: per partition, dst[j] is
the flattened data element at indices[j]."""
import numpy as np
import pytest
import yaml
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, diagnostics, out, random_floats,
                          reported_at, run_program, sbuf, write_program)

from nkirun.api import run
from nkirun.diagnostics import RunError
from nkirun.isa import REGISTRY


def ref_n_gather(data, indices):
    p = data.shape[0]
    d, ix = data.reshape(p, -1), indices.reshape(p, -1)
    res = np.empty(ix.shape, data.dtype)
    for i in range(p):
        for j in range(ix.shape[1]):
            res[i, j] = d[i, int(ix[i, j])]
    return res


@pytest.mark.parametrize("p,dfree,ifree", [(1, (8,), (3,)), (37, (3, 7), (5, 2)),
                                           (128, (1300,), (64,)), (16, (4, 4, 4), (100,))])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float8_e5m2", "int32", "uint16"])
def test_matches_reference(tmp_path, p, dfree, ifree, dtype):
    rng = np.random.default_rng(p + len(dfree) + len(ifree))
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, (p, *dfree), dtype=np.int64).astype(dtype)
    else:
        data = random_floats(rng, (p, *dfree)).astype(NP_TYPES[dtype])
    f = int(np.prod(dfree))
    idx = rng.integers(0, f, (p, *ifree)).astype(np.uint32)
    idx.reshape(p, -1)[:, 0] = f - 1  # the last element is reachable
    got = run_program(tmp_path, {"d": sbuf(data), "i": sbuf(idx), "o": out((p, *ifree), dtype)},
                      [{"nc_n_gather": {"dst": "o", "data": "d", "indices": "i"}}])["o"]
    assert_bits_equal(got, ref_n_gather(data, idx).reshape(p, *ifree))


def test_repeated_and_permuted_indices(tmp_path):
    data = np.arange(2 * 6, dtype=np.float32).reshape(2, 6) * 1.5
    idx = np.array([[5, 5, 0, 1], [2, 2, 2, 3]], np.uint32)
    got = run_program(tmp_path, {"d": sbuf(data), "i": sbuf(idx), "o": out((2, 4), "float32")},
                      [{"nc_n_gather": {"dst": "o", "data": "d", "indices": "i"}}])["o"]
    np.testing.assert_array_equal(got, [[7.5, 7.5, 0, 1.5], [12, 12, 12, 13.5]])


def test_out_of_range_index_is_a_run_time_error_E423(tmp_path):
    path = write_program(tmp_path, {"d": sbuf(np.zeros((4, 10), np.float32)),
                                    "i": sbuf(np.array([[0], [9], [10], [3]], np.uint32)),
                                    "o": out((4, 1), "float32")},
                         [{"nc_n_gather": {"dst": "o", "data": "d", "indices": "i"}}])
    with pytest.raises(RunError) as e:
        run(path)
    d = e.value.diagnostics[0]
    assert d.code == "E423" and "indices[2, 0] = 10" in d.message


def test_spec_example_checks_and_runs(tmp_path):
    entry = yaml.safe_load(REGISTRY["nc_n_gather"].example)[0]
    scores = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    idx = np.tile(np.array([31, 0, 7], np.uint32), (8, 1))
    got = run_program(tmp_path, {"scores": sbuf(scores), "idx": sbuf(idx),
                                 "picked": out((8, 3), "float32")}, [entry])["picked"]
    np.testing.assert_array_equal(got, scores[:, [31, 0, 7]])


def test_rules(tmp_path):
    def c(dst_shape=(4, 3), dst_dtype="float32", idx_dtype="uint32", idx_shape=(4, 3),
          buffer="sbuf"):
        return codes(diagnostics(tmp_path, {
            "d": sbuf(np.zeros((4, 10), np.float32), buffer=buffer),
            "i": sbuf(np.zeros(idx_shape), idx_dtype), "o": out(dst_shape, dst_dtype)},
            [{"nc_n_gather": {"dst": "o", "data": "d", "indices": "i"}}]))
    assert "E420" in c(dst_dtype="bfloat16")
    assert "E421" in c(dst_shape=(4, 4))
    assert "E060" in c(idx_dtype="int32")
    assert "E062" in c(idx_shape=(3, 3))
    assert "E040" in c(buffer="psum")


def test_errors_located(tmp_path):
    path = write_program(tmp_path, {"d": sbuf(np.zeros((4, 10), np.float32)),
                                    "i": sbuf(np.zeros((4, 3), np.uint32)),
                                    "o": out((4, 3), "float16")},
                         [{"nc_n_gather": {"dst": "o", "data": "d", "indices": "i"}}])
    reported_at(path, "E420", "dst")


def test_cost_groups_of_512():
    from types import SimpleNamespace

    from nkirun.hw.targets import TARGETS
    t, spec = TARGETS["trn2"], REGISTRY["nc_n_gather"]
    b = {"data": SimpleNamespace(free_size=1300), "indices": SimpleNamespace(free_size=64)}
    assert spec.cycles(b, t) == 3 * (t.gpsimd_start + 64)
