"""speed.INDEX_MEMO: an index expression (nl.arange, its indexing, its arithmetic with ints)
made once and shared is the array the plain path (legacy.arange_plain,
IndexArray.getitem_plain, ufunc_plain) makes afresh, and no one can write into it."""
import numpy as np
import pytest

from nkirun import speed
from nkirun.source.kernel import legacy, legacy_mask
from test_index_forms import _expressions


def _made(monkeypatch, memo: bool) -> list:
    monkeypatch.setattr(speed, "INDEX_MEMO", memo)
    return list(_expressions())


def test_remembered_expressions_are_the_plain_ones(monkeypatch):
    plain = _made(monkeypatch, False)
    first, again = _made(monkeypatch, True), _made(monkeypatch, True)
    assert [t for t, _ in plain] == [t for t, _ in first]
    shared = 0
    for (text, want), (_, got), (_, got2) in zip(plain, first, again):
        for g in (got, got2):
            assert type(g) is type(want), text
            assert np.asarray(g).dtype == np.asarray(want).dtype, text
            assert np.array_equal(np.asarray(g), np.asarray(want)), text
            assert getattr(g, "_form", None) == getattr(want, "_form", None), text
            if isinstance(want, np.ndarray):
                assert g.flags.writeable == want.flags.writeable, text
        shared += got is got2
    assert shared >= 15  # arange and its [:, None], + - * with ints: made once


def test_a_shared_array_cannot_be_made_writeable(monkeypatch):
    monkeypatch.setattr(speed, "INDEX_MEMO", True)
    for ix in (legacy.arange(8), legacy.arange(8)[:, None], 4 + legacy.arange(8)):
        assert legacy.arange(8) is legacy.arange(8)
        with pytest.raises(ValueError):
            ix.flags.writeable = True
        with pytest.raises(ValueError):
            np.add(ix, 1, out=ix)


def test_keys_keep_apart_what_differs(monkeypatch):
    monkeypatch.setattr(speed, "INDEX_MEMO", True)
    ar = legacy.arange
    assert ar(8)[:, None].shape == (8, 1) and ar(8)[None, :].shape == (1, 8)
    assert ar(8)[1:3].tolist() == [1, 2] and ar(8)[1:3:1] is ar(8)[1:3:1]
    assert (3 + ar(4)).tolist() == [3, 4, 5, 6] and (3 - ar(4)).tolist() == [3, 2, 1, 0]
    assert (2 * ar(4)).tolist() == [0, 2, 4, 6] and (ar(4) * 3).tolist() == [0, 3, 6, 9]
    assert ar(2, 8, 3).tolist() == [2, 5] and ar(2, 8).tolist() == list(range(2, 8))
    assert legacy_mask._item_key((slice(None), None)) != legacy_mask._item_key((None, slice(None)))
    assert legacy_mask._item_key(np.int64(1)) is None and legacy_mask._item_key([1]) is None
    assert legacy_mask._inputs_key((ar(4), True)) is None  # a bool is no int here


def test_operators_with_ints_are_the_ufunc_calls(monkeypatch):
    """`i * x`, `x + i`, `i - x` ... of a form array and an int skip NumPy's dispatch
    (IndexArray._with_int): the very arrays the ufunc calls give (index_memo's), and each
    array remembers what it was indexed and combined into."""
    monkeypatch.setattr(speed, "INDEX_MEMO", True)
    x = legacy.arange(16)[None, :]
    pairs = [(3 + x, np.add(3, x)), (x + 3, np.add(x, 3)), (x - 5, np.subtract(x, 5)),
             (5 - x, np.subtract(5, x)), (4 * x, np.multiply(4, x)), (x * 4, np.multiply(x, 4))]
    for got, want in pairs:
        assert got is want
        assert got._form is not None
    assert (5 - x).tolist() == (5 - np.arange(16)[None, :]).tolist()
    assert (x - 5) is not (5 - x) and (x * 4).tolist() == (4 * x).tolist()
    assert x[:, :, None] is legacy.arange(16)[None, :][:, :, None]
    assert set(x.__dict__["_made"]) >= {(np.add, True, 3), (np.subtract, False, 5)}
    assert legacy_mask._item_key((slice(None), None)) == (True, ((None, None, None), None))
    assert legacy_mask._item_key((None, slice(None))) == (True, (None, (None, None, None)))
    assert legacy_mask._item_key((slice(0, None), None)) == (True, ((0, None, None), None))
    assert legacy_mask._item_key((np.arange(2), None)) is None
    b = x + True  # (a bool is no int here: NumPy's path, no form)
    assert b.tolist() == (np.arange(16)[None, :] + 1).tolist() and b._form is None


def test_operators_without_the_memo_make_new_arrays(monkeypatch):
    monkeypatch.setattr(speed, "INDEX_MEMO", False)
    x = legacy.arange(16)[None, :]
    assert (3 + x) is not (3 + x) and (3 + x).tolist() == (3 + np.arange(16)[None, :]).tolist()
    assert x[:, :, None] is not x[:, :, None]
