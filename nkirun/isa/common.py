"""Building blocks several instruction modules share: shape rules, the Vector-engine
accumulator protocol, free-axis flattening and the 4-D affine pattern of iota/affine_select.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.isa.spec import Bound

COMPARE_UFUNCS = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
}


def flat(a: np.ndarray) -> np.ndarray:
    """(P, f1, f2, ...) -> (P, f1*f2*...) (a view when the layout allows)."""
    return a.reshape(a.shape[0], -1)


def is_nc_v2(b: Bound) -> bool:
    """Whether the program targets a NeuronCore-v2 chip (trn1/inf2), where some rules differ.

    bind attaches the program's target (b.target).
    """
    return b.target.core == "NeuronCore-v2"


def target_of(b: Bound):
    """The program's Target (Bound.target once bind attaches it; else by the name in
    b.extra, as validate.bind records it)."""
    t = getattr(b, "target", None)
    if t is None:
        from nkirun.hw.targets import DEFAULT_TARGET, TARGETS
        t = TARGETS[b.extra.get("target", DEFAULT_TARGET)]
    return t


def core_version(b: Bound) -> int:
    """The program target's NeuronCore generation (2: trn1/inf2, 3: trn2, 4: trn3)."""
    return target_of(b).version


def require_core(b: Bound, version: int, code: str, key: str | None = None,
                 what: str | None = None):
    """Yield an error unless the target is NeuronCore-v`version` or newer (v4-only
    instructions such as quantize_mx are refused on trn1/trn2/inf2)."""
    have = core_version(b)
    if have >= version:
        return
    from nkirun.hw.targets import TARGETS
    ok = ", ".join(n for n, t in TARGETS.items() if t.version >= version)
    yield b.err(code, f"{what or b.op} needs NeuronCore-v{version} or newer ({ok}); the "
                f"program targets {target_of(b).name} (NeuronCore-v{have})", key,
                hint=f"set `target: {ok.split(', ')[0]}` at the top of the program")


_AFFINE = frozenset({"add", "subtract", "multiply"})


def activation_pass(b: Bound, target, src: str, ops: tuple[str, ...] = ()) -> int | None:
    """An instruction the compiler may run as one Scalar-engine activation when the kernel
    names no engine and no mask (SPEC.activation_form; schedule/placement.py): its
    max(MIN_II, N) Scalar cycles, N the free size of operand `src`; else None. `ops`: its
    ALU-op parameters, which must be affine (activation computes data * scale + bias)."""
    if b.args.get("engine") not in (None, "unknown") or b.mask is not None:
        return None
    if any(b.get(k) not in _AFFINE and (b.get(k) is not None or k == ops[0]) for k in ops):
        return None
    return max(target.min_ii, b[src].free_size)


def vector_arith_ops() -> tuple[str, ...]:
    """The operators a Vector-engine instruction documented as "arithmetic operators only"
    accepts: every non-bitvec ALU operator but rsqrt and power (GpSimd/Scalar operators),
    divide (no hardware ALU instruction at the NKI level, the NKI ALU operator table), and the
    trn3 reduce-only tokens bypass, average, abs_max and abs_min."""
    from nkirun.hw import alu as ops
    return tuple(n for n, o in ops.OPS.items() if o.kind != ops.BITWISE and n not in (
        "rsqrt", "power", "divide", "bypass", "average", "abs_max", "abs_min"))


def unary_operand_zero(b: Bound, op_key: str, operand_key: str, code: str):
    """Yield `code` when the operator `op_key` is unary (abs, reciprocal, ...) and its operand
    is a tile or a number other than 0 (None is accepted: the operand is not used)."""
    from nkirun.hw import alu as ops
    op = b[op_key]
    value = b.args.get(operand_key)
    if op in ops.UNARY and (b.tile(operand_key) is not None or value not in (None, 0)):
        yield b.err(code, f"{op} is unary: {operand_key} must be 0", operand_key,
                    hint=f"write {operand_key}: 0")


def scratch_of(m, r, x: np.ndarray) -> np.ndarray | None:
    """x, the float32 widening of operand r (m.read_f32), if it is a copy an instruction may
    overwrite with an intermediate; None when it is the machine's own storage (float32 and
    tfloat32 operands are read without a copy)."""
    return None if np.may_share_memory(x, m.view(r)) else x


def needs_nc_v4(b: Bound, code: str):
    """Yield `code` unless the program targets NeuronCore-v4 or later (the instruction's page:
    "Available only on NeuronCore-v4 and newer")."""
    from nkirun.hw.targets import DEFAULT_TARGET, TARGETS
    # (the target is b.target once bind attaches it, else named in b.extra)
    target = getattr(b, "target", None) or TARGETS[b.extra.get("target", DEFAULT_TARGET)]
    if int(target.core.rsplit("v", 1)[-1]) < 4:
        v4 = [t.name for t in TARGETS.values() if int(t.core.rsplit("v", 1)[-1]) >= 4]
        yield b.err(code, f"available only on NeuronCore-v4 and newer; target {target.name} "
                    f"is {target.core}", None, hint=f"use target: {' or '.join(v4) or 'trn3'}")


def fold_free(ufunc, x: np.ndarray) -> np.ndarray:
    """(..., N) -> (...): a sequential left fold along the last axis, in x's dtype.

    An engine streams the free axis through one accumulator, so sums are taken in order
    (ufunc.accumulate), not pairwise as ufunc.reduce would do; that fixes the float32 bits.
    """
    return ufunc.accumulate(x, axis=-1)[..., -1]


def same_shape(b: Bound, a: str, c: str, code: str = "E063"):
    """Yield an error unless tiles `a` and `c` have the same partitions and free size."""
    ta, tc = b.tile(a), b.tile(c)
    if ta is None or tc is None:
        return
    if ta.partitions != tc.partitions or ta.free_size != tc.free_size:
        yield b.err(code, f"{a} {list(ta.shape)} and {c} {list(tc.shape)} must have the same "
                    "partitions and elements per partition", a,
                    hint=f"{c} has {tc.partitions} partitions x {tc.free_size} elements")


def float32_scalar(b: Bound, key: str, code: str):
    """Yield an error unless the scalar `key` (None and tiles pass) is a float32 value.

    The pages ask for "float32" constants: a finite number that rounds to +-inf in float32
    is refused; one that rounds to a finite float32 (3.4028235e38, the printed FP32_MAX) is
    accepted, as are inf, -inf and nan themselves.
    """
    v = b.get(key)
    if not isinstance(v, float) or not np.isfinite(v):
        return
    with np.errstate(over="ignore"):
        if np.isfinite(np.float32(v)):
            return
    yield b.err(code, f"{key} {v!r} is not a float32 value (it overflows float32)", key,
                hint="use a value within +-3.4028235e38, or fp32.min / fp32.max / inf")


def pattern_values(pattern, offset: int, channel_multiplier: int, partitions: int) -> np.ndarray:
    """The (P, num_w*num_z*num_y*num_x) int64 affine values of iota/affine_select."""
    part, free = pattern_terms(pattern, offset, channel_multiplier, partitions)
    return part + free


def pattern_terms(pattern, offset: int, channel_multiplier: int, partitions: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The affine values as two int64 terms whose sum they are: (P, 1) offset +
    partition * channel_multiplier, and (1, N) pattern terms (a comparison can then
    broadcast them instead of building the (P, N) values).

    The pattern is padded at the front with [0, 1] to four [step, num] pairs; the flattened
    free index walks w, z, y, x with x fastest, as the pages' nested loops do.
    """
    pairs = [(0, 1)] * (4 - len(pattern)) + list(pattern)
    free = np.zeros(1, np.int64)
    for step, num in pairs:
        free = (free[:, None] + np.arange(num, dtype=np.int64)[None, :] * step).reshape(-1)
    part = offset + np.arange(partitions, dtype=np.int64)[:, None] * channel_multiplier
    return part, free[None, :]


def pattern_size(pattern) -> int:
    n = 1
    for _, num in pattern:
        n *= num
    return n


INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


def pattern_rules(b: Bound, codes: tuple[str, str, str, str]):
    """The rules iota and affine_select share (the NKI ISA documentation, the nki.isa.iota and affine_select documentation).

    `codes` = (too many pairs, num < 1, element count != dst free size, outside int32).
    offset and channel_multiplier are int32 and the values are computed in int32, so every
    generated value must fit (nkirun refuses rather than guessing the hardware's wrap-around).
    """
    pattern, dst = b["pattern"], b.tile("dst")
    if len(pattern) > 4:
        yield b.err(codes[0], f"pattern has {len(pattern)} [step, num] pairs; at most 4 "
                    "(w, z, y, x) are allowed", "pattern")
        return
    bad = [num for _, num in pattern if num < 1]
    if bad:
        yield b.err(codes[1], f"every num in pattern must be at least 1 (got {bad[0]})",
                    "pattern", hint="pattern is [[step, num], ...] with num the loop count")
        return
    n = pattern_size(pattern)
    if dst is not None and n != dst.free_size:
        yield b.err(codes[2], f"pattern generates {n} elements per partition but dst "
                    f"{list(dst.shape)} holds {dst.free_size}", "pattern",
                    hint="the product of the nums must equal dst's elements per partition")
    for key in ("offset", "channel_multiplier"):
        if not INT32_MIN <= b[key] <= INT32_MAX:
            yield b.err(codes[3], f"{key} {b[key]} is not an int32", key,
                        hint=f"allowed: {INT32_MIN}..{INT32_MAX}")
            return
    parts = dst.partitions if dst is not None else 1
    spans = [s * (k - 1) for s, k in pattern] + [b["channel_multiplier"] * (parts - 1)]
    lo = b["offset"] + sum(min(0, s) for s in spans)
    hi = b["offset"] + sum(max(0, s) for s in spans)
    if lo < INT32_MIN or hi > INT32_MAX:
        yield b.err(codes[3], f"the affine values range over {lo}..{hi}, outside int32 (they "
                    "are computed in int32)", "pattern",
                    hint="use smaller steps, offset or channel_multiplier")


# ---- DMA transfers (load, store, dma_copy) -------------------------------------------------
def dma_check(b: Bound):
    dst, src = b.tile("dst"), b.tile("src")
    if dst is not None and src is not None and dst.size != src.size:
        yield b.err("E180", f"src {list(src.shape)} ({src.size} elements) and dst "
                    f"{list(dst.shape)} ({dst.size} elements) must hold the same number of "
                    "elements", "src")


def dma_execute(b: Bound, m) -> None:
    args = b.args
    src, dst = args["src"], args["dst"]
    values = m.read(src)  # same dtype: a bit-exact copy; otherwise m.write casts via fp32
    to = dst.dtype.np_type
    if values.dtype is not to and values.dtype != to:  # (`is`: the usual case, cheaply)
        values = values.astype(np.float32)
    mask = b.mask if src.ap is None else _gather_mask(b, m, src, dst)
    m.write(dst, values.reshape(dst.shape), None, mask)


def dma_plan(b: Bound):
    """runner/plan.py's form of a transfer without a mask: one copyto between fixed views
    (an indirect or zero-step view has none: the plain path) for the same dtype; for a
    float-to-float cast, dma_execute's widening to float32 and Machine.write's rounding
    into dst (cast_copy_plan, as tensor_copy's)."""
    src, dst = b.args["src"], b.args["dst"]
    if b.mask is not None or dst.dtype.name == "tfloat32":
        return None
    if src.dtype.np_type == dst.dtype.np_type:
        return copy_plan(dst, src)
    return cast_copy_plan(dst, src) if src.dtype.is_float and dst.dtype.is_float else None


def copy_plan(dst, src):
    """A plan form's build of a bit copy of src into dst (same storage type)."""
    def build(view):
        d = view(dst)
        s = view(src, d.shape) if d is not None else None
        return None if s is None else partial(np.copyto, d, s)
    return build


def f32_operand(view, r, shape, tag: str):
    """A plan form's float32 reading of operand r as `shape`: (its storage view, None) for
    a float32 one, else (the view, a float32 work array it is widened into at each call:
    widened()); None when r has no plain view."""
    a = view(r, shape)
    if a is None:
        return None
    return (a, None) if a.dtype == np.float32 else (a, view.scratch(tag, shape))


def widened(pair) -> np.ndarray:
    """The float32 values of an f32_operand (an exact widening, as astype(float32))."""
    a, work = pair
    if work is None:
        return a
    if work.__class__ is list:  # (a cell: the copy the plan points it at, runner/plan_widen.py)
        return work[0]
    dt.widen_into(work, a)
    return work


def widened_ufunc_plan(ufunc, dst, a, c, shape):
    """A plan form's build of dst = ufunc(a, c) computed in float32 on float operands
    widened to float32 (exact) and cast into dst as Machine.write casts a float32 value
    (NumPy's round to nearest even; dst a float type other than tfloat32), all as `shape`."""
    def build(view):
        x, y, out = f32_operand(view, a, shape, "a"), f32_operand(view, c, shape, "c"), \
            view(dst, shape)
        if x is None or y is None or out is None:
            return None
        result = out if out.dtype == np.float32 else view.scratch("result", shape)
        return partial(_ufunc_widened, ufunc, x, y, result, out)
    return build


def _ufunc_widened(ufunc, x, y, result, out) -> None:
    ufunc(widened(x), widened(y), out=result)
    if result is not out:
        np.copyto(out, result, casting="unsafe")


def row_major(a: np.ndarray) -> bool:
    """Whether a's dims step forwards, outer ones by more (size-1 dims aside)."""
    steps = [s for s, n in zip(a.strides, a.shape) if n > 1]
    return all(s > 0 for s in steps) and all(x >= y for x, y in zip(steps, steps[1:]))


def cast_copy_plan(dst, src):
    """A plan form's build of dst = src for float src and dst (not tfloat32), cast as
    Machine.write casts a float32 value (round to nearest even) after widening src to
    float32 (exact): one copyto when either side is float32, else through a work array."""
    def build(view):
        d = view(dst)
        s = view(src, d.shape) if d is not None else None
        if s is None:
            return None
        if np.float32 in (s.dtype, d.dtype):
            return partial(np.copyto, d, s, casting="unsafe")
        return partial(_through_f32, s, view.scratch("cast", d.shape), d)
    return build


def _through_f32(s, work, d) -> None:
    dt.widen_into(work, s)
    np.copyto(d, work, casting="unsafe")


def _gather_mask(b: Bound, m, src, dst):
    """b.mask, less the dst elements whose source partition an indirect src skipped
    (oob_mode=skip; views/indirect.py): they keep their value."""
    if src.ap is None or src.ap.indirect is None:
        return b.mask
    _, keep = m.indirect_rows(src)
    if keep is None:
        return b.mask
    moved = np.repeat(keep, src.size // src.partitions).reshape(dst.shape)
    return moved if b.mask is None else moved & b.mask.reshape(dst.shape)


def dma_partitions(b: Bound) -> int:
    """Partitions a transfer spans: its on-chip side's (HBM to HBM: the src view's rows,
    at most 128); the DMA queue model (docs/cost.md) spreads them over the queues."""
    args = getattr(b, "args", b)
    src = args.get("src")
    rs = (args["dst"], src) if src is not None else (args["dst"], *args["srcs"])  # dma_compute
    on_chip = [r.partitions for r in rs if r.decl.on_chip]
    return max(on_chip) if on_chip else min(rs[1].partitions, 128)


DMA_COST_FORMULA = ("DMA ns: latency + the longest engine share (bytes per 8 partitions / "
                    "B/ns per engine, + a descriptor overhead per contiguous run); "
                    "model: docs/cost.md")


def dma_cycles(b: Bound, target) -> int:
    """A lone transfer's time in nanoseconds (DMA "cycles" are ns): the uncontended time of
    schedule/dma.py's model (the schedule adds contention for engines and HBM)."""
    from nkirun.isa.dma_plan import uncontended_ns
    return uncontended_ns(b, target)


def gather_into(m, dst, values: np.ndarray, pos: np.ndarray) -> None:
    """dst = values[pos] (flat `values`, positions already bounds-checked by the caller),
    taken straight into dst's storage when it is a plain view not overlapping `values`."""
    out = m.direct_view(dst, pos.shape)
    if out is not None and not np.may_share_memory(out, values):
        np.take(values, pos, out=out, mode="clip")  # checked by the caller; "raise" buffers
        m.mark_written(dst)
        return
    m.write(dst, np.take(values, pos).reshape(dst.shape))
