"""reduce_scatter (nki.collectives): the rank at position i gets the sum of every rank's
chunk i, on 2, 4 and 8 ranks, float32 and bfloat16; its shape rule."""
import numpy as np
import pytest

import nkirun
from collective_helpers import BF16, group, inputs, kernels, summed


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return kernels(tmp_path_factory)


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_each_rank_gets_its_chunk_of_the_sum(k, n, dtype):
    xs = inputs(n, shape=(2 * n, 8), dtype=dtype)
    outs = nkirun.simulate(k.scatter, ranks=n)(nkirun.per_rank(xs), group(range(n)), n)
    total = summed(xs, dtype)
    for r, out in enumerate(outs):
        np.testing.assert_array_equal(out, total[2 * r:2 * r + 2])


def test_position_in_the_rank_list_not_the_rank_picks_the_chunk(k):
    xs = inputs(2, shape=(4, 8))
    outs = nkirun.simulate(k.scatter, ranks=2)(nkirun.per_rank(xs), group([1, 0]), 2)
    total = summed(xs, np.float32)
    np.testing.assert_array_equal(outs[1], total[:2])  # rank 1 is first in its list
    np.testing.assert_array_equal(outs[0], total[2:])


def test_src_not_n_chunks_of_dst_is_e693(k):
    diags = nkirun.check(k.scatter, inputs(1, shape=(6, 8))[0], group(range(4)), 2)
    assert "E693" in [d.code for d in diags if d.is_error]
