"""A kernel's run does not depend on anything outside its own inputs: the --uninitialized
fill policy, what earlier kernels did to the `nki` modules, other threads tracing at the
same time, the working folder, how the kernel leaves (sys.exit), a `json.py` beside it.
Each case is compared with a NumPy reference or the documented error."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import nkirun
from tests.kernel.test_kernel_contract import ROOT, invoke, nkirun_kernel, write

FIRST_MATMUL = """\
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def first_matmul(a, b):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    ps = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=nl.load(a), moving=nl.load(b))
    s = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=ps)
    nl.store(out, s)
    return out
"""


@pytest.mark.parametrize("policy", ["error", "strict", "nan", "zero"])
def test_fill_policy_does_not_turn_the_first_matmul_into_an_accumulate(tmp_path, policy):
    k = nkirun_kernel(write(tmp_path, FIRST_MATMUL), "first_matmul")
    a, b = np.ones((1, 128), np.float32), np.full((1, 4), 2.0, np.float32)
    np.testing.assert_array_equal(nkirun.simulate(k, uninitialized=policy)(a, b),
                                  a.T @ b)


# ---- what one kernel does to the `nki` modules stays in its trace ---------------------------
REBINDS = """\
import nki
import nki.language as nl

@nki.jit
def rebinds(x):
    nl.multiply = nl.add  # a kernel's own business, for its own trace only
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(x), 2.0))
    return out
"""

SCALES = """\
import nki
import nki.language as nl

@nki.jit
def scales(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(x), 3.0))
    return out
"""


def test_a_kernel_rebinding_an_nki_name_does_not_change_later_kernels(tmp_path):
    x = np.ones((4, 8), np.float32)
    rebinds = nkirun_kernel(write(tmp_path, REBINDS, "rebinds.py"), "rebinds")
    scales = nkirun_kernel(write(tmp_path, SCALES, "scales.py"), "scales")
    np.testing.assert_array_equal(nkirun.simulate(rebinds)(x), x + 2)  # its own trace: add
    np.testing.assert_array_equal(nkirun.simulate(scales)(x), x * 3)   # was 4.0 (x + 3)
    from nkirun.source.kernel.modules import modules
    assert modules()["nki.language"].multiply is not modules()["nki.language"].add


# ---- threads --------------------------------------------------------------------------------
ADDS = """\
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def adds(x, k):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    for i in nl.affine_range(k):
        t = nl.add(t, float(i + 1))
    print("tracing adds")  # (the kernel's prints go to stderr while it is traced)
    nl.store(out, t)
    return out
"""


def test_many_threads_tracing_different_kernels_get_their_own_results(tmp_path):
    import io
    import sys
    import threading
    adds = nkirun_kernel(write(tmp_path, ADDS, "adds.py"), "adds")
    scales = nkirun_kernel(write(tmp_path, SCALES, "scales.py"), "scales")
    jobs = [(i, (adds, (np.full((8, 16), i, np.float32), i % 5)) if i % 2 else
             (scales, (np.full((8, 16), i, np.float32),))) for i in range(48)]
    want = {i: args[0] + (args[1] * (args[1] + 1)) / 2 if len(args) == 2 else args[0] * 3
            for i, (_, args) in jobs}
    # every 4th call costs instead: its schedule is the one a lone call gives
    want.update({i: nkirun.cost(k, *args).total_ns for i, (k, args) in jobs if i % 4 == 0})
    got, errors, saved = {}, [], sys.stdout
    caller_stdout = sys.stdout = io.StringIO()  # (what the caller's stdout is, afterwards)
    try:
        def work(chunk):
            for i, (k, args) in chunk:
                try:
                    got[i] = (nkirun.cost(k, *args).total_ns if i % 4 == 0 else
                              nkirun.simulate(k)(*args))
                except BaseException as e:  # noqa: BLE001 - collected, compared below
                    errors.append((i, repr(e)))
        threads = [threading.Thread(target=work, args=(jobs[j::8],)) for j in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        assert sys.stdout is caller_stdout
        sys.stdout = saved
    assert errors == []
    for i, w in want.items():
        np.testing.assert_array_equal(got[i], w)
    assert "tracing adds" not in caller_stdout.getvalue()


# ---- how a kernel leaves, and where it stands ------------------------------------------------
EXITS = """\
import os
import sys
import nki
import nki.language as nl

@nki.jit
def leaves(x, how="exit"):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(x), 1.0))
    if how == "exit":
        sys.exit(0)
    if how == "chdir":
        os.chdir(os.path.dirname(os.path.abspath(__file__)) + "/elsewhere")
    return out
"""


def test_sys_exit_in_a_kernel_is_its_error(tmp_path):
    from nkirun.diagnostics import NkirunError
    path = write(tmp_path, EXITS, "leaves.py")
    x = np.zeros((4, 8), np.float32)
    with pytest.raises(NkirunError) as e:  # (SystemExit used to escape nkirun.simulate)
        nkirun.simulate(nkirun_kernel(path, "leaves"))(x)
    d = e.value.diagnostics[0]
    assert d.code == "E602" and "SystemExit" in d.message and "sys.exit(0)" in d.hint
    np.save(tmp_path / "x.npy", x)
    r = invoke("run", path, "--input", f"x={tmp_path / 'x.npy'}", "--out", tmp_path / "o")
    assert r.exit_code == 1 and "E602" in r.output and "SystemExit" in r.output
    assert not (tmp_path / "o").exists()


def test_sys_exit_while_the_kernel_file_is_imported(tmp_path):
    path = write(tmp_path, "import sys\nsys.exit(3)\n", "quits.py")
    r = invoke("check", f"{path}::k")
    assert r.exit_code == 1 and "E602" in r.output and "SystemExit: 3" in r.output


def test_a_kernel_changing_folder_does_not_move_the_outputs(tmp_path, monkeypatch):
    path = write(tmp_path, EXITS, "leaves.py")
    (tmp_path / "elsewhere").mkdir()
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.save(tmp_path / "x.npy", x)
    monkeypatch.chdir(tmp_path)
    r = invoke("run", f"{path}::leaves", "--input", "x=x.npy", "--arg", "how='chdir'")
    assert r.exit_code == 0, r.output
    assert os.getcwd() == str(tmp_path)
    written = tmp_path / "out" / "leaves_leaves" / "out0.npy"
    np.testing.assert_array_equal(np.load(written), x + 1)
    assert not (tmp_path / "elsewhere" / "out").exists()
    assert os.path.join("out", "leaves_leaves", "out0.npy") in r.output


# ---- the kernel's folder ---------------------------------------------------------------------
HELPED = """\
import nki
import nki.language as nl
from {helper} import plus_one

@nki.jit
def helped(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, plus_one(nl.load(x)))
    return out
"""


def test_run_writes_no_bytecode_beside_the_kernel(tmp_path, monkeypatch):
    import sys
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # (PYTHONDONTWRITEBYTECODE unset)
    path = write(tmp_path, HELPED.format(helper="helper_no_pyc"), "helped.py")
    write(tmp_path, "import nki.language as nl\n\ndef plus_one(t):\n    return nl.add(t, 1.0)\n",
          "helper_no_pyc.py")
    np.save(tmp_path / "x.npy", np.zeros((4, 8), np.float32))
    r = invoke("run", path, "--input", f"x={tmp_path / 'x.npy'}", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    assert not list(tmp_path.rglob("__pycache__"))


def test_a_json_py_beside_the_kernel_does_not_replace_nkiruns_json(tmp_path):
    import subprocess
    import sys
    path = write(tmp_path, HELPED.format(helper="helper_json"), "helped.py")
    write(tmp_path, "import nki.language as nl\n\ndef plus_one(t):\n    return nl.add(t, 1.0)\n",
          "helper_json.py")
    write(tmp_path, "raise ImportError('the kernel folder json.py was imported')\n", "json.py")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    r = subprocess.run([sys.executable, "-c", "from nkirun.cli import main; main()", "check",
                        path, "--shape", "x=float32[4,8]", "--format", "json"],
                       capture_output=True, text=True, cwd=elsewhere, timeout=120,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["diagnostics"] == []


# ---- the kernel's text in diagnostics --------------------------------------------------------
RAISES = """\
import nki
import nki.language as nl

class Odd(Exception):
    def __str__(self):
        raise RuntimeError("no text")

def deep(t, n):
    return deep(nl.add(t, 1.0), n + 1)

@nki.jit
def raises(x, how="escape"):
    t = nl.load(x)
    if how == "escape":
        raise ValueError("\\x1b[2J\\x1b[31mred" + "x" * 5_000_000)
    if how == "odd":
        raise Odd()
    deep(t, 0)
"""


@pytest.mark.parametrize("how,says", [
    ("escape", "ValueError: \\x1b[2J\\x1b[31mred"), ("odd", "Odd: <str() of the exception "
                                                     "raised RuntimeError>"),
    ("recursion", "RecursionError")])
def test_kernel_errors_are_the_kernels_escaped_and_bounded(tmp_path, how, says):
    path = write(tmp_path, RAISES, "raises.py")
    r = invoke("check", f"{path}::raises", "--shape", "x=float32[4,8]", "--arg", f"how='{how}'")
    assert r.exit_code == 1, r.output
    assert "E602" in r.output and says in r.output
    assert "\x1b" not in r.output and len(r.output) < 20_000


# ---- a kernel that forgets its output --------------------------------------------------------
FORGETS = """\
import nki
import nki.language as nl

@nki.jit
def forgets(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(x), 1.0))
"""


def test_a_kernel_returning_nothing_and_writing_no_parameter_is_an_error(tmp_path):
    from nkirun.diagnostics import NkirunError
    path = write(tmp_path, FORGETS, "forgets.py")
    with pytest.raises(NkirunError) as e:  # (simulate returned None)
        nkirun.simulate(nkirun_kernel(path, "forgets"))(np.zeros((4, 8), np.float32))
    d = e.value.diagnostics[0]
    assert d.code == "E606" and "kernel `forgets` returns nothing" in d.message
    assert "did you forget `return out`?" in d.message and d.loc.line == 5
    np.save(tmp_path / "x.npy", np.zeros((4, 8), np.float32))
    r = invoke("run", path, "--input", f"x={tmp_path / 'x.npy'}", "--out", tmp_path / "o")
    assert r.exit_code == 1 and "E606" in r.output and "0 outputs written" not in r.output
    assert "output: true" not in r.output  # (YAML advice, W051, used to be all it said)
    r = invoke("check", path, "--shape", "x=float32[4,8]")
    assert r.exit_code == 1 and "E606" in r.output


def test_an_output_argument_the_kernel_writes_is_still_its_output(tmp_path):
    path = write(tmp_path, """\\
import nki
import nki.language as nl

@nki.jit
def into(x, y):
    nl.store(y, nl.add(nl.load(x), 1.0))
""", "into.py")
    x, y = np.ones((4, 8), np.float32), np.zeros((4, 8), np.float32)
    assert nkirun.simulate(nkirun_kernel(path, "into"))(x, y) is None
    np.testing.assert_array_equal(y, x + 1)


def test_a_huge_returned_value_is_named_in_bounded_text(tmp_path):
    path = write(tmp_path, """\\
import nki

@nki.jit
def returns_text(x):
    return "\\x1b[31m" + "y" * 1_000_000
""", "returns_text.py")
    r = invoke("check", path, "--shape", "x=float32[4,8]")
    assert r.exit_code == 1 and "E606" in r.output and "the kernel returns str" in r.output
    assert "\x1b" not in r.output and len(r.output) < 5_000


SETS_LIMITS = """\
import nki
import nki.language as nl

@nki.jit
def sets_limits(x):
    nl.tile_size.sbuf_bytes_per_partition = 1  # (a namespace's attributes, not the module's)
    nl.fp32.min = 0.0
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(x))
    return out
"""

READS_LIMITS = """\
import nki
import nki.language as nl

@nki.jit
def reads_limits(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    negative = nl.fp32.min < 0  # (its true value)
    size = float(nl.tile_size.sbuf_fmax_bytes)
    nl.store(out, nl.add(nl.load(x), size if negative else -size))
    return out
"""


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_namespaces_in_nki_modules_are_pristine_too(tmp_path, target):
    from nkirun.hw.targets import TARGETS
    x = np.zeros((1, 1), np.float32)
    sets = nkirun_kernel(write(tmp_path, SETS_LIMITS, "sets_limits.py"), "sets_limits")
    reads = nkirun_kernel(write(tmp_path, READS_LIMITS, "reads_limits.py"), "reads_limits")
    nkirun.simulate(sets, target=target)(x)
    got = nkirun.simulate(reads, target=target)(x)
    want = np.float32(TARGETS[target].sbuf_bytes_per_partition)
    np.testing.assert_array_equal(got, np.full((1, 1), want, np.float32))


def test_an_unsupported_name_the_kernel_made_up_is_quoted_bounded(tmp_path):
    path = write(tmp_path, """\\
import nki
import nki.language as nl

@nki.jit
def made_up(x):
    return getattr(nl, "\\\\x1b[31m" + "z" * 1_000_000)
""", "made_up.py")
    r = invoke("check", path, "--shape", "x=float32[4,8]")
    assert r.exit_code == 1 and "E601" in r.output and "\\\\x1b[31mzzz" in r.output
    assert "\x1b" not in r.output and len(r.output) < 5_000


def test_nki_isa_functions_made_on_first_use_are_kept_across_traces(tmp_path):
    from nkirun.source.kernel.modules import modules
    scales = nkirun_kernel(write(tmp_path, SCALES, "scales.py"), "scales")
    nkirun.simulate(scales)(np.ones((2, 2), np.float32))
    isa = modules()["nki.isa"]
    first = isa.tensor_tensor  # (made now, or by an earlier test)
    nkirun.simulate(scales)(np.ones((2, 2), np.float32))
    assert isa.tensor_tensor is first and "tensor_tensor" in vars(isa)
