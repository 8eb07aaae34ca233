"""Benchmark cases for the companion instructions of issue 15 (run.py's `instructions`
section): each builder returns (program YAML, inputs, hand-written baseline); OUTPUTS names
the tensors run.py compares bit for bit with the baseline's results, in order."""
from __future__ import annotations

import numpy as np

import handwritten as hw

P, N = 128, 16384
BN_N = 512  # bn_stats takes at most 512 elements per partition


def _tensors(decls: dict, target: str | None = None) -> str:
    lines = ["version: 1"] + ([f"target: {target}"] if target else []) + ["tensors:"]
    for name, (shape, dtype) in decls.items():
        lines.append(f"  {name}: {{buffer: sbuf, shape: {list(shape)}, dtype: {dtype}, fill: 0}}")
    return "\n".join(lines) + "\ninstructions:\n"


def _x(dtype, rng, shape=(P, N)):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def reciprocal(dtype, rng):
    x, name = _x(dtype, rng), np.dtype(dtype).name
    prog = _tensors({"x": ((P, N), name), "y": ((P, N), name)}) + \
        "  - reciprocal: {dst: y, data: x}\n"
    return prog, {"x": x}, lambda: hw.reciprocal(x)


def exponential(dtype, rng):
    x, name = _x(dtype, rng), np.dtype(dtype).name
    mx = x.astype(np.float32).max(axis=1, keepdims=True)
    prog = _tensors({"x": ((P, N), name), "mx": ((P, 1), "float32"), "y": ((P, N), name),
                     "s": ((P, 1), "float32")}, "trn3") + \
        "  - exponential: {dst: y, src: x, max_value: mx, reduce_cmd: reset_reduce, " \
        "reduce_res: s}\n"
    return prog, {"x": x, "mx": mx}, lambda: hw.exponential(x, mx)


def activation_reduce(dtype, rng):
    x, name = _x(dtype, rng), np.dtype(dtype).name
    bias = -x.astype(np.float32).max(axis=1, keepdims=True)
    prog = _tensors({"x": ((P, N), name), "b": ((P, 1), "float32"), "y": ((P, N), name),
                     "s": ((P, 1), "float32")}) + \
        "  - activation_reduce: {dst: y, op: exp, data: x, reduce_op: add, reduce_res: s, " \
        "bias: b}\n"
    return prog, {"x": x, "b": bias}, lambda: hw.activation_reduce_exp(x, bias)


def activate2(dtype, rng):
    x, name = _x(dtype, rng), np.dtype(dtype).name
    prog = _tensors({"x": ((P, N), name), "y": ((P, N), name), "m": ((P, 1), "float32")},
                    "trn3") + \
        "  - activate2: {dst: y, op: exp, data: x, imm0: 2.0, imm1: 0.5, op0: multiply, " \
        "op1: add, reduce_op: maximum, reduce_cmd: reset_reduce, reduce_res: m}\n"
    return prog, {"x": x}, lambda: hw.activate2_exp_max(x)


def scalar_tensor_tensor(dtype, rng):
    x, w, name = _x(dtype, rng), _x(dtype, rng), np.dtype(dtype).name
    col = rng.standard_normal((P, 1)).astype(np.float32)
    prog = _tensors({"x": ((P, N), name), "w": ((P, N), name), "c": ((P, 1), "float32"),
                     "y": ((P, N), name)}) + \
        "  - scalar_tensor_tensor: {dst: y, data: x, op0: subtract, operand0: c, " \
        "op1: multiply, operand1: w}\n"
    return prog, {"x": x, "w": w, "c": col}, lambda: hw.scalar_tensor_tensor(x, col, w)


def tensor_scalar_reduce(dtype, rng):
    x, name = _x(dtype, rng), np.dtype(dtype).name
    prog = _tensors({"x": ((P, N), name), "y": ((P, N), name), "s": ((P, 1), "float32")}) + \
        "  - tensor_scalar_reduce: {dst: y, data: x, op0: multiply, operand0: 0.5, " \
        "reduce_op: add, reduce_res: s}\n"
    return prog, {"x": x}, lambda: hw.tensor_scalar_reduce(x, 0.5)


def tensor_scalar_cumulative(dtype, rng):
    x, name = _x(dtype, rng), np.dtype(dtype).name
    col = rng.uniform(0.5, 1.5, (P, 1)).astype(np.float32)
    prog = _tensors({"x": ((P, N), name), "c": ((P, 1), "float32"), "y": ((P, N), name)}) + \
        "  - tensor_scalar_cumulative: {dst: y, src: x, op0: multiply, imm0: c, op1: add}\n"
    return prog, {"x": x, "c": col}, lambda: hw.tensor_scalar_cumulative(x, col)


def tensor_copy_predicated(dtype, rng):
    s, d, name = _x(dtype, rng), _x(dtype, rng), np.dtype(dtype).name
    pred = (rng.random((P, N)) < 0.5).astype(np.uint8)
    base = d.copy()
    prog = _tensors({"s": ((P, N), name), "p": ((P, N), "uint8"), "d": ((P, N), name)}) + \
        "  - tensor_copy_predicated: {dst: d, src: s, predicate: p}\n"
    return prog, {"s": s, "p": pred, "d": d}, lambda: hw.tensor_copy_predicated(base, s, pred)


def tensor_partition_reduce(dtype, rng):
    x, name = _x(dtype, rng), np.dtype(dtype).name
    prog = _tensors({"x": ((P, N), name), "y": ((1, N), name)}) + \
        "  - tensor_partition_reduce: {dst: y, op: add, data: x}\n"
    return prog, {"x": x}, lambda: hw.tensor_partition_reduce(x)


def bn_stats(dtype, rng):
    x, name = _x(dtype, rng, (P, BN_N)), np.dtype(dtype).name
    prog = _tensors({"x": ((P, BN_N), name), "s": ((P, 6), "float32")}) + \
        "  - bn_stats: {dst: s, data: x}\n"
    return prog, {"x": x}, lambda: hw.bn_stats(x)


def bn_aggr(dtype, rng):
    k = N // 512  # the stats of a 128 x 16384 tile: 32 bn_stats outputs side by side
    t = np.concatenate([hw.bn_stats(_x(np.float32, rng, (P, 512))) for _ in range(k)], axis=1)
    t, name = t.astype(dtype), np.dtype(dtype).name
    prog = _tensors({"t": ((P, 6 * k), name), "mv": ((P, 2), "float32")}) + \
        "  - bn_aggr: {dst: mv, data: t}\n"
    return prog, {"t": t}, lambda: hw.bn_aggr(t)


BUILDERS = (reciprocal, exponential, activation_reduce, activate2, scalar_tensor_tensor,
            tensor_scalar_reduce, tensor_scalar_cumulative, tensor_copy_predicated,
            tensor_partition_reduce, bn_stats, bn_aggr)
CASES = [(f.__name__, f.__name__, f) for f in BUILDERS]
OUTPUTS = {"reciprocal": ("y",), "exponential": ("y", "s"), "activation_reduce": ("y", "s"),
           "activate2": ("y", "m"), "scalar_tensor_tensor": ("y",),
           "tensor_scalar_reduce": ("y", "s"), "tensor_scalar_cumulative": ("y",),
           "tensor_copy_predicated": ("d",), "tensor_partition_reduce": ("y",),
           "bn_stats": ("s",), "bn_aggr": ("mv",)}
