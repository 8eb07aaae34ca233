"""legacy.affine's fast path (speed.AFFINE_OWN_SHAPE: over the index array's own shape)
against its plain twin affine_plain (over the broadcast shape)."""
import itertools

import numpy as np
import pytest

from nkirun import speed
from nkirun.source.kernel import legacy


def _cases():
    rng = np.random.default_rng(7)
    i, j = np.arange(4)[:, None], np.arange(6)[None, :]
    shapes = [(4, 6), (1, 6), (4, 1), (1, 1), (2, 4, 6)]
    arrays = [i, j, 3 + 2 * i, 5 * j - 1, i * 6 + j, i * i, j // 2, np.zeros((1, 1), int),
              np.arange(6), np.array(3), i + j * 0, rng.integers(0, 9, (4, 6)),
              np.arange(4).reshape(4, 1) * 128 + np.arange(6)]
    for arr, shape in itertools.product(arrays, shapes):
        try:
            np.broadcast_shapes(arr.shape, shape)
        except ValueError:
            continue
        if np.broadcast_shapes(arr.shape, shape) == shape:
            yield arr, shape


@pytest.mark.parametrize("arr,shape", list(_cases()))
def test_fast_affine_equals_the_plain_twin(arr, shape, monkeypatch):
    fast = legacy.affine(arr, shape)
    monkeypatch.setattr(speed, "AFFINE_OWN_SHAPE", False)
    assert fast == legacy.affine(arr, shape) == legacy.affine_plain(arr, shape)


def test_a_non_affine_index_is_none_on_both_paths():
    i = np.arange(4)[:, None]
    assert legacy.affine(i * i, (4, 6)) is None is legacy.affine_plain(i * i, (4, 6))
