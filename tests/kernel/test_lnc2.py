"""Kernels on two cores (`--lnc 2`, `nkirun.simulate(kernel, lnc=2)`): per-core
program_id/num_programs, per-core SBUF/private HBM, shared HBM, sendrecv and core_barrier;
programs/kernels/rmsnorm_lnc2.py through run, check, cost and convert."""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner
from test_examples import KERNELS, kernel_function, ref_rmsnorm

import nkirun
from nkirun.cli import cli
from nkirun.api_kernel import trace_call

RNG = np.random.default_rng(11)
X = RNG.standard_normal((256, 200)).astype(np.float32)
W = RNG.standard_normal((1, 200)).astype(np.float32)
SPEC = f"{KERNELS / 'rmsnorm_lnc2'}.py::rmsnorm_lnc2"


def _inputs(tmp_path):
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "w.npy", W)
    return ["--input", f"x={tmp_path / 'x.npy'}", "--input", f"w={tmp_path / 'w.npy'}"]


def test_rmsnorm_lnc2_matches_numpy_through_the_api():
    got = nkirun.simulate(kernel_function("rmsnorm_lnc2"), lnc=2)(X, W, eps=1e-5)
    np.testing.assert_allclose(got, ref_rmsnorm(X, W, 1e-5), rtol=1e-5, atol=1e-5)


def test_rmsnorm_lnc2_run_check_cost_on_the_command_line(tmp_path):
    r = CliRunner().invoke(cli, ["run", SPEC, "--lnc", "2", *_inputs(tmp_path),
                                 "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(np.load(tmp_path / "out" / "out0.npy"), ref_rmsnorm(X, W),
                               rtol=1e-5, atol=1e-5)
    shapes = ["--shape", "x=float32[256,200]", "--shape", "w=float32[1,200]"]
    r = CliRunner().invoke(cli, ["check", SPEC, "--lnc", "2", *shapes, "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.output)["diagnostics"] == [], r.output
    r = CliRunner().invoke(cli, ["cost", SPEC, "--lnc", "2", *shapes, "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["instructions"]
    starts = sorted(x["start_ns"] for x in rows if x["op"] == "sendrecv")
    assert len(starts) == 4 and starts[0] == starts[1] and starts[2] == starts[3]
    traced = trace_call(kernel_function("rmsnorm_lnc2"), (X, W), lnc=2)
    assert traced.program.cores == 2
    assert {i.core for i in traced.program.instructions} == {0, 1}


@pytest.mark.parametrize("fmt", ["yaml", "text"])
def test_convert_of_the_lnc2_kernel_runs_and_costs_the_same(tmp_path, fmt):
    out = tmp_path / ("p.yaml" if fmt == "yaml" else "p.nkis")
    r = CliRunner().invoke(cli, ["convert", SPEC, "--lnc", "2", *_inputs(tmp_path), "--to",
                                 fmt, "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert nkirun.check(str(out)) == []
    np.testing.assert_array_equal(nkirun.run(str(out))["out0"],
                                  nkirun.simulate(kernel_function("rmsnorm_lnc2"), lnc=2)(X, W))
    traced = trace_call(kernel_function("rmsnorm_lnc2"), (X, W), lnc=2)
    from nkirun.api_kernel import require_valid
    from nkirun.schedule import schedule
    bound, _ = require_valid(traced)
    assert nkirun.cost(str(out)).total_ns == schedule(traced.program, bound).total_ns


IDS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def ids(x):
    out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    scratch = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.private_hbm)
    t = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.sbuf)
    core = nl.program_id(0)
    nisa.memset(dst=t, value=float(10 * nl.num_programs(0) + core))
    nisa.dma_copy(dst=scratch, src=t)
    u = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=scratch)
    nisa.dma_copy(dst=out[core:core + 1, :], src=u)
    return out
'''


def test_program_id_num_programs_and_private_hbm_are_per_core(tmp_path):
    path = tmp_path / "ids.py"
    path.write_text(textwrap.dedent(IDS))
    r = CliRunner().invoke(cli, ["run", str(path), "--lnc", "2", "--arg", "x=0",
                                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"),
                                  [[20.0] * 4, [21.0] * 4])
    prog = trace_call(_load(path), (0,), lnc=2).program
    scratch = [t for t in prog.tensors.values() if t.name.startswith("scratch")]
    assert sorted(t.core for t in scratch) == [0, 1]
    assert [t.core for t in prog.tensors.values() if t.output] == [None]


def _load(path):
    import importlib.util
    from nkirun.source.kernel.modules import installed
    with installed():
        spec = importlib.util.spec_from_file_location("ids_kernel", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module.ids


def test_lnc_2_needs_an_lnc_target_and_a_matching_grid(tmp_path):
    shapes = ["--shape", "x=float32[256,200]", "--shape", "w=float32[1,200]"]
    r = CliRunner().invoke(cli, ["check", SPEC, "--lnc", "2", *shapes, "--target", "trn1"])
    assert r.exit_code == 1 and "E632" in r.output and "trn2" in r.output
    r = CliRunner().invoke(cli, ["check", SPEC, "--lnc", "2", "--grid", "4", *shapes])
    assert r.exit_code == 2 and "LNC degree" in r.output


def test_sendrecv_without_lnc_2_is_refused(tmp_path):
    shapes = ["--shape", "x=float32[256,200]", "--shape", "w=float32[1,200]"]
    r = CliRunner().invoke(cli, ["check", SPEC, "--grid", "2", *shapes])
    assert r.exit_code == 1 and "E634" in r.output


# ---- a runtime loop on both cores: programs/kernels/moe_dynamic_lnc2.py --------------------
MOE_SPEC = f"{KERNELS / 'moe_dynamic_lnc2'}.py::expert_tiles_lnc2"
MX = RNG.standard_normal((4, 128, 64)).astype(np.float32)
MW = RNG.standard_normal((64, 32)).astype(np.float32)


def _ref_moe(count):
    y = np.zeros((4, 128, 32))
    y[:count] = MX[:count].astype(np.float64) @ MW
    return y


def _moe_inputs(tmp_path, count):
    for n, a in (("x", MX), ("w", MW), ("count", np.array([[count]], np.int32))):
        np.save(tmp_path / f"{n}.npy", a)
    return [a for n in ("x", "w", "count") for a in ("--input", f"{n}={tmp_path / n}.npy")]


@pytest.mark.parametrize("count", [0, 1, 3, 4])
def test_lnc2_dynamic_loop_kernel_matches_numpy(count):
    got = nkirun.simulate(kernel_function("moe_dynamic_lnc2", "expert_tiles_lnc2"), lnc=2)(
        MX, MW, np.array([[count]], np.int32))
    np.testing.assert_allclose(got, _ref_moe(count), rtol=1e-4, atol=1e-4)


def test_lnc2_dynamic_loop_kernel_run_check_cost_convert(tmp_path):
    inputs = _moe_inputs(tmp_path, 3)
    r = CliRunner().invoke(cli, ["run", MOE_SPEC, "--lnc", "2", *inputs,
                                 "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(np.load(tmp_path / "out" / "out0.npy"), _ref_moe(3),
                               rtol=1e-4, atol=1e-4)
    shapes = ["--shape", "x=float32[4,128,64]", "--shape", "w=float32[64,32]",
              "--shape", "count=int32[1,1]"]
    r = CliRunner().invoke(cli, ["check", MOE_SPEC, "--lnc", "2", *shapes, "--format", "json"])
    assert r.exit_code == 0, r.output
    codes = [d["code"] for d in json.loads(r.output)["diagnostics"]]
    assert codes.count("W650") == 2 and not any(c.startswith("E") for c in codes)
    # cost: each core's loop counted from the data, or assumed per core with --trip
    r = CliRunner().invoke(cli, ["cost", MOE_SPEC, "--lnc", "2", *inputs, "--format", "json"])
    assert r.exit_code == 0, r.output
    loops = json.loads(r.stdout)["loops"]
    assert [(x["core"], x["iterations"], x["trips"]) for x in loops] == \
        [(0, 3, "data"), (1, 3, "data")]
    names = [x["name"] for x in loops]
    r = CliRunner().invoke(cli, ["cost", MOE_SPEC, "--lnc", "2", *shapes, "--format", "json",
                                 *[a for n in names for a in ("--trip", f"{n}=2")]])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["instructions"]
    assert sum(x["op"] == "sendrecv" for x in rows) == 4
    r = CliRunner().invoke(cli, ["cost", MOE_SPEC, "--lnc", "2", *shapes, "--trip",
                                 f"{names[0]}=2", "--trip", f"{names[1]}=1"])
    assert r.exit_code == 1 and "E642" in r.output
    # convert: the per-core loops survive, and the program runs the same
    out = tmp_path / "moe.nkis"
    r = CliRunner().invoke(cli, ["convert", MOE_SPEC, "--lnc", "2", *inputs, "--to", "text",
                                 "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text().count("\nend\n") == 2
    got = nkirun.run(str(out))
    np.testing.assert_allclose(next(iter(got.values())), _ref_moe(3), rtol=1e-4, atol=1e-4)
