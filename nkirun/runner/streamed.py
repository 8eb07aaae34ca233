"""How Machine.write stores values: the casts (store_cast: hw/dtypes.py), and writes through a pattern
with zero steps (accepted for activation_reduce's dst only, checker/bind.py): the engine streams the elements in pattern order, so each storage
element ends up holding the last value sent to it. nki-library's qkv_cte relies on this
to give activation_reduce a one-column dst it never reads."""
from __future__ import annotations

import dataclasses

import numpy as np

from nkirun.hw.dtypes import store_cast  # noqa: F401  (Machine.write's cast, re-exported)


def last_streamed(r, values, mask):
    """(r without its zero-step dims, the values and mask written last along them)."""
    s = r.ap
    zero = [st == 0 and n > 1 for st, n in zip(s.byte_strides, s.shape)]
    keep = tuple(slice(n - 1, n) if z else slice(None) for z, n in zip(zero, s.shape))
    shape = tuple(1 if z else n for z, n in zip(zero, s.shape))

    def last(a):
        a = np.asarray(a)
        if a.size != r.free_size * r.partitions:
            a = np.broadcast_to(a, r.shape)
        return a.reshape(s.shape)[keep]

    ap = dataclasses.replace(s, shape=shape, overlapping=False)
    out = dataclasses.replace(r, shape=shape, ap=ap)
    return out, last(values), None if mask is None else last(mask)
