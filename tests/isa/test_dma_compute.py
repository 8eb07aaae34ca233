"""dma_compute against the NKI 0.6 page: dst = srcs[0]*1 + srcs[1]*1 + ..., every input cast
to float32, the float32 result cast to dst's dtype; add only, scales all 1.0, <= 16 sources."""
import pathlib

import numpy as np
import pytest
import yaml
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, diagnostics, key_line, out,
                          random_floats, run_program, sbuf, write_program)

import reference as ref
from nkirun.api import check_program, cost, run
from nkirun.source.write import to_text
from nkirun.isa import REGISTRY


def ref_compute(srcs, dst_dtype, shape):
    """Element by element: a float32 running sum in list order, then the cast."""
    flat = [np.asarray(s).astype(np.float32).reshape(-1) for s in srcs]
    acc = np.empty(flat[0].size, np.float32)
    for i in range(acc.size):
        v = np.float32(0)
        for j, f in enumerate(flat):
            v = f[i] if j == 0 else np.float32(v + f[i])
        acc[i] = v
    return ref.cast_to(acc.reshape(shape), dst_dtype)


@pytest.mark.parametrize("n_src", [1, 2, 5, 16])
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("bfloat16", "float32"),
                                    ("float16", "bfloat16"), ("int16", "int32")])
@pytest.mark.parametrize("buffers", [("sbuf", "sbuf"), ("hbm", "sbuf"), ("sbuf", "hbm")])
def test_matches_reference(tmp_path, n_src, dtypes, buffers):
    rng = np.random.default_rng(n_src * 7 + len(dtypes[0]))
    src_dtype, dst_dtype = dtypes
    shape = (37, 3, 5)
    srcs = []
    for _ in range(n_src):
        if src_dtype.startswith("int"):
            srcs.append(rng.integers(-3000, 3000, shape).astype(src_dtype))
        else:
            srcs.append(random_floats(rng, shape, special=n_src < 5).astype(NP_TYPES[src_dtype]))
    tensors = {f"s{i}": sbuf(s, buffer=buffers[0]) for i, s in enumerate(srcs)}
    tensors["d"] = out(shape, dst_dtype, buffer=buffers[1])
    got = run_program(tmp_path, tensors, [{"dma_compute": {
        "dst": "d", "srcs": [f"s{i}" for i in range(n_src)], "reduce_op": "nl.add"}}])["d"]
    assert_bits_equal(got, ref_compute(srcs, dst_dtype, shape))


def test_accumulate_into_dst_and_views(tmp_path):
    """The dst_rmw_op replacement: acc = acc + part; sources may be views of other shapes."""
    acc = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    big = np.ones((2, 8, 4), np.float32) * 0.5
    got = run_program(tmp_path, {"acc": sbuf(acc, output=True), "big": sbuf(big, buffer="hbm")},
                      [{"dma_compute": {"dst": "acc", "srcs": ["acc", "big[1, :, :]"],
                                        "reduce_op": "add", "scales": [1.0, 1]}}])["acc"]
    np.testing.assert_array_equal(got, acc + 0.5)


def test_float32_rounding_follows_list_order(tmp_path):
    a = np.full((1, 1), 1e8, np.float32)
    b = np.full((1, 1), 1.0, np.float32)
    c = np.full((1, 1), -1e8, np.float32)
    got = run_program(tmp_path, {"a": sbuf(a), "b": sbuf(b), "c": sbuf(c),
                                 "d": out((1, 1), "float32")},
                      [{"dma_compute": {"dst": "d", "srcs": ["a", "b", "c"],
                                        "reduce_op": "add"}}])["d"]
    assert got[0, 0] == 0.0  # (1e8 + 1) rounds to 1e8 in float32 first


def test_spec_example_checks_and_runs(tmp_path):
    entry = yaml.safe_load(REGISTRY["dma_compute"].example)[0]
    acc, part = np.ones((4, 6), np.float32), np.full((4, 6), 2.0, np.float32)
    got = run_program(tmp_path, {"acc": sbuf(acc, output=True), "part": sbuf(part)},
                      [entry])["acc"]
    np.testing.assert_array_equal(got, acc + part)


def test_text_form_round_trip(tmp_path):
    path = write_program(tmp_path, {"a": sbuf(np.ones((4, 6), np.float32)),
                                    "b": sbuf(np.ones((2, 4, 6), np.float32), buffer="hbm"),
                                    "d": out((4, 6), "float32")},
                         [{"dma_compute": {"dst": "d", "srcs": ["a", "b[1, :, :]"],
                                           "reduce_op": "add"}}])
    assert codes(check_program(path).diagnostics) == []
    text = to_text(check_program(path).program)
    assert 'srcs=[a, "b[1, :, :]"]' in text
    nkis = pathlib.Path(path).with_suffix(".nkis")
    nkis.write_text(text)
    assert codes(check_program(str(nkis)).diagnostics) == []
    np.testing.assert_array_equal(run(str(nkis))["d"], np.full((4, 6), 2.0, np.float32))


def test_dataflow_sees_every_source(tmp_path):
    t = {"a": sbuf(np.ones((4, 6), np.float32)), "b": {"buffer": "sbuf", "shape": [4, 6],
                                                        "dtype": "float32"},
         "d": out((4, 6), "float32")}
    path = write_program(tmp_path, t, [{"dma_compute": {"dst": "d", "srcs": ["a", "b"],
                                                        "reduce_op": "add"}}])
    d = check_program(path).diagnostics
    assert "E050" in codes(d) and "`b`" in next(x for x in d if x.code == "E050").message


def test_cost_counts_every_source_and_sbuf_accumulation(tmp_path):
    t = {"a": sbuf(np.ones((128, 512), np.float32)), "b": sbuf(np.ones((128, 512), np.float32)),
         "d": out((128, 512), "float32"), "h": out((128, 512), "float32", buffer="hbm")}
    path = write_program(tmp_path, t, [
        {"dma_compute": {"dst": "d", "srcs": ["a", "b"], "reduce_op": "add"}},
        {"dma_compute": {"dst": "h", "srcs": ["a", "b"], "reduce_op": "add"}}])
    s = cost(path).slots
    from nkirun.hw.targets import TARGETS
    t2 = TARGETS["trn2"]
    assert s[1].cycles == round(t2.dma_ns(2 * 128 * 512 * 4, 128))
    assert s[0].cycles == round(t2.dma_ns(2 * 2 * 128 * 512 * 4, 128))
    assert s[0].engine == "dma"


def _codes(tmp_path, srcs=("a", "b"), dst_shape=(4, 6), **kw):
    t = {"a": sbuf(np.ones((4, 6), np.float32)), "b": sbuf(np.ones((4, 7), np.float32)),
         "p": sbuf(np.ones((4, 6), np.float32), buffer="psum"), "d": out(dst_shape, "float32")}
    return codes(diagnostics(tmp_path, t, [{"dma_compute": {"dst": "d", "srcs": list(srcs),
                                                            "reduce_op": "add", **kw}}]))


def test_rules(tmp_path):
    assert _codes(tmp_path, srcs=("a", "a")) == []
    assert "E440" in _codes(tmp_path, srcs=["a"] * 17)
    assert "E441" in _codes(tmp_path, srcs=("a", "a"), scales=[1.0, 2.0])
    assert "E441" in _codes(tmp_path, srcs=("a", "a"), scales=[1.0])
    assert "E442" in _codes(tmp_path)
    assert "E443" in _codes(tmp_path, srcs=("a", "a"), oob_mode="skip")
    assert "E040" in _codes(tmp_path, srcs=("a", "p"))
    assert "E025" in _codes(tmp_path, srcs=("a", "a"), reduce_op="multiply")
    assert "E026" in _codes(tmp_path, srcs=("a", "zz"))
    assert "E024" in _codes(tmp_path, srcs=[])


def test_errors_located(tmp_path):
    t = {"a": sbuf(np.ones((4, 6), np.float32)), "d": out((4, 6), "float32")}
    path = write_program(tmp_path, t, [{"dma_compute": {"dst": "d", "srcs": ["a"],
                                                        "reduce_op": "add", "scales": [3.0]}}])
    d = [x for x in check_program(path).diagnostics if x.code == "E441"]
    assert d and d[0].loc.line == key_line(path, "scales")


# ---- read-modify-write through a vector_offset view (the page's scatter and gather) ----------
def _rmw_program(tmp_path, table, data, idx, form, **kw):
    P, F = data.shape
    view = f"h.ap([[{F}, {P}], [1, {F}]], vector_offset=i)"
    tensors = {"h": sbuf(table, buffer="hbm", output=True), "i": sbuf(idx, str(idx.dtype)),
               "s": sbuf(data, output=True)}
    inst = ({"dst": view, "srcs": [view, "s"]} if form == "scatter"
            else {"dst": "s", "srcs": ["s", view]})
    return write_program(tmp_path, tensors, [{"dma_compute": {**inst, "reduce_op": "add",
                                                              **kw}}])


@pytest.mark.parametrize("P", [1, 37, 128])
def test_scatter_rmw_adds_into_the_indexed_rows(tmp_path, P):
    rng = np.random.default_rng(P)
    table = random_floats(rng, (200, 9), special=False)
    data = random_floats(rng, (P, 9), special=False)
    idx = rng.permutation(200)[:P].astype(np.uint32).reshape(P, 1)
    got = run(_rmw_program(tmp_path, table, data, idx, "scatter"))
    want = table.copy()
    rows = idx[:, 0].astype(np.int64)
    want[rows] = (table[rows] + data).astype(np.float32)  # the page: dst[idx] = dst[idx] + src
    assert_bits_equal(got["h"], want)


@pytest.mark.parametrize("P", [1, 37, 128])
def test_gather_rmw_adds_the_indexed_rows(tmp_path, P):
    rng = np.random.default_rng(P + 1)
    table = random_floats(rng, (60, 5), special=True)
    data = random_floats(rng, (P, 5), special=True)
    idx = rng.integers(0, 60, (P, 1)).astype(np.int32)  # a gather may repeat rows
    got = run(_rmw_program(tmp_path, table, data, idx, "gather"))
    with np.errstate(all="ignore"):
        want = (data + table[idx[:, 0]]).astype(np.float32)  # dst(SB) = dst + src(HBM)[idx]
    assert_bits_equal(got["s"], want)
    assert_bits_equal(got["h"], table)


def test_rmw_oob_skip_and_error(tmp_path):
    from nkirun.diagnostics import NkirunError
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    data = np.ones((3, 4), np.float32)
    idx = np.array([[2], [77], [5]], np.uint32)
    got = run(_rmw_program(tmp_path, table, data, idx, "gather", oob_mode="skip"))
    want = data.copy()
    want[0] += table[2]
    want[2] += table[5]
    assert_bits_equal(got["s"], want)  # partition 1's index is outside: dst row kept
    got = run(_rmw_program(tmp_path, table, data, idx, "scatter", oob_mode="skip"))
    want = table.copy()
    want[2] += 1
    want[5] += 1
    assert_bits_equal(got["h"], want)
    with pytest.raises(NkirunError) as e:
        run(_rmw_program(tmp_path, table, data, idx, "scatter"))
    assert e.value.diagnostics[0].code == "E093"


def test_scatter_rmw_with_repeated_indices_warns(tmp_path):
    from prog_helpers import run_inputs
    table = np.zeros((6, 2), np.float32)
    data = np.ones((3, 2), np.float32)
    idx = np.array([[4], [1], [4]], np.uint32)
    view = "h.ap([[2, 3], [1, 2]], vector_offset=i)"
    outs, warnings = run_inputs(tmp_path, {"h": sbuf(table, buffer="hbm", output=True),
                                           "i": sbuf(idx, "uint32"), "s": sbuf(data)},
                                [{"dma_compute": {"dst": view, "srcs": [view, "s"],
                                                  "reduce_op": "add"}}])
    assert "W590" in codes(warnings)
    assert outs["h"][4, 0] == 1.0 and outs["h"][1, 0] == 1.0


def test_rmw_rules(tmp_path):
    table = np.zeros((20, 4), np.float32)
    data = np.zeros((4, 4), np.float32)
    idx = np.arange(4, dtype=np.uint32).reshape(4, 1)
    view = "h.ap([[4, 4], [1, 4]], vector_offset=i)"
    other = "h.ap([[4, 4], [1, 4]], offset=4, vector_offset=i)"
    t = {"h": sbuf(table, buffer="hbm", output=True), "i": sbuf(idx, "uint32"),
         "s": sbuf(data, output=True), "s2": sbuf(data), "big": sbuf(np.zeros((8, 1), np.uint32))}

    def got(**inst):
        return codes(diagnostics(tmp_path, t, [{"dma_compute": {"reduce_op": "add", **inst}}]))
    assert got(dst=view, srcs=[view, "s"]) == []
    assert got(dst="s", srcs=["s", view], oob_mode="skip") == []
    assert "E594" in got(dst=view, srcs=[view, "s", "s"])  # 3 sources
    assert "E594" in got(dst=view, srcs=[view, "s"], unique_indices=False)
    assert "E594" in got(dst=view, srcs=[other, "s"])  # no source is dst's own view
    assert "E594" in got(dst="s", srcs=["s2", view])  # the other source is not dst
    assert "E594" in got(dst=view, srcs=["h.ap([[1, 16]], scalar_offset=i[0:1, :])", "s"])
    assert "E593" in got(dst="s", srcs=["s", "h.ap([[4, 4], [1, 4]], vector_offset=big)"])
    assert "E443" in got(dst="s", srcs=["s", "s2"], oob_mode="skip")
    path = write_program(tmp_path, t, [{"dma_compute": {"dst": view, "srcs": [view, "s", "s"],
                                                        "reduce_op": "add"}}])
    from prog_helpers import reported_at
    reported_at(path, "E594", "srcs")


def test_scatter_rmw_from_a_python_kernel(tmp_path):
    """The page's scatter form written as a kernel: every tile the srcs list names stays
    alive until dma_compute runs."""
    import nkirun
    from tests.kernel.test_kernel_contract import nkirun_kernel, write
    path = write(tmp_path, """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def scatter_add(table, idx, data):
            i_sb = nl.ndarray(idx.shape, dtype=idx.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=i_sb, src=idx)
            d_sb = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=d_sb, src=data)
            P, F = data.shape
            rows = table.ap(pattern=[[F, P], [1, F]], vector_offset=i_sb, indirect_dim=0)
            nisa.dma_compute(dst=rows, srcs=[rows, d_sb], reduce_op=nl.add)
            return table
        """)
    table = np.arange(50 * 8, dtype=np.float32).reshape(50, 8)
    idx = np.array([[3], [7], [1], [40]], np.int32)
    data = random_floats(np.random.default_rng(2), (4, 8), special=False)
    got = nkirun.simulate(nkirun_kernel(path, "scatter_add"))(table.copy(), idx, data)
    want = table.copy()
    want[idx[:, 0]] = (table[idx[:, 0]] + data).astype(np.float32)
    assert_bits_equal(got, want)
