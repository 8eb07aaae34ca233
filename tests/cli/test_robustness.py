"""Bad input never crashes nkirun and never loses data (issue 6).

Every bad input is one row of a table: the command's exit status, a fragment of the
message, a located diagnostic where the problem has a place in the program, no Python
traceback, and an output folder left exactly as it was (pre-existing files untouched,
nothing added). Plus: the accepted .npy forms, size limits measured for time and memory,
NaN/inf and overflow rules, atomic output writing under injected failures, internal
errors (exit 3) and usage errors (exit 2). See docs/robustness.md.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import re
import subprocess
import sys
import tracemalloc

import ml_dtypes
import numpy as np
import pytest

from prog_helpers import invoke
from repo_paths import PROGRAMS, ROOT

# subprocesses import the tree under test, not whatever nkirun is installed
TREE_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

LOCATED = re.compile(r"\.yaml:\d+:\d+: error\[E\d{3}\]")

# A small valid program: x (file) -> t -> y, and z (fill) -> u -> w: two outputs.
BASE = """\
version: 1
tensors:
  x: {buffer: hbm, shape: [4, 8], dtype: DTYPE, file: x.npy}
  z: {buffer: hbm, shape: [4, 8], dtype: float32, fill: 2.0}
  t: {buffer: sbuf, shape: [4, 8], dtype: DTYPE}
  u: {buffer: sbuf, shape: [4, 8], dtype: float32}
  y: {buffer: hbm, shape: [4, 8], dtype: DTYPE, output: true}
  w: {buffer: hbm, shape: [4, 8], dtype: float32, output: true}
instructions:
  - load: {dst: t, src: x}
  - load: {dst: u, src: z}
  - store: {dst: y, src: t}
  - store: {dst: w, src: u}
"""
X = np.arange(32, dtype=np.float32).reshape(4, 8) - 7.5


def _snapshot(folder) -> dict:
    """Every entry under `folder` (names, sizes, contents, mtimes)."""
    snap = {}
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            snap[os.path.relpath(os.path.join(root, d), folder)] = "dir"
        for f in files:
            p = os.path.join(root, f)
            st = os.stat(p)
            with open(p, "rb") as fh:
                snap[os.path.relpath(p, folder)] = (hashlib.sha256(fh.read()).hexdigest(),
                                                    st.st_mtime_ns, st.st_mode)
    return snap


@pytest.fixture
def work(tmp_path):
    """tmp_path with the base program, x.npy and an `out` folder holding earlier results."""
    (tmp_path / "p.yaml").write_text(BASE.replace("DTYPE", "float32"))
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / "out"
    out.mkdir()
    np.save(out / "y.npy", np.full((4, 8), 99, np.float32))  # an earlier run's result
    (out / "notes.txt").write_text("keep me")
    return tmp_path


def _assert_clean_failure(r, code, fragment, located, before, work):
    text = r.output
    assert r.exit_code == code, text
    assert "Traceback" not in text, text
    assert fragment in text, text
    if located:
        assert LOCATED.search(text), text
    assert _snapshot(work / "out") == before, "the output folder changed"
    assert not (work / "out2").exists(), "a failing run created its output folder"


# ---- YAML and structure ---------------------------------------------------------------------
def _bomb(levels=12, fan=10):
    lines = ["version: 1", "a0: &a0 [" + ", ".join(["x"] * fan) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return "\n".join(lines) + "\n"


YAML_CASES = [
    # id, program bytes, exit, message fragment, located?
    ("python-object-tag", b"version: 1\ntensors: !!python/object:os.system {}\n", 1,
     "YAML tag '!!python/object:os.system' is not allowed", True),
    ("python-apply-tag", b"version: 1\nname: !!python/object/apply:os.system ['touch pwned']\n",
     1, "is not allowed", True),
    ("custom-tag", b"version: 1\ntensors:\n  x: !foo {buffer: hbm}\n", 1, "'!foo'", True),
    ("binary-tag", b"version: 1\nname: !!binary aGVsbG8=\n", 1, "'!!binary'", True),
    ("bad-explicit-int", b"version: !!int abc\n", 1, "'abc' is not a valid int", True),
    ("bad-explicit-bool", b"version: !!bool maybe\n", 1, "not a valid bool", True),
    ("malformed", b"version: 1\ntensors: {x: [\n", 1, "YAML syntax error", True),
    ("bad-indent", b"version: 1\ntensors:\n  x: 1\n y: 2\n", 1, "YAML syntax error", True),
    ("tab-indent", b"version: 1\ntensors:\n\tx: 1\n", 1, "YAML syntax error", True),
    ("not-utf8", b"version: 1\nname: \xff\xfe\n", 1, "not UTF-8", True),
    # characters YAML refuses: PyYAML gives an offset; nkirun gives line:column
    ("nul-byte", b"version: 1\nname: a\x00b\n", 1,
     "bad.yaml:2:8: error[E001]: the character U+0000 is not allowed in YAML", True),
    ("control-character", b"version: 1\n\nname: \"ab\x01\"\n", 1,
     "bad.yaml:3:10: error[E001]: the character U+0001 is not allowed", True),
    ("after-a-yaml-line-break", "version: 1\n\x85 \x7f\n".encode(), 1,
     "bad.yaml:3:3: error[E001]: the character U+007F", True),
    ("utf16", "version: 1\n".encode("utf-16"), 1, "not UTF-8", True),
    ("empty", b"", 1, "the program is empty", True),
    ("only-comments", b"# nothing here\n\n", 1, "the program is empty", True),
    ("list", b"- version: 1\n- tensors: {}\n", 1, "not a list", True),
    ("scalar", b"hello\n", 1, "not a scalar", True),
    ("alias-bomb", _bomb().encode(), 1, "expands to more than 1,000,000 values", True),
    ("recursive-alias", b"version: 1\nname: &a [1, *a]\n", 1, "recursive", True),
    ("deep-flow", b"version: 1\nname: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", 1,
     "more than 64 levels deep", True),
    ("deep-unclosed", b"version: 1\nname: " + b"{a: " * 100_000, 1, "more than 64 levels", True),
    ("deep-block", ("version: 1\n" + "".join(" " * i + "k:\n" for i in range(200))).encode(), 1,
     "more than 64 levels deep", True),
    ("duplicate-tensor-key", b"version: 1\ntensors:\n  x: {buffer: hbm, shape: [2], dtype: fp32,"
     b" buffer: sbuf}\ninstructions: []\n", 1, "duplicate key `buffer`", True),
    ("duplicate-keyword", b"version: 1\ninstructions:\n  - memset: {dst: a, dst: b, value: 0}\n",
     1, "duplicate key `dst`", True),
    ("no-version", b"tensors: {}\ninstructions: []\n", 1, "needs `version: 1`", True),
    ("tensors-list", b"version: 1\ntensors: [1, 2]\n", 1, "`tensors` must be a mapping", True),
    ("instructions-map", b"version: 1\ninstructions: {a: 1}\n", 1, "must be a list", True),
    ("tensor-is-number", b"version: 1\ntensors: {x: 5}\n", 1, "must be a mapping", True),
    ("bool-data", b"version: 1\ntensors:\n  x: {buffer: hbm, shape: [2], dtype: fp32, "
     b"data: [true, 1]}\n", 1, "rectangular nested list of numbers", True),
]


@pytest.mark.parametrize("cmd", ["check", "run"])
@pytest.mark.parametrize("case", YAML_CASES, ids=[c[0] for c in YAML_CASES])
def test_bad_program_file(work, case, cmd):
    _, text, code, fragment, located = case
    (work / "bad.yaml").write_bytes(text)
    before = _snapshot(work / "out")
    args = [cmd, "bad.yaml"] + (["--out", "out"] if cmd == "run" else [])
    r = invoke(*args, cwd=work, catch_exceptions=False)  # (speed: benchmarks/bench_rejections.py)
    _assert_clean_failure(r, code, fragment, located, before, work)
    assert not (work / "pwned").exists()


def test_missing_program_file(work):
    r = invoke("check", "nope.yaml", cwd=work, catch_exceptions=False)
    assert r.exit_code == 1 and "error[E000]" in r.output
    assert "program file not found: nope.yaml" in r.output


def test_output_written_only_in_part(work):
    """E092: an output that the program stores only partly fails the run, writes nothing."""
    (work / "part.yaml").write_text(BASE.replace("DTYPE", "float32").replace(
        "store: {dst: y, src: t}", "store: {dst: \"y[0:2, :]\", src: \"t[0:2, :]\"}"))
    before = _snapshot(work / "out")
    r = invoke("run", "part.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    _assert_clean_failure(r, 1, "error[E092]", False, before, work)
    assert "output `y` was never written at index (2, 0)" in r.output


def test_out_of_memory_is_a_diagnostic(work, monkeypatch):
    """E091: a MemoryError while allocating or running is reported, not a crash."""
    import nkirun.runner.plain
    import nkirun.runner.plan

    def no_memory(*_a, **_k):
        raise MemoryError
    monkeypatch.setattr(nkirun.runner.plain, "initial_buffers", no_memory)
    monkeypatch.setattr(nkirun.runner.plan, "initial_buffers", no_memory)  # (the plan's)
    before = _snapshot(work / "out")
    r = invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    _assert_clean_failure(r, 1, "error[E091]", False, before, work)


@pytest.mark.parametrize("text", [b"version: 1\nname: " + b"[" * 100_000 + b"]" * 100_000,
                                  _bomb(14).encode()], ids=["deep", "bomb"])
def test_yaml_bombs_in_a_fresh_process(tmp_path, text):
    """Out of process: a C-level stack overflow in libyaml would kill pytest itself."""
    (tmp_path / "b.yaml").write_bytes(text)
    p = subprocess.run([sys.executable, "-m", "nkirun", "check", "b.yaml"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60, env=TREE_ENV)  # (hang guard)
    assert p.returncode == 1, p.stderr  # (how fast: benchmarks/bench_rejections.py)
    assert "error[E001]" in p.stdout + p.stderr and "Traceback" not in p.stderr


# ---- .npy data files ------------------------------------------------------------------------
class _Payload:
    """Unpickling this would create a file: proof that nkirun never unpickles."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _npy_header(descr, shape, fortran=False) -> bytes:
    h = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}".encode()
    h += b" " * (64 - (10 + len(h) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h


def _write_bad_npy(kind: str, path, work, good: bytes):
    if kind == "object":
        np.save(path, np.array([{"a": 1}] * 32, dtype=object).reshape(4, 8), allow_pickle=True)
    elif kind == "pickle-payload":
        path.write_bytes(pickle.dumps(_Payload(str(work / "pwned"))))
    elif kind == "object-payload":
        arr = np.empty((4, 8), object)
        arr[...] = _Payload(str(work / "pwned"))
        np.save(path, arr, allow_pickle=True)
    elif kind == "garbage":
        path.write_bytes(b"hello, world\n")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "npz":
        np.savez(path.with_suffix(".npz"), a=X)
        os.replace(path.with_suffix(".npz"), path)
    elif kind == "trunc-header":
        path.write_bytes(good[:40])
    elif kind == "trunc-data":
        path.write_bytes(good[:-4])
    elif kind == "huge-header-shape":
        path.write_bytes(_npy_header("<f4", (1_000_000, 1_000_000)) + b"\0" * 64)
    elif kind == "header-is-code":
        path.write_bytes(b"\x93NUMPY\x01\x00\x20\x00__import__('os').system('x')    \n")
    elif kind == "shape":
        np.save(path, X.reshape(8, 4))
    elif kind == "float64":
        np.save(path, X.astype(np.float64))
    elif kind == "structured":
        np.save(path, np.zeros((4, 8), [("a", "<f4")]))
    elif kind == "folder":
        path.mkdir()
    else:
        raise AssertionError(kind)


NPY_CASES = [
    # id, kind, code fragment, message fragment
    ("missing", None, "E070", "x.npy not found"),
    ("object-array", "object", "E071", "nkirun never unpickles data"),
    ("object-payload", "object-payload", "E071", "holds Python objects"),
    ("raw-pickle", "pickle-payload", "E072", "not a .npy file"),
    ("garbage", "garbage", "E072", "not a .npy file"),
    ("empty", "empty", "E072", "is empty"),
    ("npz", "npz", "E072", ".npz archive"),
    ("truncated-header", "trunc-header", "E072", "truncated"),
    ("truncated-data", "trunc-data", "E072", "is truncated: its header declares 128 data bytes"),
    ("huge-header-shape", "huge-header-shape", "E074", "has shape [1000000, 1000000]"),
    ("header-is-code", "header-is-code", "E072", "damaged or truncated .npy header"),
    ("shape", "shape", "E074", "has shape [8, 4], declared [4, 8]"),
    ("dtype", "float64", "E073", "has dtype float64, declared float32"),
    ("structured", "structured", "E073", "structured dtype"),
    ("folder", "folder", "E072", "is a folder"),
]


@pytest.mark.parametrize("case", NPY_CASES, ids=[c[0] for c in NPY_CASES])
def test_bad_data_file(work, case):
    _, kind, code, fragment = case
    good = (work / "x.npy").read_bytes()
    os.remove(work / "x.npy")
    if kind is not None:
        _write_bad_npy(kind, work / "x.npy", work, good)
    before = _snapshot(work / "out")
    r = invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    _assert_clean_failure(r, 1, fragment, True, before, work)
    assert f"error[{code}]: tensor `x`: file " in r.output  # names the tensor and the file
    assert not (work / "pwned").exists()
    # `check` reads no data file: the same program is valid
    assert invoke("check", "p.yaml", cwd=work, catch_exceptions=False).exit_code == 0


def _with_dtype(work, dtype, arr):
    (work / "p.yaml").write_text(BASE.replace("DTYPE", dtype))
    np.save(work / "x.npy", arr)


WRONG_FORMS = [
    # declared, file array, fragment
    ("bfloat16", X.astype(ml_dtypes.bfloat16).view(np.uint16), "arr.view(ml_dtypes.bfloat16)"),
    ("bfloat16", X, "has dtype float32, declared bfloat16"),
    ("bfloat16", np.zeros((4, 8), "V4"), "holds 4-byte raw values (|V4); bfloat16 is 2 bytes"),
    ("bfloat16", X.astype(ml_dtypes.float8_e4m3), "1-byte raw values (|V1); bfloat16 is 2"),
    ("float8_e4m3", X.astype(ml_dtypes.bfloat16), "2-byte raw values (|V2); float8_e4m3 is 1"),
    ("float8_e4m3", X.astype(ml_dtypes.float8_e5m2), "holds float8_e5m2 values"),
    ("float8_e4m3", X.astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.uint8),
     "has dtype uint8, declared float8_e4m3"),
    ("float32", X.astype(ml_dtypes.bfloat16), "|V2 is bfloat16"),
    ("float16", X.astype(ml_dtypes.bfloat16), "raw bytes |V2, declared float16"),
    ("int32", X.astype(np.int64), "has dtype int64, declared int32"),
]


@pytest.mark.parametrize("declared,arr,fragment", WRONG_FORMS,
                         ids=[f"{d}-{i}" for i, (d, _, _) in enumerate(WRONG_FORMS)])
def test_npy_wrong_form_refused(work, declared, arr, fragment):
    _with_dtype(work, declared, arr)
    before = _snapshot(work / "out")
    r = invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    _assert_clean_failure(r, 1, fragment, True, before, work)
    assert "error[E073]" in r.output


ACCEPTED = [
    ("float32", X, X),
    ("float32", X.astype(">f4"), X),  # other byte order
    ("float32", np.asfortranarray(X), X),  # Fortran order
    ("int32", X.astype(np.int32).astype(">i4"), X.astype(np.int32)),
    ("bfloat16", X.astype(ml_dtypes.bfloat16), X.astype(ml_dtypes.bfloat16)),  # saved as <V2
    ("float8_e4m3", X.astype(ml_dtypes.float8_e4m3), X.astype(ml_dtypes.float8_e4m3)),  # <V1
    ("float8_e5m2", X.astype(ml_dtypes.float8_e5m2), X.astype(ml_dtypes.float8_e5m2)),  # <f1
    ("float8_e5m2", X.astype(ml_dtypes.float8_e5m2).view("V1"), X.astype(ml_dtypes.float8_e5m2)),
]


@pytest.mark.parametrize("declared,arr,expect", ACCEPTED,
                         ids=[f"{d}-{a.dtype.str}-{i}" for i, (d, a, _) in enumerate(ACCEPTED)])
def test_npy_accepted_forms(work, declared, arr, expect):
    _with_dtype(work, declared, arr)
    r = invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    got = np.load(work / "out" / "y.npy")  # nkirun's own outputs load with plain np.load
    expect = np.asarray(expect)
    assert got.dtype.itemsize == expect.dtype.itemsize
    np.testing.assert_array_equal(got.view(expect.dtype), expect)


def test_output_roundtrips_as_input(work):
    """What `run` writes (fp8 e5m2 included) is a valid `file:` for the same dtype."""
    _with_dtype(work, "float8_e5m2", X.astype(ml_dtypes.float8_e5m2))
    assert invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False).exit_code == 0
    os.replace(work / "out" / "y.npy", work / "x.npy")
    assert invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False).exit_code == 0
    np.testing.assert_array_equal(np.load(work / "out" / "y.npy").view(ml_dtypes.float8_e5m2),
                                  X.astype(ml_dtypes.float8_e5m2))


# ---- --input ----------------------------------------------------------------------------------
INPUT_CASES = [
    (["--input", "nosuch=x.npy"], 1, "--input names unknown tensor `nosuch`"),
    (["--input", "x=garbage.npy"], 1, "--input file garbage.npy is not a .npy file"),
    (["--input", "x=missing.npy"], 1, "--input file missing.npy not found"),
    (["--input", "x=shape.npy"], 1, "has shape [8, 4], declared [4, 8]"),
    (["--input", "x"], 2, "expected NAME=PATH.npy"),
    (["--input", "=x.npy"], 2, "expected NAME=PATH.npy"),
]


@pytest.mark.parametrize("extra,code,fragment", INPUT_CASES,
                         ids=[" ".join(c[0]) for c in INPUT_CASES])
def test_bad_input_option(work, extra, code, fragment):
    (work / "garbage.npy").write_bytes(b"not numpy")
    np.save(work / "shape.npy", X.reshape(8, 4))
    before = _snapshot(work / "out")
    r = invoke(*["run", "p.yaml", "--out", "out"] + extra, cwd=work, catch_exceptions=False)
    _assert_clean_failure(r, code, fragment, False, before, work)


def test_input_replaces_contents(work):
    np.save(work / "other.npy", -X)
    r = invoke("run", "p.yaml", "--out", "out", "--input", "x=other.npy",
               cwd=work, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(work / "out" / "y.npy"), -X)


# ---- sizes: refused before anything is allocated ---------------------------------------------
SIZE_CASES = [
    ("hbm-1e12", "{buffer: hbm, shape: [1000000, 1000000], dtype: float32}", "E043",
     "over the 4,294,967,296-byte HBM limit"),
    ("hbm-1e12-fill", "{buffer: hbm, shape: [1000000, 1000000], dtype: float32, fill: 0}",
     "E043", "HBM limit"),
    ("hbm-1e12-data", "{buffer: hbm, shape: [1000000, 1000000], dtype: float32, "
     "data: [[1, 2], [3, 4]]}", "E016", "data has shape [2, 2], declared [1000000, 1000000]"),
    ("hbm-1e12-file", "{buffer: hbm, shape: [1000000, 1000000], dtype: float32, file: x.npy}",
     "E043", "HBM limit"),
    ("hbm-absurd", "{buffer: hbm, shape: [99999999999999999999999999999], dtype: int8}", "E043",
     "HBM limit"),
    ("sbuf-1e12", "{buffer: sbuf, shape: [128, 7812500000], dtype: float32, fill: 0}", "E041",
     "bytes per partition; sbuf has 229376"),
    ("sbuf-partitions", "{buffer: sbuf, shape: [1000000, 1000000], dtype: float32}", "E017",
     "at most 128"),
    ("psum-over", "{buffer: psum, shape: [128, 4097], dtype: float32}", "E041", "psum has 16384"),
    ("ragged-data", "{buffer: hbm, shape: [2, 2], dtype: float32, data: [[1, 2], [3]]}", "E016",
     "rectangular"),
    ("nested-ragged-data", "{buffer: hbm, shape: [2, 2], dtype: float32, "
     "data: [[1, 2], [3, [4]]]}", "E016", "rectangular"),
    ("mapping-in-data", "{buffer: hbm, shape: [2, 2], dtype: float32, "
     "data: [[1, 2], [3, {a: 1}]]}", "E016", "rectangular"),
    ("zero-dim", "{buffer: hbm, shape: [4, 0], dtype: float32}", "E012", "positive integers"),
    ("negative-dim", "{buffer: hbm, shape: [-4, 8], dtype: float32}", "E012", "positive"),
]


@pytest.mark.parametrize("case", SIZE_CASES, ids=[c[0] for c in SIZE_CASES])
def test_size_refused_instantly(work, case):
    _, decl, code, fragment = case
    (work / "big.yaml").write_text(f"version: 1\ntensors:\n  big: {decl}\ninstructions: []\n")
    before = _snapshot(work / "out")
    tracemalloc.start()
    try:
        r = invoke("run", "big.yaml", "--out", "out", cwd=work, catch_exceptions=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    _assert_clean_failure(r, 1, fragment, True, before, work)
    assert f"error[{code}]" in r.output
    assert peak < 20 * 2**20, peak  # no tensor-sized allocation


def test_data_list_over_the_yaml_budget(work):
    """A `data:` list that aliases expand past the value budget is refused unexpanded."""
    row = "[" + ", ".join(["1.5"] * 1000) + "]"
    text = (f"version: 1\nrow: &r {row}\nblock: &b [" + ", ".join(["*r"] * 1000) + "]\n"
            "tensors:\n  x: {buffer: hbm, shape: [4, 1000, 1000], dtype: float32, "
            "data: [*b, *b, *b, *b]}\n")
    (work / "big.yaml").write_text(text)
    r = invoke("check", "big.yaml", cwd=work, catch_exceptions=False)
    assert r.exit_code == 1 and "expands to more than 1,000,000 values" in r.output


def test_max_hbm_bytes_flag(work):
    r = invoke("run", "p.yaml", "--out", "out", "--max-hbm-bytes", "64",
               cwd=work, catch_exceptions=False)
    assert r.exit_code == 1 and "over the 64-byte HBM limit" in r.output
    assert "--max-hbm-bytes" in r.output  # the hint names the flag
    r = invoke("run", "p.yaml", "--out", "out", "--max-hbm-bytes", "128",
               cwd=work, catch_exceptions=False)
    assert r.exit_code == 1 and "total 512 bytes" in r.output  # each fits, their sum does not
    r = invoke("run", "p.yaml", "--out", "out", "--max-hbm-bytes", "512",
               cwd=work, catch_exceptions=False)
    assert r.exit_code == 0, r.output  # four 4 x 8 float32 tensors: exactly 512 bytes
    r = invoke("run", "p.yaml", "--out", "out", "--max-hbm-bytes", "0",
               cwd=work, catch_exceptions=False)
    assert r.exit_code == 2


# ---- numbers ------------------------------------------------------------------------------------
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38, -3.4e38, 1e-45] * 4,
                   np.float32).reshape(4, 8)


@pytest.mark.filterwarnings("error")  # any NumPy RuntimeWarning fails the test
def test_nan_inf_flow_through_silently(work):
    np.save(work / "x.npy", SPECIAL)
    r = invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 0 and "Warning" not in r.output, r.output
    got = np.load(work / "out" / "y.npy")
    np.testing.assert_array_equal(got.view(np.uint32), SPECIAL.view(np.uint32))


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("dtype,expect", [
    # RNE then saturation, NaN -> 0 (nkirun/dtypes.py `cast`; NKI 0.6 fp32 -> int rule)
    ("int8", [127, -128, 127, 126, 0, 127, -128, -2]),
    ("uint8", [255, 0, 128, 126, 0, 255, 0, 0]),
    ("int32", [300, -300, 128, 126, 0, 2147483647, -2147483648, -2]),
    ("uint32", [300, 0, 128, 126, 0, 4294967295, 0, 0]),
])
def test_integer_overflow_rule(work, dtype, expect):
    vals = "[300, -300, 127.5, 126.5, .nan, .inf, -.inf, -2.5]"
    (work / "i.yaml").write_text(
        f"version: 1\ntensors:\n  v: {{buffer: hbm, shape: [8], dtype: {dtype}, "
        f"data: {vals}, output: true}}\n")
    r = invoke("run", "i.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(work / "out" / "v.npy"), np.array(expect, dtype))


@pytest.mark.filterwarnings("error")
def test_out_of_range_literals_saturate(work):
    big = "9" * 400  # beyond float64: read like YAML's 1e999, i.e. inf
    (work / "b.yaml").write_text(
        "version: 1\ntensors:\n"
        f"  a: {{buffer: hbm, shape: [2], dtype: float32, data: [{big}, -{big}], output: true}}\n"
        f"  b: {{buffer: hbm, shape: [2], dtype: int16, fill: {big}, output: true}}\n"
        "  c: {buffer: hbm, shape: [2], dtype: bfloat16, data: [1e300, -1e300], output: true}\n")
    r = invoke("run", "b.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(work / "out" / "a.npy"), [np.inf, -np.inf])
    np.testing.assert_array_equal(np.load(work / "out" / "b.npy"), [32767, 32767])
    c = np.load(work / "out" / "c.npy").view(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(c, [np.inf, -np.inf])


@pytest.mark.filterwarnings("error")
def test_division_by_zero_gives_inf_nan(work):
    num = np.array([1, -1, 0, np.nan, np.inf, 2, -0.0, 5] * 4, np.float32).reshape(4, 8)
    den = np.array([0, 0, 0, 0, 0, -0.0, 0, np.inf] * 4, np.float32).reshape(4, 8)
    np.save(work / "n.npy", num)
    np.save(work / "d.npy", den)
    (work / "div.yaml").write_text("""\
version: 1
tensors:
  n: {buffer: sbuf, shape: [4, 8], dtype: float32, file: n.npy}
  d: {buffer: sbuf, shape: [4, 8], dtype: float32, file: d.npy}
  q: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
instructions:
  - tensor_tensor: {dst: q, data1: n, data2: d, op: divide}
""")
    r = invoke("run", "div.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 0 and "Warning" not in r.output, r.output
    with np.errstate(all="ignore"):
        expect = num / den
    np.testing.assert_array_equal(np.load(work / "out" / "q.npy").view(np.uint32),
                                  expect.view(np.uint32))


# ---- outputs: atomic, nothing changes on failure ---------------------------------------------
def test_success_writes_outputs_atomically(work, monkeypatch):
    import nkirun.runner.files as interp
    renames = []
    real = os.replace

    def spy(src, dst):
        renames.append((os.path.realpath(os.path.dirname(src)),
                        os.path.realpath(os.path.dirname(dst))))
        return real(src, dst)

    monkeypatch.setattr(interp.os, "replace", spy)
    r = invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert renames and all(a == b for a, b in renames)  # temp file in the same folder
    np.testing.assert_array_equal(np.load(work / "out" / "y.npy"), X)
    assert sorted(os.listdir(work / "out")) == ["notes.txt", "w.npy", "y.npy"]  # no temp left
    mode = os.stat(work / "out" / "y.npy").st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


def _fail_on_call(n, exc, real):
    calls = {"n": 0}

    def wrapper(*a, **k):
        calls["n"] += 1
        if calls["n"] == n:
            raise exc
        return real(*a, **k)
    return wrapper


@pytest.mark.parametrize("where,exc,code", [
    ("save", OSError(28, "No space left on device"), 1),
    ("save", ValueError("injected bug"), 3),
    ("replace", OSError(5, "Input/output error"), 1),
])
def test_failure_while_writing_second_output(work, monkeypatch, where, exc, code):
    import nkirun.runner.files as interp
    if where == "save":
        monkeypatch.setattr(interp.np, "save", _fail_on_call(2, exc, np.save))
    else:
        monkeypatch.setattr(interp.os, "replace", _fail_on_call(2, exc, os.replace))
    before = _snapshot(work / "out")
    r = invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output
    if code == 1:
        assert "error[E080]" in r.output and "nothing there was changed" in r.output
    else:
        assert "internal error" in r.output
    assert _snapshot(work / "out") == before  # y.npy restored, no temp or backup left


def test_failure_while_writing_into_new_folder(work, monkeypatch):
    import nkirun.runner.files as interp
    monkeypatch.setattr(interp.np, "save", _fail_on_call(2, OSError(28, "disk full"), np.save))
    r = invoke("run", "p.yaml", "--out", "fresh/out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 1 and not (work / "fresh" / "out").exists()


def test_output_path_is_a_folder(work):
    (work / "out" / "w.npy").mkdir()
    before = _snapshot(work / "out")
    r = invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    _assert_clean_failure(r, 1, "out/w.npy is a folder", False, before, work)


def test_out_under_a_file(work):
    (work / "afile").write_text("x")
    r = invoke("run", "p.yaml", "--out", "afile/out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 1 and "error[E080]" in r.output and "Traceback" not in r.output


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root ignores permissions")
def test_read_only_out_folder(work):
    os.chmod(work / "out", 0o555)
    try:
        before = _snapshot(work / "out")
        r = invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False)
        _assert_clean_failure(r, 1, "cannot write outputs", False, before, work)
    finally:
        os.chmod(work / "out", 0o755)


def test_run_time_error_writes_nothing(work):
    """A run-time failure (E090: reading an undefined tile) after a valid check."""
    (work / "rt.yaml").write_text(BASE.replace("DTYPE", "float32").replace(
        "  - load: {dst: t, src: x}\n", "  - load: {dst: 't[:, 0:4]', src: 'x[:, 0:4]'}\n"))
    before = _snapshot(work / "out")
    r = invoke("run", "rt.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    _assert_clean_failure(r, 1, "before anything wrote it", True, before, work)


@pytest.mark.parametrize("name", ["../evil", "a/b", "/tmp/evil", "..", "a.b", "x\\y", "1x",
                                  "a b", "~home"])
def test_output_names_cannot_escape_out(work, name):
    (work / "esc.yaml").write_text(
        f"version: 1\ntensors:\n  '{name}': {{buffer: hbm, shape: [2], dtype: float32, "
        "fill: 1, output: true}\ninstructions: []\n")
    for cmd in (["check", "esc.yaml"], ["run", "esc.yaml", "--out", "out/sub"]):
        r = invoke(*cmd, cwd=work, catch_exceptions=False)
        assert r.exit_code == 1 and "error[E018]" in r.output and LOCATED.search(r.output)
    assert not (work / "evil.npy").exists() and not (work / "out" / "sub").exists()


# ---- internal errors and usage errors -----------------------------------------------------
def _boom(b, m):
    raise ZeroDivisionError("injected")


def test_internal_error_exit_3(work, monkeypatch):
    from nkirun.isa import REGISTRY
    monkeypatch.setitem(REGISTRY, "store", dataclasses.replace(REGISTRY["store"], execute=_boom,
                                                                  plan=None))  # (no plan form)
    before = _snapshot(work / "out")
    r = invoke("run", "p.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 3, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1, r.output
    assert "internal error (a bug in nkirun" in lines[0]
    assert "instruction 2 (store) at p.yaml:12:5" in lines[0]
    assert "ZeroDivisionError: injected" in lines[0] and "--debug" in lines[0]
    assert _snapshot(work / "out") == before


def test_internal_error_traceback_only_with_debug(work):
    script = ("import dataclasses, sys\n"
              "from nkirun.isa import REGISTRY\n"
              "def boom(b, m): raise ZeroDivisionError('injected')\n"
              "REGISTRY['store'] = dataclasses.replace(REGISTRY['store'], execute=boom, plan=None)\n"
              "from nkirun.cli import main\n"
              "sys.argv = ['nkirun'] + sys.argv[1:]\n"
              "main()\n")
    base = [sys.executable, "-c", script, "run", "p.yaml", "--out", "out"]
    p = subprocess.run(base, cwd=work, capture_output=True, text=True, timeout=60, env=TREE_ENV)
    assert p.returncode == 3 and "Traceback" not in p.stderr and "--debug" in p.stderr
    p = subprocess.run(base + ["--debug"], cwd=work, capture_output=True, text=True, timeout=60,
                       env=TREE_ENV)
    assert p.returncode != 0 and "Traceback" in p.stderr and "ZeroDivisionError" in p.stderr


@pytest.mark.parametrize("args", [
    ["run"], ["check"], ["frobnicate", "p.yaml"], ["run", "p.yaml", "--nope"],
    ["check", "p.yaml", "--format", "xml"], ["check", "out"], ["cost", "p.yaml", "--target", "x"],
    ["run", "p.yaml", "--max-hbm-bytes", "lots"],
])
def test_usage_errors_exit_2(work, args):
    before = _snapshot(work / "out")
    r = invoke(*args, cwd=work, catch_exceptions=False)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    assert _snapshot(work / "out") == before


# ---- regressions found by tests/cli/test_fuzz.py ------------------------------------------------
PER_PARTITION = {
    "activation": "{dst: o, op: exp, data: c, bias: s, scale: s, reduce_op: add, "
                  "reduce_res: r, reduce_cmd: reset_reduce}",
    "tensor_scalar": "{dst: o, data: c, op0: multiply, operand0: s, op1: add, operand1: 0.5}",
    "range_select": "{dst: o, on_true_tile: c, comp_op0: greater_equal, comp_op1: less, "
                    "bound0: s, bound1: s, reduce_cmd: reset_reduce, reduce_res: r, "
                    "reduce_op: max, range_start: 0, on_false_value: fp32.min}",
}


@pytest.mark.parametrize("op", sorted(PER_PARTITION))
def test_per_partition_operand_with_unit_free_dims(work, op):
    """A (P, 1, 1) operand where a (P, 1) one is expected computes like (P, 1)."""
    (work / "pp.yaml").write_text(f"""\
version: 1
tensors:
  c: {{buffer: sbuf, shape: [37, 5, 3], dtype: float32, fill: 1}}
  s: {{buffer: sbuf, shape: [37, 1, 1], dtype: float32, fill: 2.0}}
  r: {{buffer: sbuf, shape: [37, 1, 1], dtype: float32, output: true}}
  o: {{buffer: sbuf, shape: [37, 5, 3], dtype: float32, output: true}}
instructions:
  - {op}: {PER_PARTITION[op]}
""")
    if op == "tensor_scalar":
        (work / "pp.yaml").write_text((work / "pp.yaml").read_text().replace(
            "  r: {buffer: sbuf, shape: [37, 1, 1], dtype: float32, output: true}\n", ""))
    r = invoke("run", "pp.yaml", "--out", "out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    o = np.load(work / "out" / "o.npy")
    expect = {"activation": np.exp(np.float32(1) * 2 + 2), "tensor_scalar": 2.5,
              "range_select": np.finfo(np.float32).min}[op]
    np.testing.assert_array_equal(o, np.full((37, 5, 3), expect, np.float32))




@pytest.mark.parametrize("free", [64, 512])
def test_causal_softmax_with_p11_bias(work, free):
    """fuzz_long finding (exit 3 in activation: "non-broadcastable output operand (64,1)
    vs (64,64,64)"): programs/causal_softmax.yaml with negmax declared [128, 1, 1] and used
    through 64-partition views as activation's bias. It must compute like [128, 1]."""
    src = (PROGRAMS / "causal_softmax.yaml").read_text()
    src = src.replace("causal_softmax/scores.npy", "scores.npy")
    results = []
    for negmax in ("[128, 1]", "[128, 1, 1]"):
        text = src.replace("negmax: {buffer: sbuf, shape: [128, 1]", f"negmax: {{buffer: sbuf, "
                           f"shape: {negmax}").replace("512", str(free))
        (work / "cs.yaml").write_text(text)
        scores = np.load(PROGRAMS / "causal_softmax" / "scores.npy")
        np.save(work / "scores.npy", np.ascontiguousarray(scores[:, :free]))
        r = invoke("run", "cs.yaml", "--out", "out", cwd=work, catch_exceptions=False)
        assert r.exit_code == 0, r.output
        results.append(np.load(work / "out" / "probs.npy"))
    assert results[1].shape == (128, free)
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_allclose(results[0].sum(axis=1), 1.0, rtol=1e-5)


def test_nul_in_file_path(work):
    (work / "nul.nkis").write_text("version 1\ntensor x hbm [4, 8] float32 file=a\0b.npy "
                                   "output\n")
    r = invoke("run", "nul.nkis", "--out", "out", cwd=work, catch_exceptions=False)
    assert r.exit_code == 1 and "Traceback" not in r.output and "internal" not in r.output


def test_closed_stdout_is_not_a_bug(work):
    p = subprocess.Popen([sys.executable, "-m", "nkirun", "cost", "p.yaml"], cwd=work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=TREE_ENV)
    p.stdout.close()  # like `nkirun cost p.yaml | head -0`
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 1, err
    assert "internal error" not in err and "Traceback" not in err


def test_mask_over_refused_tensor_allocates_nothing(work):
    """`check` builds mask arrays: never for a tensor the size rules refuse."""
    (work / "mk.yaml").write_text("""\
version: 1
tensors:
  u: {buffer: sbuf, shape: [128000, 128000, 64], dtype: uint8}
  v: {buffer: hbm, shape: [100000, 100000], dtype: uint8, fill: 0, output: true}
instructions:
  - memset: {dst: u, value: 3, mask: "p < 64 and f < 32"}
  - dma_copy: {dst: v, src: v, mask: "p < 64 and f < 32"}
""")
    tracemalloc.start()
    try:
        r = invoke("check", "mk.yaml", cwd=work, catch_exceptions=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r.exit_code == 1 and "error[E017]" in r.output and "error[E043]" in r.output
    assert peak < 20 * 2**20, peak


@pytest.mark.parametrize("text", ["version: 1\nname: " + "[" * 100_000 + "]" * 100_000 + "\n",
                                  "version: 1\nname: " + "{a: " * 2000,
                                  "version: 1\n" + "".join(" " * i + "k:\n" for i in range(1200))],
                         ids=["flow", "unclosed", "block"])
def test_nesting_refusal_is_the_same_with_or_without_libyaml_limit(monkeypatch, text):
    """PyYAML 6.0.4's libyaml stops at its own nesting limit (1000) while scanning ahead,
    with its own message; the pure-Python parser has none. Both give nkirun's E001 at the
    65th level."""
    import yaml

    from nkirun.source import yaml_limits
    from nkirun.source.yaml_front import parse_yaml
    seen = []
    for loader in (yaml_limits.LOADER, yaml.SafeLoader):
        monkeypatch.setattr(yaml_limits, "LOADER", loader)
        _, diags = parse_yaml(text, "p.yaml")
        seen.append([(d.code, d.message, d.loc.line, d.loc.column) for d in diags])
    assert seen[0] == seen[1] and len(seen[0]) == 1
    assert seen[0][0][0] == "E001" and "more than 64 levels deep" in seen[0][0][1]
