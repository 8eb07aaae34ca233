"""register_load: one integer element of SBUF or HBM into a register (the
nki.isa.register_load documentation); checked against the value NumPy reads."""
import numpy as np
import pytest
from register_helpers import codes, int32_out, program, run, scalar

EXAMPLE_TENSORS = {"count": "{buffer: sbuf, shape: [1, 1], dtype: int32, fill: 3}"}


@pytest.mark.parametrize("dtype,value,expect", [
    ("int32", 123456, 123456), ("int32", -7, -7), ("int16", -300, -300),
    ("uint8", 255, 255), ("uint32", 2**32 - 1, -1),  # wraps to the register's int32
    ("uint32", 2**31, -2**31), ("int8", -128, -128)])
@pytest.mark.parametrize("buffer", ["sbuf", "hbm"])
def test_loads_the_element_as_int32(dtype, value, expect, buffer):
    out = run(program({"c": scalar(value, dtype, buffer), **int32_out()},
                      "  - register_alloc: {dst: n}\n"
                      "  - register_load: {dst: n, src: c}\n"
                      "  - register_store: {dst: out, src: n}\n"))
    assert int(out["out"][0, 0]) == expect


def test_one_element_view_of_a_bigger_tensor():
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = run(program({"c": "buffer: sbuf, shape: [3, 4], dtype: int32",
                       **int32_out()},
                      "  - register_alloc: {dst: n}\n"
                      "  - register_load: {dst: n, src: 'c[2:3, 3:4]'}\n"
                      "  - register_store: {dst: out, src: n}\n"), c=data)
    assert int(out["out"][0, 0]) == 11


@pytest.mark.parametrize("decl,code", [
    ("buffer: sbuf, shape: [1, 2], dtype: int32, fill: 1", "E653"),
    ("buffer: sbuf, shape: [1, 1], dtype: float32, fill: 1", "E060"),
    ("buffer: sbuf, shape: [1, 1], dtype: int64, fill: 1", "E013"),
    ("buffer: psum, shape: [1, 1], dtype: int32, fill: 1", "E040")])
def test_source_rules(decl, code):
    assert code in codes(program({"c": decl, **int32_out()},
                                 "  - register_alloc: {dst: n}\n"
                                 "  - register_load: {dst: n, src: c}\n"
                                 "  - register_store: {dst: out, src: n}\n"))


def test_reading_an_unwritten_source_is_e050():
    assert "E050" in codes(program({"c": "buffer: sbuf, shape: [1, 1], dtype: int32",
                                    **int32_out()},
                                   "  - register_alloc: {dst: n}\n"
                                   "  - register_load: {dst: n, src: c}\n"
                                   "  - register_store: {dst: out, src: n}\n"))
