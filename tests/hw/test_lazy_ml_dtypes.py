"""The ml_dtypes-backed DTypes (bfloat16, the fp8 types, float8_e8m0fnu) import ml_dtypes
when their NumPy type is first read (hw/dtypes.py _MlDType): they equal what an eager
definition gives, and checking a program without such a tensor does not import it."""
import copy
import pickle
import subprocess
import sys

import ml_dtypes
import numpy as np

from nkirun.hw import dtypes
from tests.repo_paths import ROOT

LAZY = ("bfloat16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu")


def test_lazy_types_equal_their_ml_dtypes():
    for name in LAZY:
        d = dtypes.DTYPES[name]
        t = np.dtype(getattr(ml_dtypes, name))
        assert d.np_type == t and d.np_type.type is t.type
        assert d.itemsize == t.itemsize
        assert dtypes.from_numpy(t) is d
        assert dtypes.numpy_dtype(name) == t


def test_lazy_types_copy_and_pickle():
    for name in LAZY:
        d = dtypes.DTYPES[name]
        for other in (copy.copy(d), copy.deepcopy(d), pickle.loads(pickle.dumps(d))):
            assert other == d and hash(other) == hash(d)
            assert other.np_type == d.np_type and other.itemsize == d.itemsize
    assert dtypes.DTYPES["bfloat16"] != dtypes.DTYPES["float16"]


def _run(code: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=ROOT, check=True)
    return p.stdout.strip()


def test_ml_dtypes_imported_on_first_read_only():
    out = _run("import sys\n"
               "import numpy as np\n"
               "from nkirun.hw import dtypes\n"
               "print('ml_dtypes' in sys.modules)\n"
               "print(dtypes.from_numpy(np.int8).name, 'ml_dtypes' in sys.modules)\n"
               "print(dtypes.DTYPES['bfloat16'].np_type, 'ml_dtypes' in sys.modules)\n")
    assert out.split("\n") == ["False", "int8 False", "bfloat16 True"]


def test_check_of_a_float32_program_does_not_import_ml_dtypes():
    program = ROOT / "programs" / "rowmax_in_window.yaml"
    out = _run("import runpy, sys\n"
               f"sys.argv = ['nkirun', 'check', {str(program)!r}]\n"
               "try:\n    runpy.run_module('nkirun', run_name='__main__')\n"
               "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
               "print('ml_dtypes' in sys.modules)\n")
    assert out.split("\n")[-2:] == [f"{program}: ok — 6 instructions", "False"]


def test_numpy_knows_the_nl_dtype_names_once_nki_is_imported():
    # an nl dtype is its name, which NumPy resolves through the names ml_dtypes registers
    out = _run("import numpy as np, nkirun\nimport nki.language as nl\n"
               "print(np.dtype(nl.bfloat16), np.zeros(1, dtype=nl.float8_e4m3).dtype)")
    assert out == "bfloat16 float8_e4m3"
