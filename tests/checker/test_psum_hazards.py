"""PSUM accumulation hazards (nkirun/checker/psum.py): W053 a matmul accumulating onto PSUM a
non-matmul initialised (undefined on NeuronCore-v2/v3), W054 a matmul result overwritten
before anything read it, W055 `accumulate` unset landing on a result already read."""
from __future__ import annotations

import numpy as np
import pytest
from prog_helpers import codes, diagnostics, out, sbuf, tmp

ONES = np.ones((8, 4), np.float32)


def tensors(**extra):
    t = {"a": sbuf(ONES), "b": sbuf(np.ones((8, 6), np.float32)),
         "c": tmp((4, 6), "float32", "psum"), "s": tmp((4, 6), "float32"),
         "y": out((4, 6), "float32", "hbm")}
    t.update(extra)
    return t


MM = {"nc_matmul": {"dst": "c", "stationary": "a", "moving": "b"}}
EVICT = [{"tensor_copy": {"dst": "s", "src": "c"}}, {"store": {"dst": "y", "src": "s"}}]


def mm(**kw):
    return {"nc_matmul": dict(MM["nc_matmul"], **kw)}


def warned(tmp_path, instructions, **extra):
    diags = diagnostics(tmp_path, tensors(**extra), instructions)
    assert not [d for d in diags if d.severity == "error"], [d.message for d in diags]
    return [d for d in diags if d.code in ("W053", "W054", "W055")]


@pytest.mark.parametrize("accumulate", [{}, {"accumulate": True}])
def test_w053_matmul_accumulates_onto_memset(tmp_path, accumulate):
    ws = warned(tmp_path, [{"memset": {"dst": "c", "value": 0}}, mm(**accumulate), *EVICT])
    assert codes(ws) == ["W053"]
    assert ws[0].instruction == 1 and "memset (instruction 0)" in ws[0].message
    assert "undefined" in ws[0].message


def test_w053_onto_declared_initial_contents_and_tensor_copy(tmp_path):
    ws = warned(tmp_path, [mm(), *EVICT], c={"buffer": "psum", "shape": [4, 6],
                                             "dtype": "float32", "fill": 0})
    assert codes(ws) == ["W053"] and "initial contents" in ws[0].message
    z = {"z": tmp((4, 6), "float32") | {"fill": 0}}
    ws = warned(tmp_path, [{"tensor_copy": {"dst": "c", "src": "z"}}, mm(), *EVICT], **z)
    assert codes(ws) == ["W053"]


def test_no_warning_for_the_documented_patterns(tmp_path):
    # K loop, unset or explicit; overwrite starts a new group after the read; two PSUM tiles
    assert warned(tmp_path, [mm(), mm(), mm(), *EVICT]) == []
    assert warned(tmp_path, [mm(accumulate=False), mm(accumulate=True), *EVICT]) == []
    assert warned(tmp_path, [mm(), *EVICT, mm(accumulate=False), *EVICT]) == []
    # explicit accumulate onto an already-read result is what the author asked for
    assert warned(tmp_path, [mm(), *EVICT, mm(accumulate=True), *EVICT]) == []
    # memset then accumulate=false: the matmul overwrites, nothing undefined
    assert warned(tmp_path, [{"memset": {"dst": "c", "value": 0}}, mm(accumulate=False),
                             *EVICT]) == []


def test_w054_result_overwritten_before_read(tmp_path):
    ws = warned(tmp_path, [mm(), mm(accumulate=False), *EVICT])
    assert codes(ws) == ["W054"] and ws[0].instruction == 1 and "instruction 0" in ws[0].message
    ws = warned(tmp_path, [mm(), {"memset": {"dst": "c", "value": 0}}, *EVICT])
    assert codes(ws) == ["W054"] and ws[0].instruction == 1
    # reading it in place first (dst is also an input) is a read
    assert warned(tmp_path, [mm(), {"tensor_scalar": {"dst": "c", "data": "c", "op0": "multiply",
                                                      "operand0": 2.0}}, *EVICT]) == []


def test_w055_unset_accumulate_onto_a_read_result(tmp_path):
    # a PSUM tile reused for the next output block without accumulate: false
    ws = warned(tmp_path, [mm(), *EVICT, mm(), *EVICT])
    assert codes(ws) == ["W055"] and ws[0].instruction == 3 and "instruction 0" in ws[0].message


def test_regions_are_tracked_per_element(tmp_path):
    # two halves of one PSUM tile: no hazard between them
    a2 = {"a": sbuf(np.ones((8, 2), np.float32)), "c": tmp((4, 6), "float32", "psum")}
    def half(lo, **kw):
        return {"nc_matmul": dict(dst=f"c[{lo}:{lo + 2}, :]", stationary="a", moving="b", **kw)}
    ev = [{"tensor_copy": {"dst": "s[0:2, :]", "src": "c[0:2, :]"}}]
    assert warned(tmp_path, [half(0), *ev, half(2), *EVICT], **a2) == []
    # the read half reused without accumulate: false warns, the other half does not
    ws = warned(tmp_path, [half(0), half(2), *ev, half(2), half(0), *EVICT], **a2)
    assert codes(ws) == ["W055"] and ws[0].instruction == 4
    # a mask limits the write
    ws = warned(tmp_path, [{"memset": {"dst": "c", "value": 0, "mask": "p < 2"}},
                           mm(accumulate=False, mask="p < 2"), mm(mask="p >= 2"), *EVICT])
    assert ws == []
