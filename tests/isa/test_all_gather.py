"""all_gather (nki.collectives): every rank gets the rank-list's srcs concatenated, on 2,
4 and 8 ranks, HBM and SBUF, float32 and bfloat16; its shape rules."""
import numpy as np
import pytest

import nkirun
from collective_helpers import BF16, group, inputs, kernels


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return kernels(tmp_path_factory)


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_every_rank_gets_the_concatenation(k, n, dtype):
    xs = inputs(n, dtype=dtype)
    outs = nkirun.simulate(k.gather, ranks=n)(nkirun.per_rank(xs), group(range(n)), n)
    assert len(outs) == n
    for out in outs:
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out, np.concatenate(xs))


def test_rank_lists_gather_independently(k):
    xs = inputs(4)
    outs = nkirun.simulate(k.gather, ranks=4)(nkirun.per_rank(xs), group([0, 2], [1, 3]), 2)
    for r, out in enumerate(outs):
        mine = [0, 2] if r in (0, 2) else [1, 3]
        np.testing.assert_array_equal(out, np.concatenate([xs[i] for i in mine]))


def test_sbuf_gathers_along_the_free_dim(k):
    xs = inputs(2, shape=(128, 16))
    outs = nkirun.simulate(k.gather_sbuf, ranks=2)(nkirun.per_rank(xs), group([0, 1]), 2)
    for out in outs:
        np.testing.assert_array_equal(out, np.concatenate(xs, axis=1))


def test_a_dst_of_the_wrong_size_is_e693(k):
    diags = nkirun.check(k.gather, inputs(1)[0], group([0, 1, 2, 3]), 2)
    assert [d.code for d in diags if d.is_error] == ["E693"]
    assert "[16, 8]" in diags[0].message and diags[0].loc.line > 0
