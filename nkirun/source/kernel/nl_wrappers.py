"""`nl` functions that NKI documents as wrappers of one instruction and that public kernels
call (docs/kernels.md, the `nl` table): `dropout` (nisa.dropout), `gather_flattened`
(nisa.nc_n_gather, its documented successor) and `rand` (nisa.rng's bits scaled to [0, 1)).
Each returns its result tile, recorded lazily like the other `nl` functions (convenience.py).
"""
from __future__ import annotations

from nkirun.source.kernel import consts
from nkirun.source.kernel.convenience import _emit, _new, _result, copy
from nkirun.source.kernel.unsupported import kernel_error


def dropout(x, rate, dtype=None, mask=None, **_):
    """`nl.dropout(x, rate)`: nisa.dropout (each element zeroed with probability `rate`, a
    number or a (P, 1) tile; no rescaling). dropout's dst keeps x's dtype, so `dtype=`
    another type adds a tensor_copy that casts."""
    if dtype is None or str(dtype) == str(x.dtype):
        t = _new(x.shape, x.dtype)
        return _result(t, "dropout", dst=t, data=x, prob=rate, mask=mask)
    kept = _new(x.shape, x.dtype)
    _emit("dropout", dst=kept, data=x, prob=rate, mask=mask)
    return copy(kept, dtype, mask)


def gather_flattened(data, indices, axis=0, dtype=None, mask=None, **_):
    """`nl.gather_flattened(data, indices)`: nisa.nc_n_gather (its documented successor):
    per partition, the elements of data's flattened free dims at the uint32 `indices`,
    shaped like indices; `dtype=` another type adds a casting tensor_copy."""
    if axis not in (0, None):
        raise kernel_error("E603", f"nl.gather_flattened: axis={axis!r}; nkirun gathers "
                           "along the flattened free dims (axis 0, the default)")
    t = _new(indices.shape, data.dtype)
    if dtype is None or str(dtype) == str(data.dtype):
        return _result(t, "nc_n_gather", dst=t, data=data, indices=indices, mask=mask)
    _emit("nc_n_gather", dst=t, data=data, indices=indices, mask=mask)
    return copy(t, dtype, mask)


def rand(shape, dtype=None, buffer=consts.sbuf, name="", mask=None, **_):
    """`nl.rand(shape)`: uniform values in [0, 1) from nisa.rng's random bits (nkirun's
    PRNG model, W580): the top 24 bits of each uint32, times 2**-24 (exact in float32)."""
    bits = _new(shape, consts.DTYPES["uint32"], buffer)
    _emit("rng", dst=bits)
    _emit("tensor_scalar", dst=bits, data=bits, op0="right_shift", operand0=8)
    t = _new(shape, dtype or consts.DTYPES["float32"], buffer, name)
    return _result(t, "tensor_scalar", dst=t, data=bits, op0="multiply", operand0=2.0 ** -24,
                   mask=mask)
