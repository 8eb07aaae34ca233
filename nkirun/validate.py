"""Static validation, generic over the instruction table.

`bind` resolves every operand against the declared tensors and applies each parameter's
declared rules (buffers, dtypes, (P, 1) shape, matching partitions) plus the
instruction's own `check`; `validate` adds the program-wide passes: memory capacity,
dataflow (reads before writes, unused results) and accumulator hazards. Every problem
is reported, not just the first. Nothing here names an instruction.
"""
from __future__ import annotations

import itertools

import dataclasses

from .errors import Diagnostic, Loc, error, warning
from .ir import ON_CHIP, Program, View
from .isa import REGISTRY
from .isa.spec import ACCUMULATORS, Bound, param_tables
from .targets import DEFAULT_MAX_HBM_BYTES, TARGETS
from .views import Resolved, resolve


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


def bind(program: Program, max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES
         ) -> tuple[list[Bound], list[Diagnostic]]:
    """Resolve operands and apply the per-parameter and per-instruction rules."""
    bound, diags = [], []
    resolved: dict = {}  # (tensor, index) -> Resolved: traces reuse the same few views
    # The rules are functions of the bound values alone, so an instruction bound to the very
    # same objects as an earlier one that passed them passes them too (traces repeat
    # instructions; the front ends share equal values). ids of those values -> that earlier
    # Bound, whose args dict the repeat shares (see Bound: later passes memoise on it).
    passed: dict = {}
    passed_at: dict = {}  # the same, by instruction index, for Instruction.repeat_of
    per_op: dict = {}  # op -> (spec, its view Params, {param: None}): looked up once per op
    # Instructions the front end dropped for a bad keyword come last (`program.partial`,
    # with the keywords that did convert): their operands are still resolved and checked
    # against the per-parameter rules, so one bad keyword does not hide other errors.
    for inst in itertools.chain(program.instructions, program.partial):
        like = passed_at.get(inst.repeat_of)
        if like is not None:  # its views resolve to the same Resolved: no need to look
            bound.append(Bound(inst, like.spec, like.args, None, like.engine,
                               {"target": program.target}))
            continue
        hit = per_op.get(inst.op)
        if hit is None:
            spec = REGISTRY[inst.op]
            tables = param_tables(spec)
            hit = per_op[inst.op] = (spec, tables.views, dict.fromkeys(tables.names))
        spec, views, blank = hit
        ok = inst.index not in program.dropped
        args = blank.copy()  # every param: given values over None
        args.update(inst.args)
        for p in views:
            v = args[p.name]
            if isinstance(v, View):
                rkey = (v.tensor, id(v.index))  # index tuples are shared; the IR keeps them alive
                r = resolved.get(rkey)
                if r is None:
                    decl = program.tensors.get(v.tensor)
                    if decl is None:
                        ok = False
                        if v.tensor not in program.invalid_tensors:
                            from .frontend import did_you_mean
                            diags.append(error(
                                "E026", f"{inst.op}: unknown tensor `{v.tensor}` (in `{p.name}`)",
                                inst.arg_loc(p.name), inst.index,
                                hint=did_you_mean(v.tensor, program.tensors)
                                or "declare it under `tensors:`"))
                        del args[p.name]
                        continue
                    view = View(v.tensor, v.index, inst.arg_loc(p.name))
                    r, d = resolve(view, decl)
                    if d is not None:
                        diags.append(_with_instruction(d, inst.op, inst.index))
                        ok = False
                        del args[p.name]
                        continue
                    resolved[rkey] = r
                if p.per_partition and len(r.shape) > 2 and r.free_size == 1:
                    # a (P, 1, 1) column serves as the (P, 1) tile the instruction computes with
                    r = dataclasses.replace(r, shape=(r.partitions, 1), reshape=True)
                args[p.name] = r
        same = (spec.name, *map(id, args.values())) if ok else None
        like = passed.get(same)
        # (positional: 100k instructions; extra: some rules differ per generation)
        if like is not None:
            bound.append(Bound(inst, spec, like.args, None, like.engine,
                               {"target": program.target}))
            continue
        b = Bound(inst, spec, args, None, "", {"target": program.target})
        b.engine = spec.engine_of(b) if (ok and spec.engine_of) else spec.engine
        if not ok:  # an operand or keyword failed: only the rules of each parameter apply
            diags.extend(_param_rules(b))
            continue
        n0 = len(diags)
        diags.extend(_param_rules(b))
        if len(diags) == n0 and spec.check is not None:
            diags.extend(spec.check(b))
        if len(diags) == n0 and args.get("mask") is None:
            passed[same] = passed_at[inst.index] = b
        if b.get("mask") is not None and _fits(b.tile(spec.mask_on), program, max_hbm_bytes):
            # (a mask is an array the size of its tile: never built over a refused tensor)
            from .mask import compile_mask
            b.mask, d = compile_mask(b)
            if d is not None:
                diags.append(d)
        bound.append(b)
    return bound, diags


def _fits(r, program: Program, max_hbm_bytes: int) -> bool:
    """Whether the tensor under view `r` passes the size rules of _tensor_rules."""
    if r is None:
        return True
    t, target = r.decl, TARGETS[program.target]
    if not t.on_chip:
        return t.nbytes <= max_hbm_bytes
    cap = (target.sbuf_bytes_per_partition if t.buffer == "sbuf"
           else target.psum_bytes_per_partition)
    return t.partitions <= target.partitions and t.bytes_per_partition <= cap


def _with_instruction(d: Diagnostic, op: str, index: int) -> Diagnostic:
    return Diagnostic(d.severity, d.code, f"{op}: {d.message}", d.loc, index, d.hint)


def _param_rules(b: Bound):
    tiles = []
    args = b.args
    for p in param_tables(b.spec).views:
        r = args.get(p.name)
        if not isinstance(r, Resolved):
            continue
        tiles.append((p, r))
        allowed = p.buffers if p.buffers is not None else ON_CHIP
        if r.buffer not in allowed:
            yield b.err("E040", f"`{p.name}` ({r.decl.name}) is in {r.buffer}; allowed: "
                        f"{', '.join(sorted(allowed))}", p.name,
                        hint=_buffer_hint(r.buffer, allowed))
        if p.dtypes is not None and r.dtype.name not in p.dtypes:
            yield b.err("E060", f"`{p.name}` must be {_dtype_list(p.dtypes)} (got {r.dtype.name})",
                        p.name, hint=f"declare {r.decl.name} with dtype {_dtype_list(p.dtypes)}, "
                                     f"or copy it into such a tile first")
        if p.per_partition and r.free_size != 1:
            yield b.err("E061", f"`{p.name}` must hold one element per partition, shape (P, 1); "
                        f"got {list(r.shape)}", p.name,
                        hint=f"use a column view such as {r.decl.name}[:, 0:1]")
    if b.engine == "gpsimd":
        for p, r in tiles:
            # a param that already excludes PSUM got its E040 above: don't report it twice
            if r.buffer == "psum" and (p.buffers is None or "psum" in p.buffers):
                yield b.err("E044", f"`{p.name}` is in PSUM, which the GpSimd engine cannot "
                            "access", p.name, hint="copy it to SBUF first")
    group = b.spec.same_partitions
    names = [p.name for p, _ in tiles] if group is None else [n for n in group if b.tile(n)]
    if len(names) > 1:
        first = b.tile(names[0])
        for n in names[1:]:
            r = b.tile(n)
            if r.partitions != first.partitions:
                yield b.err("E062", f"`{n}` has {r.partitions} partitions but `{names[0]}` has "
                            f"{first.partitions}; they must match", n,
                            hint=f"use a view with {first.partitions} partitions, e.g. "
                                 f"{r.decl.name}[0:{first.partitions}, ...], or declare "
                                 f"{r.decl.name} with that many")


def _buffer_hint(got: str, allowed) -> str:
    if got == "hbm":
        return "load it into an SBUF tile first (- load: {dst: tile, src: " + "hbm_tensor})"
    return "allowed buffers: " + ", ".join(sorted(allowed))


def _dtype_list(names) -> str:
    from .dtypes import FLOAT_NAMES, INT_NAMES
    s = set(names)
    if s == set(FLOAT_NAMES):
        return "a float dtype"
    if s == set(INT_NAMES):
        return "an integer dtype"
    return "one of " + ", ".join(sorted(s)) if len(s) > 1 else next(iter(s))


# ---- program-wide passes ---------------------------------------------------------------------
def _reads_writes(b: Bound):
    reads, writes = [], []
    args = b.args
    for p in param_tables(b.spec).views:
        r = args.get(p.name)
        if isinstance(r, Resolved):
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
                r.decl.name for r in b.args.values() if isinstance(r, Resolved) and r.decl.on_chip)
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
