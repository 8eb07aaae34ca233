"""The one set of helpers for tests that build a program, check it and run it.

From dicts (through nkirun.api):
    path = write_program(tmp_path, {"x": sbuf(arr), "y": out((P, N), "float32")},
                         [{"range_select": {...}}])
    outs = nkirun.api.run(path)
From YAML text, through the command line as a user would (click's CliRunner):
    path = write_yaml(tmp_path, TEXT, x=arr)       # arrays saved as x.npy beside it
    outs = run_ok(path, tmp_path / "out")          # `nkirun run`, exit status 0
Invalid programs, one way: reported_at(path, code, key=... | line=... | text=..., column=...).
"""
from __future__ import annotations

import itertools
import json
import os
import pathlib
import textwrap

import ml_dtypes
import numpy as np
import yaml

from nkirun.api import check_program, run

NP_TYPES = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
            "float8_e4m3": ml_dtypes.float8_e4m3, "float8_e5m2": ml_dtypes.float8_e5m2,
            "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
            "int32": np.int32, "uint32": np.uint32}   # one name per NumPy type
FP32_MIN = np.float32(np.finfo(np.float32).min)
FP32_MAX = np.float32(np.finfo(np.float32).max)
_counter = itertools.count()


def sbuf(array, dtype: str | None = None, buffer: str = "sbuf", output: bool = False) -> dict:
    """A tensor initialised from `array` (saved as .npy next to the program)."""
    array = np.asarray(array)
    if dtype is not None:
        array = array.astype(NP_TYPES[dtype])
    return {"buffer": buffer, "array": array, "output": output}


def out(shape, dtype: str, buffer: str = "sbuf") -> dict:
    """An undefined tensor marked `output: true`."""
    return {"buffer": buffer, "shape": list(shape), "dtype": dtype, "output": True}


def tmp(shape, dtype: str, buffer: str = "sbuf") -> dict:
    return {"buffer": buffer, "shape": list(shape), "dtype": dtype}


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def write_program(tmp_path, tensors: dict, instructions: list, name: str | None = None,
                  files: bool = True, target: str | None = None) -> str:
    """Write a version-1 YAML program (and its .npy inputs) into a fresh folder of tmp_path.

    files=False: tensors given as arrays are declared `fill: 0` instead (the caller passes
    the arrays as run inputs, see run_inputs). target: the program's `target:` (default:
    none, i.e. trn2).
    """
    folder = pathlib.Path(tmp_path) / (name or f"prog{next(_counter)}")
    folder.mkdir(parents=True, exist_ok=True)
    decls = {}
    for tname, spec in tensors.items():
        spec = dict(spec)
        arr = spec.pop("array", None)
        if arr is not None:
            dtype = next(k for k, t in NP_TYPES.items() if np.dtype(t) == arr.dtype)
            spec.update(shape=list(arr.shape), dtype=dtype)
            if files:
                np.save(folder / f"{tname}.npy", arr)
                spec["file"] = f"{tname}.npy"
            else:
                spec["fill"] = 0
        if not spec.get("output"):
            spec.pop("output", None)
        decls[tname] = spec
    doc = {"version": 1, **({"target": target} if target else {}), "tensors": decls,
           "instructions": _plain(instructions)}
    path = folder / "program.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
    return str(path)


PROGRAMS = pathlib.Path(__file__).resolve().parent.parent / "programs"


def run_example_cli(name: str, out_dir) -> pathlib.Path:
    """`nkirun check --format json` programs/<name>.yaml (it must report nothing), then
    `nkirun run` it into out_dir; returns the program's data folder programs/<name>/."""
    from click.testing import CliRunner

    from nkirun.cli import cli
    prog = PROGRAMS / f"{name}.yaml"
    r = CliRunner().invoke(cli, ["check", str(prog), "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.output)["diagnostics"] == [], r.output
    r = CliRunner().invoke(cli, ["run", str(prog), "--out", str(out_dir)])
    assert r.exit_code == 0, r.output
    return PROGRAMS / name


def run_cli(program, out_dir, program_format: str | None = None) -> dict[str, np.ndarray]:
    """`nkirun run PROGRAM --out out_dir [--program-format F]` through click's CliRunner;
    returns every .npy it wrote, in its declared dtype (bfloat16/fp8 load back as raw bytes)."""
    from click.testing import CliRunner

    from nkirun.cli import cli
    out_dir = pathlib.Path(out_dir)
    fmt = ["--program-format", program_format] if program_format else []
    r = CliRunner().invoke(cli, ["run", str(program), "--out", str(out_dir), *fmt])
    assert r.exit_code == 0, r.output
    declared = check_program(str(program), program_format).program.tensors
    return {f.stem: load_npy(f, NP_TYPES[declared[f.stem].dtype.name])
            for f in sorted(out_dir.glob("*.npy"))}


def run_program(tmp_path, tensors: dict, instructions: list) -> dict[str, np.ndarray]:
    return run(write_program(tmp_path, tensors, instructions))


def run_inputs(tmp_path, tensors: dict, instructions: list):
    """Run with the arrays passed as run inputs (no .npy files); returns (outputs, the
    run-time warnings of Machine.warnings), which run_program does not give."""
    inputs = {n: spec["array"] for n, spec in tensors.items() if spec.get("array") is not None}
    machines = []
    outs = run(write_program(tmp_path, tensors, instructions, files=False), inputs=inputs,
               after_each=lambda b, m: machines.append(m))
    return outs, (machines[-1].warnings if machines else [])


def diagnostics(tmp_path, tensors: dict, instructions: list):
    return check_program(write_program(tmp_path, tensors, instructions)).diagnostics


def codes(diags) -> list[str]:
    return [d.code for d in diags]


ANY = object()   # reported_at(instruction=ANY): any instruction index, or none


def reported_at(path, code: str, key: str | None = None, *, line: int | None = None,
                text: str | None = None, occurrence: int = 0, column=None, instruction=ANY,
                only: bool = False, program_format: str | None = None):
    """THE way to assert "`check` reports `code` at line:col" (every test uses this).

    The line is given as a number (`line`), as the line of keyword `key` (its first token,
    block YAML; see key_line) or as the line containing `text` (both: the `occurrence`-th);
    with none of them the diagnostic must still have a line and a column. `column`: the
    column, or a collection of the columns allowed. `instruction`: its index (None: not in an
    instruction). `only`: no other diagnostic at all. The command line must agree:
    `nkirun check --format json` lists the same diagnostic and exits 1 exactly when there is
    an error. Returns (the diagnostic, every diagnostic of the API's check).
    """
    diags = check_program(str(path), program_format).diagnostics
    if key is not None:
        line = key_line(path, key, occurrence)
    elif text is not None:
        line = line_of(path, text, occurrence)
    hits = [d for d in diags if d.code == code and
            (d.loc.line >= 1 if line is None else d.loc.line == line) and
            (d.loc.column >= 1 if column is None else
             d.loc.column in (column if isinstance(column, (set, frozenset, list, tuple))
                              else (column,))) and
            (instruction is ANY or d.instruction == instruction)]
    where = f"line {line}" + (f" column {column}" if column is not None else "")
    assert hits, (f"expected {code} at {where}" + ("" if instruction is ANY else
                  f" in instruction {instruction}") + ", got " +
                  ", ".join(f"{d.code} at {d.loc.line}:{d.loc.column} (instruction "
                            f"{d.instruction}): {d.message}" for d in diags))
    assert hits[0].message and hits[0].is_error == code.startswith("E"), hits[0]
    if only:
        assert codes(diags) == [code], codes(diags)
    fmt = ["--program-format", program_format] if program_format else []
    status, doc = check_json(path, *fmt)
    assert status == (1 if any(d.is_error for d in diags) else 0), (status, doc)
    assert any(j["code"] == code and j["line"] == hits[0].loc.line and
               j["column"] == hits[0].loc.column for j in doc["diagnostics"]), doc
    return hits[0], diags


def key_line(path: str, instruction_key: str, occurrence: int = 0) -> int:
    """1-based line of the `occurrence`-th line whose first token is `instruction_key:`."""
    hits = [i + 1 for i, ln in enumerate(pathlib.Path(path).read_text().splitlines())
            if ln.strip().lstrip("- ").startswith(f"{instruction_key}:")]
    return hits[occurrence]


def assert_bits_equal(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype, shape and bit pattern (NaN payloads and -0.0 included)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    u = np.dtype(f"u{got.dtype.itemsize}")
    g, w = np.ascontiguousarray(got).view(u), np.ascontiguousarray(want).view(u)
    if not np.array_equal(g, w):
        bad = np.argwhere(g != w)[0]
        raise AssertionError(f"first difference at {tuple(bad)}: got {got[tuple(bad)]!r}, "
                             f"want {want[tuple(bad)]!r} ({(g != w).sum()} elements differ)")


def random_floats(rng, shape, special: bool = True) -> np.ndarray:
    """float32 values in about [-8, 8], with some NaN/+inf/-inf/-0.0 when `special`."""
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    if special and x.size >= 8:
        flat = x.reshape(-1)
        idx = rng.choice(flat.size, size=max(4, flat.size // 16), replace=False)
        flat[idx] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0], np.float32),
                               size=idx.size)
    return x


def load_npy(path, dtype=None) -> np.ndarray:
    """np.load, restoring an ml_dtypes type (bfloat16/fp8 load back as raw |V2/|V1)."""
    a = np.load(path, allow_pickle=False)
    if dtype is not None and a.dtype.kind == "V":
        a = a.view(np.dtype(dtype))
    return a


# ---- programs written as YAML text, used through the command line ---------------------------
def write_yaml(folder, text: str, name: str = "prog.yaml", **arrays) -> str:
    """Write program `text` (dedented) and each array as <key>.npy into `folder`; return the
    program's path."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for k, a in arrays.items():
        np.save(folder / f"{k}.npy", a)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def invoke(*args, cwd=None, **kw):
    """Run the `nkirun` command line in-process (optionally from another working folder);
    `kw` go to CliRunner.invoke (catch_exceptions=False, color=True, ...)."""
    from click.testing import CliRunner

    from nkirun.cli import cli
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, [str(a) for a in args], **kw)
    finally:
        os.chdir(old)


def run_ok(path, out_dir, *extra) -> dict[str, np.ndarray]:
    """`nkirun run PATH --out out_dir *extra` must exit 0; returns every .npy written, as
    np.load gives it (bfloat16/fp8 come back as raw bytes: see as_type)."""
    r = invoke("run", path, "--out", out_dir, *extra)
    assert r.exit_code == 0, r.output + r.stderr
    return {p.stem: np.load(p) for p in pathlib.Path(out_dir).glob("*.npy")}


def as_type(a: np.ndarray, dtype: str) -> np.ndarray:
    """A loaded .npy as `dtype` (ml_dtypes types come back from np.load as raw |V2/|V1)."""
    t = np.dtype(np.float32 if dtype == "tfloat32" else NP_TYPES[dtype])   # tf32 is stored as fp32
    return a if a.dtype == t else a.view(t)


def check_json(path, *extra) -> tuple[int, dict]:
    """`nkirun check PATH --format json`: (exit status, the parsed report)."""
    r = invoke("check", path, "--format", "json", *extra)
    return r.exit_code, json.loads(r.stdout)


def errors_of(path) -> list[dict]:
    """The errors `nkirun check --format json` reports (exit status 1 exactly when any)."""
    status, doc = check_json(path)
    errs = [d for d in doc["diagnostics"] if d["severity"] == "error"]
    assert status == (1 if errs else 0), (status, doc)
    return errs


def line_of(path, needle: str, occurrence: int = 0) -> int:
    """1-based number of the `occurrence`-th line containing `needle`."""
    hits = [i + 1 for i, ln in enumerate(pathlib.Path(path).read_text().splitlines())
            if needle in ln]
    return hits[occurrence]


def assert_no_traceback(r, exit_code: int) -> None:
    """A CliRunner result ended with exactly `exit_code` and printed no Python traceback."""
    assert r.exit_code == exit_code, (r.exit_code, r.output, r.stderr)
    assert "Traceback" not in r.output and "Traceback" not in (r.stderr or "")
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception


def run_spec_example(tmp_path, name: str, tensors: dict, target: str | None = None):
    """Run the instruction's `explain` example (REGISTRY[name].example, verbatim) over the
    given tensors: `check` must report nothing, and `run` must succeed; returns the outputs."""
    from nkirun.isa import REGISTRY
    entries = yaml.safe_load(REGISTRY[name].example)
    path = write_program(tmp_path, tensors, entries if isinstance(entries, list) else [entries],
                         target=target)
    diags = check_program(path).diagnostics
    assert diags == [], [d.one_line() for d in diags]
    return run(path)
