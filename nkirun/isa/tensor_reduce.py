"""nki.isa.tensor_reduce — Vector engine (the nki.isa.tensor_reduce documentation).

Reduces data along its last free axes (axis: [1], [1, 2], ... — never the partition axis)
with a reducible operator; arithmetic folds run in float32 in element order, bitwise folds
on the integer bits; negate multiplies the result by -1.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import alu as ops
from nkirun.isa.mask import fold_input
from nkirun.isa.common import fold_free
from nkirun.isa.spec import (BOOL, INT_LIST, OP, TILE, Bound, InstructionDef, NkiApi, Param,
                             common_tail, out_dtype)

# "Legal reduction op" = Y in the operator table (the nki.isa.tensor_reduce documentation [OLD-SHARED])
REDUCE_OPS = tuple(n for n, o in ops.OPS.items() if o.reducible)

PARAMS = (
    Param("dst", TILE, required=True, out=True,
          doc="output tile: data's shape without (or, with keepdims, 1 along) the axes"),
    Param("op", OP, required=True, choices=REDUCE_OPS, doc="a reducible operator"),
    Param("data", TILE, required=True, doc="input tile"),
    Param("axis", INT_LIST, required=True,
          doc="the free axes to reduce: the last ones, e.g. 1 or [1, 2]; -1 is the last axis"),
    Param("negate", BOOL, default=False, doc="multiply the (arithmetic) result by -1"),
    Param("keepdims", BOOL, default=False, doc="keep the reduced axes with size 1"),
    *common_tail(),
)


def reduced_axes(b: Bound) -> tuple[int, ...] | None:
    """The normalised axes (ascending), or None if they are not a valid trailing block."""
    rank = len(b["data"].shape)
    axes = sorted({a + rank if a < 0 else a for a in b["axis"]})
    if len(axes) != len(b["axis"]) or axes[0] < 1 or axes != list(range(axes[0], rank)):
        return None
    return tuple(axes)


def result_shape(b: Bound, axes) -> tuple[int, ...]:
    return _reduced_shape(b["data"].shape, axes, b["keepdims"])


def _reduced_shape(shape, axes, keepdims) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    kept = tuple(s for i, s in enumerate(shape) if i not in axes) or (shape[0],)
    return kept if len(kept) > 1 else kept + (1,)  # on-chip tiles stay 2-D: (P, 1)


def _reduced(values: dict, first):
    """The pre-0.2 result of a call without dst= (NkiApi.result)."""
    shape, axes = tuple(first.shape), values.get("axis")
    axes = [axes] if isinstance(axes, int) else list(axes or ())
    axes = [a + len(shape) if a < 0 else a for a in axes]
    return _reduced_shape(shape, axes, values.get("keepdims")), "sbuf"


def check(b: Bound):
    data, dst = b["data"], b["dst"]
    rank = len(data.shape)
    bad = [a for a in b["axis"] if not -rank < a < rank]
    if bad:
        yield b.err("E231", f"axis {bad[0]} is out of range for data {list(data.shape)}", "axis",
                    hint=f"allowed: 1..{rank - 1} (or -1 for the last axis)")
        return
    if any(a % rank == 0 for a in b["axis"]):
        yield b.err("E230", "axis 0 is the partition axis, which tensor_reduce cannot reduce",
                    "axis", hint="transpose first (nc_transpose), or matmul with a ones vector")
        return
    axes = reduced_axes(b)
    if axes is None:
        yield b.err("E231", f"axis {list(b['axis'])} must be the last free axes of data "
                    f"{list(data.shape)}, each once", "axis",
                    hint="allowed: " + ", ".join(str(list(range(k, rank))) for k in range(1, rank)))
        return
    want = result_shape(b, axes)
    if dst.partitions != want[0] or dst.free_size != int(np.prod(want[1:])):
        yield b.err("E232", f"dst {list(dst.shape)} does not hold the result {list(want)} "
                    f"of reducing data {list(data.shape)} over axis {list(axes)}", "dst")
    if ops.OPS[b["op"]].kind == ops.BITWISE:
        for key in ("data", "dst"):
            if b[key].dtype.is_float:
                yield b.err("E233", f"bitwise reduction {b['op']} needs integer dtypes; `{key}` "
                            f"is {b[key].dtype.name}", key)
        if b["negate"]:
            yield b.err("E234", "negate applies to arithmetic results only, not to "
                        f"{b['op']}", "negate")


def reduce_rows(op: str, x: np.ndarray) -> np.ndarray:
    """Fold the last axis of x with `op` (x float32, or integers for bitwise ops)."""
    o = ops.OPS[op]
    if o.kind == ops.BITWISE:
        return o.reduce_fn(x, axis=-1)
    if o.kind == ops.LOGICAL:
        nz = x != 0
        r = {"logical_and": np.all(nz, axis=-1), "logical_or": np.any(nz, axis=-1),
             "logical_xor": np.count_nonzero(nz, axis=-1) % 2 == 1}[op]
        return r.astype(np.float32)
    # add/subtract/multiply/maximum/minimum are ufuncs: fold left to right in float32
    # (subtract: x0 - x1 - x2 - ..., NumPy's subtract.reduce reading)
    return fold_free(o.fn, x)


def _identity(op: str, dtype: np.dtype):
    """A right identity of op (op(a, fill) == a bit for bit; add: -0.0, since 0.0 would turn
    -0.0 into +0.0), filling the masked-off inputs of the fold (mask.fold_input)."""
    if op == "bitwise_and":
        return ~dtype.type(0)
    if op in ("multiply", "logical_and"):
        return 1
    return {"maximum": -np.inf, "minimum": np.inf, "add": -0.0}.get(op, 0)


def execute(b: Bound, m) -> None:
    data, axes = b["data"], reduced_axes(b)
    x = m.read(data)
    if ops.OPS[b["op"]].kind != ops.BITWISE:
        x = x.astype(np.float32, copy=False)
    k = axes[0]
    x = x.reshape(x.shape[:k] + (-1,))  # the trailing axes are contiguous: fold them as one
    write_mask = None
    if b.mask is not None:  # mask_on="data" (docs/masks.md): fold only the selected inputs,
        sel = b.mask.reshape(x.shape)  # write the dst elements with any selected input
        # the first selected input leads the fold, so a masked-off leading element is skipped
        # (not read as 0 - x1 - ... for subtract): the smaller instruction NKI would run
        x = fold_input(x, sel, _identity(b["op"], x.dtype))
        write_mask = sel.any(axis=-1).reshape(b["dst"].shape)
    y = reduce_rows(b["op"], x)
    if b["negate"]:
        y = -y
    m.write(b["dst"], y.reshape(b["dst"].shape), out_dtype(b), write_mask)


def cycles(b: Bound, target) -> int:
    """[OLD-ISA] via §1.4: N/2 for bf16 in and out with add/max, else N. The table names
    MIN_II but the formulas drop it; nkirun reads them as max(MIN_II, ...) like every other
    Vector instruction."""
    n = b["data"].free_size
    out = b.get("dtype") or b["dst"].dtype
    if b["op"] in ("add", "maximum") and b["data"].dtype.name == out.name == "bfloat16":
        n = -(-n // 2)
    return max(target.min_ii, n)


SPEC = InstructionDef(
    name="tensor_reduce",
    engine="vector",
    params=PARAMS,
    summary="reduce a tile along its last free axes",
    semantics=(
        "Folds data along the given free axes, which must be the last ones (axis 0, the "
        "partition axis, cannot be reduced), with a reducible operator: add/subtract/"
        "multiply/maximum/minimum in float32 in element order, logical_* on nonzero-ness "
        "(1.0/0.0), bitwise_* on integer bits. negate multiplies the result by -1; keepdims "
        "keeps the reduced axes with size 1."),
    cost_formula="max(MIN_II, N/2) for bf16 in/out with add or maximum, else max(MIN_II, N) "
                 "Vector cycles (N = elements per partition of data)",
    execute=execute,
    cycles=cycles,
    check=check,
    source="the nki.isa.tensor_reduce documentation, §2.2 (reducible operators)",
    mask_on="data",
    example="- tensor_reduce: {dst: rowmax, op: maximum, data: scores, axis: 1}",
    nki=NkiApi("dst op data axis negate=False keepdims=False", result=_reduced),
)
