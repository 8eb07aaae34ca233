"""Benchmark cases for the data-movement, gather and top-k instructions (issue 15): each one's
execute() against the NumPy a good programmer would write for the same job (written here,
sharing no code with nkirun), on the sizes the instructions allow, results checked equal
bit for bit first. run.py's `instructions` section appends these rows.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

BF16 = ml_dtypes.bfloat16
P, N = 128, 16384


def _program(decls: dict, instruction: str) -> str:
    lines = ["version: 1", "tensors:"]
    for name, (shape, dtype, buffer) in decls.items():
        lines.append(f"  {name}: {{buffer: {buffer}, shape: {list(shape)}, dtype: {dtype}, "
                     "fill: 0}")
    return "\n".join(lines) + "\ninstructions:\n  - " + instruction + "\n"


# ---- hand-written NumPy ----------------------------------------------------------------------
def np_shuffle(src, mask):
    rows = (np.arange(src.shape[0]) // 32) * 32 + np.asarray(mask)[np.arange(src.shape[0]) % 32]
    return src[rows]


def np_local_gather(src, index, k):
    cores = src.shape[0] // 16
    idx = index.reshape(cores, 16, -1).transpose(0, 2, 1).reshape(cores, -1).astype(np.intp)
    pos = (idx[:, :, None] + np.arange(k)).reshape(cores, -1)
    return np.take_along_axis(src.reshape(cores, 16, -1), pos[:, None, :], axis=2).reshape(
        src.shape[0], -1)


def np_sequence_bounds(ids):
    n = ids.size
    start = np.r_[True, ids[1:] != ids[:-1]]
    first = np.flatnonzero(start)
    run = np.cumsum(start) - 1
    end = np.r_[first[1:], n]
    pad = ids == 0
    return np.stack([np.where(pad, n, first[run]), np.where(pad, -1, end[run])]).astype(
        ids.dtype)


def np_nonzero(x, offset=0, pad=-1):
    out = np.empty((x.shape[0] // 16, x.shape[1] + 1), np.int32)
    for i, row in enumerate(x[::16]):
        nz = np.flatnonzero(row)
        out[i, :nz.size] = nz + offset
        out[i, nz.size:-1] = pad
        out[i, -1] = nz.size
    return out


def np_topk(x, n, k):
    g = x.shape[0] // 16
    snakes = x.astype(np.float32).reshape(g, 16, -1).transpose(0, 2, 1).reshape(g, -1)[:, :n]
    top = np.argsort(-snakes, axis=1, kind="stable")[:, :k]
    order = np.argsort(np.take_along_axis(snakes, top, 1), axis=1, kind="stable")
    return np.take_along_axis(top, order, 1)


# ---- cases: (label, program, inputs, baseline, [(output, expected from baseline), ...]) -------
def cases(rng):
    x = rng.standard_normal((P, N)).astype(np.float32)
    mask = [int(v) for v in rng.permutation(32)]
    yield ("nc_stream_shuffle", _program({"x": ((P, N), "float32", "sbuf"),
                                          "y": ((P, N), "float32", "sbuf")},
                                         f"nc_stream_shuffle: {{dst: y, src: x, shuffle_mask: "
                                         f"{mask}}}"),
           {"x": x}, lambda: np_shuffle(x, mask), ("y",))
    k_hbm = rng.standard_normal((N, P)).astype(np.float32).astype(BF16)
    yield ("dma_transpose", _program({"k": ((N, P), "bfloat16", "hbm"),
                                      "kt": ((P, N), "bfloat16", "sbuf")},
                                     "dma_transpose: {dst: kt, src: k}"),
           {"k": k_hbm}, lambda: np.ascontiguousarray(k_hbm.T), ("kt",))
    idx = rng.integers(0, N, (P, N)).astype(np.uint32)
    yield ("nc_n_gather", _program({"x": ((P, N), "float32", "sbuf"),
                                    "i": ((P, N), "uint32", "sbuf"),
                                    "g": ((P, N), "float32", "sbuf")},
                                   "nc_n_gather: {dst: g, data: x, indices: i}"),
           {"x": x, "i": idx}, lambda: np.take_along_axis(x, idx.astype(np.intp), 1), ("g",))
    lidx = (rng.integers(0, N // 4, (P, 256)) * 4).astype(np.uint16)
    yield ("local_gather", _program({"x": ((P, N), "float32", "sbuf"),
                                     "i": ((P, 256), "uint16", "sbuf"),
                                     "g": ((P, N), "float32", "sbuf")},
                                    "local_gather: {dst: g, src_buffer: x, index: i, "
                                    "num_elem_per_idx: 4}"),
           {"x": x, "i": lidx}, lambda: np_local_gather(x, lidx, 4), ("g",))
    parts = [rng.standard_normal((P, N)).astype(np.float32) for _ in range(4)]

    def np_sum():
        acc = parts[0] + parts[1]
        acc += parts[2]
        acc += parts[3]
        return acc
    yield ("dma_compute (4 sources)",
           _program({**{f"s{i}": ((P, N), "float32", "hbm") for i in range(4)},
                     "d": ((P, N), "float32", "sbuf")},
                    "dma_compute: {dst: d, srcs: [s0, s1, s2, s3], reduce_op: add}"),
           {f"s{i}": parts[i] for i in range(4)}, np_sum, ("d",))
    ids = np.sort(rng.integers(0, 4000, (1, 16384))).astype(np.int32)
    yield ("sequence_bounds", _program({"s": ((1, 16384), "int32", "sbuf"),
                                        "b": ((1, 2, 16384), "int32", "sbuf")},
                                       "sequence_bounds: {dst: b, segment_ids: s}"),
           {"s": ids}, lambda: np_sequence_bounds(ids[0])[None], ("b",))
    flags = (rng.random((P, N)) < 0.3).astype(np.float32)
    yield ("nonzero_with_count", _program({"f": ((P, N), "float32", "sbuf"),
                                           "o": ((P, N + 1), "int32", "sbuf")},
                                          "nonzero_with_count: {dst: o, src: f}"),
           {"f": flags}, lambda: np_nonzero(flags), (("o", slice(None, None, 16)),))
    snake = rng.standard_normal((P, 1024)).astype(np.float32).astype(BF16)
    yield ("topk (n=16384, K=64)", _program({"s": ((P, 1024), "bfloat16", "sbuf"),
                                             "v": ((P, 64), "bfloat16", "sbuf"),
                                             "i": ((P, 64), "uint32", "sbuf")},
                                            "topk: {val_dst: v, idx_dst: i, src: s, n: 16384}"),
           {"s": snake}, lambda: np_topk(snake, 16384, 64), (("i", "snake"),))


def _expected_view(m, out):
    """nkirun's output in the baseline's layout (for the equality check)."""
    if isinstance(out, str):
        return m.buffers[out]
    name, how = out
    a = m.buffers[name]
    if how == "snake":  # topk: result j of group g at partition 16g + j % 16, column j // 16
        g, k = a.shape[0] // 16, a.shape[1]
        return a.reshape(g, 16, -1).transpose(0, 2, 1).reshape(g, -1)[:, :k]
    return a[how]


def bench(repeats, prepare, paired_cpu_times) -> list[dict]:
    rng = np.random.default_rng(15)
    rows = []
    for label, prog, inputs, baseline, outs in cases(rng):
        bound, m = prepare(prog, inputs)
        b = bound[0]
        with np.errstate(all="ignore"):
            b.spec.execute(b, m)
            got = _expected_view(m, outs[0])
            want = np.asarray(baseline()).astype(got.dtype, copy=False)
            if got.shape != want.shape or not np.array_equal(
                    np.ascontiguousarray(got).view(np.uint8),
                    np.ascontiguousarray(want).view(np.uint8)):
                raise AssertionError(f"{label}: nkirun differs from the hand-written NumPy")
            t_nk, t_np = paired_cpu_times(lambda: b.spec.execute(b, m), baseline, repeats)
        dtype = next(iter(inputs.values())).dtype.name
        rows.append({"op": label, "dtype": dtype, "shape": list(next(iter(inputs.values())).shape),
                     "nkirun_ms": t_nk * 1e3, "numpy_ms": t_np * 1e3, "ratio": t_nk / t_np})
    return rows
