"""Call-site forms (source/forms.py) change nothing: every example kernel, the two-core
example and a loop kernel whose later iterations break a rule trace to the same program
with the shortcuts as without (nkirun/speed.py lists them: `speed.CALL_FORMS = False`:
every call converted afresh; `speed.ALLOC_PLANS = False`: every nl.ndarray checked afresh;
`speed.SIMPLE_CALLS = False`: every nki.isa call through the general path;
`speed.FORM_ARGS = False`: every instruction with an args dict of its own;
`speed.LOWERED_INDEX = False`: a view's IR index worked out at its first use;
`speed.LAZY_OPERANDS = False`: every bound instruction's Operands made by bind;
`speed.INDEX_FORMS = False`: every index array proved affine from its values;
`speed.PSUM_BY_FORM = False`: the PSUM hazard pass reads every instance's Operands;
`speed.INDEX_MEMO = False`: every index expression made afresh; `speed.CORES_BY_NAMES =
False`: the two-core rules read every instruction's accesses; `speed.WIDEN_ONCE = False`:
each planned matmul widens its operands; `speed.FORM_PLANS = False`: every
instruction scheduled by the plain path; `speed.DEAD_HISTORIES = False`: every access
history kept to the end of the schedule; `speed.SHARED_DMA_SERVERS = False`: every DMA
engine booked on its own; `speed.DMA_GROUP_PLANS = False`: each transfer's engines grouped
anew; `speed.CORE_PLANS = False`: each core of a two-core schedule plans its own forms;
`speed.BOX_INDEX = False`: every dependence scan over every live
access; `speed.BF16_SHIFT = False`: bfloat16 widened by ml_dtypes' cast;
`speed.FILL_BITS = False`: a planned fill by NumPy's broadcast copy; `speed.UNREAD_FILLS =
False`: every fill of a tile written in parts made; `speed.WIDEN_FROM_SOURCE = False`: each
matmul operand widened from its tile, every copy made; `speed.COPY_CHAINS = False`: every
nl.broadcast_to copy chain by its plain loop),
run to the
same results, and the instructions bound from a form's template (checker/intern.py
`Templates`) equal the plain path's (`bind(program, fast=False)`): diagnostics, engines,
operands, read/write sets.
"""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from nkirun import speed
from nkirun.checker import intern
from nkirun.checker.bind import bind
from nkirun.checker.passes import validate
from nkirun.source.forms import FormArgs, FormLocs
from nkirun.source.kernel import call_forms, isa_shim, views
from nkirun.api_kernel import check_traced, run_traced, trace_call
from repo_paths import load_module
from trace_facts import instruction_facts, diagnostic_facts

ROOT = pathlib.Path(__file__).resolve().parents[2]




EXAMPLES = load_module(ROOT / "tests" / "kernel" / "test_examples.py", "_examples_for_forms")
FAST_BIND = load_module(ROOT / "tests" / "checker" / "test_fast_bind.py", "_fast_bind_for_forms")


def _cases(tmp_path):
    for name, (arrays, args, _, _) in sorted(EXAMPLES.CASES.items()):
        yield name, (lambda n=name, a=arrays, k=args:
                     trace_call(EXAMPLES.kernel_function(n), (), {**a, **k}))
    x = np.random.default_rng(1).standard_normal((256, 192)).astype(np.float32)
    w = np.random.default_rng(2).standard_normal((1, 192)).astype(np.float32)
    yield "rmsnorm_lnc2", lambda: trace_call(EXAMPLES.kernel_function("rmsnorm_lnc2"),
                                             (x, w), lnc=2)
    (tmp_path / "forms_positional_kernel.py").write_text(POSITIONAL_KERNEL)
    positional = load_module(tmp_path / "forms_positional_kernel.py",
                             "forms_positional_kernel").positional
    yield "positional", lambda: trace_call(positional, (x[:128, :64], 6))
    (tmp_path / "forms_ap_kernel.py").write_text(FAST_BIND.AP_KERNEL)  # (direct `.ap()`s)
    aps = load_module(tmp_path / "forms_ap_kernel.py", "forms_ap_kernel").aps
    yield "aps", lambda: trace_call(aps, (np.zeros((128, 512), np.float32), 8))
    (tmp_path / "forms_loop_kernel.py").write_text(FAST_BIND.LOOP_KERNEL)
    loop = load_module(tmp_path / "forms_loop_kernel.py", "forms_loop_kernel").loop
    yield "loop", lambda: trace_call(loop, (np.zeros((128, 512), np.float32), 12))
    (tmp_path / "forms_numpy_scalars.py").write_text(NUMPY_SCALARS)
    scalars = load_module(tmp_path / "forms_numpy_scalars.py", "forms_numpy_scalars").scalars
    yield "numpy_scalars", lambda: trace_call(scalars, (x[:128, :64], 5))
    (tmp_path / "forms_offsets.py").write_text(OFFSETS)
    offsets = load_module(tmp_path / "forms_offsets.py", "forms_offsets").offsets
    yield "offsets", lambda: trace_call(offsets, (np.zeros((128, 512), np.float32), 8))


# views at a new offset per iteration (a new call-site form each time, of one family:
# call_forms.family_key), a tile shared by two views, and a tensor declared by its first use
# in a family member
OFFSETS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def offsets(x, n):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in range(n):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, 64 * i:64 * (i + 1)])
        nisa.activation(dst=acc[:, 64 * i:64 * (i + 1)], op=nl.exp, data=t, scale=0.5)
        nisa.tensor_tensor(dst=t[:, 0:32], data1=acc[:, 64 * i:64 * i + 32],
                           data2=t[:, 32:64], op=nl.add)
        nisa.tensor_copy(dst=out[:, 64 * i:64 * (i + 1)], src=t)
    return out
'''


# NumPy scalars as keyword values (NKIBench's `np.dtype(np.float32).type(0.9)`): a call
# site's form holds them by class and value, -0.0 apart from 0.0
NUMPY_SCALARS = '''
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scalars(x, n):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=np.float32(0.0))
    for i in range(n):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        for c in (np.float32(0.9), np.float32(-0.0), np.float32(0.0), np.float64(-0.0),
                  np.float16(2.5), np.int32(3), np.float32(0.9)):
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=c)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=np.dtype(np.float32).type(i % 2))
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


# nki.isa calls by position, dst first (NKI 0.2+), with and without keywords, and a pre-0.2
# call without dst (the general path)
POSITIONAL_KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def positional(x, n):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(acc, 0.0)
    col = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    for i in range(n):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(t, x)
        nisa.tensor_scalar(t, t, nl.multiply, 2.0)
        nisa.tensor_tensor(acc, acc, t, op=nl.add)
        nisa.activation(t, nl.exp, acc, scale=0.5)
        nisa.tensor_reduce(col, nl.add, t, 1)
        u = nisa.tensor_tensor(t, acc, nl.subtract)  # (pre-0.2: the result returned)
        nisa.tensor_copy(acc[:, 0:32], u[:, 0:32], engine=nisa.vector_engine)
    nisa.dma_copy(out, acc)
    return out
'''




SWITCHES = ((speed, "CALL_FORMS"), (speed, "ALLOC_PLANS"), (speed, "FORM_ARGS"),
            (speed, "SIMPLE_CALLS"), (speed, "LOWERED_INDEX"), (speed, "LAZY_OPERANDS"),
            (speed, "INDEX_FORMS"), (speed, "PSUM_BY_FORM"), (speed, "INDEX_MEMO"),
            (speed, "CORES_BY_NAMES"), (speed, "WIDEN_ONCE"), (speed, "FORM_PLANS"),
            (speed, "DEAD_HISTORIES"), (speed, "SHARED_DMA_SERVERS"), (speed, "BOX_INDEX"),
            (speed, "DMA_GROUP_PLANS"), (speed, "CORE_PLANS"), (speed, "DMA_ONE_GAP"),
            (speed, "BF16_SHIFT"), (speed, "FILL_BITS"), (speed, "UNREAD_FILLS"),
            (speed, "WIDEN_FROM_SOURCE"), (speed, "COPY_CHAINS"),
            (speed, "OFFSET_FAMILIES"), (speed, "BLOCK_TILES"))


def _plain_switches(monkeypatch, on: bool) -> None:
    for module, name in SWITCHES:
        monkeypatch.setattr(module, name, on)


def _results(traced):
    bound, diags = check_traced(traced)
    if any(d.is_error for d in diags):
        return None
    return [a.tobytes() for a in run_traced(traced, bound)]


def test_traces_with_forms_equal_the_plain_trace(tmp_path, monkeypatch):
    seen = []
    for name, make in _cases(tmp_path):
        views._LAYOUTS.clear()  # (t[key]'s memo: made on this trace's first calls)
        with_forms = make()
        _plain_switches(monkeypatch, False)
        plain = make()
        _plain_switches(monkeypatch, True)
        a, b = with_forms.program, plain.program
        assert instruction_facts(a) == instruction_facts(b), name
        assert a.tensors == b.tensors and list(a.tensors) == list(b.tensors), name
        assert diagnostic_facts(with_forms.diagnostics) == diagnostic_facts(plain.diagnostics), name
        assert diagnostic_facts(validate(a)[1]) == diagnostic_facts(validate(b)[1]), name
        assert _results(with_forms) == _results(plain), name
        assert not any(i.arg_locs.__class__ is FormLocs for i in b.instructions)
        assert not any(i.args.__class__ is FormArgs for i in b.instructions)
        seen.append((name, sum(i.args.__class__ is FormArgs for i in a.instructions)))
    assert len(seen) >= 8
    assert dict(seen)["loop"] > 30  # the loop's calls do have forms
    assert dict(seen)["positional"] > 20
    assert dict(seen)["aps"] > 8 * 3  # (a call with a direct `.ap()` has its form too)
    assert dict(seen)["numpy_scalars"] >= 4 * 10  # (NumPy scalars: forms too)


def test_a_family_member_is_traced_as_its_first_form(tmp_path, monkeypatch):
    """A call of a new form whose family is known (call_forms.family_key: the same call
    site and keyword values, views at other offsets) is recorded from the family's first
    form (from_family) as _emit_fast records it: the same program with families off."""
    used = []
    plain = call_forms.from_family
    monkeypatch.setattr(call_forms, "from_family", lambda *a: used.append(1) or plain(*a))
    cases = dict(_cases(tmp_path))
    for name in ("offsets", "loop", "aps", "numpy_scalars"):
        views._LAYOUTS.clear()
        fast = cases[name]()
        monkeypatch.setattr(speed, "OFFSET_FAMILIES", False)
        views._LAYOUTS.clear()
        plain_trace = cases[name]()
        monkeypatch.setattr(speed, "OFFSET_FAMILIES", True)
        a, b = fast.program, plain_trace.program
        assert instruction_facts(a) == instruction_facts(b), name
        assert [i.arg_locs.views for i in a.instructions if i.arg_locs.__class__ is FormLocs] \
            == [i.arg_locs.views for i in b.instructions
                if i.arg_locs.__class__ is FormLocs], name
        assert a.tensors == b.tensors and list(a.tensors) == list(b.tensors), name
    assert len(used) >= 4 * 6  # (offsets: each call's iterations 2..7 at least)


def test_form_args_read_as_their_dict(tmp_path):
    """Every way the IR's readers read an instruction's args gives what the dict it stands
    for gives (the writer, the checker's plain path, --trace)."""
    checked = 0
    for _, make in _cases(tmp_path):
        for inst in make().program.instructions:
            args = inst.args
            if args.__class__ is not FormArgs:
                continue
            plain = args.spelled()
            assert args == plain and plain == args and dict(args) == plain
            assert list(args) == list(plain) and len(args) == len(plain)
            assert list(args.items()) == list(plain.items()) and args.copy() == plain
            assert list(args.keys()) == list(plain) and list(args.values()) == list(plain.values())
            for k in plain:
                assert k in args and args[k] == plain[k] and args.get(k) == plain[k]
            assert "no such keyword" not in args and args.get("no such keyword", 3) == 3
            with pytest.raises(KeyError):
                args["no such keyword"]
            assert repr(args) == repr(plain)
            import copy
            import pickle
            assert pickle.loads(pickle.dumps(args)) == plain == copy.deepcopy(args)
            checked += 1
    assert checked > 30


@pytest.fixture
def template_uses(monkeypatch):
    used = []
    plain = intern.Templates.bind

    def spy(self, inst, program, target):
        b = plain(self, inst, program, target)
        used.append(b is not None)
        return b

    monkeypatch.setattr(intern.Templates, "bind", spy)
    return used


def test_form_templates_bind_like_the_plain_path(tmp_path, template_uses):
    for name, make in _cases(tmp_path):
        program = make().program
        fast, plain = bind(program), bind(program, fast=False)
        assert FAST_BIND.summary(*fast) == FAST_BIND.summary(*plain), name
    assert sum(template_uses) > 30


def test_a_form_that_failed_has_no_template(tmp_path, template_uses):
    """The loop's later iterations break a rule: each of those is bound and reported on
    its own (one E063, shapes differ, per failing instruction), never taken from a
    template."""
    program = dict(_cases(tmp_path))["loop"]().program
    bound, diags = bind(program)
    bad = sorted(d.instruction for d in diags if d.code == "E063")
    assert bad == sorted(d.instruction for d in bind(program, fast=False)[1]
                         if d.code == "E063")
    assert len(bad) == len(set(bad)) == 9  # iterations 3..11, the third tensor_tensor
    assert any(template_uses)


def test_rebased_is_dataclasses_replace(tmp_path):
    import dataclasses

    from nkirun.views.operands import Resolved
    checked = 0
    for _, make in _cases(tmp_path):
        program = make().program
        for b in bind(program, fast=False)[0][:40]:
            for r in b.args.values():
                if r.__class__ is Resolved:
                    other = next(iter(program.tensors.values()))
                    got = intern.rebased(r, other)
                    assert got == dataclasses.replace(r, decl=other)
                    for f in dataclasses.fields(Resolved):  # every slot set
                        assert getattr(got, f.name) is getattr(
                            r if f.name != "decl" else got, f.name)
                    checked += 1
    assert checked > 50


def _both_locs():
    from nkirun.source.kernel.unsupported import call_loc, frame_loc, kernel_frame
    return call_loc(2), frame_loc(kernel_frame(2))


def test_call_loc_is_frame_loc_of_kernel_frame():
    seen = set()
    for _ in range(3):  # (the second time from the tables)
        for fast, plain in (_both_locs(), _both_locs()):
            assert fast == plain and fast.line
            seen.add(fast)
    assert len(seen) == 2  # two call sites


SIGNED_ZERO = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def zeros(x):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    for value in (0.0, -0.0, 0.0, -0.0):  # equal as keys, not as values
        t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=value)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_a_negative_zero_is_not_a_positive_one(tmp_path):
    import math
    (tmp_path / "signed_zero_kernel.py").write_text(SIGNED_ZERO)
    zeros = load_module(tmp_path / "signed_zero_kernel.py", "signed_zero_kernel").zeros
    program = trace_call(zeros, (np.zeros((128, 4), np.float32),)).program
    signs = [math.copysign(1.0, i.args["value"]) for i in program.instructions
             if i.op == "memset"]
    assert signs == [1.0, -1.0, 1.0, -1.0]


def test_a_numpy_negative_zero_is_not_a_positive_one(tmp_path):
    """NumPy scalars key a call's form by class and value: -0.0 and 0.0 (equal, with equal
    hashes) make two forms, as Python floats do."""
    import math
    program = dict(_cases(tmp_path))["numpy_scalars"]().program
    got = [math.copysign(1.0, i.args["operand0"]) for i in program.instructions
           if i.op == "tensor_scalar"]
    assert got == [1.0, -1.0, 1.0, -1.0, 1.0, 1.0, 1.0, 1.0] * 5


def test_the_builder_keeps_a_negative_zero(tmp_path):
    """The YAML/text front ends share converted values between instructions too."""
    import math

    from nkirun.source import parse_file
    path = tmp_path / "zeros.yaml"
    path.write_text("version: 1\ntarget: trn2\ntensors:\n"
                    "  a: {buffer: sbuf, shape: [128, 4], dtype: float32}\n"
                    "  b: {buffer: sbuf, shape: [128, 4], dtype: float32}\n"
                    "instructions:\n"
                    "  - memset: {dst: a, value: 0.0}\n"
                    "  - memset: {dst: b, value: -0.0}\n")
    program, _ = parse_file(str(path))
    assert [math.copysign(1.0, i.args["value"]) for i in program.instructions] == [1.0, -1.0]


def test_form_bounds_answer_as_their_operands(tmp_path, monkeypatch):
    """A FormBound (isa/bound.py) holds PendingOperands until `args` is read: its
    names, plan and form are those of the Operands it then makes, which equal the Operands
    bind makes with LAZY_OPERANDS off and the plain path's; names_plan() of a fresh Bound
    over them (computed, not kept) agrees; after the read it is a plain Bound. With the
    switch off, check and run give the same diagnostics and results."""
    from nkirun.isa.bound import Bound, FormBound, raw_args
    lazy_seen = 0
    for name, make in _cases(tmp_path):
        traced = make()
        lazy, diags = check_traced(traced)
        pending = [(b, raw_args(b)) for b in lazy if b.__class__ is FormBound]
        lazy_seen += len(pending)
        monkeypatch.setattr(speed, "LAZY_OPERANDS", False)
        eager, eager_diags = check_traced(traced)
        monkeypatch.setattr(speed, "LAZY_OPERANDS", True)
        assert not any(b.__class__ is FormBound for b in eager), name
        assert diagnostic_facts(diags) == diagnostic_facts(eager_diags), name
        for b, p in pending:
            ops = b.args
            assert b.__class__ is Bound and raw_args(b) is ops and b.args is ops
            assert (ops.names, ops.plan, ops.form) == (p.names, p.plan, p.form)
            fresh = Bound(b.inst, b.spec, intern.Operands(dict(ops)), None, b.engine, b.target)
            assert fresh.names_plan() == (p.plan, p.names), name
        assert FAST_BIND.summary(lazy, []) == FAST_BIND.summary(eager, []), name
        for b, e in zip(lazy, eager):
            assert (b.args.names, b.args.plan, b.args.form) == \
                (e.args.names, e.args.plan, e.args.form), name
        if not any(d.is_error for d in diags):
            again, _ = check_traced(traced)  # (a fresh one: run reads them lazily)
            assert [a.tobytes() for a in run_traced(traced, again)] == \
                [a.tobytes() for a in run_traced(traced, eager)], name
    assert lazy_seen > 30


TWIN_SITES = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def twins(x, n):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in range(n):
        a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=x)
        b = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=b, src=x)            # the same operands as the line above
        nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
    nisa.dma_copy(dst=out, src=a)
    return out
'''


def test_a_form_first_bound_as_another_forms_instance_gets_a_template(tmp_path,
                                                                      template_uses):
    """The second dma_copy's first instance equals the first's (bind's form_key): it is
    bound as that one, and then also serves as its own form's template, so the later
    instances of both lines come from templates."""
    (tmp_path / "twin_sites.py").write_text(TWIN_SITES)
    twins = load_module(tmp_path / "twin_sites.py", "twin_sites").twins
    program = trace_call(twins, (np.zeros((128, 64), np.float32), 10)).program
    fast, plain = bind(program), bind(program, fast=False)
    assert FAST_BIND.summary(*fast) == FAST_BIND.summary(*plain)
    assert sum(template_uses) == 3 * 9  # every instance after the first of each line


def _here_plain():
    from nkirun.source.kernel.unsupported import frame_loc, kernel_frame
    return frame_loc(kernel_frame(2))  # (here()'s definition)


def _call(fn):
    return fn()  # (here() and its definition called from the same place)


def test_here_is_frame_loc_of_kernel_frame():
    from nkirun.source.kernel.unsupported import here
    for _ in range(2):  # (the second time from the tables)
        fast, plain = (_call(f) for f in (here, _here_plain))
        assert fast == plain and fast.line


@pytest.mark.parametrize("simple", [True, False])
def test_a_keyword_given_twice_by_position_is_refused(tmp_path, monkeypatch, simple):
    """isa_shim's positional shortcut leaves a call that names dst twice to the general
    path (E603), as without the shortcut."""
    from nkirun.diagnostics import NkirunError
    (tmp_path / "twice_kernel.py").write_text(POSITIONAL_KERNEL.replace(
        "nisa.dma_copy(out, acc)", "nisa.tensor_copy(acc, col, dst=acc)\n    nisa.dma_copy(out, acc)"))
    twice = load_module(tmp_path / "twice_kernel.py", "twice_kernel").positional
    monkeypatch.setattr(speed, "SIMPLE_CALLS", simple)
    with pytest.raises(NkirunError) as e:
        trace_call(twice, (np.zeros((128, 64), np.float32), 2))
    assert [d.code for d in e.value.diagnostics] == ["E603"]
    assert "`dst` twice" in e.value.diagnostics[0].message


def test_calls_by_position_take_the_simple_path(tmp_path, monkeypatch):
    """The positional shortcut applies: every dst-first call of the kernel but the one
    with an NKI-only keyword (engine=) and the pre-0.2 one reaches call_forms.simple_call."""
    (tmp_path / "forms_positional_kernel.py").write_text(POSITIONAL_KERNEL)
    positional = load_module(tmp_path / "forms_positional_kernel.py",
                             "simple_positional").positional
    ops = []
    plain = call_forms.simple_call
    monkeypatch.setattr(call_forms, "simple_call", lambda tracer, op, *a: ops.append(op) or
                        plain(tracer, op, *a))
    trace_call(positional, (np.zeros((128, 64), np.float32), 6))
    assert sorted(set(ops)) == ["activation", "dma_copy", "memset", "tensor_reduce",
                                "tensor_scalar", "tensor_tensor"]
    assert len(ops) == 1 + 6 * 5 + 1


@pytest.mark.parametrize("op", ["nc_matmul", "tensor_tensor", "local_gather", "activation",
                                "tensor_copy", "tensor_scalar", "iota"])
def test_positional_plan_decides_as_dst_first(op):
    """isa_shim's positional shortcut takes a call exactly when legacy.dst_first (the
    general path's test) says dst comes first and the keywords need nothing else: the plan
    holds dst_first's part that depends on the count and keywords, the call checks the
    positions that must hold a tensor."""
    import itertools

    from nkirun.isa import REGISTRY
    from nkirun.isa.nki_api import REQUIRED, UNSET
    from nkirun.source.kernel import consts, isa_shim, legacy
    from nkirun.source.kernel.session import Tracer
    from nkirun.source.kernel.tensor import ndarray
    spec = REGISTRY[op]
    sig = isa_shim.signature(op, spec)
    order = [n for n, _ in sig]
    ours = {p.name: p for p in spec.params}
    extras = {n: d for n, d in sig if n not in ours}
    fill = [(n, d) for n, d in sig if n in ours and d is not REQUIRED and d is not UNSET
            and d is not None and not isa_shim._same(d, ours[n].default)]
    required = [n for n, d in sig if d is REQUIRED]
    tiles = frozenset(n for n in required if n in ours and
                      getattr(ours[n].kind, "name", None) == "tile")
    with Tracer("k.py", "trn2"):
        t = ndarray((128, 64), consts.DTYPES["float32"], consts.sbuf)
        pool = [t, 4, None]
        for n in range(1, min(len(order), 4) + 1):
            for kw in ((), ("scale",), (order[-1],), tuple(required[n:])):
                plan = isa_shim._positional_plan(op, order, (n, *kw), extras, fill, required,
                                                 tiles)
                named = not (n > len(order) or any(k in order[:n] for k in kw)) and \
                    isa_shim._simple_plan(op, tuple(order[:n]) + kw, extras, fill,
                                          True) is not False
                for args in itertools.product(pool, repeat=n):
                    kwargs = dict.fromkeys(kw, t)
                    fast = plan is not False and all(isinstance(args[i], ndarray)
                                                     for i in plan[2])
                    assert fast == (named and legacy.dst_first(args, required, kwargs,
                                                               tiles)), (n, kw, args)
