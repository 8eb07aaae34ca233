"""`mask=`: the spelling, the index space per instruction, and masked semantics (masked-off
dst elements keep their value; reductions and indices see only the selected elements)."""

import re

import numpy as np
import pytest
import yaml

from nkirun.api import run
from nkirun.isa.mask import MaskError, evaluate
from nkirun.isa import MODULES, REGISTRY
from prog_helpers import (assert_bits_equal, codes, diagnostics, out, reported_at, run_program,
                          sbuf, tmp, write_program)
from repo_paths import DOCS
from spec_examples import example_program, spec_of

SENTINEL = -77.0


# ---- spelling --------------------------------------------------------------------------------
@pytest.mark.parametrize("text,want", [
    ("p < 2 and f < 3", lambda p, f0, f1, f: (p < 2) & (f < 3)),
    ("p < 2 & f >= 3", lambda p, f0, f1, f: (p < 2) & (f >= 3)),
    ("0 <= f - 2*p < 4", lambda p, f0, f1, f: (0 <= f - 2 * p) & (f - 2 * p < 4)),
    ("f1 % 2 == 0 and f0 != 1", lambda p, f0, f1, f: (f1 % 2 == 0) & (f0 != 1)),
    ("p // 2 > -1 + f0", lambda p, f0, f1, f: p // 2 > -1 + f0),
])
def test_spelling(text, want):
    shape = (5, 3, 4)
    p, f0, f1 = np.meshgrid(*map(np.arange, shape), indexing="ij")
    f = f0 * 4 + f1
    np.testing.assert_array_equal(evaluate(text, shape), want(p, f0, f1, f))


@pytest.mark.parametrize("text", ["q < 3", "p < 1.5", "p < 2 or f < 3", "p <", "p + f",
                                  "not p < 3", "__import__('os')"])
def test_bad_spelling(text):
    with pytest.raises(MaskError):
        evaluate(text, (4, 8))


def test_bad_mask_is_located_e045_and_empty_mask_w046(tmp_path):
    t = {"x": sbuf(np.zeros((4, 8), np.float32)), "y": out((4, 8), "float32")}
    path = write_program(tmp_path, t, [{"tensor_copy": {"dst": "y", "src": "x", "mask": "q < 3"}}])
    d, _ = reported_at(path, "E045", "mask", only=True)
    assert "q" in d.message
    d = diagnostics(tmp_path, t, [{"memset": {"dst": "y", "value": 1.0, "mask": "p > 9"}}])
    assert codes(d) == ["W046"]


def test_every_masked_instruction_is_in_docs_and_back():
    doc = (DOCS / "masks.md").read_text()
    for name, spec in REGISTRY.items():
        if spec.param("mask") is None:
            continue
        assert f"`{name}`" in doc, name
        if spec.mask_on != "dst":  # the table row names the operand
            row = next(ln for ln in doc.splitlines() if f"`{name}`" in ln and ln.startswith("|"))
            assert f"`{spec.mask_on}`" in row, (name, row)
    # and every instruction a table of the doc names takes `mask`
    named = {n for ln in doc.splitlines() if ln.startswith("|")
             for n in re.findall(r"`(\w+)`", ln) if n in MODULES}
    assert named, "docs/masks.md names no instruction in its table"
    assert {n for n in named if REGISTRY[n].param("mask") is None} == set()


def _with_mask(name: str, mask: str) -> str:
    """`name`'s example with `mask` added to each of its own entries (block YAML)."""
    entries = yaml.safe_load(spec_of(name).example)
    for entry in entries:
        (op, args), = entry.items()
        if op == name:
            args["mask"] = mask
    return yaml.safe_dump(entries, sort_keys=False, default_flow_style=False)


@pytest.mark.parametrize("name", MODULES)
def test_every_instruction_with_a_mask_param_honours_it(tmp_path, name):
    """Over the whole instruction table: a mask selecting every element changes nothing (bit
    for bit), a mask selecting none is W046 at the mask; an instruction without the param
    rejects the keyword (E022)."""
    plain = run(example_program(tmp_path / "plain", name))
    if spec_of(name).param("mask") is None:
        path = example_program(tmp_path / "bad", name, _with_mask(name, "p >= 0"))
        reported_at(path, "E022", "mask")
        return
    everything = run(example_program(tmp_path / "all", name, _with_mask(name, "p >= 0")))
    assert plain.keys() == everything.keys()
    for tensor, values in plain.items():
        assert_bits_equal(everything[tensor], values)
    path = example_program(tmp_path / "none", name, _with_mask(name, "p < 0"))
    reported_at(path, "W046", "mask")


# ---- element-wise: masked run == unmasked run where selected, previous value elsewhere ------
P, N = 37, 24
RNG = np.random.default_rng(5)
X = (RNG.standard_normal((P, N)) * 4).astype(np.float32)
Y = (RNG.standard_normal((P, N)) * 4).astype(np.float32)
COL = (RNG.standard_normal((P, 1)) + 3).astype(np.float32)
PRED = (RNG.random((P, N)) < 0.5).astype(np.uint8)
INPUTS = {"x": sbuf(X), "y": sbuf(Y), "col": sbuf(COL), "pred": sbuf(PRED),
          "hx": sbuf(X, buffer="hbm"), "xt": sbuf(X[:24, :]),
          "sq": sbuf(X[:, :4].copy()), "sq2": sbuf(Y[:, :8].copy())}
ELEMENTWISE = {
    "memset": ({"value": 2.5}, (P, N)),
    "tensor_copy": ({"src": "x"}, (P, N)),
    "tensor_tensor": ({"data1": "x", "data2": "y", "op": "subtract"}, (P, N)),
    "tensor_scalar": ({"data": "x", "op0": "multiply", "operand0": "col", "op1": "add",
                       "operand1": 1.5}, (P, N)),
    "activation": ({"op": "tanh", "data": "x", "scale": 0.5}, (P, N)),
    "iota": ({"pattern": [[3, N]], "offset": 1, "channel_multiplier": 100}, (P, N)),
    "affine_select": ({"on_true_tile": "x", "pattern": [[-1, N]], "offset": 5,
                       "channel_multiplier": 1, "cmp_op": "greater_equal",
                       "on_false_value": "fp32.min"}, (P, N)),
    "range_select": ({"on_true_tile": "x", "comp_op0": "greater_equal", "comp_op1": "less",
                      "bound0": "col", "bound1": "col", "on_false_value": "fp32.min"}, (P, N)),
    "select_reduce": ({"predicate": "pred", "on_true": "x", "on_false": -1.0}, (P, N)),
    "load": ({"src": "hx"}, (P, N)),
    "dma_copy": ({"src": "x"}, (P, N)),
    "nc_transpose": ({"data": "xt", "engine": "vector"}, (N, 24)),
    "nc_matmul": ({"stationary": "sq", "moving": "sq2"}, (4, 8)),
}
MASKS = ["p < 20 and f >= 3", "f1 < 0 + f0 * 0 + 7", "p >= 1 and p < 3 and f % 5 == 2"]


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@pytest.mark.parametrize("mask", MASKS)
def test_elementwise_mask(tmp_path, name, mask):
    args, shape = ELEMENTWISE[name]
    buf = "psum" if name == "nc_matmul" else "sbuf"
    mask = mask.replace("f1", "f").replace("f0", "p")
    prev = np.full(shape, SENTINEL, np.float32)
    full = run_program(tmp_path, {**INPUTS, "d": sbuf(prev, buffer=buf, output=True)},
                       [{name: {"dst": "d", **args}}])["d"]
    got = run_program(tmp_path, {**INPUTS, "d": sbuf(prev, buffer=buf, output=True)},
                      [{name: {"dst": "d", **args, "mask": mask}}])["d"]
    sel = evaluate(mask, shape)
    assert sel.any() and not sel.all()
    assert_bits_equal(got, np.where(sel, full, prev).astype(np.float32))


def test_store_mask_indexes_the_source_tile(tmp_path):
    x = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    prev = np.zeros((48,), np.float32)
    got = run_program(tmp_path, {"x": sbuf(x), "h": sbuf(prev, buffer="hbm", output=True)},
                      [{"store": {"dst": "h", "src": "x", "mask": "p < 2 and f < 3"}}])["h"]
    want = prev.copy()
    for p in range(2):
        want[p * 6:p * 6 + 3] = x[p, :3]
    assert_bits_equal(got, want)


def test_scan_with_prefix_mask_is_the_shorter_scan(tmp_path):
    prev = np.full((P, N), SENTINEL, np.float32)
    args = {"data0": "x", "data1": "y", "initial": "col", "op0": "multiply", "op1": "add"}
    full = run_program(tmp_path, {**INPUTS, "d": sbuf(prev, output=True)},
                       [{"tensor_tensor_scan": {"dst": "d", **args}}])["d"]
    got = run_program(tmp_path, {**INPUTS, "d": sbuf(prev, output=True)},
                      [{"tensor_tensor_scan": {"dst": "d", **args, "mask": "f < 10"}}])["d"]
    want = prev.copy()
    want[:, :10] = full[:, :10]
    assert_bits_equal(got, want)


def test_scan_carries_state_across_masked_positions(tmp_path):
    # cumulative sum over the selected (even) positions only
    x = np.arange(1, 11, dtype=np.float32)[None, :].repeat(3, 0)
    ones = np.ones_like(x)
    got = run_program(tmp_path, {"o": sbuf(ones), "x": sbuf(x),
                                 "d": sbuf(np.zeros_like(x), output=True)},
                      [{"tensor_tensor_scan": {"dst": "d", "data0": "o", "data1": "x",
                                               "initial": 0.0, "op0": "multiply",
                                               "op1": "add", "mask": "f % 2 == 0"}}])["d"]
    want = np.zeros(10, np.float32)
    want[0::2] = np.cumsum(x[0, 0::2])
    assert_bits_equal(got, np.tile(want, (3, 1)))


# ---- reductions see only the selected elements ------------------------------------------------
RED_MASK = "p < 30 and f >= 3 and f < 17"
SEL = evaluate(RED_MASK, (P, N))
ROWS = SEL.any(axis=1)


def _red_case(tmp_path, inst, res_key="reduce_res"):
    prev = np.full((P, 1), SENTINEL, np.float32)
    tensors = {**INPUTS, "d": sbuf(np.zeros((P, N), np.float32), output=True),
               "r": sbuf(prev, output=True), "lo": sbuf(np.zeros((P, 1), np.float32)),
               "hi": sbuf(np.full((P, 1), 20.0, np.float32))}
    (name, args), = inst.items()
    return run_program(tmp_path, tensors, [{name: {"dst": "d", **args, "mask": RED_MASK}}])


def test_range_select_reduce_res(tmp_path):
    o = _red_case(tmp_path, {"range_select": {
        "on_true_tile": "x", "comp_op0": "greater_equal", "comp_op1": "less", "bound0": "lo",
        "bound1": "hi", "on_false_value": "fp32.min", "reduce_cmd": "reset_reduce",
        "reduce_res": "r", "reduce_op": "max"}})
    want = np.where(SEL, X, -np.inf).max(axis=1)
    np.testing.assert_array_equal(o["r"][:, 0], np.where(ROWS, want, SENTINEL))


def test_select_reduce_reduce_res(tmp_path):
    o = _red_case(tmp_path, {"select_reduce": {
        "predicate": "pred", "on_true": "x", "on_false": -100.0, "reduce_cmd": "reset_reduce",
        "reduce_res": "r", "reduce_op": "max"}})
    sel_vals = np.where(PRED != 0, X, np.float32(-100.0))
    want = np.where(SEL, sel_vals, -np.inf).max(axis=1)
    np.testing.assert_array_equal(o["r"][:, 0], np.where(ROWS, want, SENTINEL))


def test_activation_reduce_res(tmp_path):
    o = _red_case(tmp_path, {"activation": {
        "op": "copy", "data": "x", "reduce_op": "add", "reduce_res": "r",
        "reduce_cmd": "reset_reduce"}})
    want = np.where(SEL, X.astype(np.float64), 0).sum(axis=1)
    np.testing.assert_allclose(o["r"][:, 0], np.where(ROWS, want, SENTINEL), rtol=1e-6,
                               atol=1e-5)


def test_tensor_reduce_mask_indexes_data(tmp_path):
    prev = np.full((P, 1), SENTINEL, np.float32)
    got = run_program(tmp_path, {**INPUTS, "r": sbuf(prev, output=True)},
                      [{"tensor_reduce": {"dst": "r", "op": "max", "data": "x", "axis": 1,
                                          "mask": RED_MASK}}])["r"]
    want = np.where(SEL, X, -np.inf).max(axis=1)
    np.testing.assert_array_equal(got[:, 0], np.where(ROWS, want, SENTINEL))


# ---- seed 003, Example 3: max8 + nc_match_replace8 on one quadrant --------------------------
def test_seed_003_example_3(tmp_path):
    n, m = 16, 40
    rng = np.random.default_rng(9)
    x = rng.permutation(n * m).reshape(n, m).astype(np.float32)
    quad = "p < 8 and f < 20"  # (ix < n // 2 and iy < m // 2)
    o = run_program(tmp_path, {
        "inp": sbuf(x), "idx": tmp((n, 8), "uint32"), "vals": tmp((n, 8), "float32"),
        "res": out((n, m), "float32"), "idx_out": out((n, 8), "uint32")},
        [{"memset": {"dst": "idx", "value": 0}},
         {"max8": {"dst": "vals", "src": "inp", "mask": quad}},
         {"tensor_copy": {"dst": "res", "src": "inp"}},
         {"nc_match_replace8": {"dst": "res", "dst_idx": "idx", "data": "inp", "vals": "vals",
                                "imm": -1.0, "mask": quad}},
         {"tensor_copy": {"dst": "idx_out", "src": "idx"}}])
    q = x[:8, :20]
    order = np.argsort(-q, axis=1, kind="stable")[:, :8]
    want_res = x.copy()
    np.put_along_axis(want_res[:8], order, -1.0, axis=1)
    want_idx = np.zeros((n, 8), np.uint32)
    want_idx[:8] = order
    np.testing.assert_array_equal(o["res"], want_res)
    np.testing.assert_array_equal(o["idx_out"], want_idx)


def test_max8_mask_needs_8_selected(tmp_path):
    t = {"x": sbuf(X), "v": out((P, 8), "float32")}
    d = diagnostics(tmp_path, t, [{"max8": {"dst": "v", "src": "x", "mask": "f < 5"}}])
    assert any(c.startswith("E15") for c in codes(d)), codes(d)


def test_find_index8_mask_hides_first_match(tmp_path):
    data = np.array([[4, 4, 4, 1, 2, 3, 5, 6, 7, 8]], np.float32)
    vals = np.array([[4, 4, 4, 1, 2, 3, 5, 6]], np.float32)
    got = run_program(tmp_path, {"d": sbuf(data), "v": sbuf(vals), "i": out((1, 8), "uint32")},
                      [{"nc_find_index8": {"dst": "i", "data": "d", "vals": "v",
                                           "mask": "f >= 1"}}])["i"]
    assert got.tolist() == [[1, 2, 0xFFFFFFFF, 3, 4, 5, 6, 7]]


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "minimum"])
def test_tensor_reduce_masked_fold_is_the_smaller_fold(tmp_path, op):
    # mask f >= 3 (a box): the fold starts at element 3, as the smaller instruction would
    x = np.array([[9, 8, 7, -0.0, 2, 5], [1, 2, 3, 4, -0.0, 6]], np.float32)
    got = run_program(tmp_path, {"x": sbuf(x), "r": out((2, 1), "float32")},
                      [{"tensor_reduce": {"dst": "r", "op": op, "data": "x", "axis": 1,
                                          "mask": "f >= 3"}}])["r"]
    ufunc = getattr(np, op)
    assert_bits_equal(got, ufunc.accumulate(x[:, 3:], axis=1)[:, -1:])
    one = run_program(tmp_path, {"x": sbuf(x), "r": out((2, 1), "float32")},
                      [{"tensor_reduce": {"dst": "r", "op": op, "data": "x", "axis": 1,
                                          "mask": "f == 3"}}])["r"]
    assert_bits_equal(one, x[:, 3:4])  # -0.0 alone stays -0.0
