"""The trace of one kernel: what `nl` and `nisa` calls record into the IR Builder.

Readings:
- A tensor is named by its `name=` (made a valid identifier), else by the variable the
  `nl.ndarray` call is assigned to on its source line, else `t<line>`; a name that is
  taken gets `_1`, `_2`, ... (a loop allocating `tile = nl.ndarray(...)` gives `tile`,
  `tile_1`, ...). A tensor becomes part of the program when an instruction first uses it,
  located at its `nl.ndarray` line.
- A launch grid (`kernel[g]`, `--grid`) traces the kernel once per program instance into
  one program, in order. `shared_hbm` tensors are shared: the k-th `shared_hbm`
  allocation of every instance is the same tensor as the first instance's. The outputs
  are what the first instance returns.
- `--lnc 2` traces the kernel once per core of a two-core program (`lnc = 2`): the same,
  but each instance's instructions form its core's stream, and its SBUF, PSUM and
  private-HBM tensors belong to that core (checker/cores.py).
"""
from __future__ import annotations

import linecache
import os
import re

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.diagnostics import Loc, error
from nkirun.ir import instruction_at, tensor_at, view_at
from nkirun.isa import REGISTRY
from nkirun.isa.spec import TILE, TILE_OR_SCALAR, ArgError, convert, param_tables
from nkirun.source.builder import Builder
from nkirun.source.forms import FormLocs
from nkirun.source.kernel.bounds import TraceBudget
from nkirun.source.kernel import call_forms, consts
from nkirun.source.kernel import tile_ops  # noqa: F401 (gives ndarray its operators)
from nkirun.source.kernel.lowering import ir_index, lowered_index  # noqa: F401 (tests)
from nkirun.source.kernel.control import VirtualRegister
from nkirun.source.kernel.tensor import TRACERS, _NO_INDEX, TensorRec, _new_view, ndarray, \
    rec_kind, rec_of_kind
from nkirun.source.kernel.tensor import current, tracing  # noqa: F401 (modules import them)
from nkirun.source.kernel.unsupported import call_loc, kernel_error

_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")
_BAD_CHARS = re.compile(r"\W")
_CURRENT = TRACERS  # (tensor.py's, per thread: nl.ndarray reads it)
_VIEW_KINDS = frozenset({TILE, TILE_OR_SCALAR})
_INT = frozenset({int})
_HASHABLE = frozenset({str, int, float, bool})
_UNSET = object()


class Tracer:
    def __init__(self, path: str, target: str, grid: tuple = ()):
        self.builder = Builder(path, os.getcwd(), ())
        self.builder.version = 1
        self.builder.target = target
        self.target = target
        self.grid = tuple(grid)
        self.instance = ()  # program ids of the instance being traced
        self.used_names: dict[str, int] = {}
        self.shared: list[TensorRec] = []  # shared_hbm allocations of the first instance
        self.shared_at = 0
        self.identity: dict = {}  # (n, dtype) -> identity-matrix tensor
        # (op, id(loc), keyword, ...) -> _call_site: a loop repeats the same calls
        self.sites: dict = {}
        self.forms: dict = {}  # call_forms.form_key -> FormLocs (its template: the args)
        self.families: dict = {}  # call_forms.family_key -> the FormLocs of its first form
        # (id(call site Loc), shape, dtype, buffer, name) as given -> (shape, nl dtype,
        # buffer, base name) of a non-shared allocation the plain path made (a loop's
        # nl.ndarray repeats its call)
        self.alloc_plans: dict = {}
        self.lnc = 1  # 2: a two-core trace; self.builder.core is the core being traced
        self.placement = "compiler"  # "explicit" once the kernel pins an on-chip tensor
        self.budget = TraceBudget(path)  # (its next_check: one comparison per instruction)

    def __enter__(self):
        from nkirun.hw.targets import TARGETS  # (set after modules.installed() restored it)
        consts.tile_size.sbuf_bytes_per_partition = TARGETS[self.target].sbuf_bytes_per_partition
        _CURRENT.append(self)
        return self

    def __exit__(self, *exc):
        _CURRENT.pop()

    # ---- names and tensors ---------------------------------------------------------------
    def unique(self, base: str) -> str:
        return self._unique_identifier(_identifier(base))

    def _unique_identifier(self, base: str) -> str:
        n = self.used_names.get(base)
        if n is None:
            self.used_names[base] = 0
            return base
        while True:
            n += 1
            name = f"{base}_{n}"
            if name not in self.used_names:
                self.used_names[base] = n
                self.used_names[name] = 0
                return name

    def allocate(self, shape, dtype, buffer, name="", init=None, loc=None) -> TensorRec:
        key = None
        if loc is None:  # (a call site's Loc lives as long as its code: keyed by its id)
            loc = call_loc(2)
            if shape.__class__ is tuple and name.__class__ is str and speed.ALLOC_PLANS:
                key = (id(loc), shape, dtype, buffer, name)
            try:
                plan = self.alloc_plans.get(key)
            except TypeError:  # an unhashable dtype or buffer: the plain path says why
                plan = key = None
            if plan is not None and _INT.issuperset(map(type, shape)) and init is None:
                # what the plain path below would work out
                return rec_of_kind(self._unique_identifier(plan[0]), plan[1], loc,
                                   self.builder.core if self.lnc > 1 else None)
        shape = (shape,) if isinstance(shape, int) else shape
        if shape.__class__ is not tuple or shape not in _SHAPES_SEEN:
            shape = _checked_shape(shape)
        d = consts.to_dtype(dtype)
        if d is None or d.nkirun is None:
            raise kernel_error("E605", f"dtype {dtype!r} is not supported by nkirun",
                               hint="supported: " + ", ".join(
                                   n for n, v in consts.DTYPES.items() if v.nkirun))
        buf = consts.to_buffer(buffer)
        if buf is None:
            raise kernel_error("E603", f"nl.ndarray: unknown buffer {buffer!r}",
                               hint="nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm, nl.private_hbm")
        if buf is consts.shared_hbm and self.instance and any(self.instance):
            return self._shared(shape, d)
        base = str(name) if name else _source_name(loc)
        rec = TensorRec(self.unique(base), shape, d, buf,
                        loc, init, self.builder.core if self.lnc > 1 and
                        buf is not consts.shared_hbm else None)
        if buf is consts.shared_hbm:
            self.shared.append(rec)
        elif key is not None and len(self.alloc_plans) < call_forms.FORMS_MAX:
            self.alloc_plans[key] = (_identifier(base), rec_kind(rec))
        return rec

    def _shared(self, shape, d) -> TensorRec:
        if self.shared_at >= len(self.shared) or self.shared[self.shared_at].shape != shape:
            raise kernel_error("E603", "every program instance must allocate the same "
                               "shared_hbm tensors in the same order")
        rec = self.shared[self.shared_at]
        self.shared_at += 1
        return rec

    def declare(self, rec: TensorRec, output: bool = False) -> None:
        loc = rec.loc
        rec.declared = True
        if rec.init is None and not output and rec.name not in self.builder.tensors:
            # allocate() checked the shape, dtype, buffer and name: the Builder's checks of
            # a YAML declaration cannot fail here
            self.builder.tensors[rec.name] = tensor_at(rec.name, _BUFFER_IR[rec.buffer],
                                                       rec.shape, rec.decl.dtype, loc, rec.core)
            return
        fields = {"buffer": (rec.buffer.ir, loc, loc), "shape": (list(rec.shape), loc, loc),
                  "dtype": (rec.dtype.nkirun.name, loc, loc)}
        if rec.init is not None and rec.init[0] in ("file", "data"):
            fields[rec.init[0]] = (rec.init[1], loc, loc)
        if output:
            fields["output"] = (True, loc, loc)
        if rec.core is not None:
            fields["core"] = (rec.core, loc, loc)
        self.builder.tensor(rec.name, fields, loc)
        rec.declared = True

    # ---- instructions --------------------------------------------------------------------
    def emit(self, op: str, values: dict, loc: Loc, tables=None, form=_UNSET) -> None:
        """Record an nki.isa call (`form`: its call_forms.form_key when already worked out)."""
        if self.builder.count >= self.budget.next_check:
            self.budget.checkpoint(self.builder, loc)
        if form is _UNSET:
            form = call_forms.form_key(op, values, loc) if speed.CALL_FORMS else None
        family = None
        if form is not None:
            locs = self.forms.get(form[0])
            if locs is not None:  # an earlier call of this form: its args, our tensors
                call_forms.record(self, op, locs, form[1], loc)
                return
            if speed.OFFSET_FAMILIES and len(self.forms) < call_forms.FORMS_MAX:
                family = call_forms.family_key(form[0])
                locs = self.families.get(family)
                if locs is not None:  # a new form of a known family: its args, our views
                    self.forms[form[0]] = call_forms.from_family(self, op, values, loc, locs)
                    return
        if tables is None:
            spec = REGISTRY.get(op)
            tables = param_tables(spec) if spec is not None else None
        if tables is None or not self._emit_fast(op, tables, values, loc, form):
            self._emit_plain(op, values, loc)
        elif family is not None and form[0] in self.forms:
            self.families[family] = self.forms[form[0]]

    def _emit_fast(self, op: str, tables, values: dict, loc: Loc, form=None) -> bool:
        """The IR instruction the Builder would make from these values, built directly
        (Views from the handles, no operand text to parse); False when anything needs the
        Builder's diagnostics (an unknown keyword, a value that does not convert).
        `form`: the call's _form_key, to remember it by (emit's shortcut)."""
        converted = self.builder._converted
        view_keys = _view_keys(tables)
        args = {}
        for key, v in values.items():
            if v is None:
                continue
            if v.__class__ is ndarray:
                if key not in view_keys:  # an unknown keyword, or one that takes no tile
                    return False
                rec = v._rec
                index = v._ir
                if index is _NO_INDEX or not rec.declared:
                    args[key] = self.operand(v, loc)
                else:
                    args[key] = view_at(rec.name, index, loc)
                continue
            p = tables.by_name.get(key)
            if p is None:
                return False
            raw = v.ir if v.__class__ is consts.Token else self.raw(v)
            ckey = (op, key, raw.__class__, raw) if raw.__class__ in _HASHABLE and (
                raw or raw.__class__ is not float) else None  # (-0.0 == 0.0: not keyed)
            hit = converted.get(ckey) if ckey is not None else None
            if hit is None:
                if p.kind in _VIEW_KINDS and isinstance(raw, str):
                    return False
                try:
                    hit = (convert(p, raw, loc),)
                except ArgError:
                    return False
                if ckey is not None:
                    converted[ckey] = hit
            args[key] = hit[0]
        key = (op, id(loc), *args)  # (call sites' Locs are kept alive by frame_loc's table)
        site = self.sites.get(key)
        if site is None or site[0] is not loc:
            site = self.sites[key] = _call_site(tables, args, loc)
        if not site[2]:  # a required keyword is missing: the Builder reports it
            return False
        full = tables.defaults.copy()
        full.update(args)
        arg_locs = site[1]
        if form is not None and len(self.forms) < call_forms.FORMS_MAX:
            # (nothing changes an Instruction's args: the form's later ones share them)
            arg_locs = FormLocs(arg_locs, _tensor_keywords(values), full)
            self.forms[form[0]] = arg_locs
        b = self.builder
        b.instructions.append(instruction_at(op, full, b.count, loc, arg_locs, None, b.core))
        b.count += 1
        return True

    def _emit_plain(self, op: str, values: dict, loc: Loc) -> None:
        args = {}
        for key, v in values.items():
            raw = self.raw(v)
            if raw is not None:
                args[key] = (raw, loc)
        self.builder.instruction(op, args, loc)

    def operand(self, v: ndarray, loc: Loc):
        """The IR View of handle v (declaring its tensor, and an index tensor, on first use)."""
        if not v._rec.declared:
            self.declare(v._rec)
        index = v._ir
        if index is _NO_INDEX:
            index = v._ir = lowered_index(v)
        return view_at(v._rec.name, index, loc)

    def raw(self, v):
        """A keyword's plain front-end value (what YAML would give)."""
        if v is None or isinstance(v, (bool, str)) and not isinstance(v, consts.NlDType):
            return v
        if isinstance(v, ndarray):
            return str(self.operand(v, Loc()))
        if isinstance(v, consts.Token):
            return v.ir
        if isinstance(v, consts.NL_DTYPES):
            return v.nkirun.name if v.nkirun is not None else str(v)
        if isinstance(v, VirtualRegister):  # a register (kernel/control.py)
            return v.name
        if isinstance(v, (int, float)):
            return v
        if isinstance(v, (list, tuple)):
            return [self.raw(x) for x in v]
        if hasattr(v, "item") and callable(v.item):  # a NumPy scalar
            if getattr(v, "size", 1) != 1:  # a whole array passed where a tile goes
                raise kernel_error("E603", f"a NumPy array of shape {list(v.shape)} is not "
                                   "an NKI tensor", hint="allocate one with nl.ndarray and "
                                   "fill it (or use nl.shared_constant(array))")
            return v.item()
        name = getattr(v, "__name__", None)  # np.exp and friends
        return name if isinstance(name, str) else v

    def diagnostic(self, code: str, message: str, loc: Loc, hint: str | None = None):
        self.builder.diags.append(error(code, message, loc, hint=hint))


_BUFFER_IR = {b: b.ir for b in consts.BUFFERS.values()}  # Buffer -> its IR name


_VIEW_KEYS: dict = {}  # id(ParamTables) -> (tables, the keywords that take a tile)


def _tensor_keywords(values: dict) -> tuple:
    """The keywords holding a traced tensor's view, in call order (a form's `views`: the
    tensors call_forms.form_key lists)."""
    return tuple(k for k, v in values.items() if v.__class__ is ndarray)


def _view_keys(tables) -> frozenset:
    hit = _VIEW_KEYS.get(id(tables))
    if hit is None or hit[0] is not tables:
        hit = _VIEW_KEYS[id(tables)] = (tables, frozenset(
            n for n, p in tables.by_name.items() if p.kind in _VIEW_KINDS))
    return hit[1]


def _call_site(tables, args: dict, loc: Loc) -> tuple:
    """(loc, arg_locs, whether every required keyword is given) of an instruction call with
    these keywords: arg_locs is one dict shared by the calls (nothing changes an
    Instruction's arg_locs)."""
    return loc, dict.fromkeys(args, loc), all(p.name in args for p in tables.required)


_IDENTIFIERS: dict = {}  # name as given -> as an identifier (a loop repeats the same few)


def _identifier(base: str) -> str:
    """`base` with every non-word character made `_`, and `t` before a leading digit."""
    hit = _IDENTIFIERS.get(base)
    if hit is None:
        hit = _BAD_CHARS.sub("_", base) or "t"
        if hit[0].isdigit() or hit.lower() in ("inf", "nan"):  # not a name (E018)
            hit = "t" + hit
        if len(_IDENTIFIERS) < 10_000:
            _IDENTIFIERS[base] = hit
    return hit


_NAMES: dict = {}  # (file, line) -> the name its allocations get


_SHAPES_SEEN: set = set()  # shapes already checked (traces allocate the same few shapes)
SHAPES_SEEN_MAX = 10_000  # (a long-lived caller tracing ever new shapes stays bounded)


def _checked_shape(shape) -> tuple:
    try:
        shape = tuple(int(n.__index__()) for n in shape)
    except (TypeError, AttributeError):
        raise kernel_error("E603", f"nl.ndarray: shape must be a tuple of ints, got "
                           f"{shape!r}") from None
    if not shape or any(n <= 0 for n in shape):
        raise kernel_error("E603", f"nl.ndarray: shape must hold positive sizes, got "
                           f"{list(shape)}")
    if len(_SHAPES_SEEN) < SHAPES_SEEN_MAX:
        _SHAPES_SEEN.add(shape)
    return shape


def _source_name(loc: Loc) -> str:
    key = (loc.file, loc.line)
    name = _NAMES.get(key)
    if name is None:
        line = linecache.getline(loc.file, loc.line) if loc.line else ""
        m = _ASSIGN.match(line)
        name = _NAMES[key] = m.group(1) if m else f"t{loc.line}"
    return name


def new_tensor(rec: TensorRec) -> ndarray:
    """A handle on the whole of `rec`."""
    v = _new_view(rec, rec.whole)
    v._ir = None
    return v
