"""rank_id (nki.collectives): the run's rank in a register (0 without ranks)."""
import numpy as np
import pytest

import nkirun
from collective_helpers import kernels
from register_helpers import program, run

EXAMPLE_TENSORS = {"out": "{buffer: hbm, shape: [1, 1], dtype: int32, output: true}"}


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return kernels(tmp_path_factory)


def test_each_rank_reads_its_row_through_rank_id(k):
    table = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    outs = nkirun.simulate(k.whoami, ranks=4)(table)
    for r, out in enumerate(outs):
        np.testing.assert_array_equal(out, table[r:r + 1])


def test_without_ranks_it_is_rank_0():
    out = run(program({"out": "buffer: hbm, shape: [1, 1], dtype: int32, output: true"},
                      "  - rank_id: {dst: r}\n  - register_store: {dst: out, src: r}\n"))
    assert int(out["out"][0, 0]) == 0
