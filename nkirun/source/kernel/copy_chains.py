"""`nl.broadcast_to`'s copy chain across partitions, recorded from a plan (speed.COPY_CHAINS).

The plain definition (convenience.broadcast_to) copies row 0 of the new tile `t` from the
(1, F) source `x` with a `dma_copy` and doubles the filled rows with further `dma_copy`s
(1 + ceil(log2 P) instructions), each one an `_emit`: the kernel's line looked up, the
pending deferred result flushed, the mask narrowing asked, the two views of `t` made,
the call-site form keyed and looked up (session.Tracer.emit). Fused Mamba calls it twice
per inner iteration (16 of every 27 of its instructions).

`broadcast_rows` records the same instructions from a plan made the first time a call
site broadcasts a source of one layout and view into a tile of one layout: the FormLocs of
each step (the form the plain path's step found), so that a later call records each step
with `call_forms.record` (what Tracer.emit does for a known form) and nothing else. A
plan is made only when every step's form is known to the tracer and every view of `t`
lowers to the IR index object the memo keeps (lowering.lowered_index): then the plain
path's form keys of a later call are those of the plan's call, and its steps would find
the very same forms. tests/kernel/test_copy_chains.py traces kernels both ways.
"""
from __future__ import annotations

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.source.kernel import call_forms, legacy, lowering
from nkirun.source.kernel.tensor import _NO_INDEX, ndarray
from nkirun.source.kernel.unsupported import call_loc

PLANS_MAX = 1_000  # plans per trace (a call site, a source layout and view, a tile layout)


def steps(rows: int) -> list[tuple[int, int, int]]:
    """(dst start, dst stop, src rows) of each dma_copy after the first: the filled rows
    doubled until all `rows` are (the plain definition's loop)."""
    out = []
    filled = 1
    while filled < rows:
        n = min(filled, rows - filled)
        out.append((filled, filled + n, n))
        filled += n
    return out


def broadcast_rows(tracer, x, t, rows: int):
    """Record the copy chain that fills the (rows, F) tile `t` from the (1, F) source `x`
    (convenience.broadcast_to's loop) from this call site's plan: True. Otherwise nothing
    is recorded (nor anything changed that the plain path would not change first) and the
    caller takes the plain path: None when `make_plan` should then make this call's plan,
    False when not (a masked write earlier, the plain path narrows; a source that is no
    basic view of a traced tensor)."""
    if not speed.CALL_FORMS or x.__class__ is not ndarray or t.__class__ is not ndarray:
        return False
    state = tracer.__dict__
    if state.get("legacy_pending") is not None:
        legacy.flush(tracer)  # (the plain path's first step does this first)
    if state.get("legacy_valid"):
        return False
    xi = x._ir
    if xi is not None and xi.__class__ is not tuple:
        return None if xi is _NO_INDEX else False  # (an access pattern: keyed by value)
    plans = state.get("copy_chains")
    if plans is None:
        return None
    loc = call_loc(1)  # (the kernel's line: here() of convenience._emit)
    plan = plans.get((id(loc), x._rec.layout, id(xi), t._rec.layout, rows))
    if plan is None or plan[0] is not loc or plan[1] is not xi:
        return None
    if state.get("legacy_valid") is None:
        tracer.legacy_valid = {}  # (legacy.record's first call makes it)
    rec = t._rec
    b = tracer.builder
    budget = tracer.budget
    record = call_forms.record
    recs = [rec, x._rec]
    both = [rec, rec]
    for locs in plan[2:]:
        if b.count >= budget.next_check:
            budget.checkpoint(b, loc)
        record(tracer, "dma_copy", locs, recs, loc)
        recs = both
    return True


def make_plan(tracer, x, t, rows: int) -> None:
    """After the plain path recorded a call for which broadcast_rows answered None: that
    call's plan, when every step's form is known to the tracer and every view of `t`
    lowered to the index object the memo keeps."""
    plans = tracer.__dict__.get("copy_chains")
    if plans is None:
        plans = tracer.copy_chains = {}
    xi = x._ir
    if len(plans) >= PLANS_MAX or xi is not None and xi.__class__ is not tuple:
        return
    loc = call_loc(1)
    plan = [loc, xi]
    for dst, src in [(t[0:1], x)] + [(t[a:b], t[0:n]) for a, b, n in steps(rows)]:
        for v in (dst, src):
            if v._ir is _NO_INDEX:
                v._ir = lowering.lowered_index(v)
        if not (lowering.remembered(dst) and (src is x or lowering.remembered(src))):
            return
        form = call_forms.form_key("dma_copy", {"dst": dst, "src": src}, loc)
        locs = tracer.forms.get(form[0]) if form is not None else None
        if locs is None:
            return
        plan.append(locs)
    plans[(id(loc), x._rec.layout, id(xi), t._rec.layout, rows)] = tuple(plan)
