"""nki.isa.nc_transpose — swap the partition axis with the flattened free axes.

Facts (the nki.isa.nc_transpose documentation):
* engine=tensor: data at most [128, 128], SBUF -> PSUM (a matmul against an identity).
* engine=vector: data at most [32, 32], SBUF or PSUM on both sides (the 32x32 reshape bank).
* dst.dtype must equal data.dtype (the NKI 0.2+ rule; the legacy `dtype=` cast is gone).
* cost: Vector max(MIN_II, N); Tensor max(P, min(64, F)) (back-to-back), P = partitions and
  F = elements per partition of data.
Reading for engine=unknown: the page says the compiler "will automatically select an engine
based on the input shape". So: the Tensor engine when data is in SBUF and dst in PSUM (its
only route) or when data is larger than the Vector engine's 32 x 32 (the shape rules it
out); otherwise the Vector engine. A Tensor-engine transpose chosen by shape whose buffers
are not SBUF -> PSUM is what the compiler must route through copies: warning W264 (nkirun
runs it as the element copy it is and costs the Tensor transpose alone).
The result is an exact element copy: TensorE transposes are bit-exact on NC-v3 (trn2); on
NC-v2 (trn1/inf2) NaN/Inf may differ on hardware (§1.15), which nkirun does not model.
"""
from __future__ import annotations

from nkirun.isa.common import flat
from nkirun.isa.spec import ENUM, MASK, TILE, Bound, InstructionDef, NkiApi, Param

LIMITS = {"tensor": 128, "vector": 32}  # max partitions and max elements per partition

PARAMS = (
    Param("dst", TILE, required=True, out=True,
          doc="(F, P) result: PSUM for the Tensor engine; SBUF or PSUM for Vector"),
    Param("data", TILE, required=True,
          doc="(P, F) input: SBUF for the Tensor engine (<= 128x128); Vector <= 32x32"),
    Param("engine", ENUM, default="unknown", choices=("unknown", "tensor", "vector"),
          doc="tensor or vector; unknown: tensor for SBUF -> PSUM, else vector"),
    Param("mask", MASK, doc="predicate over dst's indices; masked-off dst elements keep "
                            "their value"),
)


def engine_of(b: Bound) -> str:
    e = b.get("engine", "unknown")
    if e != "unknown":
        return e
    data, dst = b.tile("data"), b.tile("dst")
    if data is not None and dst is not None and data.buffer == "sbuf" and dst.buffer == "psum":
        return "tensor"
    if data is not None and max(data.partitions, data.free_size) > LIMITS["vector"]:
        return "tensor"  # the shape rules the Vector engine out (the page: by shape)
    return "vector"


def _transposed(values: dict, first):
    """The pre-0.2 result of a call without dst= (NkiApi.result): SBUF where the Vector
    engine transposes (engine=vector, or a PSUM tile of at most 32 x 32), else PSUM."""
    engine = values.get("engine")
    vector = getattr(engine, "ir", engine) == "vector" or max(first.shape) <= 32 and \
        first.buffer == "psum"
    return tuple(reversed(first.shape)), "sbuf" if vector else "psum"


def check(b: Bound):
    data, dst = b.tile("data"), b.tile("dst")
    eng = b.engine
    limit = LIMITS[eng]
    if data.partitions > limit or data.free_size > limit:
        yield b.err("E260", f"data is {data.partitions} x {data.free_size}; the {eng} engine "
                    f"transposes at most {limit} x {limit}", "data",
                    hint="the Tensor engine takes up to 128 x 128 (SBUF -> PSUM)"
                    if eng == "vector" else "split the tile into 128 x 128 blocks")
    chosen = b.get("engine", "unknown") == "unknown"
    if eng == "tensor" and chosen and (data.buffer, dst.buffer) != ("sbuf", "psum"):
        yield b.warn("W264", f"data is {data.partitions} x {data.free_size}, more than the "
                     f"Vector engine's 32 x 32, so the compiler picks the Tensor engine, which "
                     f"reads SBUF and writes PSUM: with data in {data.buffer} and dst in "
                     f"{dst.buffer} it inserts copies nkirun does not cost", "data",
                     hint="transpose from an SBUF tile into a PSUM tile")
    elif eng == "tensor":
        if data.buffer != "sbuf":
            yield b.err("E261", f"the Tensor engine reads data from SBUF (data is in "
                        f"{data.buffer})", "data", hint="engine: vector reads PSUM (<= 32x32)")
        if dst.buffer != "psum":
            yield b.err("E261", f"the Tensor engine writes dst to PSUM (dst is in "
                        f"{dst.buffer})", "dst", hint="transpose into a PSUM tile, then copy")
    if dst.partitions != data.free_size or dst.free_size != data.partitions:
        yield b.err("E262", f"dst {list(dst.shape)} must be the transpose of data "
                    f"{list(data.shape)}: {data.free_size} partitions x {data.partitions} "
                    "elements", "dst")
    if dst.dtype.name != data.dtype.name:
        yield b.err("E263", f"dst is {dst.dtype.name} but data is {data.dtype.name}; they must "
                    "be the same dtype", "dst", hint="cast with tensor_copy before or after")


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    x = flat(m.read(b["data"]))  # same dtype: a bit-exact move of the stored values
    m.write(dst, x.T.reshape(dst.shape), None, b.mask)


def cycles(b: Bound, target) -> int:
    data = b["data"]
    if b.engine == "tensor":
        return max(data.partitions, min(64, data.free_size))
    return max(target.min_ii, data.free_size)


SPEC = InstructionDef(
    name="nc_transpose",
    engine="tensor",
    params=PARAMS,
    summary="transpose a (P, F) tile into (F, P) on the Tensor or Vector engine",
    semantics=(
        "dst[j, i] = data[i, j], with data's free dims flattened into j. The Tensor engine "
        "takes up to 128 x 128 from SBUF into PSUM; the Vector engine takes up to 32 x 32 "
        "between SBUF/PSUM. dst has data's dtype; values are moved bit for bit."),
    cost_formula="Tensor: max(P, min(64, F)) PE cycles; Vector: max(MIN_II, F) cycles "
                 "(P partitions, F elements per partition of data)",
    execute=execute,
    cycles=cycles,
    check=check,
    engine_of=engine_of,
    same_partitions=(),  # dst has data's free size as its partitions
    source="the nki.isa.nc_transpose documentation",
    example="- nc_transpose: {dst: tT, data: t}   # t: sbuf [128, 64] -> tT: psum [64, 128]",
    nki=NkiApi("dst data engine=unknown", result=_transposed, recast="copy", transposes=True),  # (no cast)
)
