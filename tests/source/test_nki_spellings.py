"""NKI spellings the front end accepts (engine constants) and the keywords and instructions
NKI removed, refused with the release that removed them (NKI release notes)."""
import numpy as np
import pytest
from prog_helpers import codes, diagnostics, key_line, out, run_program, sbuf, write_program

from nkirun.api import check_program
from nkirun.isa import REGISTRY

ENGINE_SPELLINGS = ["vector", "engine.vector", "nisa.engine.vector", "nki.isa.engine.vector",
                    "nisa.vector_engine", "nki.isa.vector_engine", "vector_engine"]


@pytest.mark.parametrize("spelling", ENGINE_SPELLINGS)
def test_engine_spellings_on_tensor_copy(tmp_path, spelling):
    x = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    got = run_program(tmp_path, {"x": sbuf(x), "y": out((8, 4), "float32")},
                      [{"tensor_copy": {"dst": "y", "src": "x", "engine": spelling}}])["y"]
    np.testing.assert_array_equal(got, x)


def test_every_engine_keyword_takes_the_nki_constants():
    """Every instruction with an `engine` keyword accepts nisa.<e>_engine and
    nisa.engine.<e> for each engine it allows."""
    from nkirun.diagnostics import Loc
    from nkirun.isa.spec import convert
    seen = 0
    for name in REGISTRY:
        p = REGISTRY[name].param("engine")
        if p is None:
            continue
        for e in p.choices:
            for s in (f"nisa.{e}_engine", f"nisa.engine.{e}", f"nki.isa.engine.{e}"):
                assert convert(p, s, Loc("x", 1, 1)) == e, (name, s)
            seen += 1
    assert seen >= 10


def test_nc_transpose_engine_as_nki_library_writes_it(tmp_path):
    x = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    got = run_program(tmp_path, {"x": sbuf(x), "y": out((16, 16), "float32")},
                      [{"nc_transpose": {"dst": "y", "data": "x",
                                         "engine": "nisa.vector_engine"}}])["y"]
    np.testing.assert_array_equal(got, x.T)


@pytest.mark.parametrize("op,args,key,release", [
    ("nc_matmul", {"dst": "ps", "stationary": "a", "moving": "b", "psumAccumulateFlag": 1},
     "psumAccumulateFlag", "NKI 0.2.0"),
    ("nc_matmul", {"dst": "ps", "stationary": "a", "moving": "b", "is_moving_zero": True},
     "is_moving_zero", "NKI 0.2.0"),
    ("iota", {"dst": "i", "expr": "p + f"}, "expr", "NKI 0.2.0"),
    ("affine_select", {"dst": "a2", "pred": "p >= f", "on_true_tile": "a",
                       "on_false_value": 0.0}, "pred", "NKI 0.2.0"),
])
def test_removed_keywords_name_their_release(tmp_path, op, args, key, release):
    tensors = {"a": sbuf(np.ones((8, 8), np.float32)), "b": sbuf(np.ones((8, 8), np.float32)),
               "ps": out((8, 8), "float32", buffer="psum"), "i": out((8, 8), "int32"),
               "a2": out((8, 8), "float32")}
    path = write_program(tmp_path, tensors, [{op: args}])
    d = [x for x in check_program(path).diagnostics if x.code == "E390"]
    assert d and d[0].loc.line == key_line(path, key)
    assert release in d[0].message and d[0].hint


def test_removed_instruction_names_its_release(tmp_path):
    tensors = {"a": sbuf(np.ones((8, 8), np.float32)), "b": out((8, 8), "float32")}
    d = diagnostics(tmp_path, tensors, [{"nisa.tensor_copy_dynamic_src": {"dst": "b",
                                                                          "src": "a"}}])
    assert "E391" in codes(d)
    hit = next(x for x in d if x.code == "E391")
    assert "NKI 0.4.0" in hit.message and "tensor_copy" in hit.hint


def test_plain_unknown_keyword_is_still_E022(tmp_path):
    tensors = {"a": sbuf(np.ones((8, 8), np.float32)), "b": out((8, 8), "float32")}
    assert "E022" in codes(diagnostics(tmp_path, tensors, [{"tensor_copy": {
        "dst": "b", "src": "a", "bogus": 1}}]))
