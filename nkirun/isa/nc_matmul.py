"""nki.isa.nc_matmul — Tensor engine: dst = stationary.T @ moving, in float32, into PSUM.

Facts (nki-reference.md §1.14):
* the contraction runs over the partition dim of both operands: stationary (K, M) and
  moving (K, N) give dst (M, N); K <= 128 and equal, M <= 128 (gemm_stationary_fmax),
  N <= 512 (gemm_moving_fmax, one PSUM bank of fp32) on NC-v2/v3.
* stationary and moving in SBUF, dst in PSUM; dst float32 on NC-v2/v3 (every nkirun target).
* inputs fp8_e4m3/fp8_e5m2/bf16/fp16/tf32/fp32; if either is fp32/tf32 both must be.
* accumulation is always float32. accumulate=true adds into dst's PSUM contents; false
  overwrites; None (the default) lets the NKI compiler decide — nkirun overwrites, as the
  first matmul of a PSUM accumulation group does.
* accumulating onto uninitialised PSUM is undefined: the dataflow pass reports it (E050),
  because `reads_out` declares that an accumulating matmul reads dst.
* cost [OLD-ISA]: max(min(64, Ns), Nm) PE cycles, 4x that when the operands are fp32
  (Ns, Nm = elements per partition of stationary / moving).
Multi-dim free dims are flattened (stationary's into M, moving's into N).
NKI 0.6's tile_position/tile_size, perf_mode, is_transpose and is_*_onezero: matmul_modes.py.
"""
from __future__ import annotations

import numpy as np

from nkirun.isa import matmul_modes as modes
from nkirun.isa.common import flat
from nkirun.isa.spec import BOOL, ENUM, INT_LIST, MASK, TILE, Bound, InstructionDef, Param

IN_DTYPES = frozenset({"float8_e4m3", "float8_e5m2", "bfloat16", "float16", "tfloat32",
                       "float32"})
FP32ISH = frozenset({"float32", "tfloat32"})
PMAX, STATIONARY_FMAX, MOVING_FMAX = 128, 128, 512  # tile_size constants (§5)

SBUF = frozenset({"sbuf"})
PARAMS = (
    Param("dst", TILE, required=True, out=True, buffers=frozenset({"psum"}),
          dtypes=IN_DTYPES - {"tfloat32"},
          doc="float32 PSUM tile (M, N) (bf16 on NeuronCore-v4; stationary's dtype with "
              "is_transpose)"),
    Param("stationary", TILE, required=True, buffers=SBUF, dtypes=IN_DTYPES,
          doc="SBUF tile (K, M), M <= 128"),
    Param("moving", TILE, required=True, buffers=SBUF, dtypes=IN_DTYPES,
          doc="SBUF tile (K, N), N <= 512"),
    Param("accumulate", BOOL, doc="true: add into dst's PSUM contents (float32); "
                                  "false/unset: overwrite"),
    Param("mask", MASK, doc="predicate over dst's indices; masked-off dst elements keep "
                            "their value (and are not accumulated)"),
    Param("is_stationary_onezero", BOOL, default=False,
          doc="hint: stationary holds only 0/1 (faster for fp32); changes no value"),
    Param("is_moving_onezero", BOOL, default=False,
          doc="hint: moving holds only 0/1 (faster for fp32); changes no value"),
    Param("is_transpose", BOOL, default=False,
          doc="transpose mode (trn2+): dst = stationary.T bit for bit, moving the identity"),
    Param("tile_position", INT_LIST, default=(),
          doc="(start_row, start_column) in the PE array, with tile_size; () = untiled"),
    Param("tile_size", INT_LIST, default=(),
          doc="(row_size, column_size): 128, 64 or 32 (trn2+); () = untiled"),
    Param("perf_mode", ENUM, default="none", choices=("none", "double_row"),
          doc="double_row (trn2+): fp8 [K, 2, M] x [K, 2, N], twice the throughput"),
)


def check(b: Bound):
    yield from modes.mode_rules(b)
    st, mv, dst = b.tile("stationary"), b.tile("moving"), b.tile("dst")
    _, m_size, n_size = modes.dims(b)
    if st.partitions != mv.partitions:
        yield b.err("E270", f"stationary has {st.partitions} partitions and moving "
                    f"{mv.partitions}; the contraction (partition) dims must be equal", "moving")
    if m_size > STATIONARY_FMAX:
        yield b.err("E271", f"stationary has {m_size} columns per partition; at most "
                    f"{STATIONARY_FMAX} allowed", "stationary",
                    hint="split the output rows into blocks of 128")
    if n_size > MOVING_FMAX:
        yield b.err("E271", f"moving has {n_size} columns per partition; at most "
                    f"{MOVING_FMAX} (one PSUM bank of float32) allowed", "moving",
                    hint="split the output columns into blocks of 512")
    if dst.partitions != m_size or dst.free_size != n_size:
        yield b.err("E272", f"dst {list(dst.shape)} must be {m_size} partitions x "
                    f"{n_size} elements (stationary's free size x moving's)", "dst")
    a, c = st.dtype.name, mv.dtype.name
    if (a in FP32ISH) != (c in FP32ISH):
        yield b.err("E273", f"stationary is {a} and moving is {c}: if either is float32/"
                    "tfloat32 both must be", "moving" if a in FP32ISH else "stationary",
                    hint="cast the other operand with tensor_copy first")


def reads_out(b: Bound) -> tuple[str, ...]:
    return ("dst",) if b.get("accumulate") else ()


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    if modes.transposing(b):
        modes.transpose(b, m)
        return
    k_size = modes.dims(b)[0]  # double_row: the [K, 2, .] halves stack into 2K rows
    st = m.read_f32(b["stationary"]).reshape(k_size, -1)  # (K, M) float32
    mv = m.read_f32(b["moving"]).reshape(k_size, -1)  # (K, N) float32
    modes.warn_onezero(b, m, "stationary", st)
    modes.warn_onezero(b, m, "moving", mv)
    out = np.matmul(st.T, mv)  # float32 products and float32 accumulation
    if b.get("accumulate"):
        out = flat(m.read_f32(dst)) + out  # PSUM accumulates in float32
    m.write(dst, out.reshape(dst.shape), None, b.mask)


def cycles(b: Bound, target) -> int:
    _, m_size, n_size = modes.dims(b)
    return modes.cost_factor(b) * max(min(64, m_size), n_size)


SPEC = InstructionDef(
    name="nc_matmul",
    engine="tensor",
    params=PARAMS,
    summary="dst (PSUM, float32) = stationary.T @ moving; optional float32 accumulation",
    semantics=(
        "Multiplies stationary (K, M) transposed by moving (K, N), contracting over the "
        "partition dim K, into the float32 PSUM tile dst (M, N). Products and sums are "
        "float32. With accumulate: true the result is added to dst's current contents; "
        "otherwise dst is overwritten."),
    cost_formula="max(min(64, Ns), Nm) PE cycles (fp8/bf16/fp16/tf32); 4x for fp32 operands",
    execute=execute,
    cycles=cycles,
    check=check,
    reads_out=reads_out,
    same_partitions=(),  # E270 says what the partition dims mean here
    cost_note="average cost of back-to-back matmuls of the same shape [OLD-ISA]",
    source="nki-reference.md §1.14 (nc_matmul)",
    example="""\
- nc_matmul: {dst: acc, stationary: aT, moving: b}
- nc_matmul: {dst: acc, stationary: aT2, moving: b2, accumulate: true}""",
)
