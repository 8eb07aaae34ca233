"""Property: whatever a program file contains, `check`, `run` and `cost` end with exit
status 0 or 1, print no Python traceback, raise no NumPy warning, and a failing `run`
leaves its output folder as it was.

Programs are mutations of valid ones (programs/*.yaml, programs/*.nkis and the small
inline ones below): keys dropped or renamed, values replaced by other types, numbers,
shapes, dtypes, indices, operators and tensor names changed, instructions duplicated or
swapped, and the text truncated or salted with garbage. The default run tries a few
hundred (derandomised, so CI is stable); `pytest -m fuzz_long tests/cli/test_fuzz.py` runs
10,000 fresh random ones.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import warnings

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nkirun.cli import cli
from repo_paths import PROGRAMS

MAX_HBM = str(16 * 2**20)  # keeps mutated shapes from allocating gigabytes

INLINE = {
    "elementwise": """\
version: 1
tensors:
  a: {buffer: sbuf, shape: [37, 5, 3], dtype: float32, data: FILL_A}
  b: {buffer: sbuf, shape: [37, 5, 3], dtype: bfloat16, fill: -1.5}
  c: {buffer: sbuf, shape: [37, 5, 3], dtype: float32}
  s: {buffer: sbuf, shape: [37, 1], dtype: float32, fill: 2.0}
  r: {buffer: sbuf, shape: [37, 1], dtype: float32}
  o: {buffer: hbm, shape: [37, 5, 3], dtype: float8_e4m3, output: true}
  ro: {buffer: hbm, shape: [37, 1], dtype: float32, output: true}
instructions:
  - tensor_tensor: {dst: c, data1: a, data2: b, op: divide}
  - tensor_scalar: {dst: c, data: c, op0: multiply, operand0: s, op1: add, operand1: 0.5}
  - activation: {dst: c, op: exp, data: c, bias: s, scale: 1.0, reduce_op: add,
                 reduce_res: r, reduce_cmd: reset_reduce}
  - tensor_reduce: {dst: r, op: max, data: c, axis: [1, 2], negate: true}
  - tensor_copy: {dst: c, src: c, engine: scalar}
  - store: {dst: o, src: c}
  - store: {dst: ro, src: r}
""".replace("FILL_A", str([[[float(p - f - k) for k in range(3)] for f in range(5)]
                           for p in range(37)])),
    "ints": """\
version: 1
tensors:
  i: {buffer: sbuf, shape: [128, 64], dtype: int32}
  u: {buffer: sbuf, shape: [128, 64], dtype: uint8}
  m: {buffer: sbuf, shape: [128, 64], dtype: float32, fill: 3}
  o: {buffer: hbm, shape: [128, 64], dtype: int16, output: true}
instructions:
  - iota: {dst: i, pattern: [[1, 64]], offset: -5, channel_multiplier: 64}
  - memset: {dst: u, value: 7}
  - memset: {dst: u, value: 300, mask: "p < 64 and f < 32"}
  - tensor_tensor: {dst: i, data1: i, data2: u, op: add}
  - affine_select: {dst: m, on_true_tile: m, pattern: [[-1, 64]], offset: 10,
                    channel_multiplier: 1, cmp_op: greater_equal, on_false_value: fp32.min}
  - tensor_tensor: {dst: i, data1: i, data2: m, op: maximum}
  - dma_copy: {dst: o, src: i}
""",
    "select": """\
version: 1
tensors:
  t: {buffer: sbuf, shape: [16, 24], dtype: float32, fill: 1.25}
  k: {buffer: sbuf, shape: [16, 24], dtype: uint8, fill: 1}
  r: {buffer: sbuf, shape: [16, 24], dtype: float32}
  m: {buffer: sbuf, shape: [16, 1], dtype: float32}
  top: {buffer: sbuf, shape: [16, 8], dtype: float32}
  idx: {buffer: sbuf, shape: [16, 8], dtype: uint32}
  tr: {buffer: sbuf, shape: [24, 16], dtype: float32}
  sc: {buffer: sbuf, shape: [16, 24], dtype: float32}
  o: {buffer: hbm, shape: [16, 8], dtype: uint32, output: true}
  ot: {buffer: hbm, shape: [24, 16], dtype: float32, output: true}
  os: {buffer: hbm, shape: [16, 24], dtype: float32, output: true}
  om: {buffer: hbm, shape: [16, 1], dtype: float32, output: true}
instructions:
  - select_reduce: {dst: r, predicate: k, on_true: t, on_false: fp32.min,
                    reduce_cmd: reset_reduce, reduce_res: m, reduce_op: max}
  - max8: {dst: top, src: r}
  - nc_find_index8: {dst: idx, data: r, vals: top}
  - nc_transpose: {dst: tr, data: r}
  - tensor_tensor_scan: {dst: sc, data0: t, data1: r, initial: 0, op0: multiply, op1: add}
  - store: {dst: o, src: idx}
  - store: {dst: ot, src: tr}
  - store: {dst: os, src: sc}
  - store: {dst: om, src: m}
""",
}


def _seeds():
    seeds = []
    for p in sorted(PROGRAMS.glob("*.yaml")) + sorted(PROGRAMS.glob("*.nkis")):
        seeds.append((p.name, p.read_text()))
    seeds += [(f"{k}.yaml", v) for k, v in INLINE.items()]
    return seeds


SEEDS = _seeds()


def _vocabulary():
    """Every string in the seeds (names, views, ops, dtypes, keys), plus nearby wrong ones."""
    words = set()

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                words.add(str(k))
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str):
            words.add(v)

    for name, text in SEEDS:
        if name.endswith(".yaml"):
            walk(yaml.safe_load(text))
    words |= {"", " ", "nan", "-inf", "fp32.min", "np.max", "sbuf", "psum", "hbm", "float64",
              "int64", "bool", "t[", "t[:, :, :, :, :]", "t[-1:]", "t[::0]", "t[::-1]",
              "t[0:0]", "t[5]", "t[:, 100000]", "t[..., 0]", "x[:, 0:3:2]", "p < 5", "f >= 2",
              "p < 64 and", "x + 1", "__import__('os')", "../x.npy", "/dev/null", "a.npy",
              "idle", "reduce", "reset", "gpsimd", "vector", "tensor", "dst", "src", "data"}
    return sorted(words)


VOCAB = _vocabulary()

SCALARS = st.one_of(
    st.sampled_from([0, 1, -1, 2, 7, 8, 127, 128, 129, 255, 256, 512, 513, 2**16, 2**24 + 1,
                     2**31, -2**31 - 1, 2**32, 2**63, 10**12, 10**400, -(10**400)]),
    st.integers(-10**6, 10**6),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from(VOCAB),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(st.integers(-3, 600), max_size=5),
    st.lists(st.lists(st.integers(-2, 600), min_size=2, max_size=2), max_size=3),
    st.dictionaries(st.sampled_from(VOCAB), SCALARS, max_size=2),
)
TOKENS = [": ", "- ", "{", "}", "[", "]", ",", "&a ", "*a", "!!python/object:os.system ",
          "!!str ", "\t", "\n", "'", '"', "#", "%", "@", "`", "|", ">", "? ", "---\n",
          "\x00", "\ufeff", "\u2028", "=", "[:, 0:1]", " nan", "\\"]


def _locations(doc):
    """(container, key) for every value in the document."""
    out, stack = [], [doc]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node))
        for k in keys:
            out.append((node, k))
            if isinstance(node[k], (dict, list)):
                stack.append(node[k])
    return out


def _tweak(draw, v):
    """A nearby value of the same kind: the mutations most likely to pass the parser."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return draw(st.sampled_from([v + 1, v - 1, -v, v * 2, v // 2, 0, v + 128, v * 1000]))
    if isinstance(v, float):
        return draw(st.sampled_from([-v, v * 1e30, float("nan"), float("inf"), 0.0, -0.0]))
    if isinstance(v, str):
        nums = list(re.finditer(r"\d+", v))
        if nums and draw(st.booleans()):
            m = draw(st.sampled_from(nums))
            new = str(draw(st.sampled_from([0, 1, 2, 7, 63, 64, 127, 128, 129, 511, 512, 513,
                                            4096, 10**9])))
            return v[:m.start()] + new + v[m.end():]
        return draw(st.sampled_from([v + "[0:1]", v + "[:, 1]", v[:-1], v.upper(), "np." + v,
                                     v + "x", v.split("[")[0]]))
    if isinstance(v, list):
        if v and draw(st.booleans()):
            return v + [draw(st.sampled_from(v))]
        return v[:-1] if v else [1]
    if isinstance(v, dict):
        return {k: x for i, (k, x) in enumerate(v.items()) if i % 2 == 0}
    return draw(VALUES)


def _mutate(draw, doc):
    locs = _locations(doc)
    if not locs:
        return draw(VALUES)
    parent, key = locs[draw(st.integers(0, len(locs) - 1))]
    op = draw(st.sampled_from(["replace", "tweak", "tweak", "drop", "rename", "dup", "swap"]))
    if op == "replace":
        parent[key] = draw(VALUES)
    elif op == "tweak":
        parent[key] = _tweak(draw, parent[key])
    elif op == "drop":
        del parent[key]
    elif op == "rename" and isinstance(parent, dict):
        new = draw(st.one_of(st.sampled_from(VOCAB), st.text(max_size=6)))
        parent[new] = parent.pop(key)
    elif op == "dup" and isinstance(parent, list):
        parent.insert(draw(st.integers(0, len(parent))), parent[key])
    elif op == "swap" and isinstance(parent, list) and len(parent) > 1:
        j = draw(st.integers(0, len(parent) - 1))
        parent[key], parent[j] = parent[j], parent[key]
    else:
        parent[key] = _tweak(draw, parent[key])
    return doc


def _mutate_text(draw, data: bytes) -> bytes:
    pos = draw(st.integers(0, len(data)))
    op = draw(st.sampled_from(["truncate", "insert", "insert", "delete", "dupline", "byte"]))
    if op == "truncate":
        return data[:pos]
    if op == "insert":
        tok = draw(st.one_of(st.sampled_from(TOKENS), st.text(max_size=5)))
        return data[:pos] + tok.encode("utf-8", "surrogatepass") + data[pos:]
    if op == "delete":
        return data[:pos] + data[pos + draw(st.integers(1, 40)):]
    if op == "dupline":
        lines = data.split(b"\n")
        i = draw(st.integers(0, len(lines) - 1))
        return b"\n".join(lines[:i + 1] + lines[i:])
    return data[:pos] + bytes([draw(st.integers(0, 255))]) + data[pos + 1:]


@st.composite
def programs(draw):
    name, text = draw(st.sampled_from(SEEDS))
    if name.endswith(".yaml") and draw(st.integers(0, 9)) < 8:
        doc = yaml.safe_load(text)
        for _ in range(draw(st.integers(1, 4))):
            doc = _mutate(draw, doc)
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True,
                              default_flow_style=draw(st.sampled_from([None, False, True])),
                              width=draw(st.sampled_from([80, 10**6])))
    data = text.encode("utf-8", "surrogatepass")
    if not name.endswith(".yaml") or draw(st.integers(0, 3)) == 0:
        for _ in range(draw(st.integers(1, 3))):
            data = _mutate_text(draw, data)
    return pathlib.Path(name).suffix, data


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    """A copy of programs/ (their data files resolve relative to the program)."""
    root = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(PROGRAMS, root / "programs")
    return root / "programs"


def _listing(folder):
    if not folder.exists():
        return None
    return sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir())


def _exercise(arena, program):
    suffix, data = program
    path = arena / f"fuzz{suffix}"
    path.write_bytes(data)
    out = arena / "fuzz_out"
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(arena)
    try:
        checked = None   # check's exit status: cost must agree, run too when it is 1
        for args in (["check", path.name], ["cost", path.name, "--format", "json"],
                     ["run", path.name, "--out", out.name, "--max-hbm-bytes", MAX_HBM]):
            before = _listing(out)
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a NumPy RuntimeWarning becomes exit 3
                r = runner.invoke(cli, args, catch_exceptions=False)
            shown = f"{args[0]} exit {r.exit_code}:\n{r.output}\n--- program:\n" + \
                data.decode("utf-8", "replace")
            assert "Traceback" not in r.output, shown
            if checked is None:
                assert r.exit_code in (0, 1), shown   # the program is valid or it is not
                checked = r.exit_code
            elif args[0] == "cost" or checked == 1:
                assert r.exit_code == checked, shown
            else:   # a valid program's run succeeds or fails at run time (exit 1)
                assert r.exit_code in (0, 1), shown
            if r.exit_code == 1:   # a failure says what, with a stable code
                assert re.search(r"error\[E\d{3}\]", r.output), shown
            if args[0] == "run" and r.exit_code == 1:
                assert _listing(out) == before, "a failing run changed --out\n" + shown
    finally:
        os.chdir(old)


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(program=programs())
def test_mutated_programs_never_crash(arena, program):
    _exercise(arena, program)


@pytest.mark.fuzz_long
@settings(max_examples=10_000, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(program=programs())
def test_mutated_programs_never_crash_long(arena, program):
    _exercise(arena, program)


def test_seeds_are_valid(arena):
    """The unmutated seeds pass all three commands (so mutations start from valid input)."""
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(arena)
    try:
        for name, text in SEEDS:
            path = arena / f"seed_{name}"
            path.write_text(text)
            for args in (["check", path.name], ["run", path.name, "--out", "seed_out"]):
                r = runner.invoke(cli, args, catch_exceptions=False)
                assert r.exit_code == 0, f"{name} {args[0]}:\n{r.output}"
    finally:
        os.chdir(old)
