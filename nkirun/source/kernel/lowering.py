"""A handle's IR index (the index part of the IR View an instruction's operand becomes),
worked out once per view layout: tracing asks for it on every operand."""
from __future__ import annotations

from nkirun.source.kernel.tensor import _NO_INDEX

_LOWERED: dict = {}  # (tensor buffer, shape, dtype, view fields) -> the view's IR index


def ir_index(v):
    """The IR index of handle v: its StridedView's lowering (views/strided.py)."""
    return v._v.to_ir().index


def lowered_index(v):
    """ir_index(v), remembered by value for handles of a tensor's own dtype without a
    runtime index: it is a function of the view's shape, strides, offset and basic index
    and of its tensor's buffer, shape and dtype, never of the tensor's name (a loop makes
    the same few views of ever new tensors). tests/kernel/test_fast_trace.py checks it
    against ir_index."""
    rec, sv = v._rec, v._v
    if sv.indirect is not None or v._dtype is not rec.dtype:
        return ir_index(v)
    key = (rec.buffer, rec.shape, rec.dtype, sv.shape, sv.strides, sv.offset, sv.basic,
           sv.tail)
    hit = _LOWERED.get(key, _NO_INDEX)
    if hit is _NO_INDEX:
        hit = ir_index(v)
        if len(_LOWERED) < 100_000:
            _LOWERED[key] = hit
    return hit


def remembered(v) -> bool:
    """Whether handle v's IR index is the object lowered_index keeps for its view layout
    (so a later view of that layout gets this very object: copy_chains' plans)."""
    rec, sv = v._rec, v._v
    if sv.indirect is not None or v._dtype is not rec.dtype:
        return False
    key = (rec.buffer, rec.shape, rec.dtype, sv.shape, sv.strides, sv.offset, sv.basic,
           sv.tail)
    return _LOWERED.get(key, _NO_INDEX) is v._ir
