"""The Python API (issue 12): programs as paths, os.PathLike, YAML text or dicts (TypeError
otherwise); run(target=, uninitialized=); API wording; __all__, py.typed, a short Schedule
repr; nkirun.schedule.to_json; nkirun.testing.assert_close; inputs in another dtype or
0-d; <program> placeholders replaced by the real file; binary files as programs."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import nkirun
from nkirun.cli import cli

from repo_paths import ROOT
ROWMAX = ROOT / "programs" / "rowmax_in_window.yaml"
COPY = {"version": 1, "tensors": {
    "x": {"buffer": "hbm", "shape": [4, 6], "dtype": "float32", "fill": 0},
    "t": {"buffer": "sbuf", "shape": [4, 6], "dtype": "float32"},
    "y": {"buffer": "hbm", "shape": [4, 6], "dtype": "float32", "output": True}},
    "instructions": [{"load": {"dst": "t", "src": "x"}}, {"store": {"dst": "y", "src": "t"}}]}
X = np.arange(24, dtype=np.float32).reshape(4, 6)


@pytest.mark.parametrize("form", ["path", "str", "text", "dict"])
def test_program_forms(form):
    program = {"path": ROWMAX, "str": str(ROWMAX), "text": ROWMAX.read_text(),
               "dict": yaml.safe_load(ROWMAX.read_text())}[form]
    assert nkirun.check(program) == []
    assert "<Schedule 'rowmax_in_window' on trn2: 6 instructions" in repr(nkirun.cost(program))


def test_run_a_dict_and_yaml_text():
    assert nkirun.run(COPY, inputs={"x": X})["y"].tolist() == X.tolist()
    assert nkirun.run(yaml.safe_dump(COPY), inputs={"x": X})["y"].tolist() == X.tolist()
    text = "version 1\ntensor x hbm [2, 2] float32 fill=3\ntensor y hbm [2, 2] float32 output\n" \
        "tensor t sbuf [2, 2] float32\nload dst=t src=x\nstore dst=y src=t\n"
    assert nkirun.run(text, fmt="text")["y"].tolist() == [[3, 3], [3, 3]]


@pytest.mark.parametrize("bad", [3, None, [1, 2], b"\x00", 2.5])
def test_other_program_types_are_a_type_error(bad):
    if isinstance(bad, bytes):  # bytes are a path (os.fsdecode), one that does not exist
        assert nkirun.check(bad)[0].code == "E000"
        return
    for fn in (nkirun.check, nkirun.run, nkirun.cost):
        with pytest.raises(TypeError, match="program must be a path"):
            fn(bad)


def test_run_target_and_pathlike_out(tmp_path):
    prog = dict(COPY, tensors=dict(COPY["tensors"], t={"buffer": "sbuf", "shape": [4, 6],
                                                          "dtype": "float32"}))
    out = nkirun.run(prog, inputs={"x": X}, target="trn1", out=tmp_path / "o")
    assert (tmp_path / "o" / "y.npy").exists() and out["y"].tolist() == X.tolist()
    with pytest.raises(nkirun.NkirunError, match="E007"):
        nkirun.run(prog, target="trn9")


def test_api_errors_use_api_wording_and_name_the_file():
    with pytest.raises(nkirun.NkirunError) as e:
        nkirun.run(ROWMAX, inputs={"xx": X})
    (d,) = e.value.diagnostics
    assert d.code == "E075" and "inputs names unknown tensor `xx`" in d.message
    assert "--input" not in str(e.value) and d.loc.file == str(ROWMAX)
    assert d.hint == "did you mean `x`?"
    with pytest.raises(nkirun.NkirunError) as e:
        nkirun.run(ROWMAX, inputs={"x": ROOT / "nope.npy"})
    assert "--input" not in str(e.value) and "input file" in str(e.value)
    with pytest.raises(ValueError, match="uninitialized must be one of error, strict, nan, zero"):
        nkirun.run(ROWMAX, uninitialized="garbage")
    with pytest.raises(TypeError, match="inputs must be a dict"):
        nkirun.run(ROWMAX, inputs=[X])


def test_cli_e075_names_the_program_file(tmp_path):
    np.save(tmp_path / "x.npy", X)
    r = CliRunner().invoke(cli, ["run", str(ROWMAX), "--out", str(tmp_path / "o"),
                                 "--input", f"xx={tmp_path / 'x.npy'}"])
    assert r.exit_code == 1 and "<program>" not in r.output
    assert f"{ROWMAX}: error[E075]: --input names unknown tensor `xx`" in r.output


@pytest.mark.parametrize("given,cast", [
    (X.astype(np.float64) / 7, lambda a: (a / 7).astype(np.float32)),
    (X.astype(np.int64), lambda a: a),
    (X.astype(ml_dtypes.bfloat16), lambda a: a.astype(ml_dtypes.bfloat16).astype(np.float32)),
    (np.float64(2.5), lambda a: np.full_like(a, 2.5)),  # 0-d: fills the tensor
    (np.array(7, np.int32), lambda a: np.full_like(a, 7)),
])
def test_input_arrays_are_cast_and_0d_fills(given, cast):
    got = nkirun.run(COPY, inputs={"x": given})["y"]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, cast(X))


def test_input_that_cannot_serve_is_a_clear_error():
    with pytest.raises(nkirun.NkirunError, match=r"E074.*shape \[6\], declared \[4, 6\]"):
        nkirun.run(COPY, inputs={"x": np.zeros(6)})
    with pytest.raises(nkirun.NkirunError, match="E073.*has dtype <U1") as e:
        nkirun.run(COPY, inputs={"x": np.full((4, 6), "a")})
    assert "give a numeric array" in e.value.diagnostics[0].hint


def test_package_surface():
    assert set(nkirun.__all__) >= {"check", "cost", "run", "Diagnostic", "NkirunError",
                                   "testing", "schedule"}
    assert (ROOT / "nkirun" / "py.typed").exists()
    sched = nkirun.cost(ROWMAX)
    doc = nkirun.schedule.to_json(sched)
    assert doc["total_ns"] == pytest.approx(sched.total_ns, abs=0.01) and isinstance(sched, nkirun.schedule.Schedule)
    assert len(repr(sched)) < 100
    assert nkirun.api.run.__annotations__["return"] == "dict[str, np.ndarray]"  # (programs)
    assert nkirun.api.cost.__annotations__["return"] == "Schedule"


def test_mypy_accepts_a_user_test(tmp_path):
    pytest.importorskip("mypy")
    user = tmp_path / "test_user.py"
    user.write_text("import numpy as np\nimport nkirun\nfrom nkirun.testing import assert_close\n"
                    "def test() -> None:\n"
                    "    out: dict[str, np.ndarray] = nkirun.run('p.yaml')\n"
                    "    diags: list[nkirun.Diagnostic] = nkirun.check('p.yaml')\n"
                    "    total: float = nkirun.cost('p.yaml').total_ns\n"
                    "    assert_close(out['y'], np.ones(3), ulp=2)\n")
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                        str(user)], capture_output=True, text=True, cwd=tmp_path,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


def test_assert_close():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    nkirun.testing.assert_close(a, a.copy())
    nkirun.testing.assert_close(a, a.astype(np.float64))  # another dtype: in float64
    b = a.copy()
    b[1, 1] = np.nextafter(np.float32(4), np.float32(5))
    nkirun.testing.assert_close(a, b, ulp=1)
    nkirun.testing.assert_close(a, b, rtol=1e-6)
    with pytest.raises(AssertionError) as e:
        nkirun.testing.assert_close(a, b, name="y")
    assert "MISMATCH (exact) in 1 of 4 elements" in str(e.value)
    assert "first at [1, 1]: got 4, expected 4.0000005" in str(e.value)
    with pytest.raises(AssertionError, match="shape"):
        nkirun.testing.assert_close(a, a[0])
    with pytest.raises(ValueError, match="not both"):
        nkirun.testing.assert_close(a, b, ulp=1, rtol=1e-3)


# ---- run-time policy for uninitialised reads ---------------------------------------------------
HALF = {"version": 1, "tensors": {
    "x": {"buffer": "hbm", "shape": [64, 4], "dtype": "float32", "fill": 1},
    "t": {"buffer": "sbuf", "shape": [128, 4], "dtype": "float32"},
    "u": {"buffer": "sbuf", "shape": [128, 4], "dtype": "float32"},
    "y": {"buffer": "sbuf", "shape": [128, 4], "dtype": "float32", "output": True}},
    "instructions": [{"load": {"dst": "t[0:64, :]", "src": "x"}},
                     # computes on all 128 rows, as a hardware kernel may
                     {"tensor_scalar": {"dst": "u", "data": "t", "op0": "multiply",
                                        "operand0": 2.0}},
                     {"tensor_copy": {"dst": "y", "src": "u"}}]}


def test_e090_hint_names_the_row_slice():
    # the garbage reaches output y: E090 at the read that started it, which the hint
    # fixes (--uninitialized nan|zero would not make y right)
    with pytest.raises(nkirun.NkirunError) as e:
        nkirun.run(HALF)
    (d,) = e.value.diagnostics
    assert d.code == "E090" and "partition 64" in d.message and "reach output `y`" in d.message
    assert "only partitions 0..63 of `t` hold data here" in d.hint
    assert "`t[0:64, ...]`" in d.hint and "--uninitialized" not in d.hint
    with pytest.raises(nkirun.NkirunError) as e:  # strict: at the read, naming the policies
        nkirun.run(HALF, uninitialized="strict")
    (d,) = e.value.diagnostics
    assert d.code == "E090" and "`t[0:64, ...]`" in d.hint
    assert "without --uninitialized strict" in d.hint


@pytest.mark.parametrize("policy,fill", [("nan", np.nan), ("zero", 0.0)])
def test_uninitialized_policy(tmp_path, policy, fill):
    y = nkirun.run(HALF, uninitialized=policy)["y"]
    assert (y[:64] == 2).all()
    np.testing.assert_array_equal(y[64:], np.full((64, 4), fill * 2, np.float32))
    path = tmp_path / "half.yaml"
    path.write_text(yaml.safe_dump(HALF))
    r = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "o"),
                                 "--uninitialized", policy])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), y)
    r = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "o2")])
    assert r.exit_code == 1 and "E090" in r.output


def test_uninitialized_nan_for_integers_reads_zero():
    prog = yaml.safe_load(yaml.safe_dump(HALF).replace("float32", "int32"))
    prog["instructions"][1] = {"tensor_copy": {"dst": "u", "src": "t"}}
    y = nkirun.run(prog, uninitialized="nan")["y"]
    assert (y[:64] == 1).all() and (y[64:] == 0).all()


# ---- binary files given as programs ------------------------------------------------------------
@pytest.mark.parametrize("content,what", [
    (None, "a NumPy .npy file"), (b"PK\x03\x04rest", "zip archive"),
    (bytes(range(256)) * 4, "binary data")], ids=["npy", "zip", "bytes"])
def test_binary_file_is_not_a_program(tmp_path, content, what):
    path = tmp_path / "p.yaml"
    if content is None:
        np.save(tmp_path / "p.npy", X)
        path = tmp_path / "p.npy"
    else:
        path.write_bytes(content)
    (d,) = nkirun.check(path)
    assert d.code == "E001" and "is not a program (binary data" in d.message and what in d.message
    assert "UTF-8" not in (d.hint or "")


def test_text_in_another_encoding_is_still_told_to_save_as_utf8(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes("# café\nversion: 1\n".encode("latin-1"))
    (d,) = nkirun.check(path)
    assert d.code == "E001" and d.hint == "save the file as UTF-8"


def test_e080_names_the_program_file_not_a_placeholder(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = CliRunner().invoke(cli, ["run", str(ROWMAX), "--out", str(blocker / "sub")])
    assert r.exit_code == 1 and f"{ROWMAX}: error[E080]" in r.output
    r = CliRunner().invoke(cli, ["cost", str(ROWMAX), "--trace-out", str(blocker / "t.json")])
    assert r.exit_code == 1 and f"{ROWMAX}: error[E080]" in r.output
    assert "<program>" not in r.output
    with pytest.raises(nkirun.NkirunError) as e:
        nkirun.run(COPY, inputs={"x": X}, out=blocker / "sub")
    assert e.value.diagnostics[0].code == "E080"
    assert e.value.diagnostics[0].loc.file == "<program dict>"


def test_hints_that_name_a_cli_option_also_name_the_api_argument():
    (d,) = nkirun.check("version 1\ntensor x hbm [2, 2] float32 fill=3\n")
    assert d.code == "E002" and 'fmt="text"' in d.hint


# ---- the fill policy says what an unwritten element reads as, not that it was written -------
FIRST_MATMUL = {"version": 1, "tensors": {
    "a": {"buffer": "sbuf", "shape": [1, 128], "dtype": "float32", "fill": 1.0},
    "b": {"buffer": "sbuf", "shape": [1, 4], "dtype": "float32", "fill": 2.0},
    "ps": {"buffer": "psum", "shape": [128, 4], "dtype": "float32"},
    "s": {"buffer": "sbuf", "shape": [128, 4], "dtype": "float32"},
    "y": {"buffer": "hbm", "shape": [128, 4], "dtype": "float32", "output": True}},
    "instructions": [{"nc_matmul": {"dst": "ps", "stationary": "a", "moving": "b"}},
                     {"tensor_copy": {"dst": "s", "src": "ps"}},
                     {"store": {"dst": "y", "src": "s"}}]}


@pytest.mark.parametrize("plan", [True, False], ids=["planned", "plain"])
@pytest.mark.parametrize("policy", ["error", "strict", "nan", "zero"])
def test_fill_policy_does_not_make_psum_written(policy, plan):
    # accumulate unset: the first matmul into never-written PSUM overwrites it under every
    # policy (it used to add onto the NaN / 0 fill)
    from nkirun.runner.interpret import execute, outputs
    prog = yaml.safe_load(yaml.safe_dump(FIRST_MATMUL))
    np.testing.assert_array_equal(nkirun.run(prog, uninitialized=policy)["y"],
                                  np.full((128, 4), 2.0, np.float32))
    c = nkirun.api.check_program(prog)
    m = execute(c.program, c.bound, uninitialized=policy, plan=plan)
    np.testing.assert_array_equal(outputs(c.program, m)["y"], np.full((128, 4), 2.0, np.float32))


@pytest.mark.parametrize("policy", ["nan", "zero"])
def test_fill_policy_partly_written_psum_accumulates_only_where_written(policy):
    prog = yaml.safe_load(yaml.safe_dump(FIRST_MATMUL))
    prog["tensors"]["b2"] = {"buffer": "sbuf", "shape": [1, 2], "dtype": "float32", "fill": 3.0}
    prog["instructions"][0:0] = [{"nc_matmul": {"dst": "ps[:, 0:2]", "stationary": "a",
                                                "moving": "b2"}}]
    y = nkirun.run(prog, uninitialized=policy)["y"]
    np.testing.assert_array_equal(y[:, :2], np.full((128, 2), 5.0, np.float32))
    np.testing.assert_array_equal(y[:, 2:], np.full((128, 2), 2.0, np.float32))
