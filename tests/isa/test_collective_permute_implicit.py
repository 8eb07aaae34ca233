"""collective_permute_implicit (nki.collectives): a ring step within each rank-list, one
instruction per channel; its rules; ranks that disagree are located errors."""
import numpy as np
import pytest

import nkirun
from collective_helpers import BF16, bounded, group, inputs
from ring_helpers import ring_kernels


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return ring_kernels(tmp_path_factory)


@pytest.mark.parametrize("n,channels,dtype", [(2, 1, np.float32), (4, 2, BF16),
                                              (8, 4, np.float32), (4, 3, BF16)])
def test_each_rank_receives_its_predecessor_s_src_on_every_channel(k, n, channels, dtype):
    xs = inputs(n, shape=(channels, 4, 8), dtype=dtype)
    outs = nkirun.simulate(k.ring_step, ranks=n)(nkirun.per_rank(xs), group(range(n)),
                                                 channels)
    for r, out in enumerate(outs):
        assert out.dtype == dtype
        np.testing.assert_array_equal(out, xs[(r - 1) % n])


def test_the_ring_is_the_rank_list_in_its_order(k):
    xs = inputs(4, shape=(1, 4, 8))
    outs = nkirun.simulate(k.ring_step, ranks=4)(nkirun.per_rank(xs), group([0, 2, 1, 3]), 1)
    assert [next(j for j, x in enumerate(xs) if np.array_equal(o, x)) for o in outs] == \
        [3, 2, 0, 1]  # predecessors in the ring 0 -> 2 -> 1 -> 3 -> 0


def test_each_rank_list_is_its_own_ring(k):
    xs = inputs(6, shape=(1, 4, 8))
    outs = nkirun.simulate(k.ring_step, ranks=6)(nkirun.per_rank(xs), group([0, 1, 2],
                                                                            [3, 4, 5]), 1)
    for r, source in enumerate([2, 0, 1, 5, 3, 4]):
        np.testing.assert_array_equal(outs[r], xs[source])


def test_a_fifth_channel_is_e693_at_the_call(k):
    diags = nkirun.check(k.ring_step, inputs(1, shape=(5, 4, 8))[0], group([0, 1]), 5)
    errors = [d for d in diags if d.is_error]
    assert errors and errors[0].code == "E693" and "channel_id 4" in errors[0].message
    assert errors[0].loc.file.endswith("cc_ring.py") and errors[0].loc.line > 0


def test_channels_not_counted_from_zero_are_e693_at_the_call(k):
    with pytest.raises(nkirun.NkirunError) as e:
        nkirun.check(k.ring_step_from, inputs(1)[0], group([0, 1]), 1)
    d = e.value.diagnostics[0]
    assert d.code == "E693" and "channel_ids [1]" in d.message
    assert d.loc.file.endswith("cc_ring.py") and d.loc.line > 0


def test_a_rank_using_fewer_channels_deadlocks_the_others(k):
    sim = nkirun.simulate(k.ring_step, ranks=2)
    with pytest.raises(nkirun.NkirunError) as e:
        bounded(lambda: sim(nkirun.per_rank(inputs(2, shape=(2, 4, 8))), group([0, 1]),
                            nkirun.per_rank([2, 1])))
    d = e.value.diagnostics[0]
    assert d.code == "E692" and d.loc.file.endswith("cc_ring.py") and d.loc.line > 0
    assert "rank 1 finished after 1 collective(s)" in d.message


def test_a_permute_meeting_a_reducing_permute_is_a_mismatch(k):
    sim = nkirun.simulate(k.ring_step_or_reduce, ranks=2)
    with pytest.raises(nkirun.NkirunError) as e:
        bounded(lambda: sim(nkirun.per_rank(inputs(2)), group([0, 1]),
                            nkirun.per_rank([False, True])))
    d = e.value.diagnostics[0]
    assert d.code == "E691" and d.loc.file.endswith("cc_ring.py")
    assert "rank 0: collective_permute_implicit" in d.message
    assert "rank 1: collective_permute_implicit_reduce" in d.message
