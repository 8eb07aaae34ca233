"""StridedView (the Python front end's NkiTensor views) against NumPy's own views of the
same array, and through the IR: each view is lowered with to_ir(), written into a program
in its text spelling, run, and compared with the NumPy view."""
from __future__ import annotations

import numpy as np
import pytest

from nkirun.hw import dtypes as dt
from nkirun.ir import AccessPattern, TensorDecl
from nkirun.views.reshape import ViewError
from nkirun.views.strided import StridedView
from prog_helpers import out, run_program, sbuf

F32, BF16, U8 = dt.DTYPES["float32"], dt.DTYPES["bfloat16"], dt.DTYPES["uint8"]
A = np.arange(8 * 4 * 6, dtype=np.float32).reshape(8, 4, 6)
T = StridedView.of(TensorDecl("x", "sbuf", (8, 4, 6), F32))
H = StridedView.of(TensorDecl("h", "hbm", (4, 5), F32))

CASES = {  # view, the same view made with NumPy (on-chip results stay >= 2-D)
    "int on free dim": (T[:, 1], A[:, 1]),
    "slices with step": (T[2:5, :, ::2], A[2:5, :, ::2]),
    "int on partition keeps it": (T[0], A[0:1]),
    "two ints keep (P, 1)": (T[:, 0, 3], A[:, 0, 3:4]),
    "ellipsis and negative": (T[..., -1], A[..., -1]),
    "ds": (T[:, type("ds", (), {"start": 1, "size": 2})()], A[:, 1:3]),
    "reshape": (T.reshape((8, 24)), A.reshape(8, 24)),
    "reshape -1 of a strided view": (T[:, :, ::2].reshape((8, -1)), A[:, :, ::2].reshape(8, 12)),
    "permute": (T.permute((0, 2, 1)), A.transpose(0, 2, 1)),
    "permute then index": (T[0:4].permute((0, 2, 1))[:, 0, :], A[0:4].transpose(0, 2, 1)[:, 0]),
    "flatten_dims": (T.flatten_dims(1, 2), A.reshape(8, 24)),
    "reshape_dim": (T.reshape_dim(2, (2, -1)), A.reshape(8, 4, 2, 3)),
    "expand_dim": (T.expand_dim(1), A[:, None]),
    "squeeze_dim": (T.expand_dim(1).squeeze_dim(1), A),
    "broadcast": (T[:, 0:1, :].broadcast(1, 5), np.broadcast_to(A[:, 0:1], (8, 5, 6))),
    "select": (T.select(1, 2), A[:, 2]),
    "slice": (T.slice(2, 1, 5, 2), A[:, :, 1:5:2]),
    "ap with zero step": (T.ap([[24, 8], [0, 3], [1, 4]], offset=2),
                          np.broadcast_to(A.reshape(8, 24)[:, None, 2:6], (8, 3, 4))),
    "ap on a view starts at its offset": (T[:, 1].ap([[24, 8], [1, 3]], offset=1),
                                          A.reshape(8, 24)[:, 7:10]),
    "rearrange": (T.reshape((8, 24)).rearrange(("b", ("h", "w")), ("b", "w", "h"), {"h": 4}),
                  A.transpose(0, 2, 1)),
}


def numpy_of(v: StridedView, storage: np.ndarray) -> np.ndarray:
    """What the view addresses, by its own definition (offset + strides . index)."""
    flat = storage.reshape(-1).view(np.uint8).view(v.dtype.np_type)
    idx = np.full(v.shape, v.offset, np.int64)
    for axis, (n, s) in enumerate(zip(v.shape, v.strides)):
        idx += (np.arange(n) * s).reshape([n if a == axis else 1 for a in range(len(v.shape))])
    return flat[idx]


@pytest.mark.parametrize("name", CASES)
def test_view_addresses_what_numpy_does(name):
    v, ref = CASES[name]
    assert v.shape == ref.shape
    np.testing.assert_array_equal(numpy_of(v, A), ref)


@pytest.mark.parametrize("name", CASES)
def test_view_runs_through_the_ir(tmp_path, name):
    v, ref = CASES[name]
    got = run_program(tmp_path, {"x": sbuf(A), "y": out(ref.shape, "float32")},
                      [{"tensor_copy": {"dst": "y", "src": str(v.to_ir())}}])
    np.testing.assert_array_equal(got["y"], ref)


def test_basic_views_lower_to_basic_indices_others_to_patterns():
    assert T[:, 1].to_ir().index == T[:, 1].to_ir().index and \
        not isinstance(T[:, 1].to_ir().index, AccessPattern)
    assert T.to_ir().index is None
    assert str(T[2:5, :, ::2].to_ir()) == "x[2:5, 0:4, 0:5:2]"
    assert str(T.permute((0, 2, 1)).to_ir()) == "x.ap([[24,8],[1,6],[6,4]])"
    assert str(H[1, 2].to_ir()) == "h[1, 2:3]"
    assert H[1, 2].shape == (1,)


def test_view_dtype_rescales_the_last_dim():
    v = T.view(U8)
    assert v.shape == (8, 4, 24) and v.strides == (96, 24, 1)
    np.testing.assert_array_equal(numpy_of(v, A), A.view(np.uint8))
    w = T[:, 1:3, :].view(BF16)
    assert w.shape == (8, 2, 12) and w.offset == 12
    assert str(w.to_ir()) == "x.ap([[48,8],[12,2],[1,12]],offset=12,dtype=bfloat16)"
    assert T.view(U8).view(F32).shape == T.shape


def test_ap_dtype_counts_in_the_new_elements():
    # NKI's deep-dive example: (128, 256) int32 seen as (128, 512) bf16
    t = StridedView.of(TensorDecl("t", "sbuf", (128, 256), dt.DTYPES["int32"]))
    v = t.ap([[512, 128], [1, 512]], dtype=BF16)
    assert v.shape == (128, 512) and v.dtype is BF16
    assert v.get_pattern() == [[512, 128], [1, 512]]


@pytest.mark.parametrize("make, words", [
    (lambda: T.permute((1, 0, 2)), "partition dim first"),
    (lambda: T.broadcast(0, 3), "size-1 dim"),
    (lambda: T[0:1].broadcast(0, 3), "partition dim"),
    (lambda: T.reshape((4, 48)), "partition dim 8"),
    (lambda: T.permute((0, 2, 1)).reshape((8, 24)), "without copying"),
    (lambda: T.permute((0, 2, 1)).flatten_dims(1, 2), "not contiguous"),
    (lambda: T.squeeze_dim(1), "not 1"),
    (lambda: T.expand_dim(0), "partition dim"),
    (lambda: T[:, :, ::2].view(U8), "contiguous"),
    (lambda: T[:, :, 0:3].view(dt.DTYPES["float32"]).view(dt.DTYPES["int32"]), None),
    (lambda: T[:, 9], "out of bounds"),
    (lambda: T[:, :, 4:2], "selects nothing"),
    (lambda: T.select(0, 1), "partition dim"),
    (lambda: T.reshape_dim(2, (4, -1)), "infer"),
])
def test_what_nki_forbids_is_a_view_error(make, words):
    if words is None:  # same-size reinterpretation is always allowed
        make()
        return
    with pytest.raises(ViewError, match=words):
        make()


def test_is_contiguous_and_get_pattern():
    assert T.is_contiguous() and T.reshape((8, 24)).is_contiguous()
    assert not T.permute((0, 2, 1)).is_contiguous()
    assert T[0:4].is_contiguous()  # the partition dim does not count
    assert T.get_pattern() == [[24, 8], [6, 4], [1, 6]]
