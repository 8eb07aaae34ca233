"""sendrecv against the NKI 0.6 page read as a reference: each core's dst receives the src
of the core it names; pairs match per pipe_id in order; both sources are read first."""
import numpy as np
import pytest
from prog_helpers import NP_TYPES, assert_bits_equal, random_floats
from two_core import codes2, cost2, diags2, empty, run2

from nkirun.diagnostics import NkirunError


def example_program_text(body: str, target: str) -> str:
    """The example as a two-core program: core 1 runs the mirror of core 0's entries."""
    core1 = (body.replace("mine", "mine_1").replace("theirs", "theirs_1")
             .replace("send_to_rank: 1", "send_to_rank: 0")
             .replace("recv_from_rank: 1", "recv_from_rank: 0"))
    indent = lambda text: "".join(f"      {ln}\n" for ln in text.splitlines())  # noqa: E731
    return (f"version: 1\ntarget: {target}\ntensors:\n"
            "  mine: {buffer: sbuf, shape: [128, 512], dtype: float32, fill: 1, core: 0}\n"
            "  theirs: {buffer: sbuf, shape: [128, 512], dtype: float32, output: true, "
            "core: 0}\n"
            "  mine_1: {buffer: sbuf, shape: [128, 512], dtype: float32, fill: 2, core: 1}\n"
            "  theirs_1: {buffer: sbuf, shape: [128, 512], dtype: float32, output: true, "
            "core: 1}\n"
            f"cores:\n  - instructions:\n{indent(body)}  - instructions:\n{indent(core1)}")


def exchange(a_src: str, a_dst: str, b_src: str, b_dst: str, pipe=0, **kw):
    return ([{"sendrecv": {"src": a_src, "dst": a_dst, "send_to_rank": 1,
                           "recv_from_rank": 1, "pipe_id": pipe, **kw}}],
            [{"sendrecv": {"src": b_src, "dst": b_dst, "send_to_rank": 0,
                           "recv_from_rank": 0, "pipe_id": pipe, **kw}}])


def pair_tensors(shape, dtype):
    return {"a": empty(shape, dtype, core=0), "ra": empty(shape, dtype, 0, output=True),
            "b": empty(shape, dtype, core=1), "rb": empty(shape, dtype, 1, output=True)}


@pytest.mark.parametrize("shape", [(1, 8), (37, 3, 5), (128, 512)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float8_e4m3", "int32"])
def test_each_core_receives_the_others_tile_bit_for_bit(shape, dtype):
    rng = np.random.default_rng(len(shape) + shape[0])
    if dtype == "int32":
        x, y = (rng.integers(-2**31, 2**31 - 1, shape).astype(np.int32) for _ in "xy")
    else:
        x, y = (random_floats(rng, shape).astype(NP_TYPES[dtype]) for _ in "xy")
    out = run2(pair_tensors(shape, dtype), *exchange("a", "ra", "b", "rb"),
               inputs={"a": x, "b": y})
    # the reference: rank r's dst is the src of recv_from_rank
    assert_bits_equal(out["ra"], y)
    assert_bits_equal(out["rb"], x)


def test_packed_mx_tiles_travel_bit_for_bit():
    """An x4 tile (four MX values packed per element, quantize_mx's output) moves as its
    bits, as dma_copy moves it: nki-library's rmsnorm_mx_quantize_tkg (LNC2) trades its
    quantised halves this way."""
    rng = np.random.default_rng(5)
    x, y = (rng.integers(0, 2**32, (16, 8), dtype=np.uint32) for _ in "xy")
    out = run2(pair_tensors((16, 8), "float8_e4m3fn_x4"), *exchange("a", "ra", "b", "rb"),
               inputs={"a": x, "b": y})
    assert_bits_equal(out["ra"], y)
    assert_bits_equal(out["rb"], x)


def test_in_place_exchange_is_a_swap():
    x, y = np.full((4, 6), 1.0, np.float32), np.full((4, 6), 2.0, np.float32)
    tensors = {"a": empty((4, 6), "float32", 0, output=True),
               "b": empty((4, 6), "float32", 1, output=True)}
    out = run2(tensors, *exchange("a", "a", "b", "b"), inputs={"a": x, "b": y})
    assert_bits_equal(out["a"], y)
    assert_bits_equal(out["b"], x)


def test_pipes_pair_in_order_per_pipe_and_send_to_self_copies():
    t = {n: empty((2, 4), "float32", core=c) for n, c in
         (("a0", 0), ("a1", 0), ("b0", 1), ("b1", 1))}
    t.update({n: empty((2, 4), "float32", c, output=True) for n, c in
              (("ra0", 0), ("ra1", 0), ("rb0", 1), ("rb1", 1), ("self0", 0))})
    s = lambda src, dst, rank, pipe: {"sendrecv": {  # noqa: E731
        "src": src, "dst": dst, "send_to_rank": rank, "recv_from_rank": rank, "pipe_id": pipe}}
    core0 = [s("a0", "ra0", 1, 0), s("a0", "self0", 0, 5), s("a1", "ra1", 1, 1)]
    core1 = [s("b0", "rb0", 0, 0), s("b1", "rb1", 0, 1)]
    vals = {n: np.full((2, 4), i, np.float32) for i, n in enumerate(("a0", "a1", "b0", "b1"))}
    out = run2(t, core0, core1, inputs=vals)
    assert (out["ra0"] == 2).all() and (out["ra1"] == 3).all()
    assert (out["rb0"] == 0).all() and (out["rb1"] == 1).all()
    assert (out["self0"] == 0).all()


def test_crossed_pipe_order_is_a_deadlock_naming_both_cores():
    t = pair_tensors((2, 4), "float32")
    a, b = exchange("a", "ra", "b", "rb", pipe=0)
    a2, b2 = exchange("a", "ra", "b", "rb", pipe=1)
    diags = diags2(t, a + a2, b2 + b)
    dead = [d for d in diags if d.code == "E635"]
    assert len(dead) == 1
    assert "core 0" in dead[0].message and "core 1" in dead[0].message
    assert "instruction 0" in dead[0].message and "instruction 2" in dead[0].message


def test_rules():
    t = pair_tensors((2, 4), "float32")
    t["c"] = empty((2, 8), "float32", core=0)
    t["h"] = empty((2, 4), "bfloat16", core=0)
    a, b = exchange("a", "ra", "b", "rb")
    assert "E639" in codes2(t, exchange("c", "ra", "b", "rb")[0], b)
    assert "E638" in codes2(t, exchange("h", "ra", "b", "rb")[0], b)
    bad = [{"sendrecv": dict(a[0]["sendrecv"], send_to_rank=2, recv_from_rank=2)}]
    assert "E640" in codes2(t, bad, b)
    mixed = [{"sendrecv": dict(a[0]["sendrecv"], recv_from_rank=0)}]
    assert "E636" in codes2(t, mixed, b)
    assert "E632" in codes2(t, a, b, target="trn1")
    big = pair_tensors((2, 512), "float32")
    assert "E641" in codes2(big, *exchange("a", "ra", "b", "rb", dma_engine="gpsimd_dma"))
    small = pair_tensors((2, 256), "float32")
    small["a"]["fill"] = small["b"]["fill"] = 1.0
    assert codes2(small, *exchange("a", "ra", "b", "rb", dma_engine="gpsimd_dma")) == []


def test_the_partners_tiles_must_match():
    t = pair_tensors((2, 4), "float32")
    t["b8"] = empty((2, 8), "float32", core=1)
    t["rb8"] = empty((2, 8), "float32", core=1)
    t["bh"] = empty((2, 4), "bfloat16", core=1)
    t["rbh"] = empty((2, 4), "bfloat16", core=1)
    a, _ = exchange("a", "ra", "b", "rb")
    diags = diags2(t, a, exchange("a", "ra", "b8", "rb8")[1])
    assert [d.code for d in diags if d.code == "E639"] == ["E639", "E639"]
    assert "core 1's src (float32 [2, 8])" in diags[[d.code for d in diags].index("E639")].message
    assert "E638" in [d.code for d in diags2(t, a, exchange("a", "ra", "bh", "rbh")[1])]


def test_one_core_program_refuses_it():
    from nkirun.api import check_program
    prog = {"version": 1, "tensors": {"a": empty((2, 4), "float32"),
                                      "r": empty((2, 4), "float32", output=True)},
            "instructions": [{"sendrecv": {"src": "a", "dst": "r", "send_to_rank": 1,
                                           "recv_from_rank": 1, "pipe_id": 0}}]}
    assert "E634" in [d.code for d in check_program(prog, inputs={"a"}).diagnostics]


def test_cost_starts_both_when_the_later_core_arrives():
    t = pair_tensors((128, 512), "float32")
    t["x"] = empty((128, 512), "float32", buffer="hbm")
    a, b = exchange("a", "ra", "b", "rb")
    slow = [{"dma_copy": {"dst": "b", "src": "x"}}, {"tensor_scalar": {
        "dst": "b", "data": "b", "op0": "multiply", "operand0": 2.0}}]
    s = cost2({**t, "x": dict(t["x"], fill=1.0)},
              [{"dma_copy": {"dst": "a", "src": "x"}}] + a, slow + b)
    by = {x.index: x for x in s.slots}
    assert by[1].start_ns == by[4].start_ns > by[0].end_ns
    # core 0 waited for core 1, whose tensor_scalar (#3) ended when both could start
    assert by[1].wait_kind == "sendrecv" and by[1].waited_on == 3 and by[1].core == 0
    assert by[3].end_ns == by[1].start_ns and by[3].core == 1
    assert by[4].core == 1


def test_run_of_a_deadlocked_program_is_an_error_not_a_hang():
    t = pair_tensors((2, 4), "float32")
    a, _ = exchange("a", "ra", "b", "rb")
    with pytest.raises(NkirunError) as e:
        run2(t, a, [], inputs={"a": np.zeros((2, 4), np.float32)})
    assert "E635" in str(e.value.diagnostics[0].code)


def test_unwritten_partitions_travel_as_unwritten_and_only_a_later_read_is_e090():
    """nki-library's attention_tkg sends a 16-partition buffer of which 4 rows hold data and
    reads back only those 4: a transfer is not a read of values (hardware moves whatever
    the pad rows hold); reading a pad row that arrived is E090, at the reader."""
    t = {"a": empty((16, 4), "float32", core=0), "ra": empty((16, 4), "float32", core=0),
         "b": empty((16, 4), "float32", core=1), "rb": empty((16, 4), "float32", core=1),
         "ya": empty((4, 4), "float32", 0, output=True),
         "yb": empty((4, 4), "float32", 1, output=True)}
    fill = lambda name, v: {"memset": {"dst": f"{name}[0:4, :]", "value": v}}  # noqa: E731
    a, b = exchange("a", "ra", "b", "rb")
    use = lambda src, dst, rows: {"tensor_copy": {"dst": dst, "src": f"{src}[{rows}, :]"}}  # noqa: E731
    out = run2(t, [fill("a", 1.0)] + a + [use("ra", "ya", "0:4")],
               [fill("b", 2.0)] + b + [use("rb", "yb", "0:4")])
    assert (out["ya"] == 2).all() and (out["yb"] == 1).all()
    with pytest.raises(NkirunError) as e:
        run2(t, [fill("a", 1.0)] + a + [use("ra", "ya", "4:8")],
             [fill("b", 2.0)] + b + [use("rb", "yb", "0:4")])
    d = e.value.diagnostics[0]
    assert d.code == "E090" and "tensor_copy reads `ra` at partition 4" in d.message


def test_a_transfer_of_unwritten_rows_over_written_ones_leaves_them_unwritten():
    t = {"a": empty((8, 4), "float32", core=0), "ra": empty((8, 4), "float32", core=0),
         "b": dict(empty((8, 4), "float32", core=1), fill=3.0),
         "rb": empty((8, 4), "float32", core=1),
         "ya": empty((8, 4), "float32", 0, output=True)}
    a, b = exchange("a", "ra", "b", "rb")
    core0 = [{"memset": {"dst": "a[0:2, :]", "value": 1.0}}] + a
    core1 = [{"memset": {"dst": "rb", "value": 5.0}}] + b + [
        {"tensor_copy": {"dst": "b", "src": "rb"}}]
    with pytest.raises(NkirunError) as e:  # rb's rows 2..7 got a's unwritten rows
        run2(t, core0 + [{"tensor_copy": {"dst": "ya", "src": "ra"}}], core1,
             uninitialized="strict")
    assert e.value.diagnostics[0].code == "E090"
    assert "`rb` at partition 2" in e.value.diagnostics[0].message
    # by default the copy carries them into `b`, which no output reads: the run succeeds
    got = run2(t, core0 + [{"tensor_copy": {"dst": "ya", "src": "ra"}}], core1)
    np.testing.assert_array_equal(got["ya"], np.full((8, 4), 3.0, np.float32))


@pytest.mark.parametrize("policy,fill", [("nan", np.nan), ("zero", 0.0)])
def test_under_a_fill_policy_unwritten_rows_arrive_as_the_fill(policy, fill):
    # rb was written (5.0) before a's partly unwritten tile lands on it: its rows 2..7 now
    # read as the fill, not as the 5.0 they held (the fill is not a write: runner/machine.py)
    t = {"a": empty((8, 4), "float32", core=0), "ra": empty((8, 4), "float32", core=0),
         "b": dict(empty((8, 4), "float32", core=1), fill=3.0),
         "rb": empty((8, 4), "float32", core=1),
         "yb": empty((8, 4), "float32", 1, output=True)}
    a, b = exchange("a", "ra", "b", "rb")
    core0 = [{"memset": {"dst": "a[0:2, :]", "value": 1.0}}] + a
    core1 = [{"memset": {"dst": "rb", "value": 5.0}}] + b + [
        {"tensor_copy": {"dst": "yb", "src": "rb"}}]
    got = run2(t, core0, core1, uninitialized=policy)["yb"]
    np.testing.assert_array_equal(got[:2], np.ones((2, 4), np.float32))
    np.testing.assert_array_equal(got[2:], np.full((6, 4), fill, np.float32))
