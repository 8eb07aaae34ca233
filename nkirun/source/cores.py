"""The front ends' spelling of a two-core (LNC2) program (docs/program-format.md, "Two
cores"): which core a tensor belongs to (`core: 0|1`) and which core's instruction stream
an instruction joins (YAML `cores: [{instructions: [...]}, {instructions: [...]}]`, text
`core 0` / `core 1` lines). The rules that need the whole program (every on-chip tensor
owned by a core, operands of the other core, the target) are checked in checker/cores.py.
"""
from __future__ import annotations

from nkirun.diagnostics import Loc, error

CORES = (0, 1)
LNC_HINT = "a Logical NeuronCore of two cores has cores 0 and 1"


def tensor_core(diags: list, name, fields: dict) -> int | None:
    """A tensor's `core:` (0 or 1), or None when not given (or reported)."""
    if "core" not in fields:
        return None
    value, _, vloc = fields["core"]
    if value is None:
        return None
    if isinstance(value, bool) or value not in CORES:
        diags.append(error("E631", f"tensor `{name}`: core must be 0 or 1, got {value!r}",
                           vloc, hint=LNC_HINT))
        return None
    return int(value)


def begin_core(b, value, loc: Loc) -> bool:
    """The instructions that follow join core `value`'s stream (the program becomes a
    two-core one); False (reported) when `value` is not a core."""
    b.cores = 2  # (also after an error: no knock-on "core in a one-core program")
    if getattr(b, "open_loops", None):  # a loop belongs to one core's stream
        b.diags.append(error("E652", f"a `core` line inside a {b.open_loops[-1][0]} loop: "
                             "each core's loops must close (`end`) before the next core's "
                             "instructions", loc, hint="put `end` before this line"))
    if isinstance(value, bool) or value not in CORES:
        b.diags.append(error("E630", f"core must be 0 or 1, got {value!r}", loc,
                             hint=LNC_HINT))
        return False
    b.cores, b.core = 2, int(value)
    return True


def yaml_cores(w, b, node, loc: Loc, instruction, seen: set) -> None:
    """YAML `cores:`, a list of two mappings `{instructions: [...]}` (core 0, core 1);
    `instruction(w, b, entry)` reads one entry. `seen`: the top-level keys read so far."""
    from nkirun.source.yaml_import import yaml
    b.cores = 2
    if "instructions" in seen:
        b.diags.append(error("E630", "a program has either `instructions:` (one core) or "
                             "`cores:` (two cores), not both", loc,
                             hint="put every instruction under its core's `instructions:`"))
        return
    items = node.value if isinstance(node, yaml.SequenceNode) else None
    if items is None or len(items) != 2:
        b.diags.append(error("E630", "`cores:` must be a list of two entries (core 0, "
                             "core 1), each `{instructions: [...]}`", w.loc(node),
                             hint=LNC_HINT))
        return
    for core, entry in enumerate(items):
        keys = ([w.value(k) for k, _ in entry.value]
                if isinstance(entry, yaml.MappingNode) else None)
        if keys != ["instructions"] or not isinstance(entry.value[0][1], yaml.SequenceNode):
            b.diags.append(error("E630", f"core {core}: expected `instructions:` with a list "
                                 "of instructions (and nothing else)", w.loc(entry),
                                 hint="- instructions:\n    - dma_copy: {dst: t, src: x}"))
            continue
        begin_core(b, core, w.loc(entry))
        for inst in entry.value[0][1].value:
            instruction(w, b, inst)
    b.cores, b.core = 2, 0
