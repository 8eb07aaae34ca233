"""The diagnostic codes: one table, installed with nkirun (issue 12, "Self-contained docs").

`nkirun explain E040` reads it; docs/diagnostics.md is generated from it
(`python -m nkirun.codes --write`; tests/test_docs.py fails when the two differ). A new
code gets its row here, then the page is regenerated.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    code: str
    section: str
    meaning: str
    instruction: str | None = None

    @property
    def severity(self) -> str:
        return "warning" if self.code.startswith("W") else "error"


INTRO = """\
Every problem `nkirun check` (and `run`, which checks first) reports has a stable code.
`E` codes are errors (exit status 1, nothing runs); `W` codes are warnings (exit 0).
Each code has a program in `tests/invalid/` that triggers it (run-time and data-file codes
are exercised by `tests/test_robustness.py` / `tests/test_workflow.py`).
"""

# (section title, text under the title, rows: (code, instruction or None, meaning))
SECTIONS: tuple = (
    ('Program file and structure', '', (
        ('E000', None,
         'the program file is missing or unreadable'),
        ('E001', None,
         'not valid YAML / text-format syntax (text: unterminated string, unclosed `[`, a directive without its value; see docs/text-format.md), a key given twice, not UTF-8, a YAML tag (e.g. `!!python/object`), alias bombs, nesting too deep; a binary file (an `.npy`, a zip, NUL bytes) given as a program: "not a program (binary data)"'),
        ('E002', None,
         'the program is empty, or not a mapping'),
        ('E003', None,
         'unknown or duplicate top-level key (allowed: version, name, target, tensors, instructions); text: a repeated or misspelt directive line'),
        ('E004', None,
         'missing or unsupported `version` (only `1`)'),
        ('E005', None,
         'a tensor lacks `buffer`, `shape` or `dtype`'),
        ('E006', None,
         'a value of the wrong type (`tensors` not a mapping, `output` not a boolean, ...)'),
        ('E007', None,
         'unknown target (allowed: trn1, trn2, inf2, trn3)'),
    )),
    ('Tensor declarations', '', (
        ('E010', None,
         'unknown tensor key (allowed: buffer, shape, dtype, file, fill, data, output)'),
        ('E011', None,
         'unknown buffer (allowed: hbm, sbuf, psum)'),
        ('E012', None,
         'shape is not a non-empty list of positive integers'),
        ('E013', None,
         'unknown dtype (the twelve NKI dtypes, the MX types `float8_e4m3fn_x4`, `float8_e5m2_x4`, `float4_e2m1fn_x4`, `float8_e8m0fnu`, and their `nl` short forms)'),
        ('E014', None,
         'a tensor is declared twice'),
        ('E015', None,
         'more than one of `file`, `fill`, `data`'),
        ('E016', None,
         '`data` is not a rectangular list of numbers of the declared shape'),
        ('E017', None,
         'an SBUF/PSUM partition dimension over 128'),
        ('E018', None,
         'a tensor name that is not an identifier (names become output file names)'),
        ('E019', None,
         '`fill` is not a number'),
    )),
    ('Instruction entries and keywords', '', (
        ('E020', None,
         'an instruction entry is not a mapping with exactly one key (text: a line that does not start with a name, or a token that is not `key=value`)'),
        ('E021', None,
         'unknown instruction (with a did-you-mean)'),
        ('E022', None,
         'unknown keyword for that instruction (with a did-you-mean)'),
        ('E023', None,
         'a required keyword is missing'),
        ('E024', None,
         "a keyword's value has the wrong type (e.g. a number where a tensor view is required)"),
        ('E025', None,
         'an operator or enum value that is unknown or not allowed for that keyword (with a did-you-mean and the allowed values)'),
        ('E026', None,
         'an operand names an undeclared tensor'),
    )),
    ('Views', '', (
        ('E030', None,
         'more indices than the tensor has dimensions'),
        ('E031', None,
         'an index or slice out of bounds, or selecting no element'),
        ('E032', None,
         'a slice step that is zero or negative'),
        ('E033', None,
         'the partition index of an on-chip view is an integer (it must be a slice)'),
        ('E034', None,
         'a view that does not parse (allowed: ints, `start:stop[:step]`, `:`)'),
    )),
    ('Memory and buffers', '', (
        ('E040', None,
         'an operand is in a buffer the instruction does not allow (e.g. compute on HBM)'),
        ('E041', None,
         'SBUF/PSUM capacity exceeded: one tensor, or the live tensors at the peak instruction'),
        ('W042', None,
         'a PSUM tensor larger than one 2 KiB bank per partition'),
        ('E043', None,
         'an HBM tensor, or all HBM tensors together, over the size limit (`--max-hbm-bytes`, default 4 GiB)'),
        ('E044', None,
         'a GpSimd instruction touches PSUM (GpSimd cannot access PSUM)'),
        ('E045', None,
         'a `mask` that does not parse, names an unknown index, or divides by zero (`//`, `%`)'),
        ('W046', None,
         'a `mask` that selects no element: the instruction does nothing (docs/masks.md)'),
    )),
    ('Dataflow and accumulators', '', (
        ('E050', None,
         'an operand reads a tensor that has no initial contents and nothing wrote before'),
        ('W051', None,
         'a tensor is written but never read afterwards and is not an output'),
        ('W053', None,
         'an `nc_matmul` accumulates (accumulate true, or unset over elements that hold data) onto PSUM that a non-matmul instruction (memset, tensor_copy, ...) or the declared initial contents wrote: undefined on NeuronCore-v2/v3, i.e. trn1, inf2 and trn2 ([nc_matmul, "Accumulation mode"](https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.nc_matmul.html)); tracked per PSUM element'),
        ('W054', None,
         'a matmul result is overwritten (`accumulate: false`, another Tensor-engine write, or any other instruction) before anything read it'),
        ('W055', None,
         "an `nc_matmul` with `accumulate` unset lands on a matmul result that was already read, so NKI's auto-detect adds onto it: a PSUM tile reused for the next output block needs `accumulate: false` on that block's first matmul (`accumulate: true` silences it when adding on is meant)"),
        ('W052', None,
         '`reduce_cmd: reduce` on an accumulator that was never reset or was left undefined by an `idle` op (also reported at run time); the Vector accumulator (range_select, select_reduce, exponential, tensor_scalar_reduce, tensor_scalar_cumulative; `reset_reduce` and `load_reduce` define it) and the Scalar one (activation, activation_reduce, activate2; `idle` leaves it alone) are tracked separately, and the message names the engine'),
    )),
    ('Generic operand rules', '', (
        ('E060', None,
         "an operand's dtype is not allowed for that keyword"),
        ('E061', None,
         'an operand must be a `(P, 1)` tile (one element per partition)'),
        ('E062', None,
         "operands' partition counts differ"),
        ('E063', None,
         'operands that must have the same shape (partitions and elements per partition) differ'),
    )),
    ('Data files, outputs and run time', '', (
        ('E070', None,
         'a `.npy` file (`file:` or `--input`) not found'),
        ('E071', None,
         'a `.npy` file holds Python objects (never unpickled)'),
        ('E072', None,
         'a file that is not a valid `.npy` (truncated, `.npz`, ...)'),
        ('E073', None,
         'a `.npy` dtype differs from the declaration (a data file, `--input` or an API input path; an API input *array* of another numeric dtype is cast instead, and a golden `--expect` file in another dtype is compared in float64); an input array that is not numeric'),
        ('E074', None,
         'a `.npy` or input array shape differs from the declaration (a 0-d input array fills the tensor)'),
        ('E075', None,
         '`--input` (API: `inputs`) names an unknown tensor; located at the program file'),
        ('E080', None,
         'the output folder or files cannot be written (nothing is changed); located at the program file'),
        ('E090', None,
         'an instruction reads an element that nothing wrote (run time, exact element; the hint names the row slice when the written rows are one block); `run --uninitialized nan\\|zero` reads such elements as NaN / 0 instead'),
        ('E091', None,
         'out of memory while executing'),
        ('E092', None,
         'an output tensor was not fully written'),
    )),
    ('Instructions', "Each instruction's own rules live in its module (`nkirun/isa/<name>.py`); `nkirun explain OP`\nlists them.", (
        ('E101', 'range_select',
         '`on_false_value` is not FP32_MIN (a hardware constraint)'),
        ('E102', 'range_select',
         '`range_start` + free size leaves the exact fp32 integer range (±2^24)'),
        ('W103', 'range_select',
         'a bf16/fp16/fp8 `reduce_res` with a bf16/fp16/fp8 output: a fully unselected row gives -inf and a later `x - max` NaN'),
        ('E110', 'select_reduce',
         '`on_true` and `predicate` are both in PSUM (at most one may be)'),
        ('E111', 'select_reduce',
         'a scalar `on_false` that is not a float32 value (magnitude over FP32_MAX)'),
        ('E120', 'affine_select',
         '`pattern` has more than 4 `[step, num]` pairs'),
        ('E121', 'affine_select',
         'a `num` in `pattern` below 1'),
        ('E122', 'affine_select',
         "the pattern's element count (product of the nums) differs from `dst`'s elements per partition"),
        ('E123', 'affine_select',
         '`offset`, `channel_multiplier` or a generated affine value outside int32'),
        ('E124', 'affine_select',
         '`on_false_value` is not a float32 value'),
        ('E130', 'nc_match_replace8',
         '`vals` does not hold exactly 8 elements per partition'),
        ('E131', 'nc_match_replace8',
         '`data` has more than 16,384 elements per partition'),
        ('E132', 'nc_match_replace8',
         '`data` has more than 5 dims'),
        ('E133', 'nc_match_replace8',
         '`vals` has more than 3 dims'),
        ('E134', 'nc_match_replace8',
         "`dst` does not have `data`'s shape"),
        ('E135', 'nc_match_replace8',
         '`dst_idx` does not hold one element per value of `vals` (8 per partition)'),
        ('W136', 'nc_match_replace8',
         'run time: a value of `vals` is not in its partition of `data` (undefined on hardware; nkirun leaves data alone, index 0)'),
        ('W137', 'nc_match_replace8',
         "run time: a partition's `vals` hold duplicates (nkirun: successive occurrences in vals order, as the original nki.isa.nc_match_replace8 page describes; NKI 0.6 documents reverse order)"),
        ('W138', 'nc_match_replace8',
         "`dst_idx`'s integer dtype cannot hold every index of `data` (they saturate)"),
        ('E139', 'nc_match_replace8',
         '`imm` is not a float32 value (beyond +-3.4028235e38; the page: a float32 constant)'),
        ('E140', 'tensor_tensor_scan',
         '`data0` and `data1` are both in PSUM (at most one may be)'),
        ('E141', 'tensor_tensor_scan',
         '`data0` and `data1` differ in partitions or elements per partition'),
        ('E142', 'tensor_tensor_scan',
         '`dst` differs from `data0` in partitions or elements per partition'),
        ('E143', 'tensor_tensor_scan',
         'a scalar `initial` is not a float32 value (beyond +-3.4028235e38; the page: a float32 constant)'),
        ('E150', 'max8',
         '`src` does not have 8..16,384 elements per partition'),
        ('E151', 'max8',
         '`src` has more than 5 dims'),
        ('E152', 'max8',
         '`dst` does not hold 8 elements per partition'),
        ('E153', 'max8',
         'the `mask` leaves a partition with 1..7 elements of `src` (it needs 8)'),
        ('E160', 'iota',
         '`pattern` has more than 4 `[step, num]` pairs'),
        ('E161', 'iota',
         'a `num` in `pattern` below 1'),
        ('E162', 'iota',
         "the pattern's element count differs from `dst`'s elements per partition"),
        ('E163', 'iota',
         '`offset`, `channel_multiplier` or a generated value outside int32'),
        ('E170', 'memset',
         "`shape` (NKI's `memset(shape=...)`) does not match `dst`'s partitions and elements per partition"),
        ('E200', 'activation',
         'a scalar `bias` on trn1/inf2 (NeuronCore-v2 needs a `(P, 1)` tile)'),
        ('E201', 'activation',
         '`op: reciprocal` with a `bias` on trn1/inf2'),
        ('W202', 'activation, activation_reduce, activate2',
         "run time: an input (data*scale + bias; activate2: (data op0 imm0) op1 imm1) outside the function's valid range (hardware output invalid there; nkirun computes the exact function)"),
        ('E210', 'tensor_tensor',
         '`data1` and `data2` are both in PSUM (at most one may be)'),
        ('E211', 'tensor_tensor',
         '`power` with `engine: vector` (power runs only on GpSimd)'),
        ('E212', 'tensor_tensor',
         'a bitwise operator with a float operand or dst'),
        ('W213', 'tensor_tensor',
         '`divide`: not a hardware ALU instruction at the NKI level (the NKI ALU operator list has no divide); nkirun still computes an exact float32 division'),
        ('E220', 'tensor_scalar',
         '`op0` and `op1` of different classes (bitwise vs arithmetic)'),
        ('E221', 'tensor_scalar',
         '`op1` without `operand1`, or `operand1` without `op1`'),
        ('E222', 'tensor_scalar',
         'a unary operator (abs, rsqrt, reciprocal, invert, logical_not) whose operand is not 0'),
        ('E223', 'tensor_scalar',
         '`engine: scalar` on trn1/inf2, or with an op pair other than (multiply, add), (multiply), (add)'),
        ('E224', 'tensor_scalar',
         '`engine: gpsimd` for anything but a single rsqrt'),
        ('E225', 'tensor_scalar',
         '`rsqrt` with `engine: vector` (not a Vector-engine operator)'),
        ('E226', 'tensor_scalar',
         "a bitwise operator with float data/dst/operand tile, or a scalar operand that is not an integer of data's dtype"),
        ('E227', 'tensor_scalar',
         'an arithmetic operator with an operand tile that is not float32 (the new API requires float32 operands: nki.isa.tensor_scalar documentation)'),
        ('W228', 'tensor_scalar',
         '`divide`: not a hardware ALU instruction at the NKI level (the NKI ALU operator list has no divide); nkirun still computes an exact float32 division'),
        ('E230', 'tensor_reduce',
         '`axis` includes the partition axis 0'),
        ('E231', 'tensor_reduce',
         '`axis` out of range, repeated, or not the last free axes'),
        ('E232', 'tensor_reduce',
         '`dst` does not hold the reduced shape (partitions and elements per partition)'),
        ('E233', 'tensor_reduce',
         'a bitwise reduction with float data or dst'),
        ('E234', 'tensor_reduce',
         '`negate` with a bitwise operator'),
        ('W240', 'tensor_copy',
         '`engine: scalar` on trn1/inf2 with 32-bit integers (copied through float32: values above 2^24 lose precision)'),
        ('E250', 'nc_find_index8',
         '`data` has more than 5 dims, or not 8..16,384 elements per partition'),
        ('E251', 'nc_find_index8',
         '`vals` does not hold exactly 8 elements per partition (or has more than 3 dims)'),
        ('E252', 'nc_find_index8',
         '`dst` is not `(P, 8)`'),
        ('E253', 'nc_find_index8',
         '`dtype` is not uint16/uint32'),
        ('E260', 'nc_transpose',
         '`data` is larger than the engine transposes (Tensor 128 x 128, Vector 32 x 32)'),
        ('E261', 'nc_transpose',
         'engine tensor with `data` not in SBUF or `dst` not in PSUM'),
        ('E262', 'nc_transpose',
         "`dst` is not the transpose of `data`'s shape"),
        ('E263', 'nc_transpose',
         '`dst` and `data` dtypes differ'),
        ('E270', 'nc_matmul',
         '`stationary` and `moving` partition (contraction) counts differ'),
        ('E271', 'nc_matmul',
         '`stationary` over 128 or `moving` over 512 elements per partition'),
        ('E272', 'nc_matmul',
         '`dst` is not (stationary free size) x (moving free size)'),
        ('E273', 'nc_matmul',
         'float32/tfloat32 mixed with a non-fp32 operand'),
        ('E490', '(any)',
         'an x4-packed MX tile (`float8_e4m3fn_x4`, `float8_e5m2_x4`, `float4_e2m1fn_x4`) given to an instruction that does not compute on packed elements (only quantize_mx / nc_matmul_mx do; load, store, dma_copy, tensor_copy and memset move their bits)'),
        ('E491', 'load / store / dma_copy / tensor_copy',
         'a copy between an x4-packed tile and a tile of another dtype (MX data is never converted, docs/mx-and-random.md)'),
        ('E492', 'memset',
         'a value other than 0 for an x4-packed tile (NKI: only `value=0` for x4 types)'),
        ('E493', 'quantize_mx / nc_matmul_mx / rand2 / rng / rand_set_state / rand_get_state',
         "the instruction (or its `engine`) is not available on the program's target: quantize_mx, nc_matmul_mx, rand2 and the Vector-engine `rand_set_state`/`rand_get_state` need NeuronCore-v4 (`target: trn3`); `rand_set_state`/`rand_get_state` and `rng engine: gpsimd` need NeuronCore-v3+ (trn2, trn3)"),
        ('E500', 'quantize_mx',
         '`src` partitions are not a multiple of 32'),
        ('E501', 'quantize_mx',
         '`src` elements per partition are not a multiple of 4'),
        ('E502', 'quantize_mx',
         '`dst` is not (src partitions) x (src elements / 4)'),
        ('E503', 'quantize_mx',
         "`dst_scale` does not hold exactly src elements / 4 per partition, or spans too few partitions for the groups' quadrant rows (P <= 32: P/8; more: (P/32 - 1) x 32 + 4)"),
        ('E504', 'quantize_mx',
         '`src`/`dst` do not start on a quadrant boundary (0, 32, 64, 96), or `dst_scale` does not start at offset 0, 4, 8 or 12 of a quadrant (or a partition step other than 1)'),
        ('E510', 'nc_matmul_mx',
         '`stationary` and `moving` partition (contraction) counts differ, or are not a multiple of 32'),
        ('E511', 'nc_matmul_mx',
         '`stationary` elements per partition odd or over 128'),
        ('E512', 'nc_matmul_mx',
         '`moving` over 4096 elements per partition (float32 dst) or 8192 (bfloat16 dst)'),
        ('E513', 'nc_matmul_mx',
         '`dst` is not (stationary free size) x (moving free size)'),
        ('E514', 'nc_matmul_mx',
         "a scale tile's elements per partition differ from its data tile's, or it spans too few partitions (as E503)"),
        ('E515', 'nc_matmul_mx',
         '`tile_position`/`tile_size` not given together, not row tiling ((32, 64 or 128, 128) and (start_row multiple of the row size, 0)), or the stationary tile taller than the row tile'),
        ('E516', 'nc_matmul_mx',
         'a data tile not on a quadrant boundary, or a scale tile not at offset 0, 4, 8 or 12 of a quadrant'),
        ('E530', 'dropout',
         '`dst` differs from `data` in dtype or shape'),
        ('E531', 'dropout',
         'a `prob` tile that is not float32 with integer `data`'),
        ('E532', 'dropout',
         'a scalar `prob` outside 0..1 (or NaN)'),
        ('E540', 'rand2',
         'scalar `min` not below `max`'),
        ('E541', 'rand2',
         'a scalar `min`/`max` that is not a float32 value'),
        ('E550', 'set_rng_seed',
         '`src_seeds` is not a [1, 1] tensor'),
        ('E560', 'rand_set_state',
         '`src_seeds` is not a 2-D tile of one state per partition: 6 uint32 (GpSimd) or 24 (Vector)'),
        ('E570', 'rand_get_state',
         '`dst` is not a 2-D tile of 6 (GpSimd) or 24 (Vector) uint32 per partition'),
        ('W580', 'rng / dropout / rand2 / rand_get_state',
         "run time, once per run: the random values come from nkirun's seeded PRNG model (docs/mx-and-random.md), not the hardware's generator; `run --expect` marks the outputs that depend on them (MODEL PRNG)"),
        ('E290', 'exponential',
         'the target is not NeuronCore-v4 (exponential exists on trn3 only)'),
        ('E291', 'exponential',
         '`src` or `dst` has more than 4 dims'),
        ('E292', 'exponential',
         '`reduce_init` set (a tile, or a number other than 0.0) while `reduce_cmd` is not `load_reduce`'),
        ('E310', 'activate2',
         'the target is not NeuronCore-v4 (activate2 exists on trn3 only)'),
        ('E311', 'activate2',
         '`(op0, op1)` is not one of (multiply, add), (multiply, subtract), (multiply, bypass), (add, bypass), (subtract, bypass), (bypass, bypass)'),
        ('E312', 'activate2',
         '`imm0` and `imm1` are tiles of different dtypes'),
        ('E313', 'activate2',
         '`reverse0`/`reverse1` with its operator `bypass` (the flag needs the operator set)'),
        ('E314', 'activate2',
         'a reduction (`reduce_cmd` reduce/reset_reduce, or `reduce_res`) without `reduce_op`'),
        ('E320', 'scalar_tensor_tensor',
         '`data` and `operand1` are both in PSUM (at most one may be)'),
        ('E321', 'scalar_tensor_tensor',
         'a unary `op0` (abs, reciprocal, ...) whose `operand0` is not 0'),
        ('E330', 'tensor_scalar_reduce',
         'a unary `op0` (abs, reciprocal, ...) whose `operand0` is not 0'),
        ('E331', 'tensor_scalar_reduce',
         '`reduce_cmd: load_reduce` without `reduce_init`, or `reduce_init` with another `reduce_cmd`'),
        ('E332', 'tensor_scalar_reduce',
         '`reverse0: true` (the page: "not supported yet")'),
        ('E333', 'tensor_scalar_reduce',
         'a binary `op0` without `operand0` (only a unary op0 may leave it out)'),
        ('E340', 'tensor_scalar_cumulative',
         "`reduce_cmd: load_reduce` without `imm1` (the register's start value)"),
        ('E341', 'tensor_scalar_cumulative',
         'a unary `op0` (abs, reciprocal, ...) whose `imm0` is not 0'),
        ('E350', 'tensor_copy_predicated',
         '`src` (a tile) and `dst` have different dtypes'),
        ('E351', 'tensor_copy_predicated',
         '`src` and `predicate` are both in PSUM (at most one may be)'),
        ('E360', 'tensor_partition_reduce',
         "`dst` does not have 1 partition and `data`'s elements per partition"),
        ('E361', 'tensor_partition_reduce',
         '`bitwise_or`/`bitwise_and` with a float `data` or `dst`'),
        ('E370', 'bn_stats',
         '`data` has more than 512 elements per partition (`nl.tile_size.bn_stats_fmax`)'),
        ('E371', 'bn_stats',
         "`dst` does not hold 6 elements per partition for `data`'s partitions"),
        ('E380', 'bn_aggr',
         "`data`'s elements per partition are not a multiple of 3 (count, mean, variance*count triples)"),
        ('E381', 'bn_aggr',
         "`dst` does not hold 2 elements per partition (mean, variance) for `data`'s partitions"),
        ('E180', 'load / store / dma_copy',
         'source and destination hold different numbers of elements'),
        ('E181', 'dma_copy',
         '`dge_mode: hwdge` on trn1/inf2 (the hardware DGE is NeuronCore-v3 on: nki.isa.dma_copy documentation)'),
        ('E182', 'dma_copy',
         '`dge_mode: hwdge` between different src and dst dtypes (from NKI 0.3.0 on a hwdge copy does not cast)'),
    )),
)


CODES: dict[str, Code] = {code: Code(code, title, meaning, instruction)
                          for title, _, rows in SECTIONS for code, instruction, meaning in rows}
CODE_RE = re.compile(r"[EW]\d{3}", re.IGNORECASE)


def lookup(text: str) -> Code | None:
    """The entry of a code (`E040`, `e040`), or None."""
    return CODES.get(text.strip().upper())


def markdown() -> str:
    """docs/diagnostics.md."""
    out = ["# Diagnostic codes", "", INTRO.strip(), ""]
    for title, text, rows in SECTIONS:
        out.append(f"## {title}")
        if text:
            out.append(text)
            out.append("")
        with_instruction = any(ins for _, ins, _ in rows)
        if with_instruction:
            out += ["| code | instruction | meaning |", "| --- | --- | --- |"]
            out += [f"| `{c}` | {ins} | {m} |" for c, ins, m in rows]
        else:
            out += ["| code | meaning |", "| --- | --- |"]
            out += [f"| `{c}` | {m} |" for c, _, m in rows]
        out.append("")
    return "\n".join(out)


def explain_text(c: Code) -> str:
    """What `nkirun explain CODE` prints."""
    what = c.severity + (f" of {c.instruction}" if c.instruction else "")
    lines = [f"{c.code} ({what}) — {c.section}", "", c.meaning]
    if c.instruction:
        lines += ["", f"`nkirun explain {c.instruction}` lists the instruction's rules."]
    lines += ["", "Errors stop `check` (exit status 1) and nothing runs; warnings do not. "
              "Every code: docs/diagnostics.md."]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m nkirun.codes [--write]: (re)generate the page
    import pathlib
    page = pathlib.Path(__file__).resolve().parent.parent / "docs" / "diagnostics.md"
    if sys.argv[1:] == ["--write"]:
        page.write_text(markdown())
    else:
        sys.stdout.write(markdown())
