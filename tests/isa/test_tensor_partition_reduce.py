"""tensor_partition_reduce against a NumPy reference from its NKI page and SDK example
(`np.sum(a, axis=0, keepdims=True)`): op folded across the partitions, partition by
partition in float32 (bitwise ops on the integer bits); average = sum / P."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, out, random_floats,
                          run_program, sbuf, write_program)
from nkirun.api import cost

F32 = np.float32
# the explain example's tensors where a registry-wide harness cannot guess them
EXAMPLE_TENSORS = {"colsum": "{buffer: sbuf, dtype: float32, shape: [1, 512], output: true}"}


def ref_partition_reduce(data, op, out_dtype="float32"):
    rows = data.reshape(data.shape[0], -1)
    if op in ("bitwise_or", "bitwise_and"):
        acc = rows[0].copy()
        for r in rows[1:]:
            acc = (acc | r) if op == "bitwise_or" else (acc & r)
        return acc.reshape((1,) + data.shape[1:]).astype(out_dtype)
    rows = rows.astype(F32)
    acc = rows[0].copy()
    with np.errstate(all="ignore"):
        for r in rows[1:]:
            acc = np.maximum(acc, r) if op == "maximum" else (acc + r).astype(F32)
        if op == "average":
            acc = (acc / F32(rows.shape[0])).astype(F32)
    return ref.cast_to(acc.reshape((1,) + data.shape[1:]), out_dtype)


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(5,), (32, 4), (129,)])
@pytest.mark.parametrize("op", ["add", "average", "maximum"])
def test_float_ops(tmp_path, P, free, op):
    rng = np.random.default_rng(P + len(free))
    x = random_floats(rng, (P,) + free, special=op == "maximum")
    outs = run_program(tmp_path, {"x": sbuf(x), "y": out((1,) + free, "float32")},
                       [{"tensor_partition_reduce": {"dst": "y", "op": op, "data": "x"}}])
    assert_bits_equal(outs["y"], ref_partition_reduce(x, op))


@pytest.mark.parametrize("op", ["bitwise_or", "bitwise_and"])
def test_bitwise_ops(tmp_path, op):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**31, (37, 16)).astype(np.int32)
    outs = run_program(tmp_path, {"x": sbuf(x), "y": out((1, 16), "int32")},
                       [{"tensor_partition_reduce": {"dst": "y", "op": op, "data": "x"}}])
    assert_bits_equal(outs["y"], ref_partition_reduce(x, op, "int32"))


def test_sdk_example_golden_and_bf16(tmp_path):
    rng = np.random.default_rng(0)
    a = (rng.random((128, 32, 4)) * 100).astype(F32)
    outs = run_program(tmp_path, {"a": sbuf(a), "b": out((1, 32, 4), "float32"),
                                  "h": out((1, 32, 4), "bfloat16")},
                       [{"nisa.tensor_partition_reduce": {"dst": "b", "op": "np.add",
                                                          "data": "a"}},
                        {"tensor_partition_reduce": {"dst": "h", "op": "add", "data": "a"}}])
    np.testing.assert_allclose(outs["b"], np.sum(a, axis=0, keepdims=True), rtol=1e-5)
    assert_bits_equal(outs["h"], ref_partition_reduce(a, "add", "bfloat16"))


def test_rules(tmp_path):
    x = np.ones((8, 4), F32)
    d = diagnostics(tmp_path, {"x": sbuf(x), "y": out((2, 4), "float32"),
                               "z": out((1, 4), "float32"), "ps": sbuf(x, buffer="psum")},
                    [{"tensor_partition_reduce": {"dst": "y", "op": "add", "data": "x"}},
                     {"tensor_partition_reduce": {"dst": "z", "op": "bitwise_or", "data": "x"}},
                     {"tensor_partition_reduce": {"dst": "z", "op": "multiply", "data": "x"}},
                     {"tensor_partition_reduce": {"dst": "z", "op": "add", "data": "ps"}}])
    got = codes(d)
    for code in ("E360", "E361", "E025", "E044"):
        assert code in got, (code, got)


def test_cost_is_assumed(tmp_path):
    path = write_program(tmp_path, {"x": sbuf(np.ones((128, 100), F32)),
                                    "y": out((1, 100), "float32")},
                         [{"tensor_partition_reduce": {"dst": "y", "op": "add", "data": "x"}}])
    slot = cost(path).slots[0]
    assert slot.engine == "gpsimd" and slot.assumed and slot.cycles == 150 + 200


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "x": sbuf(np.ones((16, 8), np.float32)),
        "colsum": out((1, 8), "float32"),
    }
    outs = run_spec_example(tmp_path, "tensor_partition_reduce", tensors)
    np.testing.assert_array_equal(outs["colsum"], np.full((1, 8), 16, np.float32))
