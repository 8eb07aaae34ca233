"""The trn3 target (NeuronCore-v4) and the MX dtypes: x4-packed elements move bit for bit
through load/store/dma_copy/tensor_copy, memset fills them with 0 only, nothing else
computes on them, and their .npy files hold the packed bits (docs/mx-and-random.md)."""
import json
import sys

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/isa")
from mxrand_helpers import check_codes, errors, run_prog, t, write

from nkirun.api import cost, run
from nkirun.diagnostics import NkirunError
from nkirun.hw.targets import TARGETS


def test_trn3_numbers():
    t3 = TARGETS["trn3"]
    assert (t3.core, t3.version) == ("NeuronCore-v4", 4)
    assert t3.clocks_ghz == {"tensor": 2.4, "vector": 1.2, "scalar": 1.2, "gpsimd": 1.2}
    assert t3.sbuf_bytes_per_partition * 128 == 32 * 1024**2  # 32 MiB SBUF
    assert t3.psum_bytes_per_partition * 128 == 2 * 1024**2  # 2 MiB PSUM
    assert (t3.dma_queues, t3.cost.dma_engine_bytes_per_ns) == (16, 33.0)
    assert [TARGETS[n].version for n in ("trn1", "inf2", "trn2")] == [2, 2, 3]


def test_trn3_capacity_and_cost(tmp_path):
    big = {"x": t("sbuf", (128, 60 * 1024), "float32", fill=1.0, output=True)}  # 240 KiB
    assert errors(check_codes(tmp_path, big, [], "trn3")) == []
    assert "E041" in check_codes(tmp_path, big, [], "trn2")
    path = write(tmp_path, {"x": t("sbuf", (128, 512), "float32", fill=1.0),
                            "y": t("sbuf", (128, 512), "float32", output=True)},
                 [{"tensor_copy": {"dst": "y", "src": "x"}}], "trn3")
    s = cost(path)
    assert s.target.name == "trn3"
    assert abs(s.slots[0].end_ns - 512 / 1.2) < 1e-6  # max(MIN_II, N) at 1.2 GHz


X4 = [("float8_e4m3fn_x4", np.uint32), ("float8_e5m2_x4", np.uint32),
      ("float4_e2m1fn_x4", np.uint16)]


@pytest.mark.parametrize("name,storage", X4)
def test_packed_bits_round_trip_through_every_copy(tmp_path, name, storage):
    bits = np.random.default_rng(1).integers(0, np.iinfo(storage).max, (32, 7),
                                              dtype=np.uint64).astype(storage)
    outs = run_prog(tmp_path, {
        "h": t("hbm", (32, 7), name, bits), "a": t("sbuf", (32, 7), name),
        "b": t("sbuf", (32, 7), name), "c": t("sbuf", (32, 7), name),
        "o": t("hbm", (32, 7), name, output=True), "z": t("sbuf", (32, 7), name, output=True)},
        [{"load": {"dst": "a", "src": "h"}}, {"dma_copy": {"dst": "b", "src": "a"}},
         {"tensor_copy": {"dst": "c", "src": "b"}}, {"store": {"dst": "o", "src": "c"}},
         {"memset": {"dst": "z", "value": 0}}])
    assert outs["o"].dtype == storage
    np.testing.assert_array_equal(outs["o"], bits)
    assert (outs["z"] == 0).all()


def test_e8m0_scales(tmp_path):
    bits = np.array([[0, 1, 127, 254]], np.uint8)
    for arr in (bits, bits.view(ml_dtypes.float8_e8m0fnu)):  # uint8 files hold the same bits
        outs = run_prog(tmp_path, {"s": t("sbuf", (1, 4), "float8_e8m0fnu", arr),
                                   "f": t("sbuf", (1, 4), "float32", output=True)},
                        [{"tensor_copy": {"dst": "f", "src": "s"}}])
        np.testing.assert_array_equal(outs["f"], [[2.0**-127, 2.0**-126, 1.0, 2.0**127]])


@pytest.mark.parametrize("instructions,code", [
    ([{"tensor_tensor": {"dst": "b", "data1": "a", "data2": "a", "op": "add"}}], "E490"),
    ([{"activation": {"dst": "b", "data": "a", "op": "copy"}}], "E490"),
    ([{"tensor_copy": {"dst": "f", "src": "a"}}], "E491"),
    ([{"dma_copy": {"dst": "a", "src": "f"}}], "E491"),
    ([{"memset": {"dst": "b", "value": 2}}], "E492"),
])
def test_packed_rules(tmp_path, instructions, code):
    tensors = {"a": t("sbuf", (32, 8), "float8_e4m3fn_x4", fill=0),
               "b": t("sbuf", (32, 8), "float8_e4m3fn_x4", output=True),
               "f": t("sbuf", (32, 8), "float32", fill=0, output=True)}
    assert code in check_codes(tmp_path, tensors, instructions)


def test_input_array_for_a_packed_tensor_must_be_its_bits(tmp_path):
    path = write(tmp_path, {"a": t("sbuf", (32, 8), "float8_e5m2_x4", fill=0),
                            "b": t("sbuf", (32, 8), "float8_e5m2_x4", output=True)},
                 [{"tensor_copy": {"dst": "b", "src": "a"}}])
    with pytest.raises(NkirunError) as e:
        run(path, inputs={"a": np.ones((32, 8), np.float32)})
    assert e.value.diagnostics[0].code == "E073"
    ok = run(path, inputs={"a": np.full((32, 8), 0x3C3C3C3C, np.uint32)})
    assert (ok["b"] == 0x3C3C3C3C).all()


def test_schema_lists_trn3_and_mx_dtypes():
    from nkirun.source.schema import generate as build_schema
    text = json.dumps(build_schema())
    for name in ("trn3", "float8_e4m3fn_x4", "float4_e2m1fn_x4", "float8_e8m0fnu",
                 "quantize_mx", "nc_matmul_mx", "rand_get_state"):
        assert name in text
