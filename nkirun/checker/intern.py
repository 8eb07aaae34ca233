"""Interning for bind: operands equal in value share what was computed for them.

A traced kernel allocates a new tile in every loop iteration, so its instructions name
ever new tensors while their operands keep the same few layouts (buffer, shape, dtype and
index). Everything bind decides about an operand except which tensor it is depends only on
that layout, and every rule (the parameters' rules and the instruction's `check`) depends
only on the bound values — layouts, scalars, and which operands are the same tensor — never
on a tensor's name, except in the words of a diagnostic. So:

* `Views` resolves a view once per (tensor, index) and, for a tensor it has not seen, once
  per layout: the Resolved of a known layout is the earlier one with its tensor replaced
  (`rebased`);
* `form_key` is the value of an instruction's bound operands up to the naming of tensors:
  two instructions with equal keys pass or fail the same rules and get the same engine;
* `Templates` takes that from the front end when it knows it: instructions of one
  call-site form (source/forms.py) are bound as the first of them that passed.

Bind keeps the plain path (resolve every view, apply every rule) as the definition and uses
these only to skip work whose result is known; tests/checker/test_fast_bind.py checks both
give the same bound values and diagnostics.
"""
from __future__ import annotations

from operator import itemgetter

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.ir import AccessPattern
from nkirun.isa.bound import Bound, FormBound, Operands, _set_args
from nkirun.source.forms import FormArgs, FormLocs
from nkirun.views.operands import Resolved

_new = object.__new__
_RESOLVED_FIELDS = tuple(f for f in Resolved.__slots__)
_SETTERS = tuple(getattr(Resolved, f).__set__ for f in _RESOLVED_FIELDS)


assert _RESOLVED_FIELDS == ("decl", "np_index", "shape", "reshape", "part_start",
                            "part_step", "box", "ap"), "update rebased"
(_SET_DECL, _SET_NP_INDEX, _SET_SHAPE, _SET_RESHAPE, _SET_PART_START, _SET_PART_STEP,
 _SET_BOX, _SET_AP) = _SETTERS


def rebased(template: Resolved, decl) -> Resolved:
    """`dataclasses.replace(template, decl=decl)`, without the dataclass machinery (a trace
    makes one per new tile; every field set, tests/kernel/test_call_forms.py). Only for
    templates without a runtime index (their Resolved depends on other tensors)."""
    r = _new(Resolved)
    _SET_DECL(r, decl)
    _SET_NP_INDEX(r, template.np_index)
    _SET_SHAPE(r, template.shape)
    _SET_RESHAPE(r, template.reshape)
    _SET_PART_START(r, template.part_start)
    _SET_PART_STEP(r, template.part_step)
    _SET_BOX(r, template.box)
    _SET_AP(r, template.ap)
    return r


def layout_key(decl, index):
    """What resolve(view, decl) depends on besides the tensor's name, as a value; None when
    the index is not a plain value (an indirect access pattern, whose Resolved holds its
    index tensor's view: resolved the plain way). A direct access pattern (`.ap()`) is a
    value like a tuple index: its Resolved is a function of the pattern and the layout."""
    if index is not None and index.__class__ is not tuple and (
            index.__class__ is not AccessPattern or index.scalar_offset is not None
            or index.vector_offset is not None):
        return None
    return (decl.buffer, decl.shape, decl.dtype, index)


class Views:
    """Resolved views for one bind: by (tensor, index object) — the front ends share index
    objects, and the program keeps them alive — and by layout (`layout_key`, as `layout`'s
    pair of small ints). `token[id(r)]`
    names the layout of each Resolved handed out (equal tokens: equal layouts)."""

    def __init__(self):
        self.by_view: dict = {}
        self.by_layout: dict = {}
        self.token: dict = {}
        self.narrowed: dict = {}  # id(r) -> r as a (P, 1) tile (bind's per-partition rule)
        self.ids: dict = {}  # id(decl or index) -> (it, its small int in `values`)
        self.values: dict = {}  # a layout (buffer, shape, dtype), an index -> a small int

    def layout(self, decl, index):
        """layout_key(decl, index) as a pair of small ints, None where it is None: equal
        pairs for equal layout_keys, the decl's (buffer, shape, dtype) and the index by
        value each hashed once per object (a DType's and a Slice's hash are Python code;
        a loop names the same few index objects on ever new tensors)."""
        ids = self.ids
        hit = ids.get(id(decl))
        if hit is None or hit[0] is not decl:
            key = ("decl", decl.buffer, decl.shape, decl.dtype)
            hit = ids[id(decl)] = (decl, self.values.setdefault(key, len(self.values)))
        d = hit[1]
        hit = ids.get(id(index))
        if hit is None or hit[0] is not index:
            n = None if layout_key(decl, index) is None else \
                self.values.setdefault(("index", index), len(self.values))
            hit = ids[id(index)] = (index, n)
        return None if hit[1] is None else (d, hit[1])

    def get(self, tensor: str, index, decl):
        """The Resolved of view tensor[index] of `decl` when known by value, else None."""
        rkey = (tensor, id(index))
        r = self.by_view.get(rkey)
        if r is not None:
            return r
        lkey = self.layout(decl, index)
        if lkey is None:
            return None
        hit = self.by_layout.get(lkey)
        if hit is None:
            return None
        r = self.by_view[rkey] = rebased(hit, decl)
        self.token[id(r)] = self.token[id(hit)]
        return r

    def put(self, tensor: str, index, decl, r: Resolved) -> None:
        """Remember r (resolved the plain way, without error) as the view tensor[index]."""
        self.by_view[(tensor, id(index))] = r
        lkey = self.layout(decl, index)
        if lkey is not None and (r.ap is None or r.ap.indirect is None):
            first = self.by_layout.setdefault(lkey, r)
            self.token[id(r)] = self.token.get(id(first), len(self.by_layout))
        else:
            self.token[id(r)] = ("view", id(r))

    def narrow(self, r: Resolved, make) -> Resolved:
        """make(r), once per r (its layout token derived from r's)."""
        hit = self.narrowed.get(id(r))
        if hit is None:
            hit = self.narrowed[id(r)] = make(r)
            self.token[id(hit)] = ("narrow", self.token.get(id(r), ("view", id(r))))
        return hit


class Templates:
    """Call-site forms (source/forms.py) for one bind: per form, the first of its
    instructions that passed every rule (`put`); a later instruction of the form is bound as
    that template with its own tensors put in (`bind`): its rules and engine are functions
    of values equal to the template's. The Resolved made last per layout is reused while
    the tensor stays the same: an accumulator call after call, and a new tile that two
    forms use through views of one layout (bind's own path shares those too)."""

    def __init__(self, dropped, views: Views):
        # id(FormLocs) -> (template Bound, per view keyword (keyword, its dict in `last`,
        # the template's Resolved)); the instructions keep their FormLocs alive
        self.by_form: dict = {}
        # the layout token of a template Resolved (Views.token: equal tokens, equal
        # Resolved up to the tensor), else its id -> {tensor name: Resolved} for the last
        # few tensors (an accumulator and the new tiles beside it often share a layout)
        self.last: dict = {}
        self.dropped = dropped
        self.token = views.token

    def put(self, inst, b) -> None:
        """Keep b (inst bound the plain way, passing every rule) as its form's template."""
        locs = inst.arg_locs
        if locs.__class__ is not FormLocs:
            return
        for k in locs.views:
            r = b.args.get(k)
            if r.__class__ is not Resolved or (r.ap is not None and r.ap.indirect is not None):
                return  # (an indirect access pattern: its Resolved depends on other tensors)
        keys = [self.token.get(id(b.args[k]), id(b.args[k])) for k in locs.views]
        for k, key in zip(locs.views, keys):
            self.last.setdefault(key, {}).setdefault(inst.args[k].tensor, b.args[k])
        # the template is made when a second instance asks for it (`_made`): most forms
        # of a loop over offsets have one instance (a view at a new offset each time)
        self.by_form[id(locs)] = (b, keys)

    def _made(self, locs, b, keys) -> tuple:
        """The template of form `locs` from its first instance b (put): per view keyword
        (keyword, its `last` dict, the template's Resolved); the template's names_plan
        with, per name in it, the position of its keyword in locs.views (an instance's
        names are its own tensors' there: Bound.names_plan); ..."""
        plan = b.names_plan()[0]
        at = tuple(locs.views.index(k) for k in plan[3]) if plan[1] is not None and all(
            k in locs.views for k in plan[3]) else None
        hit = self.by_form[id(locs)] = (
            b, tuple((k, self.last[key], b.args[k]) for k, key in zip(locs.views, keys)),
            plan, at, None if at is None else _picker(at), b.args, b.args.form, b.spec,
            b.engine)
        return hit

    def adopt(self, inst, b) -> None:
        """put(inst, b) for b bound as an equal earlier instruction that passed (by
        identity or form_key) when inst's form has no template yet: a form whose first
        instance matched another form's (two nl.broadcast_to calls) gets one too."""
        locs = inst.arg_locs
        if locs.__class__ is FormLocs and id(locs) not in self.by_form:
            self.put(inst, b)

    def bind(self, inst, program, target):
        """inst bound as its form's template, or None (no template yet, an undeclared
        tensor, a dropped instruction: bind's own path decides)."""
        locs = inst.arg_locs
        hit = self.by_form.get(id(locs)) if locs.__class__ is FormLocs else None
        if hit is None or inst.index in self.dropped:
            return None
        if len(hit) == 2:  # (its first instance, put: the template not made yet)
            hit = self._made(locs, *hit)
        _, views, plan, at, pick, targs, tform, spec, engine = hit
        inst_args = inst.args
        names = _form_names(inst_args, _NAMES) if inst_args.__class__ is FormArgs else \
            [inst_args[k].tensor for k in locs.views]  # (_form_names: FormArgs.names)
        tensors = program.tensors
        if not all(map(tensors.__contains__, names)):
            return None
        args = _new(PendingOperands)  # the template's Operands with these tensors' views
        args.template, args.views, args.tensors, args.names_in, args.form = \
            targs, views, tensors, names, tform
        # names_plan() of these operands, when known already
        if at is None:
            args.plan = args.names = None
        else:
            args.plan, args.names = plan, pick(names)
        if at is None or not speed.LAZY_OPERANDS:
            args, b = args.operands(), _new(Bound)
        else:
            b = _new(FormBound)  # its Operands made when something reads b.args
        _set_args(b, args)  # Bound(inst, tmpl.spec, args, None, tmpl.engine, target), fast
        b.inst, b.spec, b.mask, b.engine, b.target = inst, spec, None, engine, target
        return b


def _picker(at: tuple):
    """`lambda names: tuple(map(names.__getitem__, at))`, as operator.itemgetter does it."""
    if len(at) > 1:
        return itemgetter(*at)
    if at:
        i = at[0]
        return lambda names: (names[i],)
    return lambda names: ()


class PendingOperands:
    """The Operands of an instance of a call-site form before anything reads them as a
    dict (a FormBound's, isa/bound.py): its form's template Operands and view
    keywords (Templates.by_form), its tensors' names; `names`, `plan` and `form` are those
    the Operands will have, read without them by the passes and the run's plan."""

    __slots__ = ("template", "views", "tensors", "names_in", "names", "plan", "form")

    def operands(self) -> Operands:
        """The Operands: Operands(template, template.form) with this instance's views put
        in — the Resolved made last for its tensor and layout (Templates.last), else the
        template's rebased onto its tensor — every slot as bind's own path leaves it once
        names_plan() has run."""
        args = _dict_new(Operands)
        _dict_update(args, self.template)
        args.form, args.accesses, args.plan, args.names, args.spelled = \
            self.form, None, self.plan, self.names, None
        tensors = self.tensors
        for (k, recent, template), name in zip(self.views, self.names_in):
            r = recent.get(name)
            if r is None:
                if len(recent) >= _RECENT:
                    del recent[next(iter(recent))]  # the oldest
                r = recent[name] = rebased(template, tensors[name])
            _dict_set(args, k, r)  # (Operands refuse changes once handed out)
        return args


_dict_new, _dict_update, _dict_set = dict.__new__, dict.update, dict.__setitem__
_RECENT = 4  # tensors remembered per layout by Templates


_form_names, _NAMES = tuple.__getitem__, slice(1, None)  # FormArgs (form, *names)


def form_key(op: str, values, token: dict):
    """`form_key_plain` in one pass over the values (bind calls it per instruction)."""
    decls, key = [], [op, None]
    for v in values:
        c = v.__class__
        if c is Resolved:
            decls.append(id(v.decl))
            t = token.get(id(v))
            if t is None:
                return None
            key.append(t)
        elif c is tuple and v and v[0].__class__ is Resolved:
            return None
        else:
            key.append(id(v))
    key[1] = tuple(map(decls.index, decls))
    return tuple(key)


def form_key_plain(op: str, values, token: dict):
    """The value of an instruction's bound operands up to tensor names: which of its
    operands are the same tensor (each operand's position among the first uses), then per
    operand its layout token, any other value by identity (the front ends share converted
    values; tokens are small ints or tuples, never an object's id). None when an operand is
    a view bind did not hand out (a TILE_LIST's)."""
    values = list(values)
    decls = [id(v.decl) for v in values if v.__class__ is Resolved]
    key = (op, tuple(map(decls.index, decls)),
           *[token.get(id(v)) if v.__class__ is Resolved else
             (None if v.__class__ is tuple and v and v[0].__class__ is Resolved else id(v))
             for v in values])
    return None if None in key else key


__all__ = ["Templates", "Views", "form_key", "form_key_plain", "rebased", "layout_key"]
