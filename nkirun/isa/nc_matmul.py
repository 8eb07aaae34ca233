"""nki.isa.nc_matmul — Tensor engine: dst = stationary.T @ moving, in float32, into PSUM.

Facts (NKI 0.6 `nc_matmul` page,
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.nc_matmul.html,
generated from https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae/nki/api/nki/isa/__init__.py):
* the contraction runs over the partition dim of both operands: stationary (K, M) and
  moving (K, N) give dst (M, N); K <= 128 and equal, M <= 128 (gemm_stationary_fmax),
  N <= 512 (gemm_moving_fmax, one PSUM bank of fp32) on NC-v2/v3.
* stationary and moving in SBUF, dst in PSUM; dst float32 on NC-v2/v3 (every nkirun target).
* inputs fp8_e4m3/fp8_e5m2/bf16/fp16/tf32/fp32 (NeuronCore-v4 adds fp8_e4m3fn, not to be mixed
  with fp8_e4m3: the nc_matmul page of the latest release); if either is fp32/tf32 both must be.
* accumulation is always float32. "Accumulation mode": accumulate=False overwrites dst,
  True adds into its PSUM contents, None (the default) is auto-detected: "the first write
  to a PSUM location overwrites, and subsequent writes to the same location accumulate".
* accumulating onto uninitialised PSUM is undefined: the dataflow pass reports it (E050),
  because `reads_out` declares that an accumulate=true matmul reads dst.
* on NeuronCore-v2/v3 (trn1, inf2, trn2) accumulating onto a PSUM location that a
  non-matmul instruction value-initialised (memset, tensor_copy) is undefined on hardware:
  nkirun/checker/psum.py warns (W053), and also when a matmul result is overwritten
  before anything read it (W054).
* cost [OLD-ISA]: max(min(64, Ns), Nm) PE cycles, 4x that when the operands are fp32
  (Ns, Nm = elements per partition of stationary / moving).
Multi-dim free dims are flattened (stationary's into M, moving's into N).

Readings:
* accumulate unset (or null) applies the auto rule per PSUM element, at run time: an
  element that holds data (an earlier write of any instruction, or the tensor's declared
  initial contents) is accumulated into, an element nothing wrote yet is overwritten. So
  a K-loop of matmuls into one PSUM tile with the keyword left out sums every K tile, as
  the NKI matmul tutorial's tiled kernel relies on; `accumulate: false` / `true` stay
  explicit overrides. The rule does not restart after the result is read: a PSUM tile
  reused for the next output block needs `accumulate: false` on that block's first matmul
  (W055 warns when an unset one lands on a result that was already read).
  In a runtime loop body the choice is the first iteration's, on every iteration: the
  compiler decides it once per instruction, and the body is one instruction stream.
* The cost does not depend on how accumulation is spelled: `accumulate=(k > 0)` (the
  form the page recommends) and the keyword left out give the same values, and
  accumulating into PSUM is the Tensor engine's pipelined path either way, so the read
  of dst an explicit accumulate declares waits for the earlier matmul's write without
  the commit latency a reading engine waits (`pipelined_accumulate`).

NKI 0.6's tile_position/tile_size, perf_mode, is_transpose and is_*_onezero: matmul_modes.py.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.hw.cost_tables import cost_table
from nkirun.isa import matmul_modes as modes
from nkirun.isa.matmul_plan import plan
from nkirun.isa.common import flat
from nkirun.isa.removed import NKI_020_228
from nkirun.isa.spec import BOOL, ENUM, INT_LIST, MASK, TILE, Bound, InstructionDef, NkiApi, Param

IN_DTYPES = frozenset({"float8_e4m3", "float8_e4m3fn", "float8_e5m2", "bfloat16", "float16",
                       "tfloat32", "float32"})
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
    Param("accumulate", BOOL, doc="true: add into dst's PSUM contents (float32); false: "
                                  "overwrite; unset: NKI's auto-detect per element (the "
                                  "first write overwrites, later writes accumulate)"),
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
    if {a, c} == {"float8_e4m3", "float8_e4m3fn"}:  # NC-v4's OCP fp8 does not meet the old one
        yield b.err("E681", "stationary and moving mix float8_e4m3 with float8_e4m3fn",
                    "moving", hint="give both operands the same fp8 type (tensor_copy)")


def reads_out(b: Bound) -> tuple[str, ...]:
    # accumulate unset reads only the elements that hold data, so it never reads undefined
    # PSUM: only an explicit accumulate=true is a read of dst for the dataflow pass
    return ("dst",) if b.args.get("accumulate") else ()


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
    mode = b.args.get("accumulate")
    if mode:
        out = flat(m.read_f32(dst)) + out  # PSUM accumulates in float32
    elif mode is None:  # NKI's auto-detect: accumulate where dst already holds data
        held = m.held_first_run(b, dst)  # (in a loop body: as on its first iteration)
        if held is None:
            out = flat(m.read_f32(dst)) + out
        elif held.any():
            prev = flat(dt.to_f32(m.view(dst)))
            out = np.where(held.reshape(out.shape), prev + out, out)
    m.write(dst, out.reshape(dst.shape), None, b.mask)


def cycles(b: Bound, target) -> int:
    """Constants from hw/cost_tables.py: MM_INIT_LATENCY (the turnaround a short moving
    tile cannot hide), the fp32 passes, the fp8 double-row speed-up."""
    t = cost_table(target)
    _, m_size, n_size = modes.dims(b)
    if modes.double_row(b):  # [K, 2, N]: 2N moving elements, fp8_rows_factor rows per cycle
        n_size = -(-b.tile("moving").free_size // t.fp8_rows_factor)
    return modes.cost_factor(b, t.fp32_matmul_passes) * max(min(t.mm_init_cycles, m_size),
                                                             n_size)


SPEC = InstructionDef(
    name="nc_matmul",
    engine="tensor",
    params=PARAMS,
    summary="dst (PSUM, float32) = stationary.T @ moving; optional float32 accumulation",
    semantics=(
        "Multiplies stationary (K, M) transposed by moving (K, N), contracting over the "
        "partition dim K, into the float32 PSUM tile dst (M, N). Products and sums are "
        "float32. accumulate: true adds the result to dst's current contents, false "
        "overwrites dst; left unset, each dst element is overwritten by the first write "
        "to it and accumulated into by later ones (NKI's auto-detect)."),
    cost_formula="max(min(64, Ns), Nm) PE cycles (fp8/bf16/fp16/tf32); 4x for fp32 operands",
    execute=execute,
    plan=plan,
    direct_storage=True,
    cycles=cycles,
    check=check,
    reads_out=reads_out,
    pipelined_accumulate=True,  # accumulating into PSUM is the PE array's pipelined path
    same_partitions=(),  # E270 says what the partition dims mean here
    cost_note="average cost of back-to-back matmuls of the same shape [OLD-ISA]",
    source="the nki.isa.nc_matmul documentation",
    example="""\
- nc_matmul: {dst: acc, stationary: aT, moving: b}      # first write: overwrites
- nc_matmul: {dst: acc, stationary: aT2, moving: b2}    # later writes accumulate""",
    nki=NkiApi("dst stationary moving is_stationary_onezero=False is_moving_onezero=False "
               "is_transpose=False accumulate=None tile_position=() tile_size=() "
               "perf_mode=none",
               # double_row_gen3: the pre-0.2 spelling of double_row, the same (K, 2, M) x
               # (K, 2, N) operands (the neuronxcc example's golden is einsum("kli,klj->ij"))
               aliases=(("perf_mode", "double_row_gen3", "double_row"),),
               result=lambda v, first: ((v["stationary"].shape[-1], v["moving"].shape[-1]),
                                        "psum"),
               result_dtype="float32", accumulate="accumulate",
               removed=(("psumAccumulateFlag", NKI_020_228, "remove it (it had no effect)"),
                        ("is_moving_zero", NKI_020_228, "it was renamed is_moving_onezero"))),
)
