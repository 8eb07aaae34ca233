"""all_reduce (nki.collectives): every rank gets op over its rank-list's srcs (float32
folded in rank order, rounded once), on 2, 4 and 8 ranks, float32 and bfloat16."""
import numpy as np
import pytest

import nkirun
from collective_helpers import BF16, group, inputs, kernels, summed

import nki.language as nl  # nkirun's (the kernels' op argument)


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return kernels(tmp_path_factory)


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_sum_in_rank_order_rounded_once(k, n, dtype):
    xs = inputs(n, dtype=dtype)
    outs = nkirun.simulate(k.reduce, ranks=n)(nkirun.per_rank(xs), group(range(n)), nl.add)
    for out in outs:
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out, summed(xs, dtype))


@pytest.mark.parametrize("op,fold", [(nl.maximum, np.maximum), (nl.minimum, np.minimum)])
def test_max_and_min(k, op, fold):
    xs = inputs(4)
    outs = nkirun.simulate(k.reduce, ranks=4)(nkirun.per_rank(xs), group(range(4)), op)
    want = fold.reduce(np.stack(xs))
    for out in outs:
        np.testing.assert_array_equal(out, want)


def test_integers_add_exactly(k):
    xs = [np.full((2, 3), 2 ** 30, np.int32) * (r + 1) // 4 for r in range(2)]
    outs = nkirun.simulate(k.reduce, ranks=2)(nkirun.per_rank(xs), group([0, 1]), nl.add)
    np.testing.assert_array_equal(outs[1], (xs[0].astype(np.int64) + xs[1]).astype(np.int32))


def test_an_op_that_does_not_reduce_is_e025_and_one_rank_is_e690(k):
    diags = nkirun.check(k.reduce, inputs(1)[0], group([0, 1]), nl.subtract)
    assert "E025" in [d.code for d in diags]
    with pytest.raises(nkirun.NkirunError) as e:
        nkirun.simulate(k.reduce)(inputs(1)[0], group([0, 1]), nl.add)
    d = e.value.diagnostics[0]
    assert d.code == "E690" and "ranks=2" in d.hint and d.loc.line > 0
