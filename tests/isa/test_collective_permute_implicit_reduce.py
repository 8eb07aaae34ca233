"""collective_permute_implicit_reduce (nki.collectives): each rank sends op(src0, src1) to
its successor; dst holds the predecessor's; a ring reduce-scatter built on it matches a
NumPy sum."""
import numpy as np
import pytest

import nkirun
from collective_helpers import BF16, bounded, group, inputs
from ring_helpers import ring_kernels

import nki.language as nl  # nkirun's

FOLD = {"add": np.add, "minimum": np.minimum, "maximum": np.maximum}


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return ring_kernels(tmp_path_factory)


@pytest.mark.parametrize("n,channels,op,dtype", [
    (2, 1, "add", np.float32), (4, 2, "minimum", np.float32), (8, 1, "maximum", BF16),
    (4, 4, "add", BF16)])
def test_dst_is_the_predecessor_s_op_rounded_once(k, n, channels, op, dtype):
    a = inputs(n, shape=(channels, 4, 8), dtype=dtype, seed=1)
    b = inputs(n, shape=(channels, 4, 8), dtype=dtype, seed=2)
    outs = nkirun.simulate(k.ring_reduce_step, ranks=n)(
        nkirun.per_rank(a), nkirun.per_rank(b), group(range(n)), getattr(nl, op))
    for r, out in enumerate(outs):
        p = (r - 1) % n
        want = FOLD[op](a[p].astype(np.float32), b[p].astype(np.float32)).astype(dtype)
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_a_ring_reduce_scatter_gives_each_rank_the_sum_of_its_chunk(k, n):
    xs = inputs(n, shape=(n, 4, 8), seed=n)
    outs = nkirun.simulate(k.ring_reduce_scatter, ranks=n)(
        nkirun.per_rank(xs), np.zeros((4, 8), np.float32), group(range(n)), n)
    for p, out in enumerate(outs):
        want = np.zeros((4, 8), np.float32)
        for j in range(1, n + 1):  # the ring's order: p+1's chunk first, p's own last
            want = want + xs[(p + j) % n][p]
        np.testing.assert_array_equal(out, want)


def test_operands_of_different_shapes_are_e693():
    from register_helpers import codes, program
    text = program({"a": "buffer: hbm, shape: [4, 8], dtype: float32, fill: 1",
                    "b": "buffer: hbm, shape: [4, 4], dtype: float32, fill: 1",
                    "c": "buffer: hbm, shape: [4, 8], dtype: float32, output: true"},
                   "  - collective_permute_implicit_reduce: {src0: a, src1: b, dst: c, "
                   "replica_group: [[0]], op: add}\n")
    assert "E693" in codes(text)


def test_ranks_disagreeing_on_the_op_are_a_mismatch(k):
    xs = inputs(2, shape=(1, 4, 8))
    with pytest.raises(nkirun.NkirunError) as e:
        bounded(lambda: nkirun.simulate(k.ring_reduce_step, ranks=2)(
            nkirun.per_rank(xs), nkirun.per_rank(xs), group([0, 1]),
            nkirun.per_rank([nl.add, nl.maximum])))
    d = e.value.diagnostics[0]
    assert d.code == "E691" and "op=add" in d.message and d.loc.file.endswith("cc_ring.py")
