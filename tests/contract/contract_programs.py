"""Programs the contract tests start from: the contract's own example, small templates
(`one` tensor copied out, `base` instructions on a (4, 8) tile, a range_select program) and
the seed-page baselines that test_seed_rules.py edits one keyword at a time."""
from __future__ import annotations

import json
import textwrap

import numpy as np
from prog_helpers import invoke, write_yaml

# The contract's whole-program example, verbatim.
CONTRACT_EXAMPLE = """\
version: 1                 # required; the format version
name: rowmax_in_window     # optional
target: trn2               # optional: trn1 | trn2 | trn3 | inf2 (default trn2); sets memory sizes and clocks
tensors:                   # every named buffer; one namespace
  x:     {buffer: hbm,  shape: [128, 512], dtype: float32, file: x.npy}
  lo:    {buffer: hbm,  shape: [128, 1],   dtype: float32, file: lo.npy}
  hi:    {buffer: hbm,  shape: [128, 1],   dtype: float32, file: hi.npy}
  y:     {buffer: hbm,  shape: [128, 512], dtype: float32, output: true}
  ymax:  {buffer: hbm,  shape: [128, 1],   dtype: float32, output: true}
  t:     {buffer: sbuf, shape: [128, 512], dtype: float32}
  b0:    {buffer: sbuf, shape: [128, 1],   dtype: float32}
  b1:    {buffer: sbuf, shape: [128, 1],   dtype: float32}
  r:     {buffer: sbuf, shape: [128, 512], dtype: float32}
  m:     {buffer: sbuf, shape: [128, 1],   dtype: float32}
instructions:
  - load: {dst: t,  src: x}
  - load: {dst: b0, src: lo}
  - load: {dst: b1, src: hi}
  - range_select:
      dst: r
      on_true_tile: t
      comp_op0: greater_equal
      comp_op1: less
      bound0: b0
      bound1: b1
      reduce_cmd: reset_reduce
      reduce_res: m
      reduce_op: max
      range_start: 0
      on_false_value: fp32.min
  - store: {dst: y,    src: r}
  - store: {dst: ymax, src: m}
"""


def example_data(folder):
    """The contract example's inputs x, lo, hi (NaN, a row of -inf, empty windows), saved
    into `folder` as .npy."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 512)).astype(np.float32)
    x[3, 7] = np.nan
    x[5, :] = -np.inf
    lo = rng.integers(-4, 520, (128, 1)).astype(np.float32)
    hi = (lo + rng.integers(-2, 300, (128, 1))).astype(np.float32)
    hi[::9] = lo[::9]  # empty windows: a full row of fp32.min, whose max is fp32.min
    folder.mkdir(parents=True, exist_ok=True)
    for k, a in {"x": x, "lo": lo, "hi": hi}.items():
        np.save(folder / f"{k}.npy", a)
    return x, lo, hi


def cost_json(path, *extra) -> dict:
    """`nkirun cost PATH --format json` (exit status 0), parsed."""
    r = invoke("cost", path, "--format", "json", *extra)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


SEL = """\
version: 1
tensors:
  t:  {buffer: sbuf, shape: [@P@, @N@], dtype: @DT@, file: t.npy}
  b0: {buffer: sbuf, shape: [@P@, 1], dtype: float32, file: b0.npy}
  b1: {buffer: sbuf, shape: [@P@, 1], dtype: float32, file: b1.npy}
  r:  {buffer: sbuf, shape: [@P@, @N@], dtype: @ODT@, output: true}
  m:  {buffer: sbuf, shape: [@P@, 1], dtype: float32, output: true}
instructions:
  - range_select: {dst: r, on_true_tile: t, comp_op0: @OP0@, comp_op1: @OP1@, bound0: b0,
                   bound1: b1, reduce_cmd: reset_reduce, reduce_res: m, reduce_op: @ROP@,
                   range_start: @RS@, on_false_value: fp32.min}
"""


def range_select_prog(folder, x, lo, hi, *, odt=None, op0="greater_equal", op1="less",
                      rop="max", rs=0, dt="float32"):
    text = SEL
    for k, v in {"P": x.shape[0], "N": x.shape[1], "ODT": odt or dt, "DT": dt, "OP0": op0,
                 "OP1": op1, "ROP": rop, "RS": rs}.items():
        text = text.replace(f"@{k}@", str(v))
    return write_yaml(folder, text, t=x, b0=lo, b1=hi)


# ==== Tensors ===================================================================================
ONE = """\
version: 1
tensors:
  {decl}
  y: {{buffer: hbm, shape: {shape}, dtype: {odt}, output: true}}
instructions:
  - {copy}: {{dst: y, src: t}}
"""


def one(folder, decl: str, shape="[4, 3]", odt="float32", **arrays) -> str:
    """A program copying tensor `t` (declared by `decl`) to the HBM output `y`."""
    copy = "dma_copy" if "hbm" in decl else "store"
    return write_yaml(folder, ONE.format(decl=decl, shape=shape, odt=odt, copy=copy), **arrays)


BASE = """\
version: 1
tensors:
  x: {buffer: sbuf, shape: [4, 8], dtype: float32, file: x.npy}
  y: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
instructions:
"""
X48 = np.arange(32, dtype=np.float32).reshape(4, 8) - 10.5


def base(folder, instructions: str, extra_tensors: str = "", **arrays) -> str:
    text = BASE.replace("instructions:\n", textwrap.indent(textwrap.dedent(extra_tensors), "  ")
                        + "instructions:\n") + textwrap.indent(textwrap.dedent(instructions),
                                                               "  ")
    arrays.setdefault("x", X48)
    return write_yaml(folder, text, **arrays)


def copy_prog(folder):
    """`base` copying a random (4, 8) x to y; returns (path, x)."""
    x = np.random.default_rng(11).standard_normal((4, 8)).astype(np.float32)
    return base(folder, "- tensor_copy: {dst: y, src: x}", x=x), x


def special_floats(rng, shape):
    """float32 values about N(0, 16), a tenth of them NaN, +-inf or +-0.0."""
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    f = x.reshape(-1)
    k = max(1, f.size // 10)
    at = rng.choice(f.size, k, replace=False)
    f[at] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], np.float32), k)
    return x


# ---- the seed pages' baselines (test_seed_rules.py) -----------------------------------------
SEEDS = """\
version: 1
tensors:
  t:   {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}
  t3:  {buffer: sbuf, shape: [3, 8], dtype: float32, fill: 1}
  tb:  {buffer: sbuf, shape: [4, 8], dtype: bfloat16, fill: 1}
  ti:  {buffer: sbuf, shape: [4, 8], dtype: int32, fill: 1}
  tu:  {buffer: sbuf, shape: [4, 8], dtype: uint32, fill: 1}
  tf:  {buffer: sbuf, shape: [4, 8], dtype: tfloat32, fill: 1}
  tp:  {buffer: psum, shape: [4, 8], dtype: float32, fill: 1}
  th:  {buffer: hbm,  shape: [4, 8], dtype: float32, fill: 1}
  r:   {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
  r9:  {buffer: sbuf, shape: [4, 9], dtype: float32, output: true}
  rp:  {buffer: psum, shape: [4, 8], dtype: float32, output: true}
  c:   {buffer: sbuf, shape: [4, 1], dtype: float32, fill: 0}
  c2:  {buffer: sbuf, shape: [4, 2], dtype: float32, fill: 0}
  c3:  {buffer: sbuf, shape: [3, 1], dtype: float32, fill: 0}
  cb:  {buffer: sbuf, shape: [4, 1], dtype: bfloat16, fill: 0}
  ci:  {buffer: sbuf, shape: [4, 1], dtype: int32, fill: 0}
  m:   {buffer: sbuf, shape: [4, 1], dtype: float32, output: true}
  mi:  {buffer: sbuf, shape: [4, 1], dtype: int32, output: true}
  m2:  {buffer: sbuf, shape: [4, 2], dtype: float32, output: true}
  m3:  {buffer: sbuf, shape: [3, 1], dtype: float32, output: true}
  p:   {buffer: sbuf, shape: [4, 8], dtype: uint8, fill: 1}
  pp:  {buffer: psum, shape: [4, 8], dtype: uint8, fill: 1}
  pf:  {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}
  pi:  {buffer: sbuf, shape: [4, 8], dtype: int32, fill: 1}
  p3:  {buffer: sbuf, shape: [3, 8], dtype: uint8, fill: 1}
  p9:  {buffer: sbuf, shape: [4, 9], dtype: uint8, fill: 1}
  v:   {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}
  v7:  {buffer: sbuf, shape: [4, 7], dtype: float32, fill: 1}
  v3d: {buffer: sbuf, shape: [4, 2, 2, 2], dtype: float32, fill: 1}
  d6:  {buffer: sbuf, shape: [4, 1, 1, 1, 2, 4], dtype: float32, fill: 1}
  big: {buffer: sbuf, shape: [4, 16385], dtype: float32, fill: 1}
  idx: {buffer: sbuf, shape: [4, 8], dtype: uint32, output: true}
  idxf: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
  idx7: {buffer: sbuf, shape: [4, 7], dtype: uint32, output: true}
  v8:  {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}
  i8:  {buffer: sbuf, shape: [4, 8], dtype: uint32, output: true}
instructions:
  - INSTR
"""

# A seed instruction: (name, {keyword: value as YAML source text}). Tests change one
# keyword with edit() and write it as one flow-mapping line, so a diagnostic's column can be
# compared with the keyword's place on that line.
RS = ("range_select", dict(dst="r", on_true_tile="t", comp_op0="greater_equal", comp_op1="less",
                           bound0="c", bound1="c", reduce_cmd="reset_reduce", reduce_res="m",
                           reduce_op="max", range_start="0", on_false_value="fp32.min"))
SR = ("select_reduce", dict(dst="r", predicate="p", on_true="t", on_false="fp32.min",
                            reduce_res="m", reduce_cmd="reset_reduce", reduce_op="max"))
AS = ("affine_select", dict(dst="r", pattern="[[1, 8]]", offset="0", channel_multiplier="1",
                            on_true_tile="t", on_false_value="fp32.min", cmp_op="greater_equal"))
MR = ("nc_match_replace8", dict(dst="r", data="t", vals="v8", imm="0.0", dst_idx="i8"))
TS = ("tensor_tensor_scan", dict(dst="r", data0="t", data1="v", initial="0.0", op0="multiply",
                                 op1="add"))


def edit(instr, **changes):
    """`instr` with some keywords given new values (YAML source text)."""
    name, operands = instr
    return name, {**operands, **changes}


def flow(instr) -> str:
    """`name: {k: v, ...}`: the instruction as one line of YAML."""
    name, operands = instr
    return f"{name}: {{{', '.join(f'{k}: {v}' for k, v in operands.items())}}}"


def seed_prog(folder, instr) -> str:
    """The SEEDS tensors and the one instruction `instr`."""
    return write_yaml(folder, SEEDS.replace("INSTR", flow(instr)))
