"""Static validation, generic over the instruction table.

`bind` resolves every operand against the declared tensors and applies each parameter's
declared rules (buffers, dtypes, (P, 1) shape, matching partitions) plus the
instruction's own `check`; `validate` adds the program-wide passes: memory capacity,
dataflow (reads before writes, unused results) and accumulator hazards. Every problem
is reported, not just the first. Nothing here names an instruction.
"""
from __future__ import annotations

from nkirun.diagnostics import Diagnostic, Loc, error, warning
from nkirun.checker.bind import bind
from nkirun.ir import Program
from nkirun.isa.spec import ACCUMULATORS, Bound, param_tables, views_of
from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES, TARGETS


def _tensor_rules(program: Program, max_hbm_bytes: int) -> list[Diagnostic]:
    target = TARGETS[program.target]
    out = []
    for t in program.tensors.values():
        shape_loc = t.key_locs.get("shape", t.loc)
        if t.on_chip and t.partitions > target.partitions:
            out.append(error("E017", f"tensor `{t.name}`: {t.buffer} partition dimension is "
                             f"{t.partitions}, at most {target.partitions} allowed", shape_loc,
                             hint="tile the partition dimension in chunks of 128"))
        elif t.on_chip:
            cap = (target.sbuf_bytes_per_partition if t.buffer == "sbuf"
                   else target.psum_bytes_per_partition)
            if t.bytes_per_partition > cap:
                out.append(error("E041", f"tensor `{t.name}` needs {t.bytes_per_partition} bytes "
                                 f"per partition; {t.buffer} has {cap} on {target.name}",
                                 shape_loc, hint="split it into smaller tiles"))
            elif t.buffer == "psum" and t.bytes_per_partition > target.psum_bank_bytes:
                out.append(warning("W042", f"tensor `{t.name}` uses {t.bytes_per_partition} bytes "
                                   f"per partition, more than one {target.psum_bank_bytes}-byte "
                                   "PSUM bank", shape_loc,
                                   hint="instructions such as nc_matmul write one bank (512 "
                                        "fp32) at a time"))
        elif t.nbytes > max_hbm_bytes:
            out.append(error("E043", f"tensor `{t.name}` is {t.nbytes:,} bytes, over the "
                             f"{max_hbm_bytes:,}-byte HBM limit", shape_loc,
                             hint="raise the limit with --max-hbm-bytes if this is intended"))
    return out


# ---- program-wide passes ---------------------------------------------------------------------
def _reads_writes(b: Bound):
    reads, writes = [], []
    args = b.args
    for p in param_tables(b.spec).views:
        for r in views_of(args.get(p.name)):
            (writes if p.out else reads).append((p.name, r))
    if b.spec.reads_out is not None:  # e.g. an accumulating matmul also reads its dst
        reads += [(n, b.tile(n)) for n in b.spec.reads_out(b) if b.tile(n) is not None]
    return reads, writes


def _acc_hazard(b: Bound, state: dict[str, str]) -> list[Diagnostic]:
    """W052: reduce_cmd=reduce onto the spec's accumulator while it is undefined; updates
    `state` (accumulator name -> undefined / defined / clobbered)."""
    acc, cmd = b.spec.accumulator, b.get("reduce_cmd", "idle")
    now, out = state.get(acc, "undefined"), []
    if cmd == "reduce" and now != "defined":
        why = ("an earlier idle op may have modified it" if now == "clobbered"
               else "nothing reset it")
        out.append(b.warn("W052", f"reduce_cmd=reduce accumulates onto an undefined "
                          f"{ACCUMULATORS[acc].engine}-engine accumulator ({why})", "reduce_cmd",
                          hint="start the chain with reduce_cmd: reset_reduce"))
    if cmd in ("reset", "reset_reduce"):
        state[acc] = "defined"
    elif cmd == "idle" and now == "defined" and ACCUMULATORS[acc].idle_may_modify:
        state[acc] = "clobbered"
    return out


def _dataflow(program: Program, bound: list[Bound]) -> list[Diagnostic]:
    out = []
    defined = {n for n, t in program.tensors.items() if t.init is not None}
    read_after: dict[str, bool] = {}
    last_write: dict[str, Bound] = {}
    strict = not program.dropped  # with dropped instructions, reads may be knock-on errors
    acc_state: dict[str, str] = {}  # accumulator -> undefined / defined / clobbered
    names_of: dict = {}  # id(b.args) -> ((param, tensor) read..., (tensor written...)); see Bound
    for b in bound:
        rw = names_of.get(id(b.args))
        if rw is None:
            reads, writes = _reads_writes(b)
            rw = names_of[id(b.args)] = (tuple((k, r.decl.name) for k, r in reads),
                                         tuple(r.decl.name for _, r in writes))
        reads, writes = rw
        for key, n in reads:
            if n not in defined and strict:
                out.append(b.err("E050", f"`{key}` reads `{n}` before anything writes it", key,
                                 hint=f"give `{n}` initial contents (file, fill or data), or "
                                      "write it in an earlier instruction"))
                defined.add(n)  # report once
            read_after[n] = True
        for n in writes:
            defined.add(n)
            read_after[n] = False
            last_write[n] = b
        if b.spec.accumulator is not None:
            out += _acc_hazard(b, acc_state)
    for n, was_read in read_after.items():
        t = program.tensors[n]
        if not was_read and not t.output and n in last_write and strict:
            b = last_write[n]
            out.append(warning("W051", f"`{n}` is written by {b.op} (instruction {b.index}) but "
                               "never read afterwards and not an output", b.loc(), b.index,
                               hint="mark it `output: true`, or drop the write"))
    return out


def _capacity(program: Program, bound: list[Bound]) -> list[Diagnostic]:
    """Peak per-partition SBUF/PSUM use over the program, tensors live first to last use."""
    target = TARGETS[program.target]
    n = len(bound)
    first, last = {}, {}
    for t in program.tensors.values():
        if t.on_chip and (t.init is not None):
            first[t.name] = 0
        if t.on_chip and t.output:
            last[t.name] = n - 1
    on_chip_of: dict = {}  # id(b.args) -> the on-chip tensors it uses (see Bound)
    for i, b in enumerate(bound):
        names = on_chip_of.get(id(b.args))
        if names is None:  # only view params are bound to a Resolved
            names = on_chip_of[id(b.args)] = tuple(
                r.decl.name for v in b.args.values() for r in views_of(v) if r.decl.on_chip)
        for name in names:
            first.setdefault(name, i)
            if last.get(name, i) <= i:  # an output's last use stays the end
                last[name] = i
    out = []
    for buf, cap in (("sbuf", target.sbuf_bytes_per_partition),
                     ("psum", target.psum_bytes_per_partition)):
        delta = [0] * (n + 2)  # +2: a tensor first used at 0 with no instruction left
        for name, f in first.items():
            t = program.tensors[name]
            if t.buffer != buf:
                continue
            delta[f] += t.bytes_per_partition
            delta[last.get(name, f) + 1] -= t.bytes_per_partition
        live = peak = peak_at = 0
        for i in range(n):
            live += delta[i]
            if live > peak:
                peak, peak_at = live, i
        if peak > cap:
            b = bound[peak_at]
            out.append(error("E041", f"live {buf.upper()} tensors need {peak:,} bytes per "
                             f"partition at instruction {peak_at} ({b.op}); {target.name} has "
                             f"{cap:,}", b.loc(), peak_at,
                             hint="reuse tiles or split the work into smaller tiles"))
    return out


def validate(program: Program, max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES):
    """All diagnostics for a parsed program; returns (bound instructions, diagnostics)."""
    diags = _tensor_rules(program, max_hbm_bytes)
    bound, d = bind(program, max_hbm_bytes)
    diags.extend(d)
    diags.extend(_dataflow(program, bound))
    if not any(x.code in ("E017", "E041") for x in diags):
        diags.extend(_capacity(program, bound))
    return bound, diags


def sort_key(d: Diagnostic):
    return (d.loc.file, d.loc.line or 0, d.loc.column or 0)


__all__ = ["validate", "bind", "sort_key", "Loc"]
