"""nki.isa.exponential — Vector engine, NeuronCore-v4 (trn3) only.

dst = exp(src - max_value), max_value a scalar or a (P, 1) float32 tile; with reduce_cmd the
running sum of the results goes through the Vector-engine accumulator shared with
range_select, select_reduce, tensor_scalar_reduce and tensor_scalar_cumulative.

Readings:
* src - max_value is one float32 subtraction; exp is evaluated exactly and rounded once to
  float32 (as activation's exp); the page gives no error bound for the hardware.
* The sum follows the page's loop: `accumulator += dst[i]` in element order, over the float32
  results before the cast to dst's dtype (isa/accumulators.py).
* idle: the accumulator becomes undefined ("accumulator state unknown"); a reduce_res given
  with idle receives this instruction's own sum.
* cost: the page gives none; [ARCH4] says 4x the throughput of activation(exp), which is one
  element per cycle: max(MIN_II, N) Vector cycles is assumed (not N/4: the Vector engine's
  own rate for one input stream is N cycles).
"""
from __future__ import annotations

from nkirun.hw import dtypes as dt
from nkirun.isa import accumulators as accs
from nkirun.isa.activation import evaluate
from nkirun.isa.common import flat, needs_nc_v4, same_shape
from nkirun.isa.spec import ENUM, TILE, TILE_OR_SCALAR, Bound, InstructionDef, NkiApi, Param

URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.exponential.html"
F32 = frozenset({"float32"})
DST_DTYPES = dt.FLOAT_NAMES | frozenset({"int8", "int16", "int32", "uint8", "uint16"})
SRC_DTYPES = (dt.FLOAT_NAMES - {"tfloat32"}) | dt.INT_NAMES
RES_DTYPES = dt.FLOAT_NAMES

PARAMS = (
    Param("dst", TILE, required=True, out=True, dtypes=DST_DTYPES,
          doc="output tile, SBUF or PSUM (same partitions and elements as src, up to 4-D)"),
    Param("src", TILE, required=True, dtypes=SRC_DTYPES, doc="input tile, SBUF or PSUM"),
    Param("max_value", TILE_OR_SCALAR, default=0.0, per_partition=True, dtypes=F32,
          doc="subtracted before exp: a float32 scalar or (P, 1) float32 tile"),
    Param("reduce_res", TILE, out=True, per_partition=True, dtypes=RES_DTYPES,
          doc="(P, 1) float tile receiving the accumulated sum"),
    Param("reduce_cmd", ENUM, default="idle",
          choices=("idle", "reset_reduce", "reduce", "load_reduce"),
          doc="what to do with the shared Vector-engine accumulator"),
    Param("reduce_init", TILE_OR_SCALAR, default=0.0, per_partition=True, dtypes=F32,
          doc="value loaded into the accumulator by load_reduce (float32 scalar or (P, 1))"),
)


def check(b: Bound):
    yield from needs_nc_v4(b, "E290")
    yield from same_shape(b, "dst", "src")
    for key in ("dst", "src"):
        t = b.tile(key)
        if t is not None and len(t.shape) > 4:
            yield b.err("E291", f"{key} has {len(t.shape)} dimensions; exponential takes up to "
                        "4-D tiles", key, hint="reshape the view to at most 4 dimensions")
    init = b.args.get("reduce_init")
    if b["reduce_cmd"] != "load_reduce" and (b.tile("reduce_init") is not None
                                              or init not in (None, 0.0)):
        yield b.err("E292", f"reduce_init is only used by reduce_cmd=load_reduce (reduce_cmd "
                    f"is {b['reduce_cmd']}); leave it unset or 0.0", "reduce_init",
                    hint="write reduce_cmd: load_reduce, or drop reduce_init")


def execute(b: Bound, m) -> None:
    src = b["src"]
    z = flat(m.read_f32(src)) - accs.per_partition_f32(b, m, "max_value", src.partitions)
    y = evaluate("exp", z)
    # the page's loop: accumulator += dst[i]
    total = accs.apply(b, m, "Vector", "add", y, "src", accs.STREAMED, "reduce_init")
    m.write(b["dst"], y.reshape(b["dst"].shape))
    accs.read_out(b, m, total)


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["src"].free_size)


SPEC = InstructionDef(
    name="exponential",
    engine="vector",
    params=PARAMS,
    summary="dst = exp(src - max_value) on the Vector engine, optional running sum (trn3)",
    semantics=(
        "Computes exp(src - max_value) for every element in float32 (max_value: a float32 "
        "scalar or (P, 1) tile; exp rounded once to float32) and casts it to dst. With "
        "reduce_cmd reset_reduce (register := 0), load_reduce (register := reduce_init) or "
        "reduce (continue) the results are added, in element order, into the Vector-engine "
        "accumulator shared with range_select, select_reduce, tensor_scalar_reduce and "
        "tensor_scalar_cumulative; reduce_res receives the register. idle leaves the "
        "register undefined. NeuronCore-v4 (trn3) only."),
    cost_formula="max(MIN_II, N) Vector cycles (N = elements per partition of src; assumed)",
    execute=execute,
    cycles=cycles,
    check=check,
    cost_assumed=True,
    cost_note="the page gives no formula; [ARCH4] only says 4x activation(exp)'s throughput",
    accumulator="vector",
    source=URL,
    example="""\
- exponential:
    dst: e
    src: scores
    max_value: row_max
    reduce_cmd: reset_reduce
    reduce_res: rowsum""",
    nki=NkiApi("dst src max_value=0.0 reduce_res=None reduce_cmd=idle reduce_init=0.0"),
)
