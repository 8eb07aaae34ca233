"""What an instruction module declares, and the generic operand conversion.

Each `nkirun/isa/<name>.py` builds one `InstructionDef`: its keyword parameters (`Param`),
engine, semantics (`execute`), cost (`cycles`), extra rules (`check`) and docs. The parser,
validator, interpreter, cost model and `explain` are all generic over these definitions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from nkirun.hw import dtypes as dt
from nkirun.hw import alu as ops
from nkirun.diagnostics import Diagnostic, Loc, error, warning
from nkirun.ir import Instruction
from nkirun.source.operands import Resolved, ViewSyntaxError, parse_view

# Parameter kinds
TILE = "tile"  # a tensor view
TILE_OR_SCALAR = "tile_or_scalar"  # a view, or a compile-time float
SCALAR = "scalar"  # a compile-time number (inf, fp32.min, ... accepted)
INT = "int"
BOOL = "bool"
OP = "op"  # an ALU operator name (ops.OPS)
ENUM = "enum"  # one string of `choices`
PATTERN = "pattern"  # [[step, num], ...] access pattern
INT_LIST = "int_list"  # an int or a list of ints (e.g. reduction axes)
DTYPE = "dtype"
MASK = "mask"  # a mask predicate string (see nkirun/mask.py)
TILE_LIST = "tile_list"  # a list of tensor views (dma_compute's srcs)
NUMBER_LIST = "number_list"  # a list of compile-time numbers (dma_compute's scales)
VIEW_KINDS = (TILE, TILE_OR_SCALAR, TILE_LIST)  # the kinds bound to Resolved views

REDUCE_CMDS = ("idle", "reset", "reduce", "reset_reduce")
# Prefixes stripped from instruction names (nisa.iota) and from ENUM values
# (nisa.reduce_cmd.reset_reduce, nl.engine.gpsimd, nisa.dge_mode.hwdge; activation
# functions come as np.exp too)
NAME_PREFIXES = ("nki.isa.", "nisa.", "nl.", "nki.language.", "isa.")
ENUM_PREFIXES = ("nisa.", "nki.isa.", "reduce_cmd.", "engine.", "dge_mode.", "oob_mode.",
                 "matmul_perf_mode.", "nl.", "np.", "numpy.")


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    kind: str
    required: bool = False
    default: Any = None
    out: bool = False  # the instruction writes this operand
    buffers: frozenset | None = None  # allowed buffers for a tile (None: sbuf or psum)
    dtypes: frozenset | None = None  # allowed dtypes for a tile (None: any)
    choices: tuple | None = None  # allowed values for OP / ENUM
    per_partition: bool = False  # a (P, 1) tile: one element per partition
    doc: str = ""


@dataclass(frozen=True, slots=True)
class AccumulatorDef:
    """A per-partition accumulator register file that reduce_cmd drives (nki-reference §4)."""

    engine: str  # for messages: "Vector", "Scalar"
    idle_may_modify: bool  # whether an instruction with reduce_cmd=idle may change it


ACCUMULATORS = {
    # §4 [NEW-ISA]: even with idle the Vector accumulator "may still be modified"
    "vector": AccumulatorDef("Vector", True),
    # §4: idle means "do not use the accumulator registers" (Scalar engine / ACT)
    "scalar": AccumulatorDef("Scalar", False),
}


@dataclass(frozen=True, slots=True)
class InstructionDef:
    name: str
    engine: str  # default engine; `engine_of` may refine per instruction
    params: tuple[Param, ...]
    summary: str  # one line
    semantics: str  # one paragraph, shown by `nkirun explain`
    cost_formula: str  # human-readable formula, shown in reports and `explain`
    execute: Callable  # (Bound, Machine) -> None
    cycles: Callable  # (Bound, Target) -> int, in the engine's own cycles
    check: Callable | None = None  # (Bound) -> Iterable[Diagnostic]
    engine_of: Callable | None = None  # (Bound) -> engine name
    cost_assumed: bool = False  # the pages give no formula: ours is an assumption
    cost_note: str = ""
    example: str = ""  # a YAML snippet for `explain`
    same_partitions: tuple[str, ...] | None = None  # None: every tile param
    # The engine accumulator its `reduce_cmd` drives (a key of ACCUMULATORS), or None;
    # validate's hazard pass (W052) tracks each accumulator separately.
    accumulator: str | None = None
    source: str = ""  # where the facts come from
    # The operand whose index space `mask=` is written in (docs/masks.md): dst unless the
    # page applies the mask to an input (max8: src; nc_match_replace8/nc_find_index8: data).
    mask_on: str = "dst"
    # (Bound) -> names of `out` params that the instruction also reads (e.g. nc_matmul with
    # accumulate=true adds into dst): the dataflow pass and the cost model count them as reads.
    reads_out: Callable | None = None

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)


class ArgError(ValueError):
    def __init__(self, message: str, hint: str | None = None, code: str = "E024"):
        super().__init__(message)
        self.hint = hint
        self.code = code


def _kind_name(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a mapping", type(None): "null"}.get(type(value), type(value).__name__)


def convert(p: Param, value: Any, loc: Loc) -> Any:
    """Turn a plain front-end value (str/int/float/bool/list) into `p`'s typed value."""
    k = p.kind
    if k == TILE or (k == TILE_OR_SCALAR and isinstance(value, str)
                     and ops.parse_scalar(value) is None):
        if not isinstance(value, str):
            raise ArgError(f"`{p.name}` must be a tensor view such as `t` or `t[:, 0:128]`, "
                           f"got {_kind_name(value)}" + (" (a number)" if k == TILE else ""))
        try:
            return parse_view(value, loc)
        except ViewSyntaxError as e:
            raise ArgError(f"`{p.name}`: {e}", code="E034") from None
    if k == TILE_LIST:
        if not isinstance(value, list) or not value:
            raise ArgError(f"`{p.name}` must be a non-empty list of tensor views such as "
                           f"[a, b[:, 0:128]], got {_kind_name(value)}")
        item = Param(p.name, TILE)  # each element converts like a single view
        return tuple(convert(item, x, loc) for x in value)
    if k == NUMBER_LIST:
        items = value if isinstance(value, list) else None
        nums = [ops.parse_scalar(x) for x in items] if items else None
        if not nums or any(x is None or isinstance(x, bool) for x in nums):
            raise ArgError(f"`{p.name}` must be a non-empty list of numbers, got {value!r}")
        return tuple(float(x) for x in nums)
    if k in (SCALAR, TILE_OR_SCALAR):
        v = ops.parse_scalar(value)
        if v is None:
            raise ArgError(f"`{p.name}` must be a number, got {_kind_name(value)} {value!r}",
                           hint="numbers, or inf, -inf, nan, fp32.min, fp32.max")
        return float(v)
    if k == INT:
        if isinstance(value, bool) or not isinstance(value, int):
            v = ops.parse_scalar(value) if isinstance(value, str) else None
            if isinstance(v, int):
                return v
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ArgError(f"`{p.name}` must be an integer, got {_kind_name(value)} {value!r}")
        return value
    if k == BOOL:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ArgError(f"`{p.name}` must be true or false, got {value!r}")
    if k == OP:
        name = ops.normalize_op(value) if isinstance(value, str) else None
        allowed = p.choices or tuple(ops.OPS)
        if name is None or name not in allowed:
            raise ArgError(f"`{p.name}`: unknown or unsupported operator {value!r}",
                           hint="allowed: " + ", ".join(allowed), code="E025")
        return name
    if k == ENUM:
        if isinstance(value, str):
            v = value.strip()
            for prefix in ENUM_PREFIXES:
                if v.startswith(prefix):
                    v = v[len(prefix):]
            if p.choices and v in p.choices:
                return v
            if p.choices and v.endswith("_engine") and v[:-7] in p.choices:
                return v[:-7]  # nisa.vector_engine: NKI's (deprecated) engine constants
        raise ArgError(f"`{p.name}`: {value!r} is not allowed",
                       hint="allowed: " + ", ".join(map(str, p.choices or ())), code="E025")
    if k == PATTERN:
        ok = isinstance(value, list) and value and all(
            isinstance(pair, list) and len(pair) == 2 and all(
                isinstance(x, int) and not isinstance(x, bool) for x in pair) for pair in value)
        if not ok:
            raise ArgError(f"`{p.name}` must be a list of [step, num] integer pairs, "
                           f"e.g. [[-1, 512]], got {value!r}")
        return tuple((int(a), int(b)) for a, b in value)
    if k == INT_LIST:
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if not items and p.default == ():  # NKI's `()` default: not given
            return ()
        if not items or not all(isinstance(x, int) and not isinstance(x, bool) for x in items):
            raise ArgError(f"`{p.name}` must be an integer or a list of integers, got {value!r}")
        return tuple(items)
    if k == DTYPE:
        d = dt.lookup(value) if isinstance(value, str) else None
        if d is None:
            raise ArgError(f"`{p.name}`: unknown dtype {value!r}",
                           hint="allowed: " + ", ".join(dt.DTYPES), code="E013")
        return d
    if k == MASK:
        if not isinstance(value, str):
            raise ArgError(f"`{p.name}` must be a predicate string such as \"p < 64 and f < 256\"")
        return value
    raise AssertionError(f"unknown param kind {k}")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class ParamTables:
    """Lookups over one spec's params for the per-instruction loops of the front end and
    the checker (InstructionDef.param is a linear search)."""

    by_name: dict  # keyword -> Param
    defaults: dict  # keyword -> default, every param
    required: tuple  # the required Params
    views: tuple  # the TILE / TILE_OR_SCALAR / TILE_LIST Params: the only ones bound to views
    names: tuple  # every keyword, in declaration order


_TABLES: dict[str, tuple] = {}


def param_tables(spec: InstructionDef) -> ParamTables:
    """spec's ParamTables, built once."""
    hit = _TABLES.get(spec.name)
    if hit is None or hit[0] is not spec:
        ps = spec.params
        hit = _TABLES[spec.name] = (spec, ParamTables(
            {p.name: p for p in ps}, {p.name: p.default for p in ps},
            tuple(p for p in ps if p.required),
            tuple(p for p in ps if p.kind in VIEW_KINDS), tuple(p.name for p in ps)))
    return hit[1]


def normalize_name(name: str) -> str:
    """Strip the `nisa.`/`nl.` prefixes users copy from kernels."""
    for prefix in NAME_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


# ---- the bound instruction: what check/execute/cycles receive --------------------------------
@dataclass(slots=True)
class Bound:
    """An instruction with its operands resolved against the declared tensors.

    `args` is read-only once bound: validate.bind gives instructions bound to identical
    values (and engine) one shared dict, so later passes may memoise per `id(b.args)`."""

    inst: Instruction
    spec: InstructionDef
    args: dict[str, Any]  # every param: Resolved for tiles, typed values otherwise
    mask: Any = None  # compiled mask (nkirun.checker.mask), or None
    engine: str = ""
    extra: dict = field(default_factory=dict)  # per-instruction precomputed data

    def __getitem__(self, key: str) -> Any:
        return self.args[key]

    def get(self, key: str, default=None):
        v = self.args.get(key)
        return default if v is None else v

    def tile(self, key: str) -> Resolved | None:
        v = self.args.get(key)
        return v if isinstance(v, Resolved) else None

    @property
    def index(self) -> int:
        return self.inst.index

    @property
    def op(self) -> str:
        return self.spec.name

    def loc(self, key: str | None = None) -> Loc:
        return self.inst.arg_loc(key) if key else self.inst.loc

    def err(self, code: str, message: str, key: str | None = None, hint: str | None = None
            ) -> Diagnostic:
        return error(code, f"{self.op}: {message}", self.loc(key), self.index, hint)

    def warn(self, code: str, message: str, key: str | None = None, hint: str | None = None
             ) -> Diagnostic:
        return warning(code, f"{self.op}: {message}", self.loc(key), self.index, hint)


def out_dtype(b: Bound) -> dt.DType:
    """The dtype an instruction's result is cast to before it is stored into dst."""
    d = b.get("dtype")
    if d is not None:
        return d
    return b.tile("dst").dtype


def common_tail(*, mask: bool = True, dtype: bool = True) -> tuple[Param, ...]:
    """The optional `mask`/`dtype` keywords most legacy instructions take."""
    tail = []
    if mask:
        tail.append(Param("mask", MASK, doc="compile-time predicate over p and the free "
                                            "indices; masked-off dst elements keep their value"))
    if dtype:
        tail.append(Param("dtype", DTYPE, doc="cast the result to this dtype before it is "
                                              "stored (dst's own dtype applies last)"))
    return tuple(tail)


def views_of(value) -> tuple:
    """The Resolved views a bound value holds: one, a TILE_LIST's, or none."""
    if isinstance(value, Resolved):
        return (value,)
    if isinstance(value, tuple) and value and isinstance(value[0], Resolved):
        return value
    return ()
