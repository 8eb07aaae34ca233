"""`nki.isa` for traced kernels: one function per instruction of nkirun's table
(`nkirun/isa/__init__.py` MODULES, read when the name is first used, so instructions
other modules add appear without a change here), the enums and the target queries.

Each call maps its positional arguments by NKI 0.6's signature order (the instruction's
`SPEC.nki.signature`, isa/nki_api.py), records the instruction with its NKI keyword names
into the trace, located at the calling line. Nothing here names an instruction: what is
particular to one (its pre-0.2 forms, a front-end function) is its spec's `nki`.

Readings:
- An NKI keyword that nkirun's instruction does not have is dropped when it holds NKI's
  default (and `name=`, a debug label, always); any other value is an E601 error naming
  it. Where NKI's default differs from nkirun's (range_select's reduce_cmd), NKI's is
  passed.
- An enum keyword (engine, dge_mode, oob_mode, reduce_cmd, dma_engine) also takes the
  member's integer value in NKI 0.6's enum classes (`dge_mode=3` is `dge_mode.none`), as
  nki-library passes it; an integer that is no member's value is refused (E025).
- `nki.isa.constants` holds the same enum namespaces as `nki.isa` (nki-library imports
  them from there).
- Calls return an `NkiInstruction`; `.depends_on()` is accepted and has no effect (the
  cost model orders instructions by their data and engines).
"""
from __future__ import annotations

import types

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.isa import REGISTRY
from nkirun.isa.nki_api import REQUIRED as _REQUIRED, UNSET as _UNSET, parameters
from nkirun.source.kernel import call_forms, consts, legacy, legacy_affine
from nkirun.source.kernel.session import _CURRENT, current
from nkirun.source.kernel.tensor import ndarray as _ndarray
from nkirun.source.kernel.unsupported import call_loc, kernel_error, unsupported



def signature(op: str, spec) -> list[tuple[str, object]]:
    """(name, NKI default or _REQUIRED) in NKI's positional order (`spec.nki.signature`,
    parsed once); nkirun's own order for an instruction NKI 0.6 does not document."""
    if not spec.nki.signature:
        return [(p.name, _REQUIRED if p.required else p.default) for p in spec.params
                if p.name not in ("mask", "dtype")]
    return list(parameters(spec.nki.signature))


_new = object.__new__


class NkiInstruction:
    """What an instruction call returns (NKI 0.6): `.depends_on()` has no effect here."""

    __slots__ = ("op", "index")

    def __init__(self, op: str, index: int):
        self.op, self.index = op, index

    def depends_on(self, *producers):
        return self

    def __repr__(self) -> str:
        return f"<nki.isa.{self.op} instruction {self.index}>"


# long: one closure per instruction over its tables, the whole call path in one place
def make_instruction(op: str):
    from nkirun.isa import REGISTRY
    spec = REGISTRY[op]
    sig = signature(op, spec)
    order = [n for n, _ in sig]
    ours = {p.name: p for p in spec.params}

    extras = {n: d for n, d in sig if n not in ours}  # NKI keywords nkirun lacks
    fill = [(n, d) for n, d in sig if n in ours and d is not _REQUIRED and d is not _UNSET
            and d is not None and not _same(d, ours[n].default)]  # NKI's default, not ours

    from nkirun.isa.spec import param_tables
    tables = param_tables(spec)

    # a tile dst may be left out (the pre-0.2 API returns the result); a register's may not
    has_dst = "dst" in ours and getattr(ours["dst"].kind, "is_view", False)
    required = [n for n, d in sig if d is _REQUIRED]
    tiles = frozenset(n for n in required if n in ours and getattr(ours[n].kind, "name",
                                                                   None) == "tile")
    legacy_order = spec.nki.legacy_signature.split() or [n for n in order if n != "dst"]
    plans: dict = {}  # keywords given, in order -> (extras among them, `fill` minus them)

    simple: dict = {}  # keywords given -> NKI defaults to fill, for keyword sets that need
    # nothing else (see _simple_plan): their calls skip the general path's steps
    positional: dict = {}  # (number of positional args, keywords) -> _positional_plan

    # long: every nki.isa call's path, its two shortcuts inline (a frame each would cost)
    def instruction(*args, **kwargs):
        tracer = _CURRENT.items[-1] if _CURRENT.items else current()  # (no frame: .items)
        loc = call_loc(2)
        values = kwargs  # a fresh dict per call
        if not args and speed.SIMPLE_CALLS:
            keys = tuple(kwargs)
            fill_in = simple.get(keys)
            if fill_in is None:
                fill_in = simple[keys] = _simple_plan(op, keys, extras, fill, has_dst)
            if fill_in is not False and (not has_dst or kwargs["dst"] is not None):
                out = _new(NkiInstruction)  # NkiInstruction(op, index), with no frame
                out.op, out.index = op, call_forms.simple_call(tracer, op, values, fill_in,
                                                               loc, tables)
                return out
        elif has_dst and speed.SIMPLE_CALLS:  # dst first, by position (NKI 0.2+)
            keys = (len(args), *kwargs)
            plan = positional.get(keys)
            if plan is None:
                plan = positional[keys] = _positional_plan(op, order, keys, extras, fill,
                                                           required, tiles)
            if plan is not False:
                for i in plan[2]:  # legacy.dst_first's part that looks at the values
                    if not isinstance(args[i], _ndarray):
                        break
                else:
                    values = dict(zip(plan[0], args))
                    values.update(kwargs)
                    out = _new(NkiInstruction)
                    out.op, out.index = op, call_forms.simple_call(tracer, op, values,
                                                                   plan[1], loc, tables)
                    return out
        names = order
        if has_dst and "dst" not in kwargs and \
                not legacy.dst_first(args, required, kwargs, tiles):
            names = legacy_order  # the pre-0.2 API: returns its result
        if args:
            if len(args) > len(names):
                raise kernel_error("E603", f"nki.isa.{op} takes at most {len(names)} "
                                   f"positional arguments ({', '.join(names)}), got "
                                   f"{len(args)}", loc=loc)
            values = dict(zip(names, args))
            for k, v in kwargs.items():
                if k in values:
                    raise kernel_error("E603", f"nki.isa.{op} got `{k}` twice", loc=loc)
                values[k] = v
        if values.get("name", 0) is None:  # name=None is NKI's default: no label
            del values["name"]
        for k in _INT_ENUMS.intersection(values):
            values[k] = _enum_member(k, values[k])
        _legacy_forms(op, values)
        result_dtype = _dtype_keyword(values, "dtype" in ours)
        plan = plans.get(tuple(values)) or _keyword_plan(plans, tuple(values), extras, fill)
        for k in plan[0]:
            v = values.pop(k)
            if v is not None and not _same(v, extras[k]):
                tracer.diagnostic("E601", f"nki.isa.{op}: `{k}={v!r}` is not supported by "
                                  "nkirun", loc, hint="leave it at its default")
        for k, d in plan[1]:
            values[k] = d
        if has_dst and values.get("dst") is None:
            return _returning(tracer, op, values, loc, tables, result_dtype)
        legacy.flush(tracer)
        index = tracer.builder.count
        legacy.record(tracer, op, values, loc, tables)
        return NkiInstruction(op, index)

    instruction.__name__ = instruction.__qualname__ = op
    instruction.__doc__ = f"nki.isa.{op}({', '.join(order)}): {spec.summary}"
    return instruction


def _enum_member(keyword: str, value):
    """An integer enum value -> the member's name (NKI 0.6's values, ENUM_VALUES)."""
    if type(value) is int:  # not bool: True/False are never enum values
        return ENUM_VALUES[keyword].get(value, value)
    return value


def _simple_plan(op: str, given: tuple, extras: dict, fill: list, has_dst: bool):
    """The NKI defaults to fill for a call by keywords `given` that the general path would
    only fill in: no NKI-only keyword, enum, `name=`, `dtype=`, `mask=` or pre-0.2 form
    among them, and dst given when the instruction has one; else False (the general
    path)."""
    if (any(k in extras or k in _INT_ENUMS for k in given) or "name" in given
            or "dtype" in given or "mask" in given
            or legacy_affine.general_only(op, given)  # a pre-0.2 form may hide there
            or (has_dst and "dst" not in given)):
        return False
    return [(k, d) for k, d in fill if k not in given]


def _positional_plan(op: str, order: list, keys: tuple, extras: dict, fill: list,
                     required: list, tiles: frozenset):
    """For a call with keys[0] positional arguments, dst first, and the keywords keys[1:]:
    (the names of the positional arguments, the NKI defaults to fill, the positions that
    must hold a tensor) when the general path would only name them (no more than the
    signature has, none given twice) and fill in (_simple_plan of those keywords); else
    False. legacy.dst_first(args, required, kwargs, tiles) is: the plan is not False for
    dst first's keywords and count, and args holds a tensor at each of those positions
    (tests/kernel/test_call_forms.py compares the two)."""
    n, given = keys[0], keys[1:]
    if n > len(order) or any(k in order[:n] for k in given):
        return False  # (the general path's E603)
    covered = set(required[:n]) | set(given)
    if n == 0 or not all(k in covered for k in required):
        return False  # (not dst first: legacy.dst_first says no whatever the values)
    names = tuple(order[:n])
    fill_in = _simple_plan(op, names + given, extras, fill, True)
    at = (0, *(i for i, k in enumerate(required[:n]) if k in tiles and i))
    return False if fill_in is False else (names, fill_in, at)


def _keyword_plan(plans: dict, given: tuple, extras: dict, fill: list) -> tuple:
    """For the keywords `given` (in call order): the NKI-only ones among them (checked and
    dropped), and the NKI defaults to fill in (the others of `fill`), kept in `plans`."""
    plan = plans[given] = ([k for k in given if k in extras],
                           [(k, d) for k, d in fill if k not in given])
    return plan


def _legacy_forms(op: str, values: dict) -> None:
    """The pre-0.2 forms the instruction's spec names (legacy_affine.py)."""
    for adapt in legacy_affine.adapters(op):
        adapt(values)


def _dtype_keyword(values: dict, ours: bool):
    """`dtype=` as an nl dtype (np.float32, "float32" and nl.float32 alike): passed on when
    the instruction has the keyword, else only the dtype of a result it allocates."""
    d = values.get("dtype")
    if d is not None:
        d = consts.to_dtype(d) or d
        if ours:
            values["dtype"] = d
    if not ours:
        values.pop("dtype", None)
    return d


def _returning(tracer, op, values, loc, tables, dtype):
    """A pre-0.2 call without dst=: allocate the result and return it (legacy.py)."""
    from nkirun.source.kernel.tensor import ndarray
    api = REGISTRY[op].nki  # the result's shape, buffer and dtype when not the inputs'
    shape, buffer = legacy.result_shape(op, values, api.result)
    if dtype is None:
        first = legacy.first_operand(values)  # (not an output operand such as dst_idx)
        if first is None:
            first = next((v for v in values.values() if isinstance(v, ndarray)), None)
        fixed = api.result_dtype  # (nc_matmul: float32, PSUM's)
        dtype = consts.DTYPES[fixed or "float32"] if fixed or first is None \
            else first.dtype
    result = ndarray(shape, dtype, buffer)
    values["dst"] = result
    return legacy.defer(tracer, result, op, values, loc, tables)


def _same(v, default) -> bool:
    if isinstance(v, consts.Token):
        v = v.ir
    if isinstance(v, (list, tuple)) and isinstance(default, (list, tuple)):
        return list(v) == list(default)
    return type(v) is type(default) and v == default or str(v) == str(default)


# ---- the module ---------------------------------------------------------------------------
ENUMS = {
    "engine": ("tensor", "vector", "scalar", "gpsimd", "dma", "sync", "unknown"),
    "reduce_cmd": ("idle", "reset", "reduce", "reset_reduce", "load_reduce"),
    "dge_mode": ("unknown", "swdge", "hwdge", "none"),
    "oob_mode": ("error", "skip"),
    "matmul_perf_mode": ("none", "double_row"),
    "dma_engine": ("dma", "gpsimd_dma"),
}

# The members' integer values in NKI 0.6's enum classes (nki.isa API reference, the
# `class engine(Enum)` ... definitions); matmul_perf_mode's values are its names.
ENUM_VALUES = {
    "engine": {0: "unknown", 1: "tensor", 2: "scalar", 3: "gpsimd", 4: "dma", 5: "vector",
               6: "sync"},
    "reduce_cmd": {0: "idle", 1: "reset", 2: "reduce", 3: "reset_reduce", 4: "load_reduce"},
    "dge_mode": {0: "unknown", 1: "swdge", 2: "hwdge", 3: "none"},
    "oob_mode": {0: "error", 1: "skip"},
    "dma_engine": {1: "dma", 2: "gpsimd_dma"},
}
_INT_ENUMS = frozenset(ENUM_VALUES)


class NkiValidationError(Exception):
    """Raised when hardware constraints are violated (NKI 0.6)."""


def build_module(name: str = "nki.isa") -> types.ModuleType:
    m = _IsaModule(name)
    m.__doc__ = "nkirun's nki.isa (see docs/kernels.md)"
    m.__path__ = []  # a package: `import nki.isa.constants` works
    m._made_on_use = {}  # name -> the instruction function __getattr__ made
    m.constants = types.ModuleType(f"{name}.constants", "the enums of nki.isa (NKI 0.6)")
    for enum_name, members in ENUMS.items():
        namespace = consts.EnumNamespace(f"nki.isa.{enum_name}", members)
        setattr(m, enum_name, namespace)
        setattr(m.constants, enum_name, namespace)
    m.nc_version = consts.NcVersion()
    for short in ("tensor", "vector", "scalar", "gpsimd", "unknown"):
        setattr(m, f"{short}_engine", getattr(m.engine, short))
    m.NkiInstruction = NkiInstruction
    m.NkiValidationError = NkiValidationError

    def get_nc_version():
        from nkirun.source.kernel.session import current
        return getattr(m.nc_version, consts.TARGET_VERSION.get(current().target, "gen3"))

    def get_nc_sub_version():
        return 0

    m.get_nc_version, m.get_nc_sub_version = get_nc_version, get_nc_sub_version
    return m


class _IsaModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in REGISTRY and REGISTRY[name].nki.module == "nki.isa":
            fn = _front_end(REGISTRY[name].nki.front_end) or make_instruction(name)
            setattr(self, name, fn)
            self._made_on_use[name] = fn  # (kept when modules.py restores the module)
            return fn
        raise unsupported(f"nki.isa.{name}")

    def __dir__(self):
        return sorted(set(super().__dir__())
                      | {n for n in REGISTRY if REGISTRY[n].nki.module == "nki.isa"})


def _front_end(path: str):
    """The kernel front-end function `package.module:function` (NkiApi.front_end), or None:
    register_alloc returns the register it allocates (kernel/control.py)."""
    if not path:
        return None
    from importlib import import_module
    module, _, function = path.partition(":")
    return getattr(import_module(module), function)
