"""nki.isa.tensor_copy_predicated — Vector engine.

Where the predicate holds, dst receives src (a tile of dst's shape, or a number); elsewhere
dst keeps what it held. reverse_pred copies where the predicate does not hold.

Readings:
* "Where predicate is True": a nonzero predicate element is true (the predicate is an
  unsigned integer tile: uint8/uint16/uint32); reverse_pred is a logical NOT.
* src and dst share their dtype, so a tile is copied bit for bit (NaN payloads, -0.0); a
  number src is cast to dst's dtype (round to nearest even; integers saturate).
* dst elements the predicate leaves alone keep their value, so they count as written only
  if they were before (reading one that never was is E090 at run time).
* cost: the legacy table: max(MIN_II, N) when src and predicate are in different memories
  (or src is a number), max(MIN_II, 2N) when both are in SBUF.
"""
from __future__ import annotations

import numpy as np

from nkirun.isa.common import same_shape
from nkirun.isa.spec import (BOOL, TILE, TILE_OR_SCALAR, Bound, InstructionDef, NkiApi, Param,
                             common_tail)

URL = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
       "nki.isa.tensor_copy_predicated.html")
PREDICATE_DTYPES = frozenset({"uint8", "uint16", "uint32"})

PARAMS = (
    Param("dst", TILE, required=True, out=True,
          doc="destination tile; unselected elements keep their value"),
    Param("src", TILE_OR_SCALAR, required=True,
          doc="tile of dst's dtype and shape, or a number, copied where the predicate holds"),
    Param("predicate", TILE, required=True, dtypes=PREDICATE_DTYPES,
          doc="uint8/uint16/uint32 tile of dst's shape; nonzero selects"),
    Param("reverse_pred", BOOL, default=False, doc="copy where the predicate is zero instead"),
    *common_tail(dtype=False),
)


def check(b: Bound):
    yield from same_shape(b, "predicate", "dst")
    src, dst, pred = b.tile("src"), b.tile("dst"), b.tile("predicate")
    if src is None:
        return
    yield from same_shape(b, "src", "dst")
    if dst is not None and src.dtype.name != dst.dtype.name:
        yield b.err("E350", f"src is {src.dtype.name} but dst is {dst.dtype.name}; they must "
                    "share their dtype", "src",
                    hint="copy src to a tile of dst's dtype first (tensor_copy)")
    if pred is not None and src.buffer == pred.buffer == "psum":
        yield b.err("E351", "src and predicate are both in PSUM; at most one of them may be",
                    "predicate", hint="copy one of them to SBUF first")


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    keep = m.read(b["predicate"]).reshape(dst.shape) != 0
    if b["reverse_pred"]:
        keep = ~keep
    if b.mask is not None:
        keep &= b.mask.reshape(dst.shape)
    src = b.tile("src")
    if src is None:
        values = np.float32(b["src"])  # m.write casts it to dst's dtype
    else:
        values = m.read(src, keep.reshape(dst.partitions, -1).any(axis=1)).reshape(dst.shape)
    m.write(dst, values, None, keep)


def cycles(b: Bound, target) -> int:
    src, pred = b.tile("src"), b["predicate"]
    n = b["dst"].free_size
    both_sbuf = src is not None and src.buffer == pred.buffer == "sbuf"
    return max(target.min_ii, 2 * n if both_sbuf else n)


SPEC = InstructionDef(
    name="tensor_copy_predicated",
    engine="vector",
    params=PARAMS,
    summary="copy src into dst where a predicate tile is nonzero; dst unchanged elsewhere",
    semantics=(
        "Where the predicate (uint8/uint16/uint32, dst's shape) is nonzero -- zero with "
        "reverse_pred -- the element of src is copied into dst bit for bit (src and dst "
        "share their dtype), or the number src, cast to dst's dtype; every other dst "
        "element keeps its value. src and predicate may not both be in PSUM."),
    cost_formula="max(MIN_II, 2*N) Vector cycles when src and predicate are both in SBUF, "
                 "else max(MIN_II, N) (N = elements per partition of dst)",
    execute=execute,
    cycles=cycles,
    check=check,
    source=f"{URL}; cost: NKI 2.26 (legacy) docstring",
    example="""\
- tensor_copy_predicated:
    dst: acc
    src: candidate
    predicate: better""",
    nki=NkiApi("dst src predicate reverse_pred=False"),
)
