"""collective_permute (nki.collectives): each (source, target) pair moves the source's src
into the target's dst; a rank no pair targets keeps its dst; the pairs' rules."""
import numpy as np
import pytest

import nkirun
from collective_helpers import inputs, kernels


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return kernels(tmp_path_factory)


def test_a_ring_shifts_by_one(k):
    xs = inputs(4)
    pairs = [(r, (r + 1) % 4) for r in range(4)]
    outs = nkirun.simulate(k.permute, ranks=4)(nkirun.per_rank(xs), pairs)
    for r, out in enumerate(outs):
        np.testing.assert_array_equal(out, xs[(r - 1) % 4])


def test_a_rank_no_pair_targets_keeps_its_dst(k):
    xs = inputs(3)
    outs = nkirun.simulate(k.permute, ranks=3)(nkirun.per_rank(xs), [(0, 1)])
    np.testing.assert_array_equal(outs[1], xs[0])
    np.testing.assert_array_equal(outs[0], xs[0])
    np.testing.assert_array_equal(outs[2], xs[2])


def test_two_pairs_to_one_target_is_e690(k):
    diags = nkirun.check(k.permute, inputs(1)[0], [(0, 1), (2, 1)])
    assert "E690" in [d.code for d in diags if d.is_error]
