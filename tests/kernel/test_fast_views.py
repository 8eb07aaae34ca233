"""The view shortcuts change nothing: `index_view` (t[key] remembered per view layout and
key) gives the handle `index_view_plain` gives, `whole_view` the view `StridedView.of`
gives, and an instruction's keyword plan leaves the same instruction as the plain fill."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from nkirun.source.kernel import tensor as tensor_mod
from nkirun.source.kernel import views
from nkirun.api_kernel import trace_call
from nkirun.source.kernel.session import ir_index
from nkirun.views.strided import StridedView

FIELDS = StridedView.__slots__


def same_view(a: StridedView, b: StridedView) -> bool:
    return all(getattr(a, f) == getattr(b, f) for f in FIELDS if f != "decl") \
        and a.decl is b.decl


def _handles():
    """Handles of SBUF and HBM tensors and views of them (indexed, reshaped, re-typed)."""
    from nkirun.source.kernel import consts
    from nkirun.source.kernel.session import Tracer
    tracer = Tracer("k.py", "trn2")
    with tracer:
        out = []
        for shape, buf in (((128, 64), consts.sbuf), ((4, 128, 32), consts.sbuf),
                           ((128, 64), consts.hbm), ((256, 96), consts.hbm), ((8,), consts.hbm)):
            t = tensor_mod.ndarray(shape, consts.DTYPES["float32"], buf)
            out.append(t)
            if len(shape) > 1:
                out.append(views.index_view_plain(t, (slice(None), slice(1, None, 2))))
                out.append(t.view(consts.DTYPES["int32"]))
        return tracer, out


KEYS = [0, 1, -1, 3, slice(None), slice(2, 9), slice(None, None, 3), slice(1, 30, 4),
        slice(-5, None), slice(0, 1), tensor_mod.DynSlice(2, 7), tensor_mod.DynSlice(0, 64),
        tensor_mod.DynSlice(60, 8)]


@pytest.mark.parametrize("n_items", [1, 2, 3])
def test_index_view_is_plain(n_items):
    tracer, handles = _handles()
    with tracer:
        for t, key in itertools.product(handles, itertools.product(KEYS, repeat=n_items)):
            key = key[0] if n_items == 1 else key
            _same_as_plain(t, key, raises=1)


def test_hashable_key_keeps_apart_what_differs():
    k = views._hashable_key
    assert k(3) == k((3,)) and k(3) != k(slice(3)) and k(slice(0, 3)) != k(slice(None, 3))
    assert k((slice(1, 2, None), 0)) != k((slice(1, 2, 1), 0))
    assert k(np.int64(3)) is None and k(slice(np.int64(1), 4)) is None
    assert k(True) is None and k(Ellipsis) is None and k(None) is None
    ds = tensor_mod.DynSlice
    assert k(ds(2, 7)) == k((ds(2, 7),)) and k(ds(2, 7)) != k(ds(2, 8))
    assert k(ds(2, 7)) != k(slice(2, 9)) and k((ds(0, 3), 1)) != k((slice(0, 3), 1))


def test_layout_tokens_name_layouts():
    """Handles of one view layout and tensor layout share a token; any difference in
    either (offset, dtype, buffer, shape) gives another; indirect views get none (False).
    A view indexed again (its token handed out by the memo) is what the plain path gives."""
    tracer, handles = _handles()
    with tracer:
        f32, sbuf = tensor_mod.consts.DTYPES["float32"], tensor_mod.consts.sbuf
        a, b = (tensor_mod.ndarray((128, 64), f32, sbuf) for _ in range(2))
        tok = views._layout_token
        assert tok(a) == tok(b) and tok(a[:, 0:8]) == tok(b[:, 0:8])
        assert tok(a[:, 0:8]) != tok(a[:, 8:16]) != tok(a)
        assert tok(tensor_mod.ndarray((128, 64), f32, tensor_mod.consts.psum)) != tok(a)
        assert tok(a.view(tensor_mod.consts.DTYPES["int32"])) != tok(a)
        assert len({tok(t) for t in handles}) == len(handles)
        for _ in range(2):
            for t in (a, b):
                _same_as_plain(t[:, 8:40], (slice(0, 128), slice(4, 12)), raises=1)
                _same_as_plain(t[0:64, :][:, 2:10], (1, slice(None)), raises=1)


def test_layout_tables_stay_bounded_and_right_across_clears(monkeypatch):
    """The token and memo tables are cleared at their bound; a token is never given to a
    second layout, so views indexed before and after a clear stay those of the plain path."""
    monkeypatch.setattr(views, "_LAYOUTS_MAX", 5)
    monkeypatch.setattr(views, "_TOKENS", {})
    monkeypatch.setattr(views, "_LAYOUTS", {})
    tracer, handles = _handles()
    with tracer:
        f32, sbuf = tensor_mod.consts.DTYPES["float32"], tensor_mod.consts.sbuf
        tiles = [tensor_mod.ndarray((128, n), f32, sbuf) for n in range(8, 40)]
        for _ in range(2):
            for t in tiles + [h for h in handles if h.ndim > 1]:
                _same_as_plain(t, (slice(0, 4), slice(1, 3)), raises=1)
                _same_as_plain(t[0:4, 1:3], (slice(None), 0), raises=1)
                assert len(views._TOKENS) <= 5 and len(views._LAYOUTS) <= 5


def test_whole_view_is_of():
    tracer, handles = _handles()
    for t in handles:
        rec = t._rec
        for _ in range(2):
            assert same_view(tensor_mod.whole_view(rec.decl), StridedView.of(rec.decl))


KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in range(4):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, (i % 2) * 64:(i % 2 + 1) * 64])
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
        nisa.activation(dst=t, op=nl.exp, data=acc)
        nisa.activation(t, nl.exp, acc, scale=2.0)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


def test_each_iteration_traces_the_same(tmp_path, monkeypatch):
    """Memoised views and keyword plans: every iteration's instructions are the first's."""
    (tmp_path / "fv_kernel.py").write_text(KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    import fv_kernel
    prog = trace_call(fv_kernel.k, (np.zeros((128, 128), np.float32),)).program
    body = prog.instructions[1:-1]
    assert len(body) == 16
    per = [body[i:i + 4] for i in range(0, 16, 4)]

    def shape(inst):
        return inst.op, {k: (str(v.index) if hasattr(v, "index") else repr(v))
                         for k, v in inst.args.items()}
    assert shape(per[0][0]) != shape(per[1][0])  # the two column blocks of x
    assert [shape(i) for i in per[0]] == [shape(i) for i in per[2]]
    assert [shape(i) for i in per[1]] == [shape(i) for i in per[3]]
    assert shape(per[0][2])[1].keys() == shape(per[0][3])[1].keys()  # defaults filled alike


METHOD_CALLS = [("reshape", ((128, 8, 8),)), ("reshape", ((128, -1),)), ("reshape", ([128, 64],)),
                ("reshape", ((64, 128),)), ("ap", ([[64, 128], [1, 64]], None, None, None, 0, None)),
                ("ap", ([[64, 128], [2, 16]], 3, None, None, 0, None)),
                ("ap", ([[1, 32]], 0, None, None, 0, None)), ("slice", (1, 0, 16, 2)),
                ("select", (1, 3)), ("expand_dim", (1,)), ("permute", ((1, 0),)),
                ("broadcast", (0, 4)), ("squeeze_dim", (0,)), ("flatten_dims", (0, 1)),
                ("reshape_dim", (1, (8, -1)))]


def test_view_method_is_plain():
    """view_method (remembered per view layout, method and arguments) gives the handle, or
    the error, view_method_plain gives, for every handle and call (valid or not)."""
    tracer, handles = _handles()
    with tracer:
        for t, (name, args) in itertools.product(handles, METHOD_CALLS):
            try:
                want = views.view_method_plain(t, name, args)
            except Exception as e:  # noqa: BLE001 - the same error either way
                for _ in range(2):
                    with pytest.raises(type(e)):
                        views.view_method(t, name, args)
                continue
            for _ in range(2):  # computed, then remembered
                got = views.view_method(t, name, args)
                assert (got is t) == (want is t), (t, name, args)
                assert got._rec is want._rec and got._dtype is want._dtype
                assert same_view(got._v, want._v), (t, name, args)
                if got._lk is not None and got is not t:  # the token it hands out
                    assert got._lk == views._layout_token(want), (t, name, args)


def test_hashable_args_keeps_apart_what_differs():
    k = views._hashable_args
    assert k(((1, 2),)) != k(([1, 2],)) and k((1, None)) != k((None, 1))
    assert k(([[64, 128], [1, 64]], 0)) == k(([[64, 128], [1, 64]], 0))
    assert k((True,)) is None and k((np.int64(1),)) is None and k((1.0,)) is None


def _index_keys():
    """Keys of nl.arange expressions (form index arrays) and ints, valid or not."""
    from nkirun.source.kernel.legacy import arange
    ip, ip2 = arange(128)[:, None], arange(64)[:, None]
    jf, jf2 = arange(64)[None, :], 8 * 2 + arange(16)[None, :]
    return [(ip, jf), (ip2, jf), (ip2, jf2), (ip, jf2 * 2), (ip, 3), (3, jf), (1, ip, jf),
            (2, ip2, jf2), (ip, jf, 0), (arange(8),), (arange(2, 8, 3),), (ip, jf + ip), (ip, slice(None)),
            (arange(5), arange(6)), (-1 + arange(4)[:, None], jf)]


def test_index_view_of_index_arrays_is_plain():
    """Keys with form index arrays (remembered as ("ix", form, shape)) give the handle, or
    the error, index_view_plain gives."""
    tracer, handles = _handles()
    with tracer:
        for t, key in itertools.product(handles, _index_keys()):
            _same_as_plain(t, key, raises=2)


def test_hashable_key_of_index_arrays(monkeypatch):
    from nkirun import speed
    from nkirun.source.kernel.legacy import arange
    k = views._hashable_key
    col, row = arange(4)[:, None], arange(4)[None, :]
    assert k((col, 1)) is not None and k((col, 1)) == k((arange(4)[:, None], 1))
    assert k((col, 1)) != k((row, 1)) and k(col) != k(1 + col) and k(col) != k(2 * col)
    assert k(arange(4)) != k(arange(5)) and k(arange(4)) != k(slice(0, 4, 1))
    assert k(np.arange(4)) is None and k((col.reshape(2, 2), 0)) is None  # no form
    monkeypatch.setattr(speed, "INDEX_FORMS", False)
    assert k(arange(4)[:, None]) is None


def test_ds_takes_ints_and_int_subclasses_but_not_bools():
    """nl.ds's check (exact ints first, then the general rule): the same outcomes."""
    import enum

    from nkirun.diagnostics import NkirunError
    from nkirun.source.kernel.tensor import DynSlice

    class Start(enum.IntEnum):
        A = 3

    assert (DynSlice(1, 2).start, DynSlice(1, 2).size) == (1, 2)
    assert DynSlice(Start.A, 4).start is Start.A
    for start, size in ((True, 2), (1, False), (1.0, 2), (1, None)):
        with pytest.raises(NkirunError) as e:
            DynSlice(start, size)
        assert e.value.diagnostics[0].code == "E601"


def _same_as_plain(t, key, raises: int) -> None:
    """views.index_view against its plain twin on (t, key): the same error (`raises` calls),
    or, computed and then remembered, the same tensor, dtype, view and IR index."""
    try:
        want = views.index_view_plain(t, key)
    except Exception as e:  # noqa: BLE001 - the same error either way
        for _ in range(raises):
            with pytest.raises(type(e)):
                views.index_view(t, key)
        return
    for _ in range(2):  # computed, then remembered
        got = views.index_view(t, key)
        assert got._rec is want._rec and got._dtype is want._dtype
        assert same_view(got._v, want._v), (t, key)
        if got._ir is not tensor_mod._NO_INDEX:  # the IR index it hands out
            assert got._ir == ir_index(want), (t, key)
        if got._lk is not None:  # the layout token it hands out: its own view's
            assert got._lk == views._layout_token(want), (t, key)
