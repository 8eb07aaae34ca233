"""Checks of registers and runtime loops (nkirun/control.py is the control flow).

Every loop body is checked once, like straight-line code: that covers every path the
program can take, since a body either runs (the same instructions each time) or not.
What depends on register values is said, not guessed:

* E650 a register used before anything declares it (register_alloc, or a `for` index);
  E651 a name that is both a register and a tensor;
* E654 a `scalar_offset` indexed by the index of a `for` loop with constant bounds that
  leaves the tensor for its first or last value (the whole range is known);
* W650 a loop whose trip count depends on a register: its body is checked once, the
  number of iterations is known only when it runs (`cost` then needs data or `--trip`);
* W651 a `scalar_offset` register whose value is known only at run time: its bounds are
  checked when it runs (E093);
* W652 a `while` loop whose body never writes the register it continues on (the loop
  runs never or forever); W653 a `for` loop whose body writes a register its bounds
  come from (the loop read it once, when it was entered: the write does not change it).
"""
from __future__ import annotations

import numpy as np

from nkirun.checker.registers import declared, declaring
from nkirun.control import enclosing, static_trips
from nkirun.diagnostics import RunError, error, warning
from nkirun.ir import Program, Register

def check_control(program: Program, bound) -> list:
    if program.cores > 1:  # each core has its own registers and walks its own loops
        return [d for one_core, its_bound in _per_core(program, bound)
                for d in check_control(one_core, its_bound)]
    regs = declared(program)
    out = []
    for name, (_, loc) in regs.items():
        if name in program.tensors:
            out.append(error("E651", f"`{name}` is both a tensor and a register", loc,
                             hint="give the register a name no tensor has"))
    writes: dict[str, list[int]] = {}
    for b in bound:
        for key, v in b.args.items():
            if isinstance(v, Register):
                if b.spec.param(key).out:  # the register it writes; others read
                    writes.setdefault(v.name, []).append(b.index)
                if declaring(b.op) is None:
                    out.extend(_declared_before(v.name, b.index, b.loc(key), b.op, regs,
                                                program))
        out.extend(_indexed_views(program, b, regs))
    for lp in program.loops:
        out.extend(_loop(program, lp, regs, writes))
    return out


def _per_core(program: Program, bound):
    """Per core: the program with only that core's instructions and loops, its bound."""
    from dataclasses import replace
    for core in range(program.cores):
        mine = [b for b in bound if b.inst.core == core]
        loops = tuple(lp for lp in program.loops if lp.core == core)
        insts = tuple(i for i in program.instructions if i.core == core)
        yield replace(program, cores=1, instructions=insts, loops=loops), mine


def _declared_before(name: str, index: int, loc, what: str, regs: dict, program: Program):
    at = regs.get(name)
    loop_index = any(lp.index == name for lp in enclosing(program.loops, index))
    if at is not None and (at[0] <= index or loop_index):
        return []
    from nkirun.diagnostics import did_you_mean
    said = "used before it is allocated" if at is not None else "never allocated"
    return [error("E650", f"{what}: register `{name}` is {said}", loc, index,
                  hint=did_you_mean(name, regs) or
                  f"allocate it first: - register_alloc: {{dst: {name}}}")]


def _loop(program: Program, lp, regs: dict, writes: dict):
    out = []
    if lp.kind == "while" and lp.cond is None:  # (reported by the front end: E652)
        return out
    bounds = [v.name for v in (lp.start, lp.stop) if isinstance(v, Register)] \
        if lp.kind == "for" else [lp.cond] + ([lp.next] if lp.next else [])
    for name in bounds:
        out.extend(_declared_before(name, lp.first if name != lp.next else lp.end,
                                    lp.loc, f"loop `{lp.name}`", regs, program))
    if static_trips(lp) is None:
        out.append(warning("W650", f"loop `{lp.name}` runs a number of times known only at "
                           f"run time (register `{bounds[-1] if lp.kind == 'for' else lp.cond}`)"
                           ": its body is checked once", lp.loc, lp.first,
                           hint=f"run executes it on the data; cost counts it from the data "
                                f"or from --trip {lp.name}=N"))
    inside = lambda name: any(lp.first <= i < lp.end for i in writes.get(name, ()))  # noqa: E731
    if lp.kind == "while" and not inside(lp.next or lp.cond):
        out.append(warning("W652", f"while loop `{lp.name}`: its body never writes register "
                           f"`{lp.next or lp.cond}`, so it runs never or forever", lp.loc,
                           lp.first, hint="register_load the next condition at the end of "
                                          "the body"))
    if lp.kind == "for":
        for name in bounds:
            if inside(name):
                out.append(warning("W653", f"loop `{lp.name}` writes register `{name}` in its "
                                   "body; the loop read its bounds once, when it started",
                                   lp.loc, lp.first, hint="the write changes later uses only"))
    return out


def _indexed_views(program: Program, b, regs: dict):
    """E650/E654/W651 for the register-indexed views of one instruction."""
    from nkirun.views.access import static_offsets
    from nkirun.views.indirect import offsets
    out = []
    for key, v in b.args.items():
        r = v if hasattr(v, "ap") and getattr(v, "ap", None) is not None else None
        if r is None or r.ap.indirect is None or r.ap.indirect.register is None:
            continue
        name = r.ap.indirect.register
        out.extend(_declared_before(name, b.index, b.loc(key), b.op, regs, program))
        lp = next((x for x in reversed(enclosing(program.loops, b.index)) if x.index == name),
                  None)
        trips = static_trips(lp) if lp is not None else None
        if trips is None:
            out.append(warning("W651", f"{b.op}: `{key}` is indexed by register `{name}`, "
                               "whose value is known only at run time: its bounds are "
                               "checked when it runs", b.loc(key), b.index))
            continue
        if trips == 0 or b.get("oob_mode") == "skip":
            continue
        static = static_offsets(r)
        for value in (lp.start, lp.start + (trips - 1) * lp.step):
            try:
                offsets(r, np.array([value]), static, "error", None)
            except RunError:
                out.append(error("E654", f"{b.op}: `{key}` leaves `{r.decl.name}` when loop "
                                 f"`{lp.name}` has {name} = {value}", b.loc(key), b.index,
                                 hint=f"{name} runs over range({lp.start}, {lp.stop}, "
                                      f"{lp.step}): shorten the loop or the pattern"))
                break
    return out


def widen_live(loops, first: dict, last: dict, bound) -> None:
    """Live ranges (positions in `bound`) for the capacity pass: a tensor that is live when
    a loop starts and used in its body stays live to the loop's end (the next iteration
    uses it again)."""
    for lp in loops:
        inside = [k for k, b in enumerate(bound) if lp.first <= b.index < lp.end]
        if not inside:
            continue
        start, stop = min(inside), max(inside)
        for name, f in first.items():
            if f < start <= last.get(name, f) < stop:
                last[name] = stop


def touched_in_loops(loops, first: dict, last: dict) -> set:
    """The tensors whose first or last use is inside a loop body, or right after one (a run
    that makes storage just before a tensor's first use and frees it after its last use
    keeps these whole: the body may run again, or never)."""
    spans = [(lp.first, lp.end) for lp in loops]
    # (f - 1: storage made after the instruction before the first use, maybe a body's last)
    return {name for name, f in first.items()
            if any(a <= f < b or a <= f - 1 < b or a <= last.get(name, f) < b
                   for a, b in spans)}


def read_in_loop(program: Program, bound, name: str, index: int) -> bool:
    """Whether a loop whose body holds instruction `index` reads tensor `name` (its next
    iteration reads what the write left: W051 does not apply)."""
    spans = [(lp.first, lp.end) for lp in enclosing(program.loops, index)]
    return any(a <= b.index < e and any(r.decl.name == name for _, r in b.accesses().reads)
               for b in bound for a, e in spans)
