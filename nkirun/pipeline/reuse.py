"""A simulate() object's check reused by its next call when that call traced the same
program (speed.SAME_TRACE_CHECK; issue 28, `run`).

Every `nkirun.simulate(kernel)(...)` call traces the kernel again: its Python may read
state that changed since the last call (a global, a file, the arrays' shapes), so the
traced program may differ, and nothing of the trace is reused. What the trace gives is
then checked (checker/passes.py `validate`: the bound instructions and the checker's
diagnostics), and that check is a function of the program alone (and of the HBM limit):
the same program gives the same bound instructions and the same diagnostics, at the same
locations. So when a call traces a program equal to the last one in every field,
locations and source lines included (`same_program`), the last check's result is the
check's result; the front end's own diagnostics (the trace's) are the new call's, and
everything after (the run, its plan, its warnings) runs afresh on the new call's arrays.

`same_program` is the fast comparison, reading a form instance (source/forms.py FormArgs:
the form's template, its tensor names put in) through its form, compared once per pair
of forms; `same_program_plain` spells every instruction's arguments and compares every
field, locations too. tests/pipeline/test_check_reuse.py compares them on kernels traced
twice and on pairs that differ in one value or one location, and checks that simulate()
gives the same outputs, errors and warnings with the switch off. Programs with runtime
loops or dropped instructions are not compared (checked afresh).
"""
from __future__ import annotations

import dataclasses
import struct

import numpy as np

from nkirun import speed
from nkirun.diagnostics import Loc
from nkirun.ir import Slice
from nkirun.runner.plan_keep import switches
from nkirun.source.forms import FormArgs, FormLocs


class CheckMemo:
    """The last program a simulate() object checked and what its check found, as one
    tuple (program, (HBM limit, the speed switches then), (bound, diagnostics)): replaced
    whole, never in parts."""

    __slots__ = ("last",)

    def __init__(self):
        self.last = None

    def validate(self, program, max_hbm_bytes: int):
        """checker.passes.validate(program, max_hbm_bytes), or the last call's result when
        `program` is the same program (see the module)."""
        from nkirun.checker.passes import validate
        if not speed.SAME_TRACE_CHECK:
            return validate(program, max_hbm_bytes)
        last, now = self.last, switches()
        if last is not None and last[1] == (max_hbm_bytes, now) and \
                same_program(last[0], program):
            bound, diags = last[2]
            return bound, list(diags)
        bound, diags = validate(program, max_hbm_bytes)
        if not program.loops and not program.partial:
            self.last = (program, (max_hbm_bytes, now), (bound, list(diags)))
        return bound, diags


def _head(p) -> tuple:
    return (p.version, p.target, p.name, p.path, p.base_dir, p.cores, p.placement,
            p.reuse_buffers, p.invalid_tensors, p.dropped, len(p.instructions), len(p.tensors))


def same_program(p, q) -> bool:
    """Whether programs p and q are equal in every field, locations included (the fast
    comparison: a form instance through its form)."""
    if p is q:
        return True
    if p.loops or q.loops or p.partial or q.partial or _head(p) != _head(q) or \
            p.source_lines != q.source_lines or not _same_tensors(p.tensors, q.tensors):
        return False
    forms: dict = {}  # id(a form of p) -> the form of q found equal to it
    locs: dict = {}  # id(a Loc of p) -> the Loc of q found equal to it
    for a, b in zip(p.instructions, q.instructions):
        if a.op != b.op or a.index != b.index or a.core != b.core or \
                a.repeat_of != b.repeat_of:
            return False
        la, lb = a.loc, b.loc
        if locs.get(id(la)) is not lb:
            if la != lb:
                return False
            locs[id(la)] = lb
        x, y, fx, fy = a.args, b.args, a.arg_locs, b.arg_locs
        if fx.__class__ is FormLocs and fy.__class__ is FormLocs:  # (a call-site form's)
            if forms.get(id(fx)) is not fy:
                if not _same_form(fx, fy):
                    return False
                forms[id(fx)] = fy
            if x is fx.template and y is fy.template:
                continue  # (the form's first instruction: its args are the template)
            if x.__class__ is FormArgs and y.__class__ is FormArgs and _item(x, 0) is fx \
                    and _item(y, 0) is fy:
                if _item(x, _NAMES) != _item(y, _NAMES):  # (the tensor names put in: strs)
                    return False
                continue
        if not same_value(_spelled(x), _spelled(y)) or \
                not same_value(dict(fx), dict(fy)):
            return False
    return True


def _same_form(fx, fy) -> bool:
    return fx.views == fy.views and same_value(dict(fx), dict(fy)) and \
        same_value(fx.template, fy.template)


def _same_tensors(a: dict, b: dict) -> bool:
    if list(a) != list(b):  # (in order: the run numbers the arrays in declaration order)
        return False
    for t, u in zip(a.values(), b.values()):
        if not same_value(t, u):
            return False
    return True


def same_value(v, w) -> bool:
    """v and w equal in every field, those left out of `==` (locations) included, and of
    one type all the way down: 1 is not 1.0 nor True, 0.0 is not -0.0 (a float by its
    bits: the run would compute with the first program's value)."""
    if v is w:
        return True
    cls = v.__class__
    if cls is not w.__class__:
        return False
    if cls in _EXACT:
        return v == w
    if cls is float:
        return _DOUBLE(v) == _DOUBLE(w)
    if cls is dict:
        if list(v) != list(w):
            return False
        for k, x in v.items():
            if not same_value(x, w[k]):
                return False
        return True
    if cls is tuple or cls is list:
        if len(v) != len(w):
            return False
        for x, y in zip(v, w):
            if x is not y and not same_value(x, y):
                return False
        return True
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = (tuple(f.name for f in dataclasses.fields(v))
                                if dataclasses.is_dataclass(v) else ())
    if names:
        for n in names:
            x, y = getattr(v, n), getattr(w, n)
            if x is not y and not same_value(x, y):
                return False
        return True
    if isinstance(v, np.generic):  # (a NumPy scalar: by its bytes, of one dtype)
        return v.dtype == w.dtype and v.tobytes() == w.tobytes()
    for base in (dict, tuple, list):  # (a subclass of one, e.g. FormLocs: its items, ==)
        if isinstance(v, base):
            return same_value(base(v), base(w)) and bool(v == w)
    try:
        return bool(v == w)
    except (TypeError, ValueError):  # (an array's elementwise ==: not compared, not same)
        return False


_item, _NAMES = tuple.__getitem__, slice(1, None)  # (FormArgs: the tuple (form, *names))
# types whose == compares everything they hold, exactly (a Loc's file, line and column)
_EXACT = {str, int, bool, type(None), Loc, Slice, bytes}
_DOUBLE = struct.Struct("<d").pack
_FIELDS: dict = {}  # a record class -> its fields' names (() for another class)


def same_program_plain(p, q) -> bool:
    """same_program by its definition: every field of both programs, every instruction's
    arguments spelled out (FormArgs.spelled), locations included."""
    if p.loops or q.loops or p.partial or q.partial:
        return False
    fields = [f.name for f in dataclasses.fields(p) if f.name != "instructions"]
    if not all(same_value(getattr(p, f), getattr(q, f)) for f in fields):
        return False
    if len(p.instructions) != len(q.instructions):
        return False
    for a, b in zip(p.instructions, q.instructions):
        for f in dataclasses.fields(a):
            x, y = getattr(a, f.name), getattr(b, f.name)
            if f.name == "args":
                x, y = _spelled(x), _spelled(y)
            elif f.name == "arg_locs":
                x, y = dict(x), dict(y)
            if not same_value(x, y):
                return False
    return True


def _spelled(args) -> dict:
    return args.spelled() if args.__class__ is FormArgs else dict(args)
