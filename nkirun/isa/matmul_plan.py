"""nc_matmul's form for runner/plan.py (a planned run): execute's arithmetic on operand
arrays fixed when the plan is built, without execute's temporaries (a fresh float32 array
per matmul costs a page-faulting allocation and a copy). tests/runner/test_plan_writes.py
compares it with execute bit for bit."""
from __future__ import annotations

from functools import partial

import numpy as np

from nkirun.isa import matmul_modes as modes
from nkirun.isa.common import row_major, widened
from nkirun.isa.spec import Bound


def plan(b: Bound):
    """None unless dst is float32 and b has no mask, transpose, double-row or one/zero
    hint. The operands are widened into work arrays (float32 ones used in place); the
    same np.matmul computes the product straight into dst, or into a work array added
    onto dst in place: accumulate set, or unset on a dst whose every element holds data
    (view.holds); unset on a dst of which only some do is left to execute."""
    args = b.args
    dst, stationary, moving = args["dst"], args["stationary"], args["moving"]
    if b.mask is not None or dst.dtype.name != "float32" or modes.transposing(b) or \
            modes.double_row(b) or args.get("is_stationary_onezero") or \
            args.get("is_moving_onezero"):
        return None
    k_size, m_size, n_size = modes.dims(b)
    mode = args.get("accumulate")

    def build(view):
        d = view(dst, (m_size, n_size))
        st = _widened(view, stationary, (k_size, m_size), "stationary")
        mv = _widened(view, moving, (k_size, n_size), "moving")
        if d is None or st is None or mv is None:
            return None
        held = view.holds(dst) if mode is None else None
        if mode is None and held is None:
            return None  # (some elements hold data: execute decides per element)
        onto = bool(mode) or (mode is None and held)
        if not onto and d.flags.c_contiguous:
            return partial(_product_into, st, mv, d)
        out = view.scratch("product", (m_size, n_size))
        return partial(_added_onto if onto else _product_copied, st, mv, out, d)
    return build


def _widened(view, r, shape, tag):
    """view.widened (a float32 copy the plan keeps while the view is not written,
    runner/plan_widen.py), or None when the view is not row-major (its float32 copy would
    not be laid out as execute's: np.matmul may sum in another order on another layout)."""
    a = view(r, shape)
    return view.widened(r, shape, tag) if a is not None and row_major(a) else None


def _product_into(st, mv, d) -> None:
    np.matmul(widened(st).T, widened(mv), out=d)


def _product_copied(st, mv, out, d) -> None:
    np.matmul(widened(st).T, widened(mv), out=out)
    np.copyto(d, out)


def _added_onto(st, mv, out, d) -> None:
    np.matmul(widened(st).T, widened(mv), out=out)
    np.add(d, out, out=d)  # PSUM accumulates in float32
