"""Multi-rank runs (runner/ranks.py, pipeline/ranks.py): deadlocks and mismatched
collectives are located errors naming every rank, never a hang; a rank's own error names
the rank; simulate(ranks=N) is safe to call from several threads; per-rank inputs."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import nkirun
from collective_helpers import HANG_GUARD_S, bounded, group, inputs, kernels, summed

import nki.language as nl  # nkirun's

@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return kernels(tmp_path_factory)


def test_a_rank_that_never_joins_is_a_deadlock_naming_each_rank(k):
    sim = nkirun.simulate(k.maybe_reduce, ranks=3)
    with pytest.raises(nkirun.NkirunError) as e:
        bounded(lambda: sim(nkirun.per_rank(inputs(3)), group(range(3)),
                            nkirun.per_rank([True, False, True])))
    d = e.value.diagnostics[0]
    assert d.code == "E692" and d.loc.file.endswith("cc_kernels.py") and d.loc.line > 0
    assert "rank 1 finished after 0 collective(s)" in d.message
    assert "rank 0 waits at all_reduce" in d.message and "same order" in d.hint


def test_different_first_collectives_are_a_mismatch_showing_each_call(k):
    sim = nkirun.simulate(k.reduce_then_gather, ranks=2)
    with pytest.raises(nkirun.NkirunError) as e:
        bounded(lambda: sim(nkirun.per_rank(inputs(2)), group([0, 1]), 2,
                            nkirun.per_rank([True, False])))
    d = e.value.diagnostics[0]
    assert d.code == "E691" and d.loc.line > 0
    assert "rank 0: all_gather" in d.message and "rank 1: all_reduce" in d.message


def test_ranks_disagreeing_on_the_op_are_a_mismatch(k):
    with pytest.raises(nkirun.NkirunError) as e:
        bounded(lambda: nkirun.simulate(k.reduce, ranks=2)(
            nkirun.per_rank(inputs(2)), group([0, 1]), nkirun.per_rank([nl.add, nl.maximum])))
    assert e.value.diagnostics[0].code == "E691"
    assert "op=add" in e.value.diagnostics[0].message


def test_a_rank_list_beyond_the_run_is_e690(k):
    with pytest.raises(nkirun.NkirunError) as e:
        bounded(lambda: nkirun.simulate(k.reduce, ranks=2)(
            nkirun.per_rank(inputs(2)), group([0, 1, 2, 3]), nl.add))
    assert e.value.diagnostics[0].code == "E690"


def test_a_rank_s_own_error_names_the_rank(k):
    xs = inputs(2)
    table = np.zeros((1, 8), np.float32)  # rank 1 reads row 1 of a 1-row table
    with pytest.raises(nkirun.NkirunError) as e:
        bounded(lambda: nkirun.simulate(k.whoami, ranks=2)(table))
    assert e.value.diagnostics[0].message.startswith("rank 1: ")
    del xs


def test_with_two_cores_each_core_meets_the_same_core_of_the_others(k):
    xs = inputs(2, shape=(2, 128, 4))
    outs = bounded(lambda: nkirun.simulate(k.gather_per_core, ranks=2, lnc=2)(
        nkirun.per_rank(xs), group([0, 1]), 2))
    for out in outs:
        for c in range(2):
            np.testing.assert_array_equal(out[c], np.concatenate([xs[0][c], xs[1][c]], 1))


def test_each_takes_per_rank_kwargs_dicts_or_a_function(k):
    xs = inputs(2)
    g = group([0, 1])
    sim = nkirun.simulate(k.reduce, ranks=2)
    a = sim.each([{"x": xs[r], "group": g, "op": nl.add} for r in range(2)])
    b = sim.each(lambda r: {"x": xs[r], "group": g, "op": nl.add})
    for out in a + b:
        np.testing.assert_array_equal(out, summed(xs, np.float32))
    with pytest.raises(ValueError, match="one per rank"):
        sim(nkirun.per_rank(xs[:1]), g, nl.add)
    with pytest.raises(ValueError, match="ranks must be"):
        nkirun.simulate(k.reduce, ranks=0)


def test_simulate_with_ranks_from_several_threads_at_once(k):
    results: dict = {}

    def one(seed):
        xs = inputs(4, seed=seed)
        outs = nkirun.simulate(k.reduce, ranks=4)(nkirun.per_rank(xs), group(range(4)), nl.add)
        results[seed] = all(np.array_equal(o, summed(xs, np.float32)) for o in outs)
    threads = [threading.Thread(target=one, args=(s,), daemon=True) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_GUARD_S)
    assert not any(t.is_alive() for t in threads)
    assert results == {0: True, 1: True, 2: True, 3: True}


def test_the_command_line_runs_ranks_with_per_rank_inputs(tmp_path):
    from collective_helpers import SOURCE
    from tests.kernel.test_kernel_contract import invoke
    kernel = tmp_path / "cc_kernels.py"
    kernel.write_text(SOURCE)
    xs = inputs(2)
    for r, x in enumerate(xs):
        np.save(tmp_path / f"x{r}.npy", x)
    out = tmp_path / "out"
    res = invoke("run", f"{kernel}::maybe_reduce", "--ranks", 2, "--input",
                 f"x={tmp_path}/x{{rank}}.npy", "--arg", "group=[[0, 1]]", "--arg",
                 "join=True", "--out", out)
    assert res.exit_code == 0, res.output
    for r in range(2):
        np.testing.assert_array_equal(np.load(out / f"rank{r}" / "out0.npy"),
                                      summed(xs, np.float32))
    # rank 0 leaves the all_reduce out (join={rank}: 0, 1): a deadlock, exit 1, located
    res = invoke("run", f"{kernel}::maybe_reduce", "--ranks", 2, "--input",
                 f"x={tmp_path}/x{{rank}}.npy", "--arg", "group=[[0, 1]]", "--arg",
                 "join={rank}", "--out", tmp_path / "out2")
    assert res.exit_code == 1 and "E692" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out2").exists()
