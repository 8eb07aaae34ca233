"""register_store: a register's value into one integer element of SBUF or HBM (the
nki.isa.register_store documentation)."""
import numpy as np
import pytest
from register_helpers import codes, program, run

EXAMPLE_TENSORS = {"out": "{buffer: hbm, shape: [1, 1], dtype: int32, output: true}"}


@pytest.mark.parametrize("dtype", ["int32", "int16", "uint16", "uint32"])
def test_stores_into_integer_dtypes(dtype):
    out = run(program({"s": f"buffer: sbuf, shape: [1, 1], dtype: {dtype}",
                       "out": f"buffer: hbm, shape: [1, 1], dtype: {dtype}, output: true"},
                      "  - register_alloc: {dst: n, x: 1234}\n"
                      "  - register_store: {dst: s, src: n}\n"
                      "  - dma_copy: {dst: out, src: s}\n"))
    assert out["out"].dtype == np.dtype(dtype) and int(out["out"][0, 0]) == 1234


def test_stores_into_one_element_of_a_bigger_tensor():
    out = run(program({"out": "buffer: hbm, shape: [2, 3], dtype: int32, fill: 0, "
                              "output: true"},
                      "  - register_alloc: {dst: n, x: -9}\n"
                      "  - register_store: {dst: 'out[1, 2:3]', src: n}\n"))
    np.testing.assert_array_equal(out["out"], [[0, 0, 0], [0, 0, -9]])


@pytest.mark.parametrize("decl,code", [
    ("buffer: hbm, shape: [2, 1], dtype: int32, output: true", "E653"),
    ("buffer: hbm, shape: [1, 1], dtype: bfloat16, output: true", "E060"),
    ("buffer: psum, shape: [1, 1], dtype: int32", "E040")])
def test_destination_rules(decl, code):
    assert code in codes(program({"out": decl}, "  - register_alloc: {dst: n, x: 1}\n"
                                                "  - register_store: {dst: out, src: n}\n"))


def test_unknown_source_register_is_e650():
    assert codes(program({"out": "buffer: hbm, shape: [1, 1], dtype: int32, output: true"},
                         "  - register_store: {dst: out, src: n}\n")) == ["E650"]
