"""The matrix the per-instruction tests run over, in one place (code review 2026-11, §6):
partition counts P (one, an odd count, all 128) x free shapes (short, odd and longer than
128, multi-dimensional) x dtypes.

    @matrix.shapes                                  # arguments P, free
    @pytest.mark.parametrize("dtype", matrix.FLOATS)
    def test_x(tmp_path, P, free, dtype): ...
"""
import pytest

PARTITIONS = (1, 37, 128)
FREE_SHAPES = ((5,), (129,), (3, 7))
FLOATS = ("float32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2")
INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32")


def shapes(test):
    """Parametrize `test` over P in PARTITIONS x free in FREE_SHAPES."""
    test = pytest.mark.parametrize("free", FREE_SHAPES)(test)
    return pytest.mark.parametrize("P", PARTITIONS)(test)
