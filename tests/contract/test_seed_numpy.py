"""The five seed pages' NumPy equivalents (tests/reference.py page000..page004), bit-exact
for float32, through `nkirun run`."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import reference as ref
from prog_helpers import (FP32_MAX, FP32_MIN, NP_TYPES, assert_bits_equal, errors_of, reported_at,
                          run_ok, write_yaml)

from contract_programs import SR, edit, range_select_prog, seed_prog, special_floats


@pytest.mark.parametrize("P, N, start", [(1, 1, 0), (37, 129, 5), (128, 64, -3)])
@pytest.mark.parametrize("op0, op1", [("greater_equal", "less"), ("greater", "less_equal"),
                                      ("equal", "greater_equal"), ("less", "greater")])
def test_page000_numpy_equivalent(tmp_path, P, N, start, op0, op1):
    rng = np.random.default_rng(P + N + start)
    x = special_floats(rng, (P, N))
    lo = rng.integers(start - 2, start + N + 2, (P, 1)).astype(np.float32)
    hi = (lo + rng.integers(-1, N + 2, (P, 1))).astype(np.float32)
    got = run_ok(range_select_prog(tmp_path, x, lo, hi, op0=op0, op1=op1, rs=start),
                 tmp_path / "o")
    want, rowmax = ref.page000(x, getattr(np, op0), getattr(np, op1), lo, hi, start)
    assert_bits_equal(got["r"], want)
    assert_bits_equal(got["m"], rowmax)





@pytest.mark.parametrize("P, N", [(1, 3), (37, 65), (128, 16)])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("vector_false", [False, True])
@pytest.mark.parametrize("pdtype", ["uint8", "int8", "int16", "uint16"])
def test_page001_numpy_equivalent(tmp_path, P, N, reverse, vector_false, pdtype):
    rng = np.random.default_rng(P * N)
    x = special_floats(rng, (P, N))
    pred = rng.integers(0, 2, (P, N)).astype(NP_TYPES[pdtype])
    pred[0] = 0  # a fully false row
    if P > 2:
        pred[2] = rng.integers(-3, 4, N).astype(NP_TYPES[pdtype]) if pdtype.startswith("i") else 7
    fv = rng.standard_normal((P, 1)).astype(np.float32)
    on_false = "f" if vector_false else "fp32.min"
    text = f"""\
    version: 1
    tensors:
      t: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, file: t.npy}}
      p: {{buffer: sbuf, shape: [{P}, {N}], dtype: {pdtype}, file: p.npy}}
      f: {{buffer: sbuf, shape: [{P}, 1], dtype: float32, file: f.npy}}
      r: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, output: true}}
      m: {{buffer: sbuf, shape: [{P}, 1], dtype: float32, output: true}}
    instructions:
      - select_reduce: {{dst: r, predicate: p, on_true: t, on_false: {on_false},
                        reduce_res: m, reduce_cmd: reset_reduce, reduce_op: nl.max,
                        reverse_pred: {str(reverse).lower()}}}
    """
    got = run_ok(write_yaml(tmp_path, text, t=x, p=pred, f=fv), tmp_path / "o")
    want, rowmax = ref.page001(pred, x, fv if vector_false else FP32_MIN, reverse)
    assert_bits_equal(got["r"], want)
    assert_bits_equal(got["m"], rowmax)


def test_page001_psum_combinations(tmp_path):
    """Either on_true or predicate may be in PSUM; dst in SBUF or PSUM."""
    for ot, pr, dst in (("tp", "p", "r"), ("t", "pp", "rp"), ("t", "p", "rp")):
        path = seed_prog(tmp_path / f"{ot}{pr}{dst}",
                         edit(SR, on_true=ot, predicate=pr, dst=dst))
        assert errors_of(path) == [], (ot, pr, dst)





@pytest.mark.parametrize("P, shape, pattern, offset, cm, cmp", [
    (1, [5], [[1, 5]], -2, 0, "greater_equal"),
    (37, [13], [[-1, 13]], 0, 1, "greater_equal"),  # causal mask
    (128, [4, 6], [[6, 4], [1, 6]], -50, 3, "less"),
    (8, [2, 3, 2], [[-1, 2], [2, 3], [5, 2]], 1, -1, "not_equal"),
    (16, [2, 2, 2, 3], [[1, 2], [-3, 2], [2, 2], [1, 3]], 0, 1, "equal"),
    (8, [7], [[1, 7]], 0, 2, "less_equal"),
    (8, [7], [[1, 7]], -3, 1, "greater"),
])
def test_page002_numpy_equivalent(tmp_path, P, shape, pattern, offset, cm, cmp):
    rng = np.random.default_rng(P)
    x = special_floats(rng, (P, *shape))
    text = f"""\
    version: 1
    tensors:
      t: {{buffer: sbuf, shape: {[P, *shape]}, dtype: float32, file: t.npy}}
      r: {{buffer: sbuf, shape: {[P, *shape]}, dtype: float32, output: true}}
    instructions:
      - affine_select: {{dst: r, pattern: {pattern}, offset: {offset}, channel_multiplier: {cm},
                        on_true_tile: t, on_false_value: -9.5, cmp_op: np.{cmp}}}
    """
    got = run_ok(write_yaml(tmp_path, text, t=x), tmp_path / "o")
    want = ref.page002(x, pattern, offset, cm, np.float32(-9.5), getattr(np, cmp))
    assert_bits_equal(got["r"], want)


def test_page002_default_cmp_op_is_equal(tmp_path):
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    text = """\
    version: 1
    tensors:
      t: {buffer: sbuf, shape: [4, 4], dtype: float32, file: t.npy}
      r: {buffer: sbuf, shape: [4, 4], dtype: float32, output: true}
    instructions:
      - affine_select: {dst: r, pattern: [[-1, 4]], offset: 0, channel_multiplier: 1,
                        on_true_tile: t, on_false_value: 0.0}
    """
    got = run_ok(write_yaml(tmp_path, text, t=x), tmp_path / "o")
    assert_bits_equal(got["r"], np.where(np.eye(4, dtype=bool), x, np.float32(0)))





# "data up to 5-dimensional, vals up to 3-dimensional" count the partition dimension
@pytest.mark.parametrize("P, dshape, vshape", [(1, [16], [8]), (37, [3, 11], [2, 4]),
                                              (128, [2, 2, 5], [8]),
                                              (4, [2, 2, 2, 3], [2, 4])])
@pytest.mark.parametrize("imm", ["0.0", "-inf", "fp32.max"])
def test_page003_numpy_equivalent(tmp_path, P, dshape, vshape, imm):
    rng = np.random.default_rng(P * 7)
    n = int(np.prod(dshape))
    data = rng.integers(-6, 6, (P, n)).astype(np.float32)  # many duplicates
    data[:, :2] = -0.0
    vals = np.take_along_axis(data, rng.integers(0, n, (P, 8)), axis=1)
    vals[:, 3] = vals[:, 2]  # a value repeated in vals: successive occurrences
    data = data.reshape(P, *dshape)
    vals = vals.reshape(P, *vshape)
    text = f"""\
    version: 1
    tensors:
      d: {{buffer: sbuf, shape: {[P, *dshape]}, dtype: float32, file: d.npy}}
      v: {{buffer: sbuf, shape: {[P, *vshape]}, dtype: float32, file: v.npy}}
      r: {{buffer: sbuf, shape: {[P, *dshape]}, dtype: float32, output: true}}
      i: {{buffer: sbuf, shape: {[P, *vshape]}, dtype: uint32, output: true}}
    instructions:
      - nc_match_replace8: {{dst: r, data: d, vals: v, imm: {imm}, dst_idx: i}}
    """
    got = run_ok(write_yaml(tmp_path, text, d=data, v=vals), tmp_path / "o")
    immv = {"0.0": 0.0, "-inf": -np.inf, "fp32.max": FP32_MAX}[imm]
    want, idx = ref.page003(data, vals, np.float32(immv))
    assert_bits_equal(got["r"], want)
    assert_bits_equal(got["i"], idx)


def test_page003_example_1_max8_then_replace(tmp_path):
    """Example 1: the 8 largest values of each row replaced by -inf (no dst_idx)."""
    rng = np.random.default_rng(12)
    x = rng.random((4, 16)).astype(np.float32)
    text = """\
    version: 1
    tensors:
      d: {buffer: sbuf, shape: [4, 16], dtype: float32, file: d.npy}
      top: {buffer: sbuf, shape: [4, 8], dtype: float32}
      r: {buffer: hbm, shape: [4, 16], dtype: float32, output: true}
      res: {buffer: sbuf, shape: [4, 16], dtype: float32}
    instructions:
      - max8: {dst: top, src: "d[:, :]"}
      - nc_match_replace8: {dst: res, data: "d[:, :]", vals: top, imm: "float('-inf')"}
      - store: {dst: r, src: res}
    """
    got = run_ok(write_yaml(tmp_path, text, d=x), tmp_path / "o")["r"]
    want, _ = ref.page003(x, np.sort(x, axis=1)[:, ::-1][:, :8], np.float32(-np.inf))
    assert_bits_equal(got, want)
    assert (np.isneginf(got).sum(axis=1) == 8).all()


def test_page003_example_4_memset_shape_and_views(tmp_path):
    """Example 4: memset(shape=(n, 8), value=0, dtype=nl.uint32) and a 3-D data tile; the
    indices keep vals' shape, the replaced output data's shape."""
    rng = np.random.default_rng(15)
    data = rng.permutation(3 * 2 * 10).astype(np.float32).reshape(3, 2, 10)
    text = """\
    version: 1
    tensors:
      data_tensor: {buffer: hbm, shape: [3, 2, 10], dtype: float32, file: d.npy}
      out_tensor: {buffer: hbm, shape: [3, 2, 10], dtype: float32, output: true}
      idx_tensor: {buffer: hbm, shape: [3, 8], dtype: uint32, output: true}
      idx_tile: {buffer: sbuf, shape: [3, 8], dtype: uint32}
      out_tile: {buffer: sbuf, shape: [3, 2, 10], dtype: float32}
      inp_tile: {buffer: sbuf, shape: [3, 2, 10], dtype: float32}
      max_vals: {buffer: sbuf, shape: [3, 8], dtype: float32}
    instructions:
      - nisa.memset: {dst: idx_tile, shape: [3, 8], value: 0, dtype: nl.uint32}
      - nisa.memset: {dst: out_tile, shape: [3, 2, 10], value: 0, dtype: float32}
      - nl.load: {dst: inp_tile, src: "data_tensor[0:3, 0:2, 0:10]"}
      - nisa.max8: {dst: max_vals, src: inp_tile}
      - nisa.nc_match_replace8: {dst: "out_tile[0:3, 0:2, 0:10]", dst_idx: "idx_tile[0:3, 0:8]",
                                 data: "inp_tile[0:3, 0:2, 0:10]", vals: "max_vals[0:3, 0:8]",
                                 imm: 0.0}
      - nl.store: {dst: out_tensor, src: out_tile}
      - nl.store: {dst: idx_tensor, src: idx_tile}
    """
    got = run_ok(write_yaml(tmp_path, text, d=data), tmp_path / "o")
    want, idx = ref.page003(data, np.sort(data.reshape(3, -1), axis=1)[:, ::-1][:, :8],
                              np.float32(0.0))
    assert_bits_equal(got["out_tensor"], want)
    assert_bits_equal(got["idx_tensor"], idx)
    bad = write_yaml(tmp_path / "bad", text.replace("shape: [3, 8], value", "shape: [3, 9], value"),
                d=data)
    reported_at(bad, "E170", text="shape: [3, 9]", instruction=0)





@pytest.mark.parametrize("P, N", [(1, 1), (37, 33), (128, 9)])
@pytest.mark.parametrize("op0, op1", [("multiply", "add"), ("add", "maximum"),
                                      ("maximum", "subtract"), ("minimum", "multiply"),
                                      ("subtract", "minimum")])
@pytest.mark.parametrize("tile_initial", [False, True])
def test_page004_numpy_equivalent(tmp_path, P, N, op0, op1, tile_initial):
    rng = np.random.default_rng(P * N)
    d0 = rng.uniform(-1.5, 1.5, (P, N)).astype(np.float32)
    d1 = special_floats(rng, (P, N)) if N > 5 else rng.standard_normal((P, N)).astype(
        np.float32)
    init = rng.standard_normal((P, 1)).astype(np.float32)
    initial = "i" if tile_initial else "0.25"
    text = f"""\
    version: 1
    tensors:
      a: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, file: a.npy}}
      b: {{buffer: psum, shape: [{P}, {N}], dtype: float32, file: b.npy}}
      i: {{buffer: sbuf, shape: [{P}, 1], dtype: float32, file: i.npy}}
      r: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, output: true}}
    instructions:
      - tensor_tensor_scan: {{dst: r, data0: a, data1: b, initial: {initial}, op0: {op0},
                             op1: {op1}}}
    """
    got = run_ok(write_yaml(tmp_path, text, a=d0, b=d1, i=init), tmp_path / "o")
    iv = init[:, 0] if tile_initial else np.float32(0.25)
    want = ref.page004(d0, d1, iv, getattr(np, op0), getattr(np, op1))
    assert_bits_equal(got["r"], want)


@pytest.mark.parametrize("rev0, rev1", [(True, False), (False, True), (True, True)])
def test_page004_reverse_operands(tmp_path, rev0, rev1):
    """reverse0: data0 becomes op0's rhs; reverse1: data1 becomes op1's lhs."""
    rng = np.random.default_rng(13)
    d0 = rng.standard_normal((5, 7)).astype(np.float32)
    d1 = rng.standard_normal((5, 7)).astype(np.float32)
    text = f"""\
    version: 1
    tensors:
      a: {{buffer: sbuf, shape: [5, 7], dtype: float32, file: a.npy}}
      b: {{buffer: sbuf, shape: [5, 7], dtype: float32, file: b.npy}}
      r: {{buffer: sbuf, shape: [5, 7], dtype: float32, output: true}}
    instructions:
      - tensor_tensor_scan: {{dst: r, data0: a, data1: b, initial: 1.5, op0: subtract,
                             op1: subtract, reverse0: {str(rev0).lower()},
                             reverse1: {str(rev1).lower()}}}
    """
    got = run_ok(write_yaml(tmp_path, text, a=d0, b=d1), tmp_path / "o")["r"]
    f0 = (lambda a, b: np.subtract(b, a)) if rev0 else np.subtract
    f1 = (lambda a, b: np.subtract(b, a)) if rev1 else np.subtract
    assert_bits_equal(got, ref.page004(d0, d1, np.float32(1.5), f0, f1))


@pytest.mark.parametrize("op0, op1", [("add", "multiply"), ("multiply", "add"),
                                      ("maximum", "minimum"), ("subtract", "add")])
@pytest.mark.parametrize("rev0", [False, True])
def test_page004_two_nan_operands_keep_the_pages_nan(tmp_path, op0, op1, rev0):
    """Bit-exact also for NaN: where both operands of an op are NaN (different signs and
    payloads, a generated default NaN), the page's loop gives the first operand's NaN."""
    P, N = 37, 24
    rng = np.random.default_rng(22)
    d0 = rng.standard_normal((P, N)).astype(np.float32)
    d1 = rng.standard_normal((P, N)).astype(np.float32)
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7FC00123, 0xFFC0BEEF, 0x7F800001], np.uint32)
    d1.reshape(-1)[rng.choice(P * N, 80, replace=False)] = rng.choice(nans, 80).view(np.float32)
    d0.reshape(-1)[rng.choice(P * N, 80, replace=False)] = rng.choice(nans, 80).view(np.float32)
    d0[:, 3] = np.inf  # inf - inf / inf * 0 make new NaNs
    d1[:, 3] = -np.inf
    d0[:, 4] = 0.0
    text = f"""\
    version: 1
    tensors:
      a: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, file: a.npy}}
      b: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, file: b.npy}}
      r: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, output: true}}
    instructions:
      - tensor_tensor_scan: {{dst: r, data0: a, data1: b, initial: 1.0, op0: {op0},
                             op1: {op1}, reverse0: {str(rev0).lower()}}}
    """
    got = run_ok(write_yaml(tmp_path, text, a=d0, b=d1), tmp_path / "o")["r"]
    f0 = getattr(np, op0)
    if rev0:
        f0 = lambda a, b, f=getattr(np, op0): f(b, a)  # noqa: E731
    with np.errstate(invalid="ignore"):
        want = ref.page004(d0, d1, np.float32(1.0), f0, getattr(np, op1))
    assert np.isnan(want).any()
    assert_bits_equal(got, want)


def test_page004_positional_operands_are_keywords_in_yaml(tmp_path):
    """tensor_tensor_scan(data0, data1, initial, op0, op1, ...): the positional parameters
    are written under their names; the engine computes in fp32 and casts to the output."""
    rng = np.random.default_rng(14)
    d0 = rng.standard_normal((3, 6)).astype(ml_dtypes.bfloat16)
    d1 = rng.standard_normal((3, 6)).astype(np.float16)
    text = """\
    version: 1
    tensors:
      a: {buffer: sbuf, shape: [3, 6], dtype: bfloat16, file: a.npy}
      b: {buffer: sbuf, shape: [3, 6], dtype: float16, file: b.npy}
      r: {buffer: sbuf, shape: [3, 6], dtype: float32, output: true}
    instructions:
      - tensor_tensor_scan: {dst: r, data0: a, data1: b, initial: 0, op0: add, op1: add}
    """
    got = run_ok(write_yaml(tmp_path, text, a=d0, b=d1), tmp_path / "o")["r"]
    assert_bits_equal(got, ref.page004(d0.astype(np.float32), d1.astype(np.float32),
                                       np.float32(0), np.add, np.add))


def test_the_reference_passes_its_hand_worked_cases():
    """tests/reference.py (page000..page004 and the other references) on cases worked by
    hand from the pages, so a slip in the reference cannot hide behind a matching slip."""
    ref.self_check()
