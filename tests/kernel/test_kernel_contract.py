"""The kernel contract (docs/kernels.md) line by line: naming the kernel, parameters,
outputs, errors located in the .py file, the kernel's own exceptions, the `nki` modules
it sees, the launch grid, the target, and the Python API."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

import nkirun
from nkirun.cli import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DOUBLE = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def double(x, factor=2.0):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="doubled")
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(r, t, nl.multiply, factor)
    nisa.dma_copy(dst=out, src=r)
    return out
"""


def write(tmp_path, source, name="k.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return str(path)


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_run_writes_out0_and_names_the_output(tmp_path):
    path = write(tmp_path, DOUBLE)
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    np.save(tmp_path / "x.npy", x)
    r = invoke("run", f"{path}::double", "--input", f"x={tmp_path / 'x.npy'}", "--arg",
               "factor=3.0", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), x * 3)
    assert "name=doubled" in r.output
    # PATH.py alone: the file's only @nki.jit function; defaults may be left out
    r = invoke("run", path, "--input", f"x={tmp_path / 'x.npy'}", "--out", tmp_path / "o2")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o2" / "out0.npy"), x * 2)


def test_missing_and_unknown_parameters_are_usage_errors(tmp_path):
    path = write(tmp_path, DOUBLE)
    r = invoke("check", f"{path}::double")
    assert r.exit_code == 2 and "`x`" in r.output
    r = invoke("check", f"{path}::double", "--shape", "x=float32[128,4]", "--arg", "scale=1")
    assert r.exit_code == 2 and "`scale`" in r.output
    r = invoke("check", f"{path}::double", "--shape", "x=float32[128,4]", "--arg", "factor=x y")
    assert r.exit_code == 2


def test_no_or_several_jit_functions_is_an_error(tmp_path):
    path = write(tmp_path, DOUBLE + "\n\n@nki.jit\ndef other(x):\n    return x\n")
    r = invoke("check", path, "--shape", "x=float32[128,4]")
    assert r.exit_code == 1 and "E600" in r.output and "double" in r.output
    plain = write(tmp_path, "def f(x):\n    return x\n", "plain.py")
    assert invoke("check", plain, "--shape", "x=float32[4]").exit_code == 1
    # a plain (undecorated) function named with ::
    assert invoke("check", f"{plain}::f", "--shape", "x=float32[4]").exit_code == 0


def test_json_diagnostics_point_into_the_py_file(tmp_path):
    path = write(tmp_path, """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def bad(x):
            big = nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.sbuf)
            out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=big[0:128, :], src=x)
            nisa.tensor_tensor(dst=out, data1=x, data2=x, op=nl.add)
            return out
        """)
    print("kernel chatter")
    r = invoke("check", f"{path}::bad", "--shape", "x=float32[128,4]", "--format", "json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    by_code = {d["code"]: d for d in doc["diagnostics"]}
    assert by_code["E017"]["file"] == path and by_code["E017"]["line"] == 7
    errors = [d for d in doc["diagnostics"] if d["line"] == 10]
    assert errors and all(d["file"] == path for d in errors)
    assert errors[0]["column"] == 5


def test_kernel_prints_go_to_stderr(tmp_path):
    path = write(tmp_path, DOUBLE.replace("    out = nl", "    print('hello from the kernel')\n"
                                          "    out = nl", 1))
    p = subprocess.run([sys.executable, "-m", "nkirun", "check", f"{path}::double", "--shape",
                        "x=float32[128,4]", "--format", "json"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert p.returncode == 0
    assert json.loads(p.stdout)["ok"] is True
    assert "hello from the kernel" in p.stderr


def test_kernel_exception_shows_the_kernels_frames(tmp_path):
    helper = write(tmp_path, "def check_rows(n):\n    assert n % 256 == 0, f'rows {n}'\n",
                   "helpers.py")
    path = write(tmp_path, """\
        import nki
        import nki.language as nl
        from helpers import check_rows

        @nki.jit
        def k(x):
            check_rows(x.shape[0])
            return x
        """)
    r = invoke("check", f"{path}::k", "--shape", "x=float32[128,4]")
    assert r.exit_code == 1
    assert "AssertionError: rows 128" in r.output
    assert f"{helper}:2" in r.output and "assert n % 256 == 0" in r.output
    assert f"{path}:7" in r.output
    assert "nkirun/" not in r.output.replace(ROOT, "") and "Traceback" not in r.output


@pytest.mark.parametrize("call, name", [("nisa.foo(dst=t)", "nki.isa.foo"),
                                        ("import nki.profiler", "nki.profiler"),
                                        ("from nki.isa import bar", "nki.isa.bar"),
                                        ("nl.bar(t)", "nki.language.bar"),
                                        ("nl.softmax(t, axis=1)",
                                         "nki.language.softmax"),
                                        ("nki.foo()", "nki.foo"),
                                        ("nisa.reduce_cmd.bogus", "nki.isa.reduce_cmd.bogus"),
                                        ("nl.tile_size.bogus_fmax",
                                         "nki.language.tile_size.bogus_fmax")])
def test_unsupported_nki_names_are_located_errors(tmp_path, call, name):
    path = write(tmp_path, f"""\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def k(x):
            t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
            {call}
            return x
        """)
    r = invoke("check", f"{path}::k", "--shape", "x=float32[128,4]")
    assert r.exit_code == 1, r.output
    assert f"{name} is not supported by nkirun" in r.output and f"{path}:8" in r.output
    assert "AttributeError" not in r.output and "Traceback" not in r.output


def test_nki_keywords_at_their_defaults_and_dma_priority(tmp_path):
    """NKI keywords at their defaults (and name=) are accepted; dma_copy's priority, a
    NeuronCore-v4 QoS level, is checked by the instruction's own rule on trn2 (every NKI 0.6
    keyword of an instruction nkirun has is now modelled, so none is E601)."""
    src = DOUBLE.replace("nisa.dma_copy(dst=t, src=x)", "nisa.dma_copy(dst=t, src=x, {kw})")
    ok = write(tmp_path, src.format(kw="priority=None, name='load_x'"), "ok.py")
    assert invoke("check", ok, "--shape", "x=float32[128,4]").exit_code == 0
    bad = write(tmp_path, src.format(kw="priority=2"), "bad.py")
    r = invoke("check", bad, "--shape", "x=float32[128,4]")
    assert r.exit_code == 1 and "priority" in r.output and "E39" in r.output, r.output


def test_each_ndarray_call_is_a_new_tensor_also_in_a_loop(tmp_path):
    path = write(tmp_path, """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def k(x):
            out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
            for i in nl.affine_range(3):
                tile = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=tile, src=x)
                nisa.dma_copy(dst=out, src=tile)
            return out
        """)
    prog = nkirun.trace(nkirun_kernel(path, "k"), nkirun.shape("float32", 128, 4))
    tiles = [t for t in prog.tensors.values() if t.buffer == "sbuf"]
    assert [t.name for t in tiles] == ["tile", "tile_1", "tile_2"]
    assert all(t.loc.line == 9 for t in tiles)
    assert [i.loc.line for i in prog.instructions] == [10, 11] * 3


def nkirun_kernel(path, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"kmod_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


GRID = """\
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n = nl.num_programs(0)
    part = x.shape[0] // n
    i = nl.program_id(0)
    t = nl.ndarray((part, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i * part:(i + 1) * part, :])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=float(nl.program_ndim()))
    nisa.dma_copy(dst=out[i * part:(i + 1) * part, :], src=t)
    return out
"""


def test_launch_grid_api_and_cli(tmp_path):
    path = write(tmp_path, GRID)
    k = nkirun_kernel(path, "rows")
    x = np.arange(256 * 3, dtype=np.float32).reshape(256, 3)
    np.testing.assert_array_equal(nkirun.simulate(k[2])(x), x + 1)
    with pytest.raises(nkirun.NkirunError):  # 256 partitions without a grid: E017
        nkirun.simulate(k)(x)
    np.save(tmp_path / "x.npy", x)
    for opt in (["--grid", "2"], ["--lnc", "2"], ["--grid", "4"]):
        r = invoke("run", path, "--input", f"x={tmp_path / 'x.npy'}", "--out", tmp_path / "o",
                   *opt)
        assert r.exit_code == 0, r.output
        np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), x + 1)


def test_get_nc_version_answers_the_target(tmp_path):
    path = write(tmp_path, """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def version():
            gen = {nisa.nc_version.gen2: 2.0, nisa.nc_version.gen3: 3.0,
                   nisa.nc_version.gen4: 4.0}[nisa.get_nc_version()]
            assert (nisa.get_nc_version() >= nisa.nc_version.gen3) == (gen >= 3.0)
            assert nisa.nc_version.gen2 < nisa.nc_version.gen3 < nisa.nc_version.gen4
            t = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=t, value=gen)
            out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=t)
            return out
        """)
    for target, want in (("trn1", 2.0), ("trn2", 3.0), ("trn3", 4.0), ("inf2", 2.0)):
        r = invoke("run", path, "--target", target, "--out", tmp_path / target)
        assert r.exit_code == 0, r.output
        assert np.load(tmp_path / target / "out0.npy")[0, 0] == want
    assert nkirun.simulate(nkirun_kernel(path, "version"), target="trn1")()[0, 0] == 2.0


def test_python_api_check_cost_trace_and_errors(tmp_path):
    k = nkirun_kernel(write(tmp_path, DOUBLE), "double")
    assert nkirun.check(k, nkirun.shape("float32", 128, 4)) == []
    sched = nkirun.cost(k, nkirun.shape("float32", 128, 4), factor=0.5)
    assert sched.total_ns > 0 and len(sched.slots) == 3
    x = np.full((128, 4), 3.0, np.float32)
    np.testing.assert_array_equal(nkirun.run(k, x, factor=0.5), x * 0.5)
    prog = nkirun.trace(k, np.zeros((128, 4), np.float32))
    assert [i.op for i in prog.instructions] == ["dma_copy", "tensor_scalar", "dma_copy"]
    with pytest.raises(TypeError, match="x"):
        nkirun.simulate(k)()
    with pytest.raises(nkirun.NkirunError) as e:  # 300 partitions
        nkirun.simulate(k)(np.zeros((300, 4), np.float32))
    assert any(d.code == "E017" for d in e.value.diagnostics)
    out = k(np.ones((128, 4), np.float32))  # calling a jit kernel on arrays simulates it
    np.testing.assert_array_equal(out, 2 * np.ones((128, 4), np.float32))
    # the existing program API still works
    assert nkirun.check(os.path.join(ROOT, "programs", "rowmax_in_window.yaml")) == []


def test_sys_modules_nki_is_restored_and_a_foreign_nki_is_shadowed(tmp_path):
    fake = tmp_path / "fake" / "nki"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise RuntimeError('AWS nki stand-in must not be used')\n")
    path = write(tmp_path, DOUBLE)
    p = subprocess.run([sys.executable, "-m", "nkirun", "check", path, "--shape",
                        "x=float32[128,4]"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": f"{tmp_path / 'fake'}:{ROOT}"})
    assert p.returncode == 0, p.stdout + p.stderr
    k = nkirun_kernel(path, "double")  # imported with nkirun's nki (no AWS nki here)
    sentinel = type(sys)("nki")
    saved = {n: m for n, m in sys.modules.items() if n == "nki" or n.startswith("nki.")}
    for n in saved:
        del sys.modules[n]
    sys.modules["nki"] = sentinel
    try:
        x = np.ones((128, 4), np.float32)
        np.testing.assert_array_equal(nkirun.simulate(k)(x), 2 * x)
        assert sys.modules["nki"] is sentinel and "nki.isa" not in sys.modules
    finally:
        del sys.modules["nki"]
        sys.modules.update(saved)


def test_run_frees_tiles_after_their_last_use(tmp_path):
    from nkirun.api_kernel import trace_call, require_valid
    from nkirun.runner.freeing import execute_freeing
    path = write(tmp_path, """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def many(x):
            out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
            acc = nl.zeros((128, 8), dtype=nl.float32)
            for i in range(500):
                t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=x)
                nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
            nisa.dma_copy(dst=out, src=acc)
            return out
        """)
    x = np.ones((128, 8), np.float32)
    traced = trace_call(nkirun_kernel(path, "many"), (x,))
    bound, _ = require_valid(traced)
    peak = []
    import nkirun.runner.interpret as interp
    real = interp.execute

    def spy(program, bnd, inputs=None, after_each=None, **options):
        def hook(b, m):
            after_each(b, m)
            peak.append(len(m.buffers))
        return real(program, bnd, inputs, hook, **options)
    interp.execute = spy
    try:  # an observer: the plain path
        m = execute_freeing(traced.program, bound, traced.inputs, observe=lambda b, m: None)
    finally:
        interp.execute = real
    assert len(traced.program.tensors) == 503 and max(peak) <= 5
    np.testing.assert_array_equal(m.buffers[traced.outputs[0].name], 500 * x)
    # the execution plan (runner/plan.py): the 500 tiles share one array, and with acc
    # and out that is every array made for the run
    from nkirun.runner.machine import Machine
    from nkirun.runner.plan import _Planner, last_uses
    m = Machine({"x": x.copy()}, {"x": None})
    planner = _Planner(traced.program, bound, m, last_uses(bound, {"x", traced.outputs[0].name})[0], "error")
    assert planner.made == 3
    m = execute_freeing(traced.program, bound, traced.inputs)
    np.testing.assert_array_equal(m.buffers[traced.outputs[0].name], 500 * x)
    assert len(m.buffers) <= 3  # (x, out, and nothing freed left behind)


def test_a_kernel_inside_a_package_keeps_its_relative_imports(tmp_path):
    pkg = tmp_path / "lib" / "mylib"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(textwrap.dedent("""\
        import nki.isa as nisa
        import nki.language as nl

        def load(src):
            t = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=src)
            return t
        """))
    (pkg / "ops" / "neg.py").write_text(textwrap.dedent("""\
        import nki
        import nki.isa as nisa
        import nki.language as nl
        from ..helpers import load

        @nki.jit
        def neg(x):
            t = load(x)
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=-1.0)
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=t)
            return out
        """))
    x = np.arange(128 * 2, dtype=np.float32).reshape(128, 2)
    np.save(tmp_path / "x.npy", x)
    r = invoke("run", pkg / "ops" / "neg.py", "--input", f"x={tmp_path / 'x.npy'}", "--out",
               tmp_path / "o")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), -x)
    # a diagnostic inside the helper points at the helper's line
    r = invoke("check", pkg / "ops" / "neg.py", "--shape", "x=float32[300,2]", "--format",
               "json")
    doc = json.loads(r.stdout)
    assert any(d["file"].endswith("helpers.py") and d["line"] == 5 for d in doc["diagnostics"])


def test_a_syntax_error_in_the_kernel_file_is_located(tmp_path):
    path = write(tmp_path, "import nki\n\n@nki.jit\ndef k(x):\n    return x +\n")
    r = invoke("check", path, "--shape", "x=float32[4]")
    assert r.exit_code == 1 and "E602" in r.output and f"{path}:5:" in r.output
    assert "Traceback" not in r.output


def test_jit_with_arguments_and_nki_simulate(tmp_path):
    path = write(tmp_path, DOUBLE.replace("@nki.jit\n", "@nki.jit(platform_target='trn2')\n")
                 + "\n\ndef run_it(x):\n    return nki.simulate(double)(x, factor=4.0)\n")
    module = nkirun_kernel(path, "run_it")
    x = np.ones((128, 4), np.float32)
    np.testing.assert_array_equal(module(x), 4 * x)  # AWS's spelling: nki.simulate(kernel)
    r = invoke("check", path, "--shape", "x=float32[128,4]")
    assert r.exit_code == 0, r.output  # the only @nki.jit function, decorated with arguments


SCALED = """\
import enum
import nki
import nki.isa as nisa
import nki.language as nl


class Scale(enum.Enum):
    ONE = 1
    THREE = 3


@nki.jit
def scaled(x, scale=Scale.ONE):
    assert isinstance(scale, Scale), scale
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(t, t, nl.multiply, float(scale.value))
    nisa.dma_copy(dst=out, src=t)
    return out
"""


@pytest.mark.parametrize("value", ["THREE", "Scale.THREE", "'THREE'", "3"])
def test_arg_selects_an_enum_parameter_by_name_or_value(tmp_path, value):
    """A parameter whose default is an Enum member takes a member by name or by value
    (nki-library kernels take configuration enums such as a norm type)."""
    path = write(tmp_path, SCALED)
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    np.save(tmp_path / "x.npy", x)
    r = invoke("run", f"{path}::scaled", "--input", f"x={tmp_path / 'x.npy'}", "--arg",
               f"scale={value}", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), x * 3)


def test_arg_enum_errors_name_the_members(tmp_path):
    path = write(tmp_path, SCALED)
    r = invoke("check", f"{path}::scaled", "--shape", "x=float32[128,4]", "--arg", "scale=TWO")
    assert r.exit_code == 2 and "ONE, THREE" in r.output
    # a bare word for a parameter that is not an Enum is still not a literal
    r = invoke("check", f"{path}::scaled", "--shape", "x=float32[128,4]", "--arg", "x2=TWO")
    assert r.exit_code == 2 and "literal" in r.output
