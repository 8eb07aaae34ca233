"""core_barrier: the k-th barrier of core 0 meets the k-th of core 1; it orders both cores'
accesses to shared HBM (the page's use case: each core writes half a shared tensor, then
both read all of it)."""
import numpy as np
import pytest
from two_core import codes2, cost2, diags2, empty, run2


def example_program_text(body: str, target: str) -> str:
    indent = "".join(f"      {ln}\n" for ln in body.splitlines())
    return (f"version: 1\ntarget: {target}\ntensors:\n"
            "  shared: {buffer: hbm, shape: [128, 512], dtype: float32, fill: 1, "
            "output: true}\n"
            f"cores:\n  - instructions:\n{indent}  - instructions:\n{indent}")


BARRIER = {"core_barrier": {"data": "y", "cores": [0, 1]}}


def halves(p=128, n=16):
    """Each core writes its half of shared y, then (after `mid`) reads the other half."""
    t = {"x": empty((2 * p, n), "float32", buffer="hbm"),
         "y": empty((2 * p, n), "float32", buffer="hbm", output=True)}
    cores = []
    for c in (0, 1):
        mine, theirs = f"[{c * p}:{(c + 1) * p}, :]", f"[{(1 - c) * p}:{(2 - c) * p}, :]"
        t[f"t{c}"] = empty((p, n), "float32", core=c)
        t[f"u{c}"] = empty((p, n), "float32", core=c, output=True)
        cores.append(([{"dma_copy": {"dst": f"t{c}", "src": "x" + mine}},
                       {"tensor_scalar": {"dst": f"t{c}", "data": f"t{c}", "op0": "add",
                                          "operand0": float(10 * (c + 1))}},
                       {"dma_copy": {"dst": "y" + mine, "src": f"t{c}"}}],
                      [{"dma_copy": {"dst": f"u{c}", "src": "y" + theirs}}]))
    return t, cores


@pytest.mark.parametrize("p", [1, 37, 128])
def test_each_core_reads_the_half_the_other_wrote(p):
    t, ((w0, r0), (w1, r1)) = halves(p)
    x = np.random.default_rng(p).standard_normal((2 * p, 16)).astype(np.float32)
    out = run2(t, w0 + [BARRIER] + r0, w1 + [BARRIER] + r1, inputs={"x": x})
    want = np.concatenate([x[:p] + np.float32(10), x[p:] + np.float32(20)])
    np.testing.assert_array_equal(out["y"], want)
    np.testing.assert_array_equal(out["u0"], want[p:])
    np.testing.assert_array_equal(out["u1"], want[:p])
    assert codes2(dict(t, x=dict(t["x"], fill=1.0)), w0 + [BARRIER] + r0,
                  w1 + [BARRIER] + r1) == []


def test_without_the_barrier_the_reads_race_with_the_writes():
    t, ((w0, r0), (w1, r1)) = halves(8)
    t["x"]["fill"] = 1.0
    diags = diags2(t, w0 + r0, w1 + r1)
    races = [d for d in diags if d.code == "W630"]
    assert races and all("core_barrier" in d.hint for d in races)
    m = races[0].message  # core 0 reads y[8:16] while core 1 writes it
    assert "core 1 writes it here and core 0 reads the same elements" in m


def test_a_barrier_only_one_core_reaches_is_a_deadlock():
    t, ((w0, r0), (w1, r1)) = halves(8)
    t["x"]["fill"] = 1.0
    assert "E635" in codes2(t, w0 + [BARRIER] + r0, w1 + r1)
    assert "E635" in codes2(t, w0 + [BARRIER, BARRIER], w1 + [BARRIER])


def test_rules():
    t, ((w0, r0), (w1, r1)) = halves(8)
    t["x"]["fill"] = 1.0
    bad = {"core_barrier": {"data": "y", "cores": [1, 0]}}
    assert "E637" in codes2(t, w0 + [bad], w1 + [bad])
    t["priv"] = empty((4, 4), "float32", buffer="hbm", core=0)
    private = {"core_barrier": {"data": "priv", "cores": [0, 1]}}
    assert "E634" in codes2(t, w0 + [private], w1 + [BARRIER])
    # an SBUF tensor (nki-library's router_topk passes one): a warning, the cores still meet
    t["tile"] = empty((4, 4), "float32", buffer="sbuf", core=0)
    on_chip = {"core_barrier": {"data": "tile", "cores": [0, 1]}}
    got = codes2(t, w0 + [on_chip], w1 + [BARRIER])
    assert "W680" in got and "E634" not in got and "E040" not in got
    assert "E635" in codes2(t, w0 + [on_chip, on_chip], w1 + [BARRIER])
    assert "E632" in codes2(t, w0 + [BARRIER], w1 + [BARRIER], target="trn1")


def test_cost_the_early_core_waits_for_the_late_one():
    t, ((w0, r0), (w1, r1)) = halves(128, 512)
    t["x"]["fill"] = 1.0
    slow = w1[:2] + [dict(w1[1]), dict(w1[1])] + w1[2:]
    s = cost2(t, w0 + [BARRIER] + r0, slow + [BARRIER] + r1)
    by = {x.index: x for x in s.slots}
    b0, b1 = by[3], by[5 + len(slow)]
    assert b0.op == b1.op == "core_barrier" and b0.start_ns == b1.start_ns
    assert b0.wait_kind == "core_barrier" and by[b0.waited_on].core == 1
    assert by[b0.waited_on].end_ns == b0.start_ns  # core 1's last write of y
    assert by[4].start_ns >= b0.end_ns  # core 0 reads y after the barrier
