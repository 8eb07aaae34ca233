"""Contract (docs/program-format.md), instructions: one-key entries named as in nki.isa,
load/store, keywords, dst, program order."""
from __future__ import annotations

import numpy as np
import pytest
import reference as ref
from prog_helpers import assert_bits_equal, reported_at, run_ok, write_yaml

from contract_programs import X48, base


@pytest.mark.parametrize("entry", [
    "- {tensor_copy: {dst: y, src: x}, memset: {dst: y, value: 0}}",  # two keys
    "- {}",  # no key
    "- tensor_copy",  # not a mapping
    "- [tensor_copy, {dst: y, src: x}]",
])
def test_instruction_entry_is_a_one_key_mapping(tmp_path, entry):
    reported_at(base(tmp_path, entry), "E020", text=entry.split(":")[0][:8], instruction=0)


@pytest.mark.parametrize("name", ["tensor_copy", "nisa.tensor_copy", "nki.isa.tensor_copy"])
def test_instruction_names_are_nki_isa_names(tmp_path, name):
    path = base(tmp_path, f"- {name}: {{dst: y, src: x}}")
    assert_bits_equal(run_ok(path, tmp_path / "o")["y"], X48)


@pytest.mark.parametrize("load, store", [("load", "store"), ("nl.load", "nl.store")])
def test_load_store_are_nl_load_store(tmp_path, load, store):
    text = f"""\
    version: 1
    tensors:
      x: {{buffer: hbm, shape: [4, 8], dtype: float32, file: x.npy}}
      t: {{buffer: sbuf, shape: [4, 8], dtype: float32}}
      y: {{buffer: hbm, shape: [4, 8], dtype: float32, output: true}}
    instructions:
      - {load}: {{dst: t, src: x}}
      - {store}: {{dst: y, src: t}}
    """
    assert_bits_equal(run_ok(write_yaml(tmp_path, text, x=X48), tmp_path / "o")["y"], X48)


def test_unknown_instruction_and_keyword_are_located(tmp_path):
    path = base(tmp_path, "- tensor_copi: {dst: y, src: x}")
    d, _ = reported_at(path, "E021", text="tensor_copi", instruction=0)
    assert "tensor_copy" in d.message + (d.hint or "")
    path = base(tmp_path / "k", "- tensor_copy: {dst: y, source: x}")
    reported_at(path, "E022", text="source", instruction=0)
    path = base(tmp_path / "m", "- tensor_copy: {dst: y}")
    reported_at(path, "E023", text="tensor_copy", instruction=0)


def test_activation_as_written_in_the_contract(tmp_path):
    """nisa.activation(dst=t, op=exp, data=x) -> - activation: {dst: t, op: exp, data: x}."""
    x = np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8)
    path = base(tmp_path, "- activation: {dst: y, op: exp, data: x}", x=x)
    y = run_ok(path, tmp_path / "o")["y"]
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)


@pytest.mark.parametrize("op, fn", [("exp", np.exp), ("np.exp", np.exp), ("nl.exp", np.exp),
                                    ("tanh", np.tanh), ("square", np.square),
                                    ("copy", lambda v: v), ("nl.copy", lambda v: v)])
def test_activation_functions_by_name(tmp_path, op, fn):
    x = np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8)
    y = run_ok(base(tmp_path, f"- activation: {{dst: y, op: {op}, data: x}}", x=x),
               tmp_path / "o")["y"]
    np.testing.assert_allclose(y, fn(x), rtol=1e-6, atol=1e-7)


def test_unknown_activation_function_is_located(tmp_path):
    path = base(tmp_path, "- activation: {dst: y, op: expp, data: x}")
    reported_at(path, "E025", text="expp", instruction=0)


def test_tensor_tensor_and_tensor_reduce_op_is_just_op(tmp_path):
    path = base(tmp_path, """\
    - tensor_tensor: {dst: y, data1: x, data2: x, op: np.add}
    - tensor_reduce: {dst: s, op: nl.maximum, data: x, axis: 1}
    """, "s: {buffer: sbuf, shape: [4, 1], dtype: float32, output: true}\n")
    got = run_ok(path, tmp_path / "o")
    assert_bits_equal(got["y"], X48 + X48)
    assert_bits_equal(got["s"], X48.max(axis=1, keepdims=True))


def test_every_instruction_writes_through_dst(tmp_path):
    """Also those that return a tile in NKI: range_select, tensor_tensor_scan, max8;
    nc_match_replace8 also takes dst_idx, reductions take reduce_res."""
    rng = np.random.default_rng(5)
    x = rng.permutation(32).astype(np.float32).reshape(4, 8)
    path = base(tmp_path, """\
    - max8: {dst: top, src: x}
    - nc_match_replace8: {dst: y, data: x, vals: top, imm: -1.0, dst_idx: idx}
    - tensor_tensor_scan: {dst: sc, data0: x, data1: x, initial: 0, op0: add, op1: add}
    - range_select: {dst: rs, on_true_tile: x, comp_op0: greater_equal, comp_op1: less,
                     bound0: lo, bound1: hi, reduce_cmd: reset_reduce, reduce_res: rm}
    """, """\
    top: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    idx: {buffer: sbuf, shape: [4, 8], dtype: uint32, output: true}
    sc: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    rs: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    rm: {buffer: sbuf, shape: [4, 1], dtype: float32, output: true}
    lo: {buffer: sbuf, shape: [4, 1], dtype: float32, fill: 2}
    hi: {buffer: sbuf, shape: [4, 1], dtype: float32, fill: 5}
    """, x=x)
    got = run_ok(path, tmp_path / "o")
    assert_bits_equal(got["top"], ref.max8(x))
    want, want_idx = ref.nc_match_replace8(x, ref.max8(x), -1.0)
    assert_bits_equal(got["y"], want)
    assert_bits_equal(got["idx"], want_idx.astype(np.uint32))
    assert_bits_equal(got["sc"], ref.tensor_tensor_scan(x, x, 0.0, np.add, np.add))
    rs, rm = ref.page000(x, np.greater_equal, np.less, np.full((4, 1), 2, np.float32),
                           np.full((4, 1), 5, np.float32), 0)
    assert_bits_equal(got["rs"], rs)
    assert_bits_equal(got["rm"], rm)


@pytest.mark.parametrize("op", ["range_select", "max8", "tensor_tensor_scan",
                                "nc_match_replace8", "select_reduce", "affine_select"])
def test_missing_dst_is_an_error(tmp_path, op):
    args = {"range_select": "on_true_tile: x, comp_op0: less, comp_op1: less, bound0: c, "
                            "bound1: c",
            "max8": "src: x", "tensor_tensor_scan": "data0: x, data1: x, initial: 0, op0: add, "
                                                    "op1: add",
            "nc_match_replace8": "data: x, vals: x, imm: 0",
            "select_reduce": "predicate: p, on_true: x, on_false: 0.0",
            "affine_select": "pattern: [[1, 8]], channel_multiplier: 0, on_true_tile: x, "
                             "on_false_value: 0.0"}[op]
    path = base(tmp_path, f"- {op}: {{{args}}}", """\
    c: {buffer: sbuf, shape: [4, 1], dtype: float32, fill: 1}
    p: {buffer: sbuf, shape: [4, 8], dtype: uint8, fill: 1}
    """)
    d, _ = reported_at(path, "E023", text=f"- {op}", instruction=0)
    assert "dst" in d.message


def test_instructions_run_in_order(tmp_path):
    """run computes the in-order result, whatever the cost model overlaps."""
    path = base(tmp_path, """\
    - memset: {dst: y, value: 1.0}
    - tensor_copy: {dst: a, src: y}
    - memset: {dst: y, value: 2.0, engine: gpsimd}
    - tensor_tensor: {dst: y, data1: y, data2: a, op: subtract}
    - activation: {dst: b, op: copy, data: y}
    - tensor_copy: {dst: "y[:, 0:4]", src: "a[:, 4:8]"}
    """, """\
    a: {buffer: sbuf, shape: [4, 8], dtype: float32}
    b: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    """)
    got = run_ok(path, tmp_path / "o")
    assert (got["b"] == 1).all()
    assert (got["y"][:, :4] == 1).all() and (got["y"][:, 4:] == 1).all()
    path2 = base(tmp_path / "b", """\
    - memset: {dst: y, value: 5.0}
    - memset: {dst: "y[:, 2:3]", value: 7.0}
    - tensor_tensor: {dst: y, data1: y, data2: y, op: multiply}
    """)
    y = run_ok(path2, tmp_path / "o2")["y"]
    assert (y[:, 2] == 49).all() and (np.delete(y, 2, axis=1) == 25).all()
