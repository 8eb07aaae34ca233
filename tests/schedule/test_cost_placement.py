"""The compiler's engine choice for instructions that name no engine (schedule/placement.py):
Vector or Scalar, whichever finishes first; pinned, non-affine and masked ones stay."""
from __future__ import annotations

import itertools

import yaml

from nkirun import api

_n = itertools.count()


def _cost(tmp_path, instructions, target="trn2"):
    tile = {"buffer": "sbuf", "shape": [128, 512], "dtype": "float32", "fill": 1.0}
    doc = {"version": 1, "target": target,
           "tensors": {k: dict(tile) for k in "abcdefg"},
           "instructions": instructions}
    path = tmp_path / f"p{next(_n)}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return api.cost(str(path))


def test_an_open_affine_tensor_scalar_runs_where_it_finishes_first(tmp_path):
    s = _cost(tmp_path, [{"tensor_scalar": {"dst": "b", "data": "a", "op0": "multiply",
                                            "operand0": 2.0}}])
    # both engines idle: Scalar (1.2 GHz) finishes 512 elements before Vector (0.96 GHz)
    assert s.slots[0].engine == "scalar" and s.placed_on_scalar == 1
    assert any("Scalar engine" in n and "engine=" in n for n in s.notes())


def test_a_pinned_or_non_affine_instruction_stays_on_vector(tmp_path):
    s = _cost(tmp_path, [
        {"tensor_scalar": {"dst": "b", "data": "a", "op0": "multiply", "operand0": 2.0,
                           "engine": "vector"}},
        {"tensor_scalar": {"dst": "c", "data": "a", "op0": "max", "operand0": 0.0}},
        {"tensor_copy": {"dst": "d", "src": "a", "engine": "vector"}}])
    assert [x.engine for x in s.slots] == ["vector"] * 3 and s.placed_on_scalar == 0
    assert not any("Scalar engine" in n for n in s.notes())


def test_a_busy_scalar_engine_leaves_the_copy_on_vector(tmp_path):
    # four activations queue on Scalar; the open copy would wait behind them there
    acts = [{"activation": {"dst": k, "op": f, "data": "a"}}
            for k, f in zip("bcde", ("exp", "tanh", "sigmoid", "square"))]
    s = _cost(tmp_path, acts + [{"tensor_copy": {"dst": "f", "src": "b"}},
                                {"tensor_copy": {"dst": "g", "src": "f"}}])
    copies = [x for x in s.slots if x.op == "tensor_copy"]
    assert all(x.engine == "vector" for x in copies)
    # alone, the same copy goes to the faster Scalar engine
    alone = _cost(tmp_path, [{"tensor_copy": {"dst": "f", "src": "b"}}])
    assert alone.slots[0].engine == "scalar"
    assert alone.slots[0].duration_ns < copies[0].duration_ns


def test_launch_cost_is_added_to_the_kernel_time_not_the_makespan(tmp_path):
    s = _cost(tmp_path, [{"tensor_copy": {"dst": "b", "src": "a", "engine": "vector"}}])
    assert s.kernel_ns == s.total_ns + s.launch_ns and s.launch_ns > 0
