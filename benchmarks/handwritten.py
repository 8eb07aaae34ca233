"""Hand-written NumPy versions of the seed instructions, as a good NumPy programmer would
write them (vectorised), plus the pages' own loops where the issue asks for them.

These are the baselines nkirun's interpreter is measured against; they share no code
with nkirun.
"""
from __future__ import annotations

import numpy as np

FP32_MIN = np.finfo(np.float32).min


def range_select(x, lo, hi):
    idx = np.arange(x.shape[1], dtype=np.float32)
    keep = (idx >= lo) & (idx < hi)
    out = np.where(keep, x.astype(np.float32, copy=False), FP32_MIN)
    return out.astype(x.dtype, copy=False), out.max(axis=1, keepdims=True)


def select_reduce(pred, x, on_false):
    out = np.where(pred != 0, x.astype(np.float32, copy=False), np.float32(on_false))
    return out.astype(x.dtype, copy=False), out.max(axis=1, keepdims=True)


def affine_select(x, offset, channel_multiplier, step):
    p, n = x.shape
    value = offset + np.arange(p, dtype=np.int32)[:, None] * channel_multiplier \
        + np.arange(n, dtype=np.int32)[None, :] * step
    return np.where(value >= 0, x, x.dtype.type(FP32_MIN))


def tensor_tensor_scan(d0, d1, initial):
    """The page's recurrence, vectorised over partitions (multiply/add)."""
    a, b = d0.astype(np.float32), d1.astype(np.float32)
    out = np.empty(a.shape, np.float32)
    prev = np.full(a.shape[0], initial, np.float32)
    for i in range(a.shape[1]):
        prev = a[:, i] * prev + b[:, i]
        out[:, i] = prev
    return out.astype(d0.dtype, copy=False)


def tensor_tensor_scan_transposed(d0, d1, initial):
    """The same loop as a NumPy programmer tuning it would write it: operands transposed to
    contiguous (N, P) rows, each step two ufuncs writing into a preallocated row (out=)."""
    a = np.ascontiguousarray(d0.astype(np.float32).T)
    b = np.ascontiguousarray(d1.astype(np.float32).T)
    out = np.empty_like(a)
    prev = np.full(a.shape[1], initial, np.float32)
    for ai, bi, o in zip(a, b, out):
        np.multiply(ai, prev, out=o)
        np.add(o, bi, out=o)
        prev = o
    return np.ascontiguousarray(out.T).astype(d0.dtype, copy=False)


def nc_match_replace8(data, vals, imm):
    """Vectorised over partitions: one pass per value."""
    out = data.astype(np.float32).copy()
    rows = np.arange(out.shape[0])
    idx = np.zeros(vals.shape, np.uint32)
    for k in range(vals.shape[1]):
        eq = out == vals[:, k:k + 1]
        first = eq.argmax(axis=1)
        hit = eq[rows, first]
        out[rows[hit], first[hit]] = imm
        idx[hit, k] = first[hit]
    return out.astype(data.dtype, copy=False), idx


def nc_match_replace8_page_loop(data, vals, imm):
    """The page's own NumPy equivalent: a Python loop over partitions and values."""
    data_2d = data.astype(np.float32).reshape(data.shape[0], -1).copy()
    vals_2d = vals.reshape(vals.shape[0], -1)
    indices = np.zeros(vals_2d.shape, dtype=np.uint32)
    for i in range(data_2d.shape[0]):
        for j in range(vals_2d.shape[1]):
            matches = np.where(data_2d[i, :] == vals_2d[i, j])[0]
            if matches.size > 0:
                indices[i, j] = matches[0]
                data_2d[i, matches[0]] = imm
    return data_2d.reshape(data.shape), indices


# ---- the companion instructions of issue 15 (benchmarks/companion_cases.py) -----------------
# Sums follow each page (nkirun/isa/accumulators.py): exponential's loop is sequential
# (np.add.accumulate); activation's and tensor_scalar_reduce's NumPy reduction is np.sum.
def reciprocal(x):
    return np.divide(np.float32(1), x.astype(np.float32), dtype=np.float32).astype(x.dtype)


def exponential(x, row_max):
    y = np.exp((x.astype(np.float32) - row_max).astype(np.float64)).astype(np.float32)
    return y.astype(x.dtype), np.add.accumulate(y, axis=1)[:, -1:]


def activation_reduce_exp(x, bias):
    y = np.exp((x.astype(np.float32) + bias).astype(np.float64)).astype(np.float32)
    return y.astype(x.dtype), np.sum(y, axis=1, keepdims=True)


def activate2_exp_max(x):
    y = np.exp((x.astype(np.float32) * np.float32(2) + np.float32(0.5)).astype(np.float64))
    y = y.astype(np.float32)
    return y.astype(x.dtype), y.max(axis=1, keepdims=True)


def scalar_tensor_tensor(x, col, w):
    return ((x.astype(np.float32) - col) * w.astype(np.float32)).astype(x.dtype)


def tensor_scalar_reduce(x, scale):
    y = x.astype(np.float32) * np.float32(scale)
    return y.astype(x.dtype), np.sum(y, axis=1, keepdims=True)


def tensor_scalar_cumulative(x, col):
    return np.add.accumulate(x.astype(np.float32) * col, axis=1).astype(x.dtype)


def tensor_copy_predicated(dst, src, pred):
    np.copyto(dst, src, where=pred != 0)
    return dst


def tensor_partition_reduce(x):
    return x.astype(np.float32).sum(axis=0, keepdims=True).astype(x.dtype)


def bn_stats(x):
    x = x.astype(np.float32).astype(np.float64)
    cols = []
    for half in (x[:, 0::2], x[:, 1::2]):
        mean = half.mean(axis=1)
        cols += [np.full(x.shape[0], half.shape[1]), mean,
                 np.square(half - mean[:, None]).sum(axis=1)]
    return np.stack(cols, axis=1).astype(np.float32)


def bn_aggr(t):
    t = t.astype(np.float32).astype(np.float64)
    c, m, m2 = t[:, 0::3], t[:, 1::3], t[:, 2::3]
    total = c.sum(axis=1, keepdims=True)
    mean = (c * m).sum(axis=1, keepdims=True) / total
    var = (m2 + c * np.square(m - mean)).sum(axis=1, keepdims=True) / total
    return np.concatenate([mean, var], axis=1).astype(np.float32)
