"""speed.INDEX_FORMS: the affine form an index array carries (source/kernel/index_forms.py)
is the one affine_plain proves from its values, and a view built from the forms is the view
the plain path (index_arrays.advanced_pattern_plain) builds."""
import numpy as np
import pytest

from nkirun import speed
from nkirun.source.kernel import index_arrays, legacy


def _expressions():
    """(text, array) of index expressions a kernel writes."""
    ar, mg = legacy.arange, legacy.mgrid
    i0, i1 = 3, -2
    p, f = mg[0:8, 0:6]
    a, b, c = mg[1:5, 0:12:3, 2:3]
    yield from [
        ("arange(8)", ar(8)), ("arange(8)[:, None]", ar(8)[:, None]),
        ("arange(6)[None, :]", ar(6)[None, :]), ("arange(2, 20, 3)", ar(2, 20, 3)),
        ("arange(1)[:, None]", ar(1)[:, None]), ("arange(9, 0, -2)", ar(9, 0, -2)),
        ("arange(8)[None, :, None]", ar(8)[None, :, None]),
        ("512*i0 + arange(6)[None, :]", 512 * i0 + ar(6)[None, :]),
        ("arange(8)[:, None]*6 + arange(6)[None, :]", ar(8)[:, None] * 6 + ar(6)[None, :]),
        ("i1 - arange(4)[:, None]", i1 - ar(4)[:, None]),
        ("-(arange(4))[None, :]", -(ar(4)[None, :])), ("+arange(4)", +ar(4)),
        ("arange(8)[1:7:2]", ar(8)[1:7:2]), ("arange(8)[::-1][:, None]", ar(8)[::-1][:, None]),
        ("arange(8)[5]", ar(8)[5]), ("arange(8)[-1:]", ar(8)[-1:]),
        ("arange(8)[..., None]", ar(8)[..., None]), ("arange(8)[None, ...]", ar(8)[None, ...]),
        ("arange(8)[:, None][2:4, 0]", ar(8)[:, None][2:4, 0]),
        ("np.int64(3) * arange(5)", np.int64(3) * ar(5)),
        ("mgrid p, f", p), ("f", f), ("p * 6 + f", p * 6 + f), ("a", a), ("b", b), ("c", c),
        ("a * 100 + b + c", a * 100 + b + c), ("p[:, :, None]", p[:, :, None]),
        ("arange(4)[:, None] * arange(3)[None, :]", ar(4)[:, None] * ar(3)[None, :]),
        ("arange(6) // 2", ar(6) // 2), ("arange(6).reshape(2, 3)", ar(6).reshape(2, 3)),
        ("arange(6)[:, None].T", ar(6)[:, None].T), ("arange(4) * 2.5", ar(4) * 2.5),
        ("arange(4)[[1, 2]]", ar(4)[[1, 2]]),
        ("2**62 * arange(4)", 2 ** 62 * ar(4)),  # wraps in int64: no longer affine
        ("arange(8) - 3", ar(8) - 3), ("arange(8)[None, :] + 0", ar(8)[None, :] + 0),
        ("arange(4) * -1", ar(4) * -1),
    ]


@pytest.mark.parametrize("text,arr", list(_expressions()), ids=lambda x: x
                         if isinstance(x, str) else "")
def test_a_carried_form_is_the_proved_form(text, arr):
    form = getattr(arr, "_form", None)
    if not isinstance(arr, np.ndarray) or arr.size == 0:
        return
    proved = index_arrays.affine_plain(np.asarray(arr), arr.shape)
    if form is not None:  # a carried form is always the true one
        assert proved is not None and form == (proved[0], tuple(proved[1])), text
    expected_known = not any(s in text for s in ("*", "//", "reshape", ".T", "[[")) or \
        text.startswith(("512*", "np.int64", "p * 6", "a * 100")) or \
        "[:, None]*6" in text
    if expected_known and "2**62" not in text:
        assert form is not None, text  # (the shortcut does apply to these)


def test_forms_are_dropped_without_the_switch(monkeypatch):
    monkeypatch.setattr(speed, "INDEX_FORMS", False)
    assert legacy.arange(8)[:, None]._form is None
    assert (3 + legacy.arange(8))._form is None


def _items():
    ar, mg = legacy.arange, legacy.mgrid
    p, f = mg[0:4, 0:6]
    yield [ar(4)[:, None], ar(6)[None, :]]
    yield [2, ar(4)[:, None], 5 * 1 + ar(6)[None, :]]
    yield [ar(4)[:, None] * 2 + 1, 3 - ar(6)[None, :]]
    yield [p, f * 2]
    yield [1, 2]
    yield [ar(1)[:, None], 0]
    yield [ar(4)[:, None] // 2, ar(6)[None, :]]  # no form: the plain path
    yield [ar(4)[:, None], ar(5)[:, None]]  # do not broadcast: E607 on both paths
    yield [ar(4)[:, None] * ar(6)[None, :], 0]  # not affine: E607


@pytest.mark.parametrize("items", list(_items()))
@pytest.mark.parametrize("layout", [([(512, 8), (1, 16)], 0), ([(96, 4), (2, 8)], 7)])
def test_a_pattern_from_forms_is_the_plain_pattern(items, layout, monkeypatch):
    strides, offset = layout
    strides = strides[:len(items)] + [(1000, 5)] * (len(items) - len(strides))

    def answer():
        try:
            return index_arrays.advanced_pattern(strides, offset, items)
        except Exception as e:  # noqa: BLE001 - the same refusal on both paths
            return type(e), str(e)

    fast = answer()
    monkeypatch.setattr(speed, "INDEX_FORMS", False)
    assert fast == answer() == (lambda: answer())()


def test_index_arrays_are_immutable_and_in_place_arithmetic_rebinds():
    ix = legacy.arange(4)
    alias = ix
    ix += 2
    assert list(ix) == [2, 3, 4, 5] and list(alias) == [0, 1, 2, 3]
    ix *= 3
    ix -= 1
    assert list(ix) == [5, 8, 11, 14] and ix._form == (5, (3,))
    with pytest.raises(ValueError):
        alias[0] = 7


def _legacy_kernels(tmp_path):
    """(name, make traced program) of the pre-0.2 kernels of test_kernel_legacy.py."""
    from nkirun.api_kernel import trace_call
    from tests.kernel import test_kernel_legacy as kl
    from tests.kernel.test_kernel_contract import nkirun_kernel, write
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 96)).astype(np.float32)
    w = rng.standard_normal(96).astype(np.float32)
    rows = nkirun_kernel(write(tmp_path, kl.ROWS, "rows.py"), "scaled_rows")
    yield "rows", lambda: trace_call(rows, (x, w))
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((256, 128), (256, 64)))
    mm = nkirun_kernel(write(tmp_path, kl.MATMUL, "mm.py"), "mm")
    yield "mm", lambda: trace_call(mm, (a, b))
    c = rng.standard_normal((16, 8, 12)).astype(np.float32)
    pool = nkirun_kernel(write(tmp_path, kl.INNER, "pool.py"), "pool_and_flip")
    yield "pool", lambda: trace_call(pool, (c,), {"size": 2})


def test_a_kernel_traces_to_the_same_program_without_forms(tmp_path, monkeypatch):
    for name, make in _legacy_kernels(tmp_path):
        fast = make()
        monkeypatch.setattr(speed, "INDEX_FORMS", False)
        plain = make()
        monkeypatch.setattr(speed, "INDEX_FORMS", True)
        key = [(i.op, dict(i.args), i.index, i.loc) for i in fast.program.instructions]
        assert key == [(i.op, dict(i.args), i.index, i.loc)
                       for i in plain.program.instructions], name
        assert fast.program.tensors == plain.program.tensors, name
        assert len(key) > 1, name
