"""The tracer's shortcuts change nothing: `lowered_index` (ir_index remembered by the
handle's value) gives what `ir_index` gives, for every kind of view a kernel makes, and an
instruction call site's shared arg_locs equal the plain `dict.fromkeys(args, loc)`."""
from __future__ import annotations

import numpy as np

from nkirun.source.kernel import session, views
from nkirun.api_kernel import trace_call
from nkirun.source.kernel.session import ir_index

KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def views(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in range(3):
        t = nl.ndarray((128, 2, 64), dtype=nl.float32, buffer=nl.sbuf)
        u = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[:, 0, :], src=x[:, 0:64])
        nisa.dma_copy(dst=t[:, 1, :], src=x[:, 64:128])
        nisa.tensor_copy(dst=u[:, 0:32], src=t[:, 1, 0:32])
        nisa.tensor_copy(dst=u[:, 32:64], src=t[0:128, 0, 32:64])
        nisa.tensor_copy(dst=u, src=t.reshape((128, 128))[:, 0:64])
    nisa.dma_copy(dst=out, src=u)
    return out
'''


def test_lowered_index_is_ir_index(tmp_path, monkeypatch):
    seen = []
    plain = session.lowered_index

    def spy(v):
        got = plain(v)
        seen.append((got, ir_index(v)))
        return got

    monkeypatch.setattr(session, "lowered_index", spy)
    monkeypatch.setattr(views, "_LAYOUTS", {})  # (t[key]'s memo hands out indices it holds)
    (tmp_path / "views_kernel.py").write_text(KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    import views_kernel
    program = trace_call(views_kernel.views, (np.zeros((128, 128), np.float32),)).program
    assert len(seen) >= 8  # (t[key] remembered per layout hands out its index: fewer calls)
    for got, want in seen:
        assert got == want
    insts = program.instructions
    for inst in insts:
        assert inst.arg_locs == dict.fromkeys(inst.arg_locs, inst.loc)
        assert set(inst.arg_locs) <= set(inst.args)
    # the same call in each iteration shares one arg_locs dict
    per_line = {}
    for inst in insts:
        per_line.setdefault(inst.loc, set()).add(id(inst.arg_locs))
    assert any(len(inst_ids) == 1 for inst_ids in per_line.values())


def test_tensor_at_is_the_dataclass():
    import dataclasses

    from nkirun.diagnostics import Loc
    from nkirun.hw.dtypes import DTYPES
    from nkirun.ir import TensorDecl, tensor_at
    loc = Loc("k.py", 3, 5)
    for core in (None, 1):
        fast = tensor_at("t_7", "sbuf", (128, 64), DTYPES["bfloat16"], loc, core)
        plain = TensorDecl("t_7", "sbuf", (128, 64), DTYPES["bfloat16"], None, None, False, loc,
                           {}, core)
        assert fast == plain
        for f in dataclasses.fields(TensorDecl):  # every field set (slots raise otherwise)
            assert getattr(fast, f.name) == getattr(plain, f.name), f.name


def test_rec_of_kind_is_the_tensor_rec():
    """A tile of a known layout built from rec_kind fills every slot as TensorRec() does
    (its _Decl and whole StridedView too)."""
    from nkirun.diagnostics import Loc
    from nkirun.source.kernel import consts
    from nkirun.source.kernel.tensor import TensorRec, _Decl, rec_kind, rec_of_kind
    from nkirun.views.strided import StridedView
    loc = Loc("k.py", 4, 9)
    for shape, dtype, buf in (((128, 64), "float32", consts.sbuf), ((2, 3, 5), "bfloat16",
                                                                     consts.psum),
                              ((7,), "int8", consts.hbm), ((128, 1), "float8_e4m3",
                                                           consts.shared_hbm)):
        d = consts.DTYPES[dtype]
        first = TensorRec("a", shape, d, buf, loc)
        for core in (None, 1):
            fast = rec_of_kind("b_3", rec_kind(first), loc, core)
            plain = TensorRec("b_3", shape, d, buf, loc, None, core)
            for cls, a, b in ((TensorRec, fast, plain), (_Decl, fast.decl, plain.decl),
                              (StridedView, fast.whole, plain.whole)):
                for slot in cls.__slots__:
                    if slot in ("decl", "whole"):
                        continue
                    assert getattr(a, slot) == getattr(b, slot), (cls, slot)
            assert fast.whole.decl is fast.decl


def test_call_loc_tells_equal_code_of_two_files_apart(tmp_path):
    """Equal code objects compiled from two files compare equal: call_loc's positions
    table is kept per code object and file, so each call is located in its own file."""
    from nkirun.source.kernel.unsupported import call_loc
    src = "def f(where):\n    return where(1)\n"
    locs = []
    for name in ("one.py", "two.py"):
        ns: dict = {}
        exec(compile(src, str(tmp_path / name), "exec"), ns)
        locs.append([ns["f"](call_loc) for _ in range(2)])
    assert locs[0][0] == locs[0][1] and locs[1][0] == locs[1][1]
    assert [loc.file.rsplit("/", 1)[-1] for loc, _ in locs] == ["one.py", "two.py"]
    assert locs[0][0].line == locs[1][0].line == 2


def test_bytes_per_partition_memo():
    from nkirun.checker.passes import _bytes_per_partition
    from nkirun.hw.dtypes import DTYPES
    from nkirun.ir import TensorDecl
    for shape in ((128, 64), (128, 2, 3), (7, 1), (128, 64)):
        for dtype in ("float32", "bfloat16", "int8", "float32"):
            t = TensorDecl("t", "sbuf", shape, DTYPES[dtype])
            assert _bytes_per_partition(t) == t.bytes_per_partition
