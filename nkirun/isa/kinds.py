"""Parameter kinds: what a keyword's value may be, as small objects.

Each kind knows three things about its values — how a front-end value (str/int/float/bool/
list, as YAML, the text form or a Python kernel gives it) becomes the typed value the
instruction sees (`convert`), its JSON Schema for editors (`json_schema`) and the words
`nkirun explain` uses for it (`text`). A new kind is one class here; the front ends, the
schema and `explain` ask the kind instead of switching on its name.
"""
from __future__ import annotations

import re
from typing import Any

from nkirun.hw import alu as ops
from nkirun.hw import dtypes as dt
from nkirun.diagnostics import Loc
from nkirun.views.operands import ViewSyntaxError, parse_view

# Prefixes stripped from ENUM values (nisa.reduce_cmd.reset_reduce, nl.engine.gpsimd,
# nisa.dge_mode.hwdge); activation functions come as np.exp too.
ENUM_PREFIXES = ("nisa.", "nki.isa.", "reduce_cmd.", "engine.", "dge_mode.", "oob_mode.",
                 "matmul_perf_mode.", "nl.", "np.", "numpy.")

VIEW_PATTERN = r"^\s*[A-Za-z_][A-Za-z0-9_.]*\s*(\[[^\[\]]*\]|\.ap\s*\(.*\))?\s*$"
# The YAML mapping spelling of an access pattern (docs/views.md).
AP_MAPPING = {
    "type": "object", "required": ["tensor", "pattern"], "additionalProperties": False,
    "properties": {
        "tensor": {"type": "string"},
        "pattern": {"type": "array", "minItems": 1, "maxItems": 5,
                    "items": {"type": "array", "minItems": 2, "maxItems": 2,
                              "items": {"type": "integer"}}},
        "offset": {"type": "integer", "minimum": 0},
        "dtype": {"type": "string"},
        "scalar_offset": {"type": "string"}, "vector_offset": {"type": "string"},
        "indirect_dim": {"type": "integer"},
        "indirect_stride": {"type": "integer", "minimum": 1},
    },
}
INT_STRING = r"^\s*[+-]?(0[xXoObB][0-9a-fA-F_]+|[0-9][0-9_]*)\s*$"
NUM_STRING = r"^\s*[+-]?([0-9][0-9_]*\.?[0-9_]*|\.[0-9][0-9_]*)([eE][+-]?[0-9]+)?\s*$"
# what an editor says when a value does not match (instead of the regular expression)
VIEW_MESSAGE = ("a tensor view: a declared tensor name, optionally indexed with ints, "
                "start:stop[:step] and `:`, e.g. `t` or `t[:, 0:128]`, or an access pattern "
                "`t.ap([[step, num], ...], offset=0)`")
INT_MESSAGE = "an integer (or a string holding one)"
NUM_MESSAGE = "a number, or one of inf, -inf, nan, fp32.min, fp32.max"


class ArgError(ValueError):
    """A keyword value that its kind cannot accept (becomes a located diagnostic)."""

    def __init__(self, message: str, hint: str | None = None, code: str = "E024"):
        super().__init__(message)
        self.hint = hint
        self.code = code


def value_kind(value) -> str:
    """`value`'s type in a user's words."""
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a mapping", type(None): "nothing"}.get(type(value),
                                                                       type(value).__name__)


def suggest(value, allowed: tuple) -> str:
    """`did you mean `less`? allowed: ...` for a misspelt operator or enum value."""
    from nkirun.diagnostics import did_you_mean
    word = value.strip().split(".")[-1] if isinstance(value, str) else value
    guess = did_you_mean(word, allowed)
    listed = "allowed: " + ", ".join(allowed)
    return f"{guess} {listed}" if guess else listed


def _alternatives(names, prefixes=()) -> str:
    """An anchored regex: one of `names`, optionally after one of `prefixes`."""
    body = "|".join(re.escape(n) for n in sorted(set(names), key=lambda n: (-len(n), n)))
    pre = "|".join(re.escape(p) for p in prefixes)
    return rf"^({pre})?({body})$" if pre else rf"^({body})$"


def names_or_prefixed(names, prefixes, description: str) -> dict:
    """Canonical names as an enum (editors complete them) or any accepted spelling."""
    shown = ", ".join(f"`{n}`" for n in sorted(names)[:12]) + (", ..." if len(names) > 12
                                                                 else "")
    return {"description": description,
            "anyOf": [{"enum": sorted(names)},
                      {"type": "string", "pattern": _alternatives(names, prefixes),
                       "patternErrorMessage": f"one of {shown}"
                       + (f" (prefixes {', '.join(prefixes)} allowed)" if prefixes else "")}]}


def _nocase(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)


SCALAR_SCHEMA = {"anyOf": [
    {"type": "number"},
    {"type": "string", "pattern": "^\\s*(" + "|".join(
        _nocase(k) for k in sorted(ops.SPECIAL_SCALARS, key=lambda k: (-len(k), k))) + ")\\s*$",
     "patternErrorMessage": NUM_MESSAGE},
    {"type": "string", "pattern": NUM_STRING, "patternErrorMessage": NUM_MESSAGE}]}


def tile_doc(p) -> str:
    bufs = sorted(p.buffers) if p.buffers is not None else ["psum", "sbuf"]
    extra = [f"buffers: {', '.join(bufs)}"]
    if p.dtypes is not None:
        extra.append(f"dtypes: {', '.join(sorted(p.dtypes))}")
    if p.per_partition:
        extra.append("shape (P, 1)")
    if p.out:
        extra.append("written by the instruction")
    return (f"{p.doc} — a tensor view such as `t`, `t[:, 0:128]` or "
            f"`t.ap([[512, 128], [1, 512]], offset=0)` ({'; '.join(extra)})")


def op_names(allowed) -> list[str]:
    """Every spelling of the allowed operators: names and the aliases that map onto them."""
    return sorted(set(allowed) | {a for a, t in ops.ALIASES.items() if t in allowed})


class Kind:
    """One parameter kind. `is_view`: bound to a resolved tensor view (a tile operand);
    `is_register`: a register name (isa/registers.py)."""

    name = ""
    text = ""
    is_view = False
    is_register = False

    def convert(self, p, value: Any, loc: Loc) -> Any:
        raise NotImplementedError

    def json_schema(self, p) -> dict:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


class Tile(Kind):
    name, text, is_view = "tile", "tile", True

    def convert(self, p, value, loc):
        if isinstance(value, dict):  # the mapping spelling of an access pattern
            from nkirun.views import access
            try:
                return access.view_from_mapping(value, loc, parse_view)
            except (access.APSyntaxError, ViewSyntaxError) as e:
                raise ArgError(f"`{p.name}`: {e}", code="E034") from None
        if not isinstance(value, str):
            raise ArgError(f"`{p.name}` must be a tensor view such as `t` or `t[:, 0:128]`, "
                           f"got {value_kind(value)}" + (" (a number)" if self is TILE and isinstance(
                               value, (int, float)) and not isinstance(value, bool) else ""))
        try:
            return parse_view(value, loc)
        except ViewSyntaxError as e:
            raise ArgError(f"`{p.name}`: {e}", code="E034") from None

    def json_schema(self, p):
        return {"anyOf": [{"type": "string", "pattern": VIEW_PATTERN,
                           "patternErrorMessage": VIEW_MESSAGE}, AP_MAPPING],
                "description": tile_doc(p)}


class Scalar(Kind):
    name, text = "scalar", "number"

    def convert(self, p, value, loc):
        v = ops.parse_scalar(value)
        if v is None:
            raise ArgError(f"`{p.name}` must be a number, got {value_kind(value)} {value!r}",
                           hint="numbers, or inf, -inf, nan, fp32.min, fp32.max")
        return float(v)

    def json_schema(self, p):
        return dict(SCALAR_SCHEMA, description=p.doc + " — a number, or inf, -inf, nan, "
                    "fp32.min, fp32.max")


class TileOrScalar(Tile):
    name, text, is_view = "tile_or_scalar", "tile or number", True

    def convert(self, p, value, loc):
        if isinstance(value, dict) or (isinstance(value, str)
                                       and ops.parse_scalar(value) is None):
            return Tile.convert(self, p, value, loc)
        return SCALAR.convert(p, value, loc)

    def json_schema(self, p):
        return {"description": tile_doc(p) + ", or a number",
                "anyOf": [SCALAR_SCHEMA, {"type": "string", "pattern": VIEW_PATTERN,
                                          "patternErrorMessage": VIEW_MESSAGE}, AP_MAPPING]}


class Int(Kind):
    name, text = "int", "int"

    def convert(self, p, value, loc):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        v = ops.parse_scalar(value) if isinstance(value, str) else None
        if isinstance(v, int):
            return v
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ArgError(f"`{p.name}` must be an integer, got {value_kind(value)} {value!r}")

    def json_schema(self, p):
        return {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": INT_STRING,
                                                "patternErrorMessage": INT_MESSAGE}],
                "description": p.doc}


class Bool(Kind):
    name, text = "bool", "bool"

    def convert(self, p, value, loc):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ArgError(f"`{p.name}` must be true or false, got {value!r}")

    def json_schema(self, p):
        return {"anyOf": [{"type": "boolean"}, {"enum": ["true", "false", "True", "False"]}],
                "description": p.doc}


class Op(Kind):
    name, text = "op", "operator"

    def convert(self, p, value, loc):
        name = ops.normalize_op(value) if isinstance(value, str) else None
        allowed = p.choices or tuple(ops.OPS)
        if name is None or name not in allowed:
            raise ArgError(f"`{p.name}`: unknown or unsupported operator {value!r}",
                           hint=suggest(value, allowed), code="E025")
        return name

    def json_schema(self, p):
        return names_or_prefixed(op_names(p.choices or tuple(ops.OPS)), ops.PREFIXES, p.doc)


class Enum(Kind):
    name, text = "enum", "one of"

    def convert(self, p, value, loc):
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
                       hint=suggest(value, tuple(map(str, p.choices or ()))), code="E025")

    def json_schema(self, p):
        return names_or_prefixed([str(c) for c in p.choices or ()], ENUM_PREFIXES, p.doc)


class Pattern(Kind):
    name, text = "pattern", "[[step, num], ...]"

    def convert(self, p, value, loc):
        ok = isinstance(value, list) and value and all(
            isinstance(pair, list) and len(pair) == 2 and all(
                isinstance(x, int) and not isinstance(x, bool) for x in pair) for pair in value)
        if not ok:
            raise ArgError(f"`{p.name}` must be a list of [step, num] integer pairs, "
                           f"e.g. [[-1, 512]], got {value!r}")
        return tuple((int(a), int(b)) for a, b in value)

    def json_schema(self, p):
        return {"type": "array", "minItems": 1, "description": p.doc + " — [[step, num], ...]",
                "items": {"type": "array", "minItems": 2, "maxItems": 2,
                          "items": {"type": "integer"}}}


class IntList(Kind):
    name, text = "int_list", "int or list of ints"

    def convert(self, p, value, loc):
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if not items and p.default == ():  # NKI's `()` default: not given
            return ()
        if not items or not all(isinstance(x, int) and not isinstance(x, bool) for x in items):
            raise ArgError(f"`{p.name}` must be an integer or a list of integers, got {value!r}")
        return tuple(items)

    def json_schema(self, p):
        return {"anyOf": [{"type": "integer"},
                          {"type": "array", "minItems": 0 if p.default == () else 1,
                           "items": {"type": "integer"}}],
                "description": p.doc}


class Dtype(Kind):
    name, text = "dtype", "dtype"

    def convert(self, p, value, loc):
        d = dt.lookup(value) if isinstance(value, str) else None
        if d is None:
            raise ArgError(f"`{p.name}`: unknown dtype {value!r}",
                           hint="allowed: " + ", ".join(dt.DTYPES), code="E013")
        return d

    def json_schema(self, p):
        return names_or_prefixed(list(dt.DTYPES) + list(dt.ALIASES), dt.PREFIXES, p.doc)


class Mask(Kind):
    name, text = "mask", "mask predicate"

    def convert(self, p, value, loc):
        if not isinstance(value, str):
            raise ArgError(f"`{p.name}` must be a predicate string such as \"p < 64 and f < 256\"")
        return value

    def json_schema(self, p):
        return {"type": "string", "description": p.doc + ' — e.g. "p < 64 and f < 256"'}


class TileList(Kind):
    name, text, is_view = "tile_list", "list of tiles", True

    def convert(self, p, value, loc):
        if not isinstance(value, list) or not value:
            raise ArgError(f"`{p.name}` must be a non-empty list of tensor views such as "
                           f"[a, b[:, 0:128]], got {value_kind(value)}")
        return tuple(TILE.convert(p, x, loc) for x in value)  # each converts like one view

    def json_schema(self, p):
        return {"type": "array", "minItems": 1, "description": tile_doc(p) + ", in a list",
                "items": {"type": "string", "pattern": VIEW_PATTERN,
                          "patternErrorMessage": VIEW_MESSAGE}}


class NumberList(Kind):
    name, text = "number_list", "list of numbers"

    def convert(self, p, value, loc):
        nums = [ops.parse_scalar(x) for x in value] if isinstance(value, list) and value else None
        if not nums or any(x is None or isinstance(x, bool) for x in nums):
            raise ArgError(f"`{p.name}` must be a non-empty list of numbers, got {value!r}")
        return tuple(float(x) for x in nums)

    def json_schema(self, p):
        return {"type": "array", "minItems": 1, "items": SCALAR_SCHEMA, "description": p.doc}


class Label(Kind):
    """NKI's `name=` on every instruction: a label that names it in listings, traces, cost
    reports and messages; it changes nothing the instruction computes."""
    name, text = "label", "instruction name"

    def convert(self, p, value, loc):
        if not isinstance(value, str) or not value.strip():
            raise ArgError(f"`{p.name}` must be a non-empty string naming the instruction, "
                           f"got {value_kind(value)}", hint='e.g. name: "qk_max"')
        return value

    def json_schema(self, p):
        return {"type": "string", "minLength": 1, "description": p.doc}


TILE = Tile()  # a tensor view
TILE_OR_SCALAR = TileOrScalar()  # a view, or a compile-time float
SCALAR = Scalar()  # a compile-time number (inf, fp32.min, ... accepted)
INT = Int()
BOOL = Bool()
OP = Op()  # an ALU operator name (alu.OPS)
ENUM = Enum()  # one string of `choices`
PATTERN = Pattern()  # [[step, num], ...] access pattern
INT_LIST = IntList()  # an int or a list of ints (e.g. reduction axes)
DTYPE = Dtype()
MASK = Mask()  # a mask predicate string (nkirun/isa/mask.py)
TILE_LIST = TileList()  # a list of tensor views (dma_compute's srcs)
NUMBER_LIST = NumberList()  # a list of compile-time numbers (dma_compute's scales)
LABEL = Label()  # the `name=` every instruction accepts
