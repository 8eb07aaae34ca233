"""How NKI's Python API spells an instruction: `InstructionDef.nki`, an `NkiApi` each
instruction module fills in. The Python kernel front end (source/kernel/) reads it and
names no instruction itself (tests/test_stages_name_no_instruction.py); the generated
docs/instructions.md lists the signatures.

* `signature` — NKI 0.6's parameters in positional order (the nki.isa API reference), an
  optional one as `name=default` with NKI's default; `name=...` when NKI's default is a
  value nkirun does not fill in (nkirun's own default applies). `name` (every
  instruction's debug label) is left out. Empty: NKI 0.6 does not document the
  instruction, and positional calls follow nkirun's own keyword order.
* `module` — where NKI puts it: `nki.isa`, or `nki.language` (load, store: `nl.load`).
* `front_end` — `"package.module:function"`, a kernel front-end function that stands for
  the instruction's `nki.isa` call (register_alloc returns the register it allocates).
* The pre-0.2 API (`neuronxcc.nki`, source/kernel/legacy.py): `legacy` names the old call
  forms the front end turns into this instruction's keywords (source/kernel/
  legacy_affine.py FORMS); `aliases` the old spellings of a keyword's value;
  `result` the tile a call without `dst=` allocates, `result_dtype` its dtype when it is
  not the inputs'; `recast` and `accumulate` how assigning that result into a tile
  (`t[...] = r`, `t[...] += r`) is recorded.
* `removed` — keywords NKI removed or renamed, with the release (isa/removed.py).
"""
from __future__ import annotations

import ast
from functools import lru_cache
from typing import Callable

from nkirun.records import record

REQUIRED = object()  # a signature's parameter without a default
UNSET = object()  # `name=...`: NKI's default is not filled in (nkirun's applies)


@record(frozen=True, slots=True)
class NkiApi:
    """How NKI's Python API spells an instruction (its signature, module, aliases)."""
    signature: str = ""
    module: str = "nki.isa"
    front_end: str = ""
    legacy: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str, str], ...] = ()  # (keyword, old value, its value now)
    # (keyword values, the first input tile) -> (shape, "sbuf" | "psum"); None: the first
    # input's shape, in SBUF
    result: Callable | None = None
    result_dtype: str | None = None
    # the result assigned into a tile of another dtype: "" the instruction writes it there
    # (its output casts), "copy" it is computed in its own tile and copied (the instruction
    # does not cast), else the instruction recorded instead (load: the casting dma_copy)
    recast: str = ""
    # the keyword that makes the instruction add into dst: `t[...] = r` sets it False when
    # not given, `psum[...] += r` leaves it to the instruction's own rule
    accumulate: str = ""
    # keywords NKI removed or renamed: (keyword, the release, what to write instead); the
    # front end's E390 (isa/removed.py)
    removed: tuple[tuple[str, str, str], ...] = ()
    # the result's axes are the input's reversed (a 2-D transpose): a mask's rectangle and
    # the written rectangle of a partly written input are narrowed transposed (legacy.py)
    transposes: bool = False
    # the pre-0.2 positional order when a call leaves dst out and it is not the signature
    # without dst (memset(shape, value, dtype): `shape` goes to `result`)
    legacy_signature: str = ""


@lru_cache(maxsize=None)
def parameters(signature: str) -> tuple[tuple[str, object], ...]:
    """(name, NKI default, REQUIRED or UNSET) for each parameter of `signature`, in order."""
    out = []
    for part in signature.split():
        name, eq, value = part.partition("=")
        out.append((name, _default(value) if eq else REQUIRED))
    return tuple(out)


def _default(text: str):
    if text == "...":
        return UNSET
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # an enum member or operator name, as nkirun spells it


def signature_text(name: str, api: NkiApi) -> str:
    """`nki.isa.name(dst, src, engine=unknown)`, or "" when NKI 0.6 documents none."""
    if not api.signature:
        return ""
    return f"{api.module}.{name}({', '.join(api.signature.split())})"


# ---- results of pre-0.2 calls without dst= (NkiApi.result) ----------------------------------
def per_partition(n: int) -> Callable:
    """A (P, n) result: n values per partition of the input."""
    return lambda values, first: ((first.shape[0], n), "sbuf")


def across_partitions(values, first):
    """A (1, F...) result: the input reduced over its partitions."""
    return (1,) + tuple(first.shape[1:]), "sbuf"
