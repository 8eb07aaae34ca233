"""register_alloc: declares a register, optionally set to an int32 immediate (the
nki.isa.register_alloc documentation); reading one never written is a run-time E655."""
import pytest
from register_helpers import codes, int32_out, program, run, run_error

EXAMPLE_TENSORS = {"out": "{buffer: hbm, shape: [1, 1], dtype: int32, output: true}"}


@pytest.mark.parametrize("value", [0, 7, -5, 2**31 - 1, -2**31])
def test_initial_value_reaches_memory(value):
    out = run(program(int32_out(), f"  - register_alloc: {{dst: n, x: {value}}}\n"
                                   "  - register_store: {dst: out, src: n}\n"))
    assert int(out["out"][0, 0]) == value


def test_without_a_value_reading_it_is_e655_at_the_reader():
    diags = run_error(program(int32_out(), "  - register_alloc: {dst: n}\n"
                                           "  - register_store: {dst: out, src: n}\n"))
    assert [d.code for d in diags] == ["E655"]
    assert "register_store reads register `n`" in diags[0].message
    assert diags[0].loc.line == 6


@pytest.mark.parametrize("x", [2**31, -2**31 - 1])
def test_value_outside_int32_is_e653(x):
    assert "E653" in codes(program(int32_out(), f"  - register_alloc: {{dst: n, x: {x}}}\n"
                                                "  - register_store: {dst: out, src: n}\n"))


def test_x_must_be_an_immediate_not_a_register():
    text = program(int32_out(), "  - register_alloc: {dst: a, x: 1}\n"
                                "  - register_alloc: {dst: b, x: a}\n"
                                "  - register_store: {dst: out, src: b}\n")
    assert codes(text) == ["E653"]


def test_allocating_again_reinitialises():
    out = run(program(int32_out(), "  - register_alloc: {dst: n, x: 3}\n"
                                   "  - register_alloc: {dst: n, x: 9}\n"
                                   "  - register_store: {dst: out, src: n}\n"))
    assert int(out["out"][0, 0]) == 9


def test_register_named_like_a_tensor_is_e651():
    assert "E651" in codes(program(int32_out(), "  - register_alloc: {dst: out, x: 1}\n"
                                                "  - register_store: {dst: out, src: out}\n"))


@pytest.mark.parametrize("bad", ["1abc", "[1]", "a b"])
def test_dst_must_be_a_name(bad):
    assert "E024" in codes(program(int32_out(), f"  - register_alloc: {{dst: '{bad}'}}\n"))
