"""nki.isa.dropout — Vector engine: replace each element of data by 0 with probability prob.

Facts (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.dropout.html):
* prob is a scalar or a (P, 1) tile (one drop probability per partition); 1.0 drops every
  element, 0.0 keeps every element with its original value (no rescaling of the kept ones);
* data may be any dtype; dst.dtype must equal data.dtype;
* with integer data prob must be float32; with float data any float dtype;
* cost [legacy nki.isa docs]: max(MIN_II, N) Vector cycles.

The hardware generator's bits are not documented: nkirun draws one 32-bit value per element
from its seeded model of the Vector engine's PRNG (hw/prng.py), u = top 24 bits / 2^24 in
[0, 1), and drops the element when u < prob. The drop pattern is reproducible in nkirun and
has the documented probability, but it is not the hardware's pattern (W580 at run time;
`run --expect` marks outputs derived from it).

Readings: a scalar prob must lie in [0, 1]; a tile prob below 0 keeps everything and above 1
drops everything; kept elements are copied bit for bit (NaN too); a dropped element is +0.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw.dtypes import FLOAT_NAMES
from nkirun.hw.prng import draw_bits, uniform01
from nkirun.isa.common import flat
from nkirun.isa.spec import TILE, TILE_OR_SCALAR, Bound, InstructionDef, NkiApi, Param

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="output tile, data's dtype and shape"),
    Param("data", TILE, required=True, doc="input tile (any dtype)"),
    Param("prob", TILE_OR_SCALAR, required=True, per_partition=True,
          dtypes=FLOAT_NAMES, doc="drop probability: a number in [0, 1] or a (P, 1) "
                                  "float tile (float32 when data is an integer tile)"),
)


def check(b: Bound):
    dst, data, prob = b.tile("dst"), b.tile("data"), b.get("prob")
    if dst.dtype.name != data.dtype.name:
        yield b.err("E530", f"dst is {dst.dtype.name} but data is {data.dtype.name}; dropout "
                    "writes data's dtype", "dst", hint="cast with tensor_copy afterwards")
    if dst.partitions != data.partitions or dst.free_size != data.free_size:
        yield b.err("E530", f"dst {list(dst.shape)} must have data's shape "
                    f"{list(data.shape)}", "dst")
    pt = b.tile("prob")
    if pt is not None and data.dtype.is_int and pt.dtype.name != "float32":
        yield b.err("E531", f"prob is {pt.dtype.name}; with integer data ({data.dtype.name}) "
                    "prob must be float32", "prob")
    if pt is None and not 0.0 <= prob <= 1.0:
        yield b.err("E532", f"prob {prob!r} is not a probability; allowed: 0.0 .. 1.0", "prob")


def execute(b: Bound, m) -> None:
    dst, data = b["dst"], b["data"]
    x = flat(m.read(data))
    prob = b["prob"]
    p = m.read_f32(prob) if not isinstance(prob, float) else np.float32(prob)
    drop = uniform01(draw_bits(b, m, "vector", dst)) < p
    out = x.copy()
    out[drop] = 0
    m.write(dst, out.reshape(dst.shape))


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["data"].free_size)


SPEC = InstructionDef(
    name="dropout",
    engine="vector",
    params=PARAMS,
    summary="zero each element with probability prob (nkirun's PRNG model)",
    semantics=(
        "Copies data to dst, replacing each element by 0 with probability prob (a number, "
        "or one value per partition from a (P, 1) tile); kept elements keep their value "
        "(no rescaling). The random draws come from nkirun's seeded model of the Vector "
        "engine's PRNG (set_rng_seed / rand_set_state drive it): the drop rate is the "
        "documented one, the pattern is NOT the hardware's."),
    cost_formula="max(MIN_II, N) Vector cycles (N = elements per partition)",
    execute=execute,
    cycles=cycles,
    check=check,
    random=True,
    constraints=(
        "dst has data's dtype and shape (E530)",
        "with integer data a prob tile must be float32 (E531)",
        "a scalar prob lies in 0..1 (E532)",
        "the drop pattern comes from nkirun's PRNG model, not the hardware's (W580)",
    ),
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.dropout.html",
    example="- dropout: {dst: y, data: x, prob: 0.1}",
    nki=NkiApi("dst data prob"),
)
