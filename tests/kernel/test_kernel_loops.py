"""Runtime loops in Python kernels (source/kernel/control.py): nl.dynamic_range,
nl.fori_loop, nl.while_loop and `while reg:` trace their body ONCE into a loop, which
`run` repeats on the data; checked against NumPy references written from the kernels'
math, and through check, cost and convert."""
from __future__ import annotations

import json
import pathlib
import sys
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

import nkirun
from nkirun.cli import cli
from nkirun.diagnostics import NkirunError

KERNELS = pathlib.Path(__file__).resolve().parents[2] / "programs" / "kernels"
RNG = np.random.default_rng(11)
X = RNG.standard_normal((4, 128, 64)).astype(np.float32)
W = RNG.standard_normal((64, 32)).astype(np.float32)


def moe(name):
    sys.path.insert(0, str(KERNELS))
    try:
        return getattr(__import__("moe_dynamic"), name)
    finally:
        sys.path.remove(str(KERNELS))


def ref_moe(x, w, count):
    y = np.zeros((x.shape[0], x.shape[1], w.shape[1]))
    y[:count] = x[:count].astype(np.float64) @ w
    return y


@pytest.mark.parametrize("name", ["expert_tiles", "expert_while"])
@pytest.mark.parametrize("count", [0, 1, 3, 4])
def test_moe_kernel_loops_count_tiles(name, count):
    got = nkirun.simulate(moe(name))(X, W, np.array([[count]], np.int32))
    np.testing.assert_allclose(got, ref_moe(X, W, count), rtol=1e-4, atol=1e-4)


def _shapes():
    return ["--shape", "x=float32[4,128,64]", "--shape", "w=float32[64,32]",
            "--shape", "count=int32[1,1]"]


def _inputs(tmp_path, count):
    for n, a in (("x", X), ("w", W), ("count", np.array([[count]], np.int32))):
        np.save(tmp_path / f"{n}.npy", a)
    return [a for n in ("x", "w", "count") for a in ("--input", f"{n}={tmp_path / n}.npy")]


@pytest.mark.parametrize("name,loop", [("expert_tiles", "t"), ("expert_while", "more")])
def test_check_says_what_it_cannot_and_cost_needs_counts(name, loop, tmp_path):
    spec = f"{KERNELS / 'moe_dynamic.py'}::{name}"
    r = CliRunner().invoke(cli, ["check", spec, *_shapes(), "--format", "json"])
    doc = json.loads(r.output)
    assert r.exit_code == 0 and {d["code"] for d in doc["diagnostics"]} == {"W650", "W651"}
    r = CliRunner().invoke(cli, ["cost", spec, *_shapes()])
    assert r.exit_code == 1 and "E657" in r.output and f"--trip {loop}=N" in r.output
    r = CliRunner().invoke(cli, ["cost", spec, *_shapes(), "--trip", f"{loop}=2",
                                 "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.output)["loops"][0]["trips"] == "assumed"
    r = CliRunner().invoke(cli, ["cost", spec, *_inputs(tmp_path, 3), "--view", "summary"])
    assert r.exit_code == 0 and "3 iterations" in r.output and "running the data" in r.output


def test_the_loop_body_is_traced_once():
    program = nkirun.trace(moe("expert_tiles"), nkirun.shape("float32", 4, 128, 64),
                           nkirun.shape("float32", 64, 32), nkirun.shape("int32", 1, 1))
    lp, = program.loops
    assert (lp.kind, lp.name, lp.index, str(lp.stop)) == ("for", "t", "t", "n")
    assert [i.op for i in program.instructions[lp.first:lp.end]] == [
        "dma_copy", "nc_transpose", "tensor_copy", "nc_matmul", "tensor_copy", "dma_copy"]


@pytest.mark.parametrize("fmt", ["yaml", "text"])
def test_convert_keeps_the_loop(fmt, tmp_path):
    out = tmp_path / ("k.yaml" if fmt == "yaml" else "k.nkis")
    r = CliRunner().invoke(cli, ["convert", f"{KERNELS / 'moe_dynamic.py'}::expert_while",
                                 *_inputs(tmp_path, 2), "--to", fmt, "-o", str(out)])
    assert r.exit_code == 0, r.output
    got = nkirun.run(str(out))["out0"]
    np.testing.assert_allclose(got, ref_moe(X, W, 2), rtol=1e-4, atol=1e-4)


def _kernel(tmp_path, body: str, name="k"):
    path = tmp_path / f"{name}.py"
    path.write_text("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"
                    + textwrap.dedent(body))
    sys.path.insert(0, str(tmp_path))
    try:
        return getattr(__import__(name), "kernel")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def test_fori_loop_index_as_scalar_offset(tmp_path):
    # the nl.fori_loop documentation's example: copy element i for i < ub
    k = _kernel(tmp_path, """
        @nki.jit
        def kernel(data, ub_input):
            out = nl.ndarray((1, 8), dtype=nl.float32, buffer=nl.shared_hbm)
            zeros = nl.ndarray((1, 8), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=zeros, value=0.0)
            nisa.dma_copy(dst=out, src=zeros)
            ub = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
            nisa.dma_copy(dst=ub, src=ub_input)
            reg = nisa.register_alloc()
            nisa.register_load(reg, ub)
            temp = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)

            def body(i):
                nisa.dma_copy(dst=temp, src=data.ap([[1, 1], [1, 1]], scalar_offset=i,
                                                    indirect_dim=1))
                nisa.dma_copy(dst=out.ap([[1, 1], [1, 1]], scalar_offset=i, indirect_dim=1),
                              src=temp)

            nl.fori_loop(0, reg, body)
            return out
        """)
    data = np.arange(1, 9, dtype=np.float32).reshape(1, 8)
    got = nkirun.simulate(k)(data, np.array([[5]], np.int32))
    np.testing.assert_array_equal(got, [[1, 2, 3, 4, 5, 0, 0, 0]])


def test_while_loop_with_returned_register(tmp_path):
    # the nl.while_loop documentation's example: acc += val while count > 0
    k = _kernel(tmp_path, """
        @nki.jit
        def kernel(data, count_input):
            out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
            val = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=val, src=data)
            acc = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=acc, value=0.0)
            count_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
            nisa.dma_copy(dst=count_sb, src=count_input)
            one_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
            nisa.memset(dst=one_sb, value=1)
            reg = nisa.register_alloc()
            nisa.register_load(reg, count_sb)
            fresh = nisa.register_alloc(0)

            def body(r):
                nisa.tensor_tensor(dst=acc, data1=acc, data2=val, op=nl.add)
                nisa.tensor_tensor(dst=count_sb, data1=count_sb, data2=one_sb,
                                   op=nl.subtract)
                nisa.register_load(fresh, count_sb)
                return fresh

            nl.while_loop(reg, body)
            nisa.dma_copy(dst=out, src=acc)
            return out
        """)
    for n in (0, 3):
        got = nkirun.simulate(k)(np.array([[1.5]], np.float32), np.array([[n]], np.int32))
        assert got[0, 0] == 1.5 * n


def test_register_alloc_from_a_tensor_loads_it(tmp_path):
    k = _kernel(tmp_path, """
        @nki.jit
        def kernel(c):
            out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
            c_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
            nisa.dma_copy(dst=c_sb, src=c)
            n = nisa.register_alloc(c_sb)
            s = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
            nisa.register_store(s, n)
            nisa.dma_copy(dst=out, src=s)
            return out
        """)
    assert nkirun.simulate(k)(np.array([[42]], np.int32))[0, 0] == 42


@pytest.mark.parametrize("misuse,word", [
    ("x = n + 1", "no value while the kernel is traced"),
    ("x = int(n)", "no value while the kernel is traced"),
    ("for i in nl.dynamic_range(n):\n        break", "left early"),
    ("if n:\n        pass", "never ends its body"),
    ("for i in nl.dynamic_range(0, n, 0):\n        pass", "positive int"),
    ("nl.fori_loop(0, 4, None)", "body_fun must be a function")])
def test_register_misuse_is_e659(misuse, word, tmp_path):
    lines = ["out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)",
             "n = nisa.register_alloc(3)", *misuse.split("\n"),
             "s = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)",
             "nisa.register_store(s, n)", "nisa.dma_copy(dst=out, src=s)", "return out"]
    k = _kernel(tmp_path, "@nki.jit\ndef kernel(c):\n" + "".join(f"    {x}\n" for x in lines))
    with pytest.raises(NkirunError) as e:
        nkirun.simulate(k)(np.array([[1]], np.int32))
    assert any(d.code == "E659" and word in d.message for d in e.value.diagnostics), \
        [d.message for d in e.value.diagnostics]


def test_python_api_cost_counts_or_assumes_trips():
    sched = nkirun.cost(moe("expert_tiles"), X, W, np.array([[3]], np.int32))
    assert sched.loops[0]["iterations"] == 3 and sched.loops[0]["trips"] == "data"
    sched = nkirun.cost(moe("expert_tiles"), nkirun.shape("float32", 4, 128, 64),
                        nkirun.shape("float32", 64, 32), nkirun.shape("int32", 1, 1),
                        trips={"t": 2})
    assert sched.loops[0]["iterations"] == 2 and sched.loops[0]["trips"] == "assumed"
