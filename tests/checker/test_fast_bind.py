"""bind's interning (checker/intern.py) changes nothing: every program bound the fast way
gives the same diagnostics, engines, operand values and read/write sets as the plain path
(`bind(program, fast=False)`: every view resolved and every rule applied, per instruction).

The kernels allocate a new tile per loop iteration, so their instructions differ only in
tensor names — the case the interning by value is for — including a loop whose later
iterations break a rule that the first ones pass, and tiles that alias another operand.
"""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from nkirun.checker.bind import bind
from nkirun.checker.intern import Views, form_key, form_key_plain
from nkirun.source import parse_file
from nkirun.api_kernel import trace_call

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = sorted(p for p in (ROOT / "programs").glob("*.*") if p.suffix in (".yaml", ".nkis"))
INVALID = sorted((ROOT / "tests" / "invalid").glob("*.*"))

LOOP_KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def loop(x, n):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in range(n):
        w = 64 if i < 3 else 32          # later iterations: mismatched shapes (an error)
        dt = nl.float32 if i % 2 else nl.bfloat16
        t = nl.ndarray((128, 64), dtype=dt, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, (i % 2) * 64:(i % 2) * 64 + 64])
        nisa.tensor_tensor(dst=t, data1=t, data2=acc, op=nl.multiply)    # t aliases dst
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t[:, 0:w], op=nl.add)
        nisa.tensor_tensor(dst=acc[:, 0:32], data1=t[:, 0:32], data2=t[:, 32:64], op=nl.max)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


def summary(bound, diags):
    return ([(d.severity, d.code, d.message, d.loc, d.instruction, d.hint) for d in diags],
            [(b.index, b.op, b.engine, dict(b.args), b.mask is None, b.accesses(),
              b.tensor_names()) for b in bound])


def both_agree(program):
    fast, plain = bind(program), bind(program, fast=False)
    assert summary(*fast) == summary(*plain)
    return fast


@pytest.mark.parametrize("path", PROGRAMS + INVALID, ids=lambda p: p.name)
def test_programs_bind_like_the_plain_path(path):
    program, _ = parse_file(str(path))
    if program is not None:  # (None: the front end refused the file, nothing to bind)
        both_agree(program)


def traced_loop(tmp_path, n):
    (tmp_path / "loop_kernel.py").write_text(LOOP_KERNEL)
    import sys
    sys.path.insert(0, str(tmp_path))
    try:
        import loop_kernel
    finally:
        sys.path.remove(str(tmp_path))
    x = np.zeros((128, 512), np.float32)
    return trace_call(loop_kernel.loop, (x, n)).program


def test_loop_kernel_binds_like_the_plain_path(tmp_path):
    program = traced_loop(tmp_path, 12)
    bound, diags = both_agree(program)
    assert {d.code for d in diags} >= {"E062"} or diags  # the later iterations' error ...
    bad = {d.instruction for d in diags if d.is_error}
    assert bad and min(bad) > 3 * 3  # ... and none in the first three iterations
    # the fast path did share work: later iterations reuse the form of earlier ones
    forms = {id(b.args.form) for b in bound if b.args.form is not None}
    assert len(forms) < len(bound) / 2


AP_KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def aps(x, n):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in range(n):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, 0:64])
        u = nl.ndarray((128, 4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=u, src=t.ap([[64, 128], [1, 4], [8, 8]], offset=i % 2))
        h = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.tensor_copy(dst=h, src=t.ap([[128, 128], [1, 128]], dtype=nl.bfloat16))
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t.ap([[64, 128], [2, 32]]), op=nl.add)
        step = 1 if i < 3 else 0  # later iterations: a write that repeats elements (E039)
        nisa.tensor_copy(dst=t.ap([[64, 128], [step, 32]]), src=acc)
    nisa.dma_copy(dst=out[:, 0:32], src=acc)
    return out
'''


def test_access_pattern_views_bind_like_the_plain_path(tmp_path):
    """A direct access pattern (`.ap()`) on a new tile each iteration is resolved once per
    layout, as a basic index is (Views.by_layout), and its instructions share a form:
    the same bound values and diagnostics as the plain path."""
    (tmp_path / "ap_kernel.py").write_text(AP_KERNEL)
    import sys
    sys.path.insert(0, str(tmp_path))
    try:
        import ap_kernel
    finally:
        sys.path.remove(str(tmp_path))
    program = trace_call(ap_kernel.aps, (np.zeros((128, 512), np.float32), 8)).program
    bound, diags = both_agree(program)
    assert [d.code for d in diags if d.is_error] == ["E039"] * 5
    with_ap = [b for b in bound if any(r.ap is not None for r in b.args.values()
                                       if r.__class__.__name__ == "Resolved")]
    assert len(with_ap) == 8 * 2 + 5  # (the step-2 pattern is a basic slice)
    # one form per layout (two offsets, one dtype; interned), not one per new tile; each
    # instruction that broke a rule has its own
    assert len({id(b.args.form) for b in with_ap}) == 3 + 5


def test_form_key_tells_aliasing_apart(tmp_path):
    program = traced_loop(tmp_path, 4)
    bound, _ = bind(program)
    by_op = [b for b in bound if b.op == "tensor_tensor"]
    views = Views()
    first, aliased = by_op[0], by_op[1]  # dst=t, data1=t vs dst=acc, data1=acc, data2=t
    for b in (first, aliased):
        for r in b.args.values():
            if r.__class__.__name__ == "Resolved":
                views.token.setdefault(id(r), ("layout", r.box, r.decl.buffer, r.decl.shape))
    k1 = form_key("tensor_tensor", first.args.values(), views.token)
    k2 = form_key("tensor_tensor", aliased.args.values(), views.token)
    assert k1 is not None and k2 is not None and k1 != k2


def test_form_key_is_plain(tmp_path):
    """The one-pass form_key is form_key_plain: with every token known, with one missing
    (None), and with a TILE_LIST operand (None)."""
    program = traced_loop(tmp_path, 4)
    bound, _ = bind(program, fast=False)
    token: dict = {}
    checked = 0
    for i, b in enumerate(bound):
        values = list(b.args.values())
        for r in values:
            if r.__class__.__name__ == "Resolved" and i % 3:  # (i % 3 == 0: left unknown)
                token.setdefault(id(r), ("layout", r.box, r.decl.buffer, r.decl.shape))
        for op in (b.op, "other"):
            got, want = form_key(op, values, token), form_key_plain(op, values, token)
            assert got == want
            checked += got is not None
        if i % 5 == 4:
            token.clear()
    assert checked > 4
    r = next(v for b in bound for v in b.args.values() if v.__class__.__name__ == "Resolved")
    assert form_key("x", [r, (r,), 1], {id(r): 1}) is None is form_key_plain("x", [r, (r,), 1],
                                                                            {id(r): 1})
    assert form_key("x", [r, r, 2.0], {}) is None is form_key_plain("x", [r, r, 2.0], {})
    assert form_key("x", [r, None, r], {id(r): 7}) == form_key_plain("x", [r, None, r],
                                                                     {id(r): 7})


def example_kernel_programs():
    import importlib.util
    path = ROOT / "tests" / "kernel" / "test_examples.py"
    spec = importlib.util.spec_from_file_location("_examples_for_fast_bind", path)
    examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(examples)
    for name, (arrays, args, _, _) in sorted(examples.CASES.items()):
        yield name, trace_call(examples.kernel_function(name), (), {**arrays, **args}).program


def test_example_kernels_bind_like_the_plain_path():
    names = []
    for name, program in example_kernel_programs():
        _, diags = both_agree(program)
        assert not [d for d in diags if d.is_error], name
        names.append(name)
    assert len(names) >= 6


def test_template_bound_objects_are_the_constructors(tmp_path):
    """Templates build each Operands and Bound without their __init__: every slot and
    field as the constructors set them."""
    import dataclasses

    from nkirun.isa.bound import Bound, Operands
    from nkirun.checker.intern import Templates
    made = []
    plain_bind = Templates.bind

    def spy(self, inst, program, target):
        b = plain_bind(self, inst, program, target)
        if b is not None:
            made.append(b)
        return b

    (tmp_path / "tb_kernel.py").write_text(LOOP_KERNEL)
    import importlib.util
    spec = importlib.util.spec_from_file_location("tb_kernel", tmp_path / "tb_kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    program = trace_call(module.loop, (np.zeros((128, 512), np.float32), 12)).program
    Templates.bind = spy
    try:
        bind(program)
    finally:
        Templates.bind = plain_bind
    assert len(made) > 20
    for b in made:
        want = Operands(dict(b.args), b.args.form)
        assert type(b.args) is Operands and b.args == want
        for slot in Operands.__slots__:
            if slot not in ("plan", "names"):  # (set ahead: names_plan below)
                assert getattr(b.args, slot) == getattr(want, slot), slot
        again = Bound(b.inst, b.spec, b.args, None, b.engine, b.target)
        for f in dataclasses.fields(Bound):
            assert getattr(b, f.name) is getattr(again, f.name), f.name
        fresh = Bound(b.inst, b.spec, Operands(dict(b.args), None), None, b.engine, b.target)
        if b.args.names is not None:  # what names_plan() would have worked out
            assert (b.args.plan, b.args.names) == fresh.names_plan()
    assert sum(b.args.names is not None for b in made) > 20
