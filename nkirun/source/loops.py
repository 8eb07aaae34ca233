"""Runtime loops in the program formats: building `ir.Loop`s from either front end, and
writing them back (`nkirun convert` stays lossless).

YAML: an entry `for:` or `while:` whose mapping holds the loop's keys and its `body`, a
list of entries (loops nest):

    - for: {index: i, start: 0, stop: n, step: 1, body: [...]}
    - while: {cond: c, next: c, body: [...]}

Text: a `for index=i stop=n` or `while cond=c` line opens the loop, `end` closes it.

Keys: for — `index` (the register the iteration value is written to; declares it),
`start` (default 0), `stop` (ints or register names), `step` (a positive integer,
default 1); while — `cond` (a register tested before each iteration), `next` (the
register copied into `cond` after each iteration; default `cond`); both — `name` (for
`cost --trip NAME=N`; default the index / condition register, with `@LINE` added when
two loops would share it).
"""
from __future__ import annotations

import re

from nkirun.diagnostics import Loc, error
from nkirun.ir import Loop, Register

WORDS = ("for", "while")
END = "end"
KEYS = {"for": ("index", "start", "stop", "step", "name"),
        "while": ("cond", "next", "name")}
REQUIRED = {"for": ("index", "stop"), "while": ("cond",)}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def begin(b, kind: str, fields: dict, loc: Loc) -> None:
    """Open a loop at the next instruction. `fields`: key -> (plain value, key Loc)."""
    values, ok = {}, True
    for key, (raw, kloc) in fields.items():
        if key not in KEYS[kind]:
            from nkirun.diagnostics import did_you_mean
            b.diags.append(error("E652", f"{kind} loop: unknown key `{key}`", kloc,
                                 hint=did_you_mean(key, KEYS[kind] + ("body",))
                                 or "allowed: " + ", ".join(KEYS[kind] + ("body",))))
            ok = False
            continue
        value, message = _value(kind, key, raw)
        if message is not None:
            b.diags.append(error("E652", f"{kind} loop: {message}", kloc))
            ok = False
            continue  # (the loop is kept with the default: no knock-on errors in its body)
        values[key] = value
    for key in REQUIRED[kind]:
        if key not in fields:
            b.diags.append(error("E652", f"{kind} loop: missing `{key}`", loc,
                                 hint="e.g. for: {index: i, stop: n, body: [...]}"
                                 if kind == "for" else "e.g. while: {cond: c, body: [...]}"))
            ok = False
    values["core"] = b.core  # (the core whose stream opened it)
    b.open_loops.append((kind, values, loc, {k: kl for k, (_, kl) in fields.items()},
                         b.count, ok))


def _value(kind: str, key: str, raw):
    """(typed value, None) or (None, message) for one loop key."""
    if key in ("index", "cond", "next", "name"):
        if isinstance(raw, str) and _NAME.fullmatch(raw.strip()):
            return raw.strip(), None
        return None, f"`{key}` must be a name (letters, digits, _), got {raw!r}"
    if key == "step":
        if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0:
            return raw, None
        return None, f"`step` must be a positive integer known when the program is written, " \
                     f"got {raw!r}"
    if isinstance(raw, int) and not isinstance(raw, bool):  # start / stop
        return raw, None
    if isinstance(raw, str) and _NAME.fullmatch(raw.strip()):
        return Register(raw.strip()), None
    return None, f"`{key}` must be an integer or a register name, got {raw!r}"


def end(b, loc: Loc) -> bool:
    """Close the innermost open loop; False when none is open."""
    if not b.open_loops:
        return False
    kind, values, lloc, key_locs, first, ok = b.open_loops.pop()
    if kind != "for" or "index" in values:  # (a `for` without its index is dropped)
        b.loops.append(dict(kind=kind, first=first, end=b.count, loc=lloc, key_locs=key_locs,
                            depth=len(b.open_loops), **values))
    return True


def finish(b) -> tuple:
    """The loops as ir.Loops, names given (E652 for an unclosed loop or a repeated name)."""
    for kind, _, loc, _, _, _ in b.open_loops:
        b.diags.append(error("E652", f"this {kind} loop is never closed", loc,
                             hint="end its body with a line `end`"))
    while b.open_loops:  # (closed at the end: its body is still checked as a body)
        end(b, Loc(b.path))
    # outermost first (equal spans: the enclosing loop first)
    loops = sorted(b.loops, key=lambda d: (d["first"], -d["end"], d["depth"]))
    base = [d.get("name") or d.get("index") or d.get("cond") for d in loops]
    per_core = [(n, d["core"]) for n, d in zip(base, loops)]
    given: dict = {}
    out = []
    for d, name in zip(loops, base):
        named = "name" in d and d["name"] is not None
        if named and name in given:
            b.diags.append(error("E652", f"two loops are named `{name}`", d["key_locs"]["name"],
                                 hint=f"the other is at line {given[name]}"))
        if not named and name is not None:
            mine = per_core.count((name, d["core"]))
            other_core = base.count(name) > mine  # (a kernel traced once per core: both)
            if mine > 1:  # another loop of this core shares the name
                name = f"{name}@{d['loc'].line}"
            if other_core:
                name = f"{name}@core{d['core']}"
        given.setdefault(name, d["loc"].line)
        d = {k: v for k, v in d.items() if k not in ("name", "depth")}
        out.append(Loop(name=name, named=named, **d))
    return tuple(out)


# ---- YAML ------------------------------------------------------------------------------------
def yaml_loop(w, b, kind: str, vnode, loc: Loc, instruction, unique_keys) -> None:
    """A `for:` / `while:` entry: its keys, then each entry of its body."""
    from nkirun.source.yaml_import import yaml
    fields = unique_keys(w, b, vnode, lambda kn, vn: (vn, w.loc(kn)))
    body = fields.pop("body", None)
    begin(b, kind, {k: (w.value(vn), kl) for k, (vn, kl) in fields.items()}, loc)
    if body is None:
        b.diags.append(error("E652", f"{kind} loop: missing `body` (a list of instructions)",
                             loc))
    elif not isinstance(body[0], yaml.SequenceNode):
        b.diags.append(error("E652", f"{kind} loop: `body` must be a list of instructions",
                             body[1]))
    else:
        for entry in body[0].value:
            instruction(w, b, entry)
    end(b, loc)


# ---- writing ---------------------------------------------------------------------------------
def header_items(lp: Loop, render) -> list[tuple[str, str]]:
    """(key, value text) of a loop's keys, defaults left out."""
    items = []
    if lp.kind == "for":
        items.append(("index", lp.index))
        if lp.start != 0:
            items.append(("start", render(lp.start)))
        items.append(("stop", render(lp.stop)))
        if lp.step != 1:
            items.append(("step", str(lp.step)))
    else:
        items.append(("cond", lp.cond))
        if lp.next is not None:
            items.append(("next", lp.next))
    if lp.named:
        items.append(("name", lp.name))
    return items


def nested(program, emit_instruction, emit_begin, emit_end) -> None:
    """Walk the instructions with their loops: emit_begin(loop, depth) before a body,
    emit_instruction(inst, depth), emit_end(loop, depth, empty) after it."""
    from nkirun.control import loop_tree

    from bisect import bisect_left
    insts = program.instructions
    at = [x.index for x in insts]

    def between(lo, hi):
        return insts[bisect_left(at, lo):bisect_left(at, hi)]

    def span(lo, hi, children, depth):
        i = lo
        for lp, kids in children:
            for inst in between(i, lp.first):
                emit_instruction(inst, depth)
            emit_begin(lp, depth)
            span(lp.first, lp.end, kids, depth + 1)
            emit_end(lp, depth, not between(lp.first, lp.end))
            i = lp.end
        for inst in between(i, hi):
            emit_instruction(inst, depth)

    span(0, (at[-1] + 1) if at else 0, loop_tree(program.loops), 0)


def text_lines(program, instruction, text_value) -> list[str]:
    """The instruction lines of the text form, loop bodies between `for`/`while` and `end`
    lines (indented two blanks per level: the reader ignores the indentation);
    `text_value`: source/write.py's spelling of a header's values."""
    out: list[str] = []
    nested(program, lambda inst, d: out.append("  " * d + instruction(inst)),
           lambda lp, d: out.append("  " * d + lp.kind + " " + " ".join(
               f"{k}={v}" for k, v in header_items(lp, text_value))),
           lambda lp, d, empty: out.append("  " * d + END))
    return out


def yaml_lines(program, instruction, yaml_value, pad: str = "") -> list[str]:
    """The `instructions:` entries in YAML, a loop as a block mapping with its `body`
    (`pad`: more indentation, for a core's entries under `cores:`; `yaml_value`:
    source/write.py's spelling of a header's values)."""
    out: list[str] = []

    def begin_(lp, d):  # an entry at 2 + 6d blanks, its keys 4 further, its body 6
        at = pad + " " * (2 + 6 * d)
        out.append(f"{at}- {lp.kind}:")
        out.extend(f"{at}    {k}: {v}" for k, v in header_items(lp, yaml_value))
        out.append(f"{at}    body:")

    def end_(lp, d, empty):
        if empty:
            out[-1] += " []"

    def inst_(inst, d):
        out.extend(instruction(inst, pad + " " * (2 + 6 * d)))

    nested(program, inst_, begin_, end_)
    return out



def schema_defs() -> dict:
    """JSON Schema definitions of the loop entries (source/schema.py)."""
    name = {"type": "string", "pattern": r"^\s*[A-Za-z_][A-Za-z0-9_]*\s*$",
            "patternErrorMessage": "a register or loop name: letters, digits and _"}
    bound = {"anyOf": [{"type": "integer"}, name]}
    body = {"type": "array", "items": {"$ref": "#/definitions/instruction"},
            "description": "the instructions the loop repeats (loops nest)"}
    label = dict(name, description="the loop's name for `cost --trip NAME=N` (default: its "
                                   "index / condition register)")
    return {
        "loop_for": {
            "type": "object", "additionalProperties": False,
            "required": ["index", "stop", "body"],
            "description": "a runtime loop: for index in range(start, stop, step), bounds "
                           "read from registers when the loop starts (nl.dynamic_range, "
                           "nl.fori_loop)",
            "properties": {
                "index": dict(name, description="the register set to each iteration value"),
                "start": dict(bound, description="an integer or a register (default 0)"),
                "stop": dict(bound, description="an integer or a register (exclusive)"),
                "step": {"type": "integer", "minimum": 1, "description": "default 1"},
                "name": label, "body": body}},
        "loop_while": {
            "type": "object", "additionalProperties": False, "required": ["cond", "body"],
            "description": "a runtime loop: while register cond != 0 (nl.while_loop)",
            "properties": {
                "cond": dict(name, description="the register tested before each iteration"),
                "next": dict(name, description="the register copied into cond after each "
                                               "iteration (default: cond itself)"),
                "name": label, "body": body}},
    }
