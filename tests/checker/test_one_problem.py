"""One problem, one diagnostic (issue 12): a typo'd keyword is one did-you-mean error, no
"written but never read" (W051) or "read before written" (E050) for a tensor whose reader
or writer was dropped by an error, did-you-mean for operator and enum values."""
from __future__ import annotations

import pytest

from nkirun.api import check_program

HEAD = """version: 1
tensors:
  x: {buffer: hbm, shape: [128, 512], dtype: float32, fill: 1}
  lo: {buffer: sbuf, shape: [128, 1], dtype: float32, fill: 0}
  hi: {buffer: sbuf, shape: [128, 1], dtype: float32, fill: 9}
  t: {buffer: sbuf, shape: [128, 512], dtype: float32}
  r: {buffer: sbuf, shape: [128, 512], dtype: float32}
  %s
instructions:
  - load: {dst: t, src: x}
  - range_select: {dst: r, %s, comp_op0: %s, comp_op1: less, bound0: lo, bound1: hi,
                   on_false_value: fp32.min}
  - store: {dst: %s, src: "%s"}
"""


def check(tmp_path, on_true="on_true_tile: t", op="greater_equal", store_dst="y",
          store_src="r", y="y: {buffer: hbm, shape: [128, 512], dtype: float32, output: true}"):
    path = tmp_path / "p.yaml"
    path.write_text(HEAD % (y, on_true, op, store_dst, store_src))
    return check_program(str(path)).diagnostics


def test_the_base_program_is_clean(tmp_path):
    assert check(tmp_path) == []


def test_keyword_typo_is_one_did_you_mean_error(tmp_path):
    [d] = check(tmp_path, on_true="on_true: t")
    assert d.code == "E022" and d.hint == "did you mean `on_true_tile`?"


def test_unknown_keyword_that_is_no_typo_still_reports_the_missing_one(tmp_path):
    ds = check(tmp_path, on_true="zzz: t")
    assert sorted(d.code for d in ds) == ["E022", "E023"]


@pytest.mark.parametrize("kw,code", [
    ({"store_src": "r[:, 0:600]"}, "E031"),  # view out of bounds: the store is dropped
    ({"store_src": "rr"}, "E026"),  # undeclared tensor (did you mean r?)
    ({"y": "y: {buffer: hbm, shape: [128, 512], dtype: float32, outptu: true}"}, "E010"),
    ({"on_true": "on_true_tile: x"}, "E040"),  # compute on an HBM tensor
])
def test_no_knock_on_w051_for_a_dropped_reader(tmp_path, kw, code):
    ds = check(tmp_path, **kw)
    assert [d.code for d in ds if d.code != "W051" or "`r`" in d.message] == [code], \
        [(d.code, d.message) for d in ds]


def test_no_knock_on_e050_for_a_dropped_writer(tmp_path):
    # the load into t fails (unknown keyword), so t looks never written: not a second error
    path = tmp_path / "p.yaml"
    path.write_text((HEAD % ("y: {buffer: hbm, shape: [128, 512], dtype: float32, output: true}",
                             "on_true_tile: t", "greater_equal", "y", "r"))
                    .replace("- load: {dst: t, src: x}", "- load: {dst: t, src: x, engin: dma}"))
    assert [d.code for d in check_program(str(path)).diagnostics] == ["E022"]


def test_w051_still_reported_for_an_unrelated_tensor(tmp_path):
    path = tmp_path / "p.yaml"
    decls = ("y: {buffer: hbm, shape: [128, 512], dtype: float32, output: true}\n"
             "  w: {buffer: sbuf, shape: [128, 512], dtype: float32}")
    path.write_text((HEAD % (decls,
                             "on_true_tile: t", "greater_equal", "y", "r[:, 0:600]"))
                    .replace("  - load: {dst: t, src: x}",
                             "  - load: {dst: t, src: x}\n  - load: {dst: w, src: x}"))
    codes = [(d.code, d.message.split("`")[1] if d.code == "W051" else "")
             for d in check_program(str(path)).diagnostics]
    assert sorted(codes) == [("E031", ""), ("W051", "w")]


@pytest.mark.parametrize("op,guess", [("lesss", "less"), ("np.greater_equall", "greater_equal"),
                                      ("nl.equl", "equal")])
def test_operator_did_you_mean(tmp_path, op, guess):
    [d] = check(tmp_path, op=op)
    assert d.code == "E025" and d.hint.startswith(f"did you mean `{guess}`? allowed: ")


def test_enum_did_you_mean(tmp_path):
    [d] = check(tmp_path, on_true="on_true_tile: t, reduce_cmd: reset_reduc")
    assert d.code == "E025" and d.hint.startswith("did you mean `reset_reduce`?")


def test_identical_diagnostics_are_grouped_in_text_but_not_in_json(tmp_path):
    import json

    from click.testing import CliRunner

    from nkirun.cli import cli
    body = "".join("  - tensor_copy: {dst: s, src: x}\n" for _ in range(48))  # E040 x48
    path = tmp_path / "p.yaml"
    path.write_text("version: 1\ntensors:\n"
                    "  x: {buffer: hbm, shape: [4, 4], dtype: float32, fill: 1}\n"
                    "  s: {buffer: sbuf, shape: [4, 4], dtype: float32, output: true}\n"
                    "instructions:\n" + body)
    r = CliRunner().invoke(cli, ["check", str(path)])
    assert r.exit_code == 1
    assert r.output.count("error[E040]") == 1
    assert "... and 47 more like this at lines 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, ..." \
        in r.output
    assert "48 errors" in r.output
    r = CliRunner().invoke(cli, ["check", str(path), "--format", "json"])
    assert [d["line"] for d in json.loads(r.output)["diagnostics"]] == list(range(6, 54))
