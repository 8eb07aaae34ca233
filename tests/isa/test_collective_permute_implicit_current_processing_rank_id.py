"""collective_permute_implicit_current_processing_rank_id (nki.collectives): after i ring
steps a rank holds the data of the rank i positions back in its rank-list; ring
all-gathers built on it (1 to 4 channels, a runtime loop) match np.stack."""
import numpy as np
import pytest

import nkirun
from collective_helpers import BF16, group, inputs
from register_helpers import codes, program, run
from ring_helpers import ring_kernels

EXAMPLE_TENSORS = {"out": "{buffer: hbm, shape: [1, 1], dtype: int32, output: true}"}
NAME = "collective_permute_implicit_current_processing_rank_id"
OUT = {"out": "buffer: hbm, shape: [1, 1], dtype: int32, output: true"}


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return ring_kernels(tmp_path_factory)


@pytest.mark.parametrize("n,channels,dtype", [(2, 1, np.float32), (4, 1, BF16),
                                              (8, 1, np.float32), (4, 2, BF16),
                                              (8, 4, np.float32)])
def test_a_ring_all_gather_stores_each_rank_s_data_in_its_place(k, n, channels, dtype):
    xs = inputs(n, shape=(channels, 4, 8), dtype=dtype)
    zeros = np.zeros((n, channels, 4, 8), dtype)
    outs = nkirun.simulate(k.ring_gather, ranks=n)(nkirun.per_rank(xs), zeros,
                                                   group(range(n)), n)
    for out in outs:
        np.testing.assert_array_equal(out, np.stack(xs))


def test_the_ranks_are_those_of_the_caller_s_rank_list(k):
    xs = inputs(4, shape=(1, 4, 8))
    zeros = np.zeros((4, 1, 4, 8), np.float32)
    outs = nkirun.simulate(k.ring_gather, ranks=4)(nkirun.per_rank(xs), zeros,
                                                   group([0, 2], [1, 3]), 2)
    for r, out in enumerate(outs):
        mine = [0, 2] if r in (0, 2) else [1, 3]
        for row in range(4):
            np.testing.assert_array_equal(out[row], xs[row] if row in mine else zeros[row])


@pytest.mark.parametrize("n", [2, 4])
def test_iteration_id_may_be_a_runtime_loop_s_register(k, n):
    xs = inputs(n)
    outs = nkirun.simulate(k.ring_gather_runtime_loop, ranks=n)(
        nkirun.per_rank(xs), np.zeros((n, 4, 8), np.float32), group(range(n)), n)
    for out in outs:
        np.testing.assert_array_equal(out, np.stack(xs))


def test_iteration_zero_is_the_rank_itself():
    body = f"  - {NAME}: {{dst: r, iteration_id: 0, replica_group: [[0]]}}\n" \
           "  - register_store: {dst: out, src: r}\n"
    assert int(run(program(OUT, body))["out"][0, 0]) == 0


@pytest.mark.parametrize("keywords", ["channel_id: 4", "channel_id: 2, num_channels: 2",
                                      "num_channels: 5", "iteration_id: -1"])
def test_channels_beyond_four_or_num_channels_and_negative_steps_are_e693(keywords):
    body = f"  - {NAME}: {{dst: r, iteration_id: 0, replica_group: [[0]]}}\n" \
           "  - register_store: {dst: out, src: r}\n"
    if keywords.startswith("iteration_id"):
        body = body.replace("iteration_id: 0", keywords)
    else:
        body = body.replace("iteration_id: 0", f"iteration_id: 0, {keywords}")
    assert "E693" in codes(program(OUT, body))
