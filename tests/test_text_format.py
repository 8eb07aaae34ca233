"""The text program format (docs/text-format.md) and `nkirun convert` (issue 9).

Round trips over every example program, the value grammar, located diagnostics for bad
lines (the same as YAML's for equivalent mistakes), and a mutation fuzz: no line may
ever produce a traceback or an unlocated error.
"""
from __future__ import annotations

import math
import pathlib
import random
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from nkirun import api
from nkirun.cli import cli
from nkirun.ir import View
from nkirun.source import parse_file
from nkirun.source.text_front import parse_text, plain, tokens
from nkirun.source.yaml_front import parse_yaml
from nkirun.source.write import float_text, to_text, to_yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROGRAMS = sorted((ROOT / "programs").glob("*.yaml"))


def norm(v):
    """A comparable form of an IR value (bit-exact for floats, locations dropped)."""
    if isinstance(v, View):
        return ("view", v.tensor, v.index)
    if isinstance(v, float):
        return ("float", v.hex())
    if isinstance(v, np.ndarray):
        return ("array", str(v.dtype), v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(norm(x) for x in v))
    return (type(v).__name__, v)


def ir(p):
    return (p.version, p.target, p.name,
            [(n, t.buffer, t.shape, t.dtype.name, t.init, norm(t.init_value), t.output)
             for n, t in p.tensors.items()],
            [(i.op, i.index, sorted((k, norm(v)) for k, v in i.args.items()))
             for i in p.instructions])


def parse(text: str, fmt: str, path="prog"):
    return (parse_text if fmt == "text" else parse_yaml)(text, path, ".")


HEADER = """version 1
# the same line numbers as YAML_HEADER below
tensor x hbm  [128, 512] float32 fill=1.5
tensor y hbm  [128, 512] float32 output
tensor t sbuf [128, 512] float32
tensor b sbuf [128, 1] float32 fill=0
# instructions
"""


def check_text(tmp_path, text: str, name="p.nkis"):
    path = tmp_path / name
    path.write_text(text)
    return api.check_program(str(path))


# ---- round trips -----------------------------------------------------------------------------
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_convert_round_trip_is_lossless(path):
    """YAML -> text -> YAML (through the CLI) gives the same IR."""
    original, diags = parse_file(str(path))
    assert original is not None and not any(d.is_error for d in diags)
    r = CliRunner().invoke(cli, ["convert", str(path), "--to", "text"])
    assert r.exit_code == 0, r.output
    as_text, d1 = parse_text(r.output, str(path), original.base_dir)
    assert d1 == []
    back, d2 = parse_yaml(to_yaml(as_text), str(path), original.base_dir)
    assert d2 == []
    assert ir(original) == ir(as_text) == ir(back)
    assert to_text(back) == r.output  # the writers are deterministic


def test_example_text_program_is_the_yaml_twin(tmp_path):
    y = ROOT / "programs" / "rowmax_in_window.yaml"
    t = ROOT / "programs" / "rowmax_in_window.nkis"
    py, _ = parse_file(str(y))
    pt, d = parse_file(str(t))
    assert d == [] and ir(py) == ir(pt)
    out_y = api.run(str(y))
    out_t = api.run(str(t))
    assert out_y.keys() == out_t.keys() == {"y", "ymax"}
    for k in out_y:
        np.testing.assert_array_equal(out_y[k].view(np.uint32), out_t[k].view(np.uint32))


def test_convert_cli_output_file_and_paths(tmp_path):
    src = ROOT / "programs" / "rowmax_in_window.yaml"
    here = tmp_path / "rowmax.nkis"
    r = CliRunner().invoke(cli, ["convert", str(src), "--to", "text", "-o", str(here)])
    assert r.exit_code == 0 and r.output == ""
    # data paths were rewritten relative to the new folder: the copy runs as is
    out = api.run(str(here))
    np.testing.assert_array_equal(out["y"], api.run(str(src))["y"])
    # text -> YAML with --program-format for an unusual suffix
    odd = tmp_path / "prog.trace"
    shutil.copy(here, odd)
    r = CliRunner().invoke(cli, ["convert", str(odd), "--to", "yaml", "--program-format",
                                 "text"])
    assert r.exit_code == 0 and r.output.startswith("version: 1\n")


def test_convert_refuses_an_invalid_program(tmp_path):
    bad = tmp_path / "bad.nkis"
    bad.write_text(HEADER + "lod dst=t src=x\n")
    r = CliRunner().invoke(cli, ["convert", str(bad), "--to", "yaml"])
    assert r.exit_code == 1
    assert "Traceback" not in r.output and "E021" in r.output and ":8:1" in r.output


def test_floats_strings_and_data_round_trip_bit_exactly():
    values = [0.1, 1e-30, -0.0, 1e20, 3.4028234663852886e38, -3.4028234663852886e38,
              float("inf"), float("-inf"), 5e-324, 123456789.0, 2.5]
    for v in values:
        for fmt in ("text", "yaml"):
            src = (f"version 1\ntensor a sbuf [2, 1] float32 fill={float_text(v)}\n"
                   if fmt == "text" else
                   f"version: 1\ntensors:\n  a: {{buffer: sbuf, shape: [2, 1], dtype: float32,"
                   f" fill: {float_text(v)}}}\n")
            p, d = parse(src, fmt)
            assert d == [] and norm(p.tensors["a"].init_value) == norm(v), (fmt, v)
    data = "[[1, -0.0, inf], [-inf, 0.5, 1e-7]]"
    p, d = parse("version 1\nname \"my kernel \\\"v2\\\"\"\n"
                 f"tensor a sbuf [2, 3] float32 data={data}\n"
                 "tensor b sbuf [2, 3] float32\n"
                 'memset dst=b value=nan mask="p < 1 and f >= 1"\n', "text")
    assert d == [] and p.name == 'my kernel "v2"'
    for writer, fmt in ((to_text, "text"), (to_yaml, "yaml")):
        q, d = parse(writer(p), fmt)
        assert d == [] and ir(q) == ir(p), writer(p)
    assert math.isnan(p.instructions[0].args["value"])


# ---- the grammar -----------------------------------------------------------------------------
@pytest.mark.parametrize("word,value", [
    ("12", 12), ("-3", -3), ("+4", 4), ("1.5", 1.5), ("1e3", 1000.0), ("-2.5e-3", -0.0025),
    ("true", True), ("false", False), ("null", None), ("fp32.min", "fp32.min"),
    ("-inf", "-inf"), ("nan", "nan"), ("greater_equal", "greater_equal"),
    ("t[:, 0:512]", "t[:, 0:512]"), ("1.2.3", "1.2.3")])
def test_plain_words_read_like_yaml_scalars(word, value):
    got = plain(word)
    assert got == value and type(got) is type(value)


def test_tokens_keep_columns_and_respect_brackets_quotes_comments():
    line = 'op dst=c[:, 0 : 512] mask="p < 64 and f # x" pattern=[[-1, 512], [1, 2]] a=b#c  # end'
    got = tokens(line)
    assert [(c, k, t) for c, k, _, t in got] == [
        (0, None, "op"), (3, "dst", "c[:, 0 : 512]"), (21, "mask", '"p < 64 and f # x"'),
        (45, "pattern", "[[-1, 512], [1, 2]]"), (73, "a", "b#c")]
    assert all(line[c:].startswith(k or t) for c, k, _, t in got)


def test_fast_and_careful_paths_agree(tmp_path):
    """A trailing comment sends every line through the careful scanner: same IR, same
    locations."""
    body = ("load dst=t[:, 0:256] src=x[0:128, 0:256]\n"
            "range_select dst=t on_true_tile=t comp_op0=greater_equal comp_op1=less "
            "bound0=b bound1=b reduce_cmd=reset_reduce range_start=-4 on_false_value=fp32.min\n"
            "store dst=y src=t\n")
    fast, d1 = parse(HEADER + body, "text")
    slow, d2 = parse(HEADER + body.replace("\n", "   # comment\n"), "text")
    assert d1 == d2 == [] and ir(fast) == ir(slow)
    for a, b in zip(fast.instructions, slow.instructions):
        assert a.loc == b.loc and a.arg_locs == b.arg_locs


def test_aliases_and_spacing():
    p, d = parse("version 1\n\ttensor x  hbm [4 ,8] fp32 fill=0\ntensor t sbuf [4, 8] "
                 "float32\n  nisa.memset   dst=t\tvalue=-inf   engine=gpsimd\n", "text")
    assert d == []
    i = p.instructions[0]
    assert i.op == "memset" and i.args["value"] == -math.inf and i.arg_locs["value"].column == 23


# ---- diagnostics -----------------------------------------------------------------------------
BAD_LINES = [  # (line, code, column of the culprit, a word of the message)
    ("foo dst=t src=x", "E021", 1, "unknown instruction"),
    ("lod dst=t src=x", "E021", 1, "load"),
    ("load dst=t sr=x", "E022", 12, "unknown keyword"),
    ("load dst=t src=x dst=t", "E001", 18, "duplicate key `dst`"),
    ("load dst t", "E020", 6, "key=value"),
    ("load dst= src=x", "E020", 6, "no value"),
    ("load dst =t src=x", "E020", 6, "key=value"),
    ("load dst=t =x", "E020", 12, "key=value"),
    ("load dst=t 1a=x", "E020", 12, "key=value"),
    ("load dst=t[:, 0:4 src=x", "E001", 11, "unclosed"),
    ("load dst=t src=x]", "E001", 17, "unmatched"),
    ('load dst=t src="x', "E001", 16, "unterminated"),
    ('load dst=t src="x"y', "E001", 19, "after the closing quote"),
    ('memset dst=t value="a\\q"', "E001", 22, "escape"),
    ("memset dst=t value=[1, 2", "E001", 20, "unclosed"),
    ("memset dst=t value=[1,, 2]", "E001", 23, "list element"),
    ("memset dst=t value=abc", "E024", 14, "must be a number"),
    ("memset dst=t", "E023", 1, "missing required"),
    ("dst=t src=x", "E020", 1, "directive or an instruction"),
    ("[1] dst=t", "E020", 1, "directive or an instruction"),
    ("load dst=q src=x", "E026", 6, "unknown tensor"),
    ("load dst=t[0:2, ::-1] src=x", "E032", 6, "step"),
    ("load dst=t[0:4, 1:2:3:4] src=x", "E034", 6, "bad index"),
    ("tensor u sbuf [128, 512]", "E005", 8, "dtype"),
    ("tensor u sbuf [128, 512] float32 bogus", "E010", 34, "unexpected"),
    ("tensor u sbuf [128, 512] float32 fil=1", "E010", 34, "fill"),
    ("tensor u sbuf [128, 512] float32 fill=1 fill=2", "E001", 41, "duplicate"),
    ("tensor u sbuf [0, 512] float32", "E012", 15, "positive"),
    ("tensor u sbuf [2, 2] float32 data=[[1, 2]]", "E016", 35, "shape"),
    ("tensor 9u sbuf [2] float32", "E018", 8, "name"),
    ("tensor", "E005", 1, "needs a name"),
    ("verison 1", "E003", 1, "did you mean `version`"),
    ("version 1", "E003", 1, "duplicate"),
    ("target trn9", "E007", 8, "unknown target"),
    ("name", "E001", 1, "needs one value"),
    ("name a b", "E001", 8, "unexpected"),
]


@pytest.mark.parametrize("line,code,col,word", BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_bad_line_gives_a_located_diagnostic(tmp_path, line, code, col, word):
    text = HEADER + "load dst=t src=x\n" + line + "\nstore dst=y src=t\n"
    c = check_text(tmp_path, text)
    ln = HEADER.count("\n") + 2
    hits = [d for d in c.diagnostics if d.code == code and d.loc.line == ln]
    assert hits, [d.one_line() for d in c.diagnostics]
    assert hits[0].loc.column == col, hits[0].one_line()
    assert word in hits[0].message + (hits[0].hint or ""), hits[0]
    r = CliRunner().invoke(cli, ["check", str(tmp_path / "p.nkis")])
    assert r.exit_code == 1 and "Traceback" not in r.output


def test_empty_and_versionless_programs(tmp_path):
    c = check_text(tmp_path, "# nothing\n\n")
    assert [d.code for d in c.diagnostics] == ["E002"]
    c = check_text(tmp_path, "tensor t sbuf [1, 1] float32 fill=0\n")
    assert [d.code for d in c.errors] == ["E004"]


# The same mistakes in both formats: same code, message, hint and instruction index, and
# the location of the same token in each file.
EQUIVALENT = [  # (YAML entry, text line, {code: the token its location points at})
    ("- lod: {dst: t, src: x}", "lod dst=t src=x", {"E021": "lod"}),
    ("- load: {dst: t, sr: x}", "load dst=t sr=x", {"E022": "sr"}),  # one typo: one error
    ("- load: {dst: t, foo: x}", "load dst=t foo=x", {"E022": "foo", "E023": "load"}),
    ("- memset: {dst: t, value: abc}", "memset dst=t value=abc", {"E024": "value"}),
    ("- memset: {dst: t}", "memset dst=t", {"E023": "memset"}),
    ("- load: {dst: q, src: x}", "load dst=q src=x", {"E026": "dst"}),
    ("- load: {dst: t, src: x, dst: t}", "load dst=t src=x dst=t", {"E001": "dst"}),
    ("- range_select: {dst: t, on_true_tile: t, comp_op0: gt, comp_op1: less, bound0: b, "
     "bound1: b}",
     "range_select dst=t on_true_tile=t comp_op0=gt comp_op1=less bound0=b bound1=b",
     {"E025": "comp_op0"}),
    ("- range_select: {dst: t, on_true_tile: t, comp_op0: less, comp_op1: less, bound0: t, "
     "bound1: b}",
     "range_select dst=t on_true_tile=t comp_op0=less comp_op1=less bound0=t bound1=b",
     {"E061": "bound0"}),
    ("- range_select: {dst: t, on_true_tile: t, comp_op0: less, comp_op1: less, bound0: b, "
     "bound1: b, on_false_value: 0}",
     "range_select dst=t on_true_tile=t comp_op0=less comp_op1=less bound0=b bound1=b "
     "on_false_value=0", {"E101": "on_false_value"}),
]
YAML_HEADER = """version: 1
tensors:
  x: {buffer: hbm, shape: [128, 512], dtype: float32, fill: 1.5}
  y: {buffer: hbm, shape: [128, 512], dtype: float32, output: true}
  t: {buffer: sbuf, shape: [128, 512], dtype: float32}
  b: {buffer: sbuf, shape: [128, 1], dtype: float32, fill: 0}
instructions:
"""


@pytest.mark.parametrize("yaml_line,text_line,tokens_at", EQUIVALENT,
                         ids=[e[1] for e in EQUIVALENT])
def test_same_diagnostics_in_both_formats(tmp_path, yaml_line, text_line, tokens_at):
    cy = check_text(tmp_path, YAML_HEADER + "  - load: {dst: t, src: x}\n  " + yaml_line
                    + "\n  - store: {dst: y, src: t}\n", "p.yaml")
    ct = check_text(tmp_path, HEADER + "load dst=t src=x\n" + text_line + "\nstore dst=y src=t\n")
    key = lambda d: (d.code, d.message, d.hint, d.instruction, d.loc.line)  # noqa: E731
    assert [key(d) for d in cy.diagnostics] == [key(d) for d in ct.diagnostics]
    assert {d.code for d in ct.errors} == set(tokens_at)
    for c in (cy, ct):
        for d in c.errors:
            src = c.program.source_lines[d.loc.line - 1]
            assert src[d.loc.column - 1:].startswith(tokens_at[d.code]), (d.one_line(), src)


def test_mutated_lines_never_crash(tmp_path):
    """Random edits of a valid program: every outcome is diagnostics with a line number."""
    rng = random.Random(9)
    base = (HEADER + "load dst=t[:, 0:256] src=x[:, 0:256]\n"
            'memset dst=t value=fp32.min mask="p < 64 and f < 256"\n'
            "range_select dst=t on_true_tile=t comp_op0=greater_equal comp_op1=less "
            "bound0=b bound1=b range_start=0\nstore dst=y src=t\n")
    alphabet = ' =[]"\'#,:-.x0\t\\'
    for _ in range(300):
        chars = list(base)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(chars))
            op = rng.random()
            if op < 0.4:
                del chars[i]
            elif op < 0.8:
                chars.insert(i, rng.choice(alphabet))
            else:
                chars[i] = rng.choice(alphabet)
        text = "".join(chars)
        program, diags = parse_text(text, "m.nkis", str(tmp_path))
        for d in diags:
            assert d.loc.line > 0 or d.code in ("E004",), (d.one_line(), text)
        if program is not None:
            from nkirun.checker.passes import validate
            validate(program)
