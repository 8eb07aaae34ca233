"""The trace's shortcuts for a loop's repeated calls (each beside its plain path, which a
switch here selects; tests/kernel/test_call_forms.py traces every example kernel both ways
and compares):

- `form_key`: the call-site form of an nki.isa call (source/forms.py). Session.emit builds
  a later call of a known form from the first one's arguments with its own tensors put in.
- `record`: such a call's instruction keeps its tensor names, not an args dict of its own
  (`FormArgs`, source/forms.py; FORM_ARGS = False: the dict, spelled out).
- `simple_call`: a keyword-only nki.isa call (isa_shim's SIMPLE_CALLS) goes from the
  wrapper straight to its form's lookup and `record`, without Tracer.emit.
- allocation plans (Tracer.allocate): an `nl.ndarray` call site that allocates the same
  shape, dtype, buffer and name again reuses what the checks worked out the first time.
"""
from __future__ import annotations

import numpy as np

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.diagnostics import Loc
from nkirun.ir import _INST_SET, AccessPattern, Instruction, instruction_at, view_at
from nkirun.source.forms import FormArgs, FormLocs
from nkirun.source.kernel import consts, legacy
from nkirun.source.kernel.lowering import lowered_index
from nkirun.source.kernel.tensor import _NO_INDEX, ndarray

FORMS_MAX = 10_000  # form and allocation-plan tables stop growing there
# (NumPy's scalars too: NKIBench writes `np.dtype(np.float32).type(0.9)`; the trace reads
# each as its .item(), session.Tracer.raw)
_NUMPY_FLOATS = frozenset({np.float16, np.float32, np.float64})
_FLOATS = frozenset({float, *_NUMPY_FLOATS})
_FORM_SCALARS = frozenset({str, int, float, bool, type(None), consts.Token, consts.NlDType,
                           consts.NlPackedDType, *_NUMPY_FLOATS, np.bool_, np.int8, np.int16,
                           np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64})


def form_key(op: str, values: dict, loc: Loc):
    """(key, [TensorRec, ...]) of a call: equal keys give equal instructions up to tensor
    names (source/forms.py): the op, the call site, each keyword's value — for a tensor its
    layout (TensorRec.layout: buffer, shape, dtype) and IR index object (shared between
    equal views, lowered_index) —, and which operands are the same tensor; the tensors in
    call order; a direct access pattern (`.ap()`, no runtime index) by its value, as the
    view methods make one afresh per view. None when a value is anything else (a list, a
    register, an indirect access pattern: converted afresh)."""
    key = [op, id(loc)]
    recs = []
    for k, v in values.items():
        c = v.__class__
        if c is ndarray:
            rec, index = v._rec, v._ir
            if index is _NO_INDEX:
                index = v._ir = lowered_index(v)
            if index is not None and index.__class__ is not tuple:
                if index.__class__ is not AccessPattern or index.scalar_offset is not None \
                        or index.vector_offset is not None:
                    return None  # (an indirect pattern names its index tensor)
                recs.append(rec)  # a direct `.ap()`: a value, made afresh per view
                key += (k, rec.layout, index)
                continue
            recs.append(rec)
            key += (k, rec.layout, id(index))
        elif c in _FORM_SCALARS:
            key += (k, c, v) if v or c not in _FLOATS else (k, c, repr(v))  # -0.0 == 0.0
        else:
            return None
    key.append(tuple(map(recs.index, recs)))  # (TensorRecs compare by identity)
    return tuple(key), recs


def family_key(key: tuple) -> tuple:
    """A form_key key without its tensors' layouts, indices and aliasing: the op, the call
    site, each keyword's value, which keywords hold a tensor. Two calls with equal family
    keys make equal IR instructions up to their views (tensor name and index): a new form
    of a known family (a view at a new offset) is built from the family's first form
    (`from_family`) instead of converting every keyword again (session.Tracer._emit_fast,
    its plain twin)."""
    out = [key[0], key[1]]
    for i in range(2, len(key) - 1, 3):
        k, a = key[i], key[i + 1]
        if a.__class__ is int:  # a tensor: (keyword, TensorRec.layout, index)
            out.append(k)
        else:  # (keyword, class, value): keywords are strs, classes types
            out += (k, a, key[i + 2])
    return tuple(out)


def from_family(tracer, op: str, values: dict, loc: Loc, known: FormLocs) -> FormLocs:
    """Record a call of a new form of the known family of form `known` (family_key): what
    Tracer._emit_fast records — the form's first args (the NKI defaults, the converted
    keyword values) with this call's views, its tensors declared in call order — and
    return its FormLocs."""
    full = known.template.copy()
    for k in known.views:
        v = values[k]
        rec = v._rec
        if not rec.declared:
            tracer.declare(rec)
        full[k] = view_at(rec.name, v._ir, loc)  # (form_key lowered every index)
    locs = FormLocs(known, known.views, full)
    b = tracer.builder
    b.instructions.append(instruction_at(op, full, b.count, loc, locs, None, b.core))
    b.count += 1
    return locs


def record(tracer, op: str, locs, recs, loc: Loc) -> None:
    """Record a call of the known form `locs` (a FormLocs) whose tensor operands are the
    TensorRecs `recs` (in locs.views order): the form's first instruction with these
    tensors, as FormArgs (the plain path: its args dict spelled out)."""
    items = [locs]
    for rec in recs:
        if not rec.declared:
            tracer.declare(rec)
        items.append(rec.name)
    args = _tuple_new(FormArgs, items)  # FormArgs(locs, names), from the list as is
    if not speed.FORM_ARGS:
        args = args.spelled()
    b = tracer.builder
    inst = _new(Instruction)  # instruction_at(op, args, b.count, loc, locs, None, b.core)
    set_op, set_args, set_index, set_loc, set_arg_locs, set_repeat_of, set_core = _INST_SET
    set_op(inst, op)
    set_args(inst, args)
    set_index(inst, b.count)
    set_loc(inst, loc)
    set_arg_locs(inst, locs)
    set_repeat_of(inst, None)
    set_core(inst, b.core)
    b.instructions.append(inst)
    b.count += 1


_tuple_new = tuple.__new__
_new = object.__new__


def simple_call(tracer, op: str, values: dict, fill_in: list, loc: Loc, tables) -> int:
    """What the general path of an nki.isa call (isa_shim) does with a call its
    `_simple_plan` admits: fill in the NKI defaults `fill_in`, record the instruction
    (legacy.flush and .record skipped when they have nothing to do: no mask was given; a
    call of a known form recorded here, not by Tracer.emit). Returns its index."""
    for k, d in fill_in:
        values[k] = d
    state = tracer.__dict__
    if state.get("legacy_pending") is not None:
        legacy.flush(tracer)
    index = tracer.builder.count
    if index >= tracer.budget.next_check:  # (the budget's and the progress line's turn)
        tracer.budget.checkpoint(tracer.builder, loc)
    if state.get("legacy_valid"):
        legacy.record(tracer, op, values, loc, tables)
        return index
    form = form_key(op, values, loc) if speed.CALL_FORMS else None
    locs = tracer.forms.get(form[0]) if form is not None else None
    if locs is None:  # a new form, or none
        tracer.emit(op, values, loc, tables, form)
    else:
        record(tracer, op, locs, form[1], loc)
    return index
