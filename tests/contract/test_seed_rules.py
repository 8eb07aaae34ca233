"""The five seed pages' constraints, each rejected by `check` with a located error (and
the pages' float32 constants accepted)."""
from __future__ import annotations

import pathlib

import pytest
from prog_helpers import errors_of, line_of, reported_at

from contract_programs import AS, MR, RS, SR, TS, edit, seed_prog


@pytest.mark.parametrize("instr", [RS, SR, AS, MR, TS])
def test_seed_baselines_are_valid(tmp_path, instr):
    path = seed_prog(tmp_path, instr)
    assert errors_of(path) == []


@pytest.mark.parametrize("instr, key", [(SR, "on_false"), (AS, "on_false_value"), (MR, "imm"),
                                        (TS, "initial")])
@pytest.mark.parametrize("value", ["3.4028235e38", "-3.4028235e38", "fp32.max", "-inf", "nan",
                                   "1e-45"])
def test_float32_constants_accept_every_float32(tmp_path, instr, key, value):
    """The pages' "float32" constants: the printed FP32_MAX, infinities, NaN, denormals."""
    assert errors_of(seed_prog(tmp_path, edit(instr, **{key: value}))) == []


# (name, instruction, keywords changed, expected code, keyword the error points at)
SEED_CONSTRAINTS = [
    # ---- page 000 range_select
    ("rs comp_op0 not_equal", RS, {"comp_op0": "not_equal"}, "E025", "comp_op0"),
    ("rs comp_op1 add", RS, {"comp_op1": "np.add"}, "E025", "comp_op1"),
    ("rs partitions bound0", RS, {"bound0": "c3"}, "E062", "bound0"),
    ("rs partitions bound1", RS, {"bound1": "c3"}, "E062", "bound1"),
    ("rs bound0 one per partition", RS, {"bound0": "c2"}, "E061", "bound0"),
    ("rs bound1 one per partition", RS, {"bound1": "t"}, "E061", "bound1"),
    ("rs on_true int", RS, {"on_true_tile": "ti"}, "E060", "on_true_tile"),
    ("rs bound0 fp32", RS, {"bound0": "cb"}, "E060", "bound0"),
    ("rs bound1 fp32", RS, {"bound1": "ci"}, "E060", "bound1"),
    ("rs range_start 2^24", RS, {"range_start": "16777210"}, "E102", "range_start"),
    ("rs range_start int", RS, {"range_start": "1.5"}, "E024", "range_start"),
    ("rs on_false FP32_MIN", RS, {"on_false_value": "0.0"}, "E101", "on_false_value"),
    ("rs on_false -inf", RS, {"on_false_value": "-inf"}, "E101", "on_false_value"),
    ("rs reduce_op max only", RS, {"reduce_op": "np.add"}, "E025", "reduce_op"),
    ("rs reduce_res one per partition", RS, {"reduce_res": "m2"}, "E061", "reduce_res"),
    ("rs reduce_res partitions", RS, {"reduce_res": "m3"}, "E062", "reduce_res"),
    ("rs dst shape", RS, {"dst": "r9"}, "E063", "dst"),
    ("rs on_true in hbm", RS, {"on_true_tile": "th"}, "E040", "on_true_tile"),
    ("rs reduce_cmd", RS, {"reduce_cmd": "sum"}, "E025", "reduce_cmd"),
    # ---- page 001 select_reduce
    ("sr both psum", SR, {"on_true": "tp", "predicate": "pp"}, "E110", ("predicate", "on_true")),
    ("sr dst hbm", SR, {"dst": "th"}, "E040", "dst"),
    ("sr shape on_true/dst", SR, {"dst": "r9"}, "E063", "dst"),
    ("sr shape predicate", SR, {"predicate": "p9"}, "E063", "predicate"),
    ("sr partitions predicate", SR, {"predicate": "p3"}, "E062", "predicate"),
    ("sr on_true tfloat32", SR, {"on_true": "tf"}, "E060", "on_true"),
    ("sr on_true int32", SR, {"on_true": "ti"}, "E060", "on_true"),
    ("sr on_true uint32", SR, {"on_true": "tu"}, "E060", "on_true"),
    ("sr on_false scalar fp32", SR, {"on_false": "1e39"}, "E111", "on_false"),
    ("sr on_false vector shape", SR, {"on_false": "c2"}, "E061", "on_false"),
    ("sr on_false vector partitions", SR, {"on_false": "c3"}, "E062", "on_false"),
    ("sr predicate float", SR, {"predicate": "pf"}, "E060", "predicate"),
    ("sr predicate int32", SR, {"predicate": "pi"}, "E060", "predicate"),
    ("sr reduce_res shape", SR, {"reduce_res": "m2"}, "E061", "reduce_res"),
    ("sr reduce_res partitions", SR, {"reduce_res": "m3"}, "E062", "reduce_res"),
    ("sr reduce_res float", SR, {"reduce_res": "mi"}, "E060", "reduce_res"),
    ("sr reduce_op max only", SR, {"reduce_op": "minimum"}, "E025", "reduce_op"),
    ("sr on_true hbm", SR, {"on_true": "th"}, "E040", "on_true"),
    # ---- page 002 affine_select
    ("as dst psum", AS, {"dst": "rp"}, "E040", "dst"),
    ("as on_true psum", AS, {"on_true_tile": "tp"}, "E040", "on_true_tile"),
    ("as on_true hbm", AS, {"on_true_tile": "th"}, "E040", "on_true_tile"),
    ("as partitions", AS, {"on_true_tile": "t3"}, "E062", "on_true_tile"),
    ("as pattern size", AS, {"pattern": "[[1, 7]]"}, "E122", "pattern"),
    ("as pattern 5-D", AS, {"pattern": "[[1, 2], [1, 2], [1, 2], [1, 1], [0, 1]]"}, "E120",
     "pattern"),
    ("as pattern num 0", AS, {"pattern": "[[1, 8], [1, 0]]"}, "E121", "pattern"),
    ("as offset int32", AS, {"offset": "2147483648"}, "E123", "offset"),
    ("as channel_multiplier int32", AS, {"channel_multiplier": "-2147483649"}, "E123",
     "channel_multiplier"),
    ("as values overflow int32", AS, {"pattern": "[[1073741824, 8]]"}, "E123", "pattern"),
    ("as on_false fp32", AS, {"on_false_value": "-1e39"}, "E124", "on_false_value"),
    ("as on_false not a tile", AS, {"on_false_value": "c"}, "E024", "on_false_value"),
    ("as offset int", AS, {"offset": "0.5"}, "E024", "offset"),
    ("as cmp_op", AS, {"cmp_op": "np.add"}, "E025", "cmp_op"),
    ("as pattern form", AS, {"pattern": "[1, 8]"}, "E024", "pattern"),
    # ---- page 003 nc_match_replace8
    ("mr vals 8", MR, {"vals": "v7"}, "E130", "vals"),
    ("mr data 16384", MR, {"data": "big"}, "E131", "data"),
    ("mr data 5-D", MR, {"data": "d6"}, "E132", "data"),
    ("mr vals 3-D", MR, {"vals": "v3d"}, "E133", "vals"),
    ("mr partitions", MR, {"vals": "t3"}, "E062", "vals"),
    ("mr dst shape", MR, {"dst": "r9"}, "E134", "dst"),
    ("mr dst_idx size", MR, {"dst_idx": "idx7"}, "E135", "dst_idx"),
    ("mr data hbm", MR, {"data": "th"}, "E040", "data"),
    ("mr imm fp32", MR, {"imm": "1e39"}, "E139", "imm"),
    ("mr imm not a tile", MR, {"imm": "v"}, "E024", "imm"),
    # ---- page 004 tensor_tensor_scan
    ("ts both psum", TS, {"data1": "tp", "data0": "tp"}, "E140", ("data0", "data1")),
    ("ts shapes", TS, {"data1": "v7"}, "E141", ("data0", "data1")),
    ("ts partitions", TS, {"data1": "t3"}, "E062", "data1"),
    ("ts dst shape", TS, {"dst": "r9"}, "E142", "dst"),
    ("ts initial one per partition", TS, {"initial": "c2"}, "E061", "initial"),
    ("ts initial partitions", TS, {"initial": "c3"}, "E062", "initial"),
    ("ts initial fp32", TS, {"initial": "-1e39"}, "E143", "initial"),
    ("ts op0 arithmetic", TS, {"op0": "greater"}, "E025", "op0"),
    ("ts op1 arithmetic", TS, {"op1": "np.logical_and"}, "E025", "op1"),
    ("ts data0 hbm", TS, {"data0": "th"}, "E040", "data0"),
]


@pytest.mark.parametrize("case", SEED_CONSTRAINTS, ids=[c[0] for c in SEED_CONSTRAINTS])
def test_seed_constraint_is_rejected_with_located_error(tmp_path, case):
    name, instr, changes, code, where = case
    path = seed_prog(tmp_path, edit(instr, **changes))
    line = line_of(path, f"- {instr[0]}:")
    src = pathlib.Path(path).read_text().splitlines()[line - 1]
    # the column of the offending keyword, or of its value
    cols = {c for w in ((where,) if isinstance(where, str) else where)
            for c in (src.index(f"{w}: ") + 1, src.index(f"{w}: ") + len(w) + 3)}
    reported_at(path, code, line=line, column=cols, instruction=0)
