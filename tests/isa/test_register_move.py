"""register_move: dst = an int32 constant or another register's value (the
nki.isa.register_move documentation)."""
import pytest
from register_helpers import codes, int32_out, program, run, run_error

EXAMPLE_TENSORS = {"out": "{buffer: hbm, shape: [1, 1], dtype: int32, output: true}"}


def test_constant_then_copy_between_registers():
    out = run(program({**int32_out("a"), **int32_out("b")},
                      "  - register_alloc: {dst: r}\n"
                      "  - register_move: {dst: r, src: 10}\n"
                      "  - register_alloc: {dst: s}\n"
                      "  - register_move: {dst: s, src: r}\n"
                      "  - register_move: {dst: r, src: -3}\n"  # the copy is a value
                      "  - register_store: {dst: a, src: r}\n"
                      "  - register_store: {dst: b, src: s}\n"))
    assert (int(out["a"][0, 0]), int(out["b"][0, 0])) == (-3, 10)


def test_unknown_register_is_e650_with_a_suggestion():
    diags = [d for d in __import__("nkirun").api.check(program(
        int32_out(), "  - register_alloc: {dst: count}\n"
                     "  - register_move: {dst: count, src: cuont}\n"
                     "  - register_store: {dst: out, src: count}\n"))]
    assert [d.code for d in diags] == ["E650"]
    assert "count" in (diags[0].hint or "")


def test_register_used_before_its_alloc_is_e650():
    assert codes(program(int32_out(), "  - register_move: {dst: r, src: 1}\n"
                                      "  - register_alloc: {dst: r}\n"
                                      "  - register_store: {dst: out, src: r}\n")) == ["E650"]


def test_copy_of_an_unwritten_register_is_e655():
    diags = run_error(program(int32_out(), "  - register_alloc: {dst: a}\n"
                                           "  - register_alloc: {dst: b}\n"
                                           "  - register_move: {dst: b, src: a}\n"
                                           "  - register_store: {dst: out, src: b}\n"))
    assert [d.code for d in diags] == ["E655"] and "register_move" in diags[0].message


@pytest.mark.parametrize("src", ["2147483648", "1.5", "true"])
def test_src_is_an_int32_or_a_register(src):
    found = codes(program(int32_out(), f"  - register_alloc: {{dst: r}}\n"
                                       f"  - register_move: {{dst: r, src: {src}}}\n"
                                       "  - register_store: {dst: out, src: r}\n"))
    assert found and set(found) <= {"E653", "E024"}
