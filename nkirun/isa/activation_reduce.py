"""nki.isa.activation_reduce — Scalar engine.

activation(op, data, bias, scale) plus the sum of the results along all free axes into
reduce_res: exactly activation with reduce_cmd=reset_reduce and reduce_res (the page: "kept
for backward compatibility"). It resets and then fills the Scalar engine's accumulator
registers shared with activation and activate2.

Readings:
* reduce_res: the signature has no default, but NKI 0.6 documents None ("keep the
  reduction result in the Scalar Engine's internal accumulator"): leaving it out (or null)
  resets and fills the registers without the read-out (and its MIN_II).
* reduce_op must be add ("the Scalar Engine reduction registers can only sum"); the NC-v2
  "add only" remark is therefore true on every target.
* Everything else (numerics, bias/scale rules and codes E200/E201, the W202 valid-range
  warning, the sum taken over float32 values before the cast) is activation's; this module
  runs activation's code with reduce_cmd=reset_reduce.
"""
from __future__ import annotations

from dataclasses import replace

from nkirun.hw import dtypes as dt
from nkirun.isa import activation
from nkirun.isa.spec import OP, TILE, Bound, InstructionDef, NkiApi, Param

URL = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
       "nki.isa.activation_reduce.html")
_BY_NAME = {p.name: p for p in activation.PARAMS}

PARAMS = (
    # dst is a by-product of reduce_res: nki-library's qkv_cte gives it a one-column [0, H]
    # view, each element keeping the last value streamed to it
    replace(_BY_NAME["dst"], zero_steps=True),
    _BY_NAME["op"],
    _BY_NAME["data"],
    Param("reduce_op", OP, required=True, choices=("add",),
          doc="free-axis reduction; the Scalar registers only sum (add)"),
    Param("reduce_res", TILE, out=True, per_partition=True, dtypes=dt.FLOAT_NAMES,
          doc="(P, 1) tile receiving the row sums; null keeps them in the registers only"),
    _BY_NAME["bias"],
    _BY_NAME["scale"],
    _BY_NAME["mask"],
    _BY_NAME["dtype"],
)


def execute(b: Bound, m) -> None:
    activation.execute(b, m, reduce_cmd="reset_reduce")


SPEC = InstructionDef(
    name="activation_reduce",
    engine="scalar",
    params=PARAMS,
    summary="activation plus its row sums into reduce_res (activation with reset_reduce)",
    semantics=(
        "Computes op(data*scale + bias) like activation and writes it to dst; the float32 "
        "results are summed along all free axes into the Scalar engine's accumulator "
        "registers, which are reset first (reduce_cmd=reset_reduce), and read out into "
        "reduce_res. The registers are the ones activation and activate2 use, so a later "
        "activation(reduce_cmd: reduce) continues from these sums."),
    cost_formula="max(MIN_II, N) + MIN_II Scalar cycles, without the + MIN_II when reduce_res "
                 "is left out (N = elements per partition of data)",
    execute=execute,
    cycles=activation.cycles,  # + MIN_II for the read-out when reduce_res is given
    check=activation.check,
    accumulator="scalar",
    fixed_reduce_cmd="reset_reduce",
    source=f"{URL}; cost: NKI 2.26 (legacy) docstring",
    example="""\
- activation_reduce:
    dst: e
    op: exp
    data: scores
    reduce_op: add
    reduce_res: rowsum
    bias: neg_max""",
    nki=NkiApi("dst op data reduce_op reduce_res bias=None scale=1.0"),
)
