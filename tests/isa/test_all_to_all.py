"""all_to_all (nki.collectives): chunk j of rank i's dst is chunk i of rank j's src, on 2,
4 and 8 ranks; its shape rule."""
import numpy as np
import pytest

import nkirun
from collective_helpers import BF16, group, inputs, kernels


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return kernels(tmp_path_factory)


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_chunks_are_transposed_across_ranks(k, n, dtype):
    xs = inputs(n, shape=(n, 8), dtype=dtype)
    outs = nkirun.simulate(k.exchange, ranks=n)(nkirun.per_rank(xs), group(range(n)))
    for i, out in enumerate(outs):
        np.testing.assert_array_equal(out, np.stack([xs[j][i] for j in range(n)]))


def test_a_dim_that_does_not_split_is_e693(k):
    diags = nkirun.check(k.exchange, inputs(1, shape=(3, 8))[0], group(range(2)))
    assert "E693" in [d.code for d in diags if d.is_error]
