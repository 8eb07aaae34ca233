"""Binding: each instruction's operands resolved against the tensors and its declared rules applied.

Interning (checker/intern.py): the rules are functions of the bound values alone, so an
instruction bound to the very same values as an earlier one that passed them passes them
too (traces repeat instructions; the front ends share equal values). It then shares that
instruction's immutable Operands. `passed` is keyed by the values, `passed_at` by
instruction index (for Instruction.repeat_of), `passed_form` by the values up to tensor
names (a loop's new tile each iteration): such an instruction gets its own Operands but no
rule is run again. The plain path (`bind(..., fast=False)`) is the definition;
tests/checker/test_repeat_paths.py and test_fast_bind.py check the shortcuts give the same
results.
"""
from __future__ import annotations

import dataclasses
import itertools

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.diagnostics import Diagnostic, error
from nkirun.hw.alu import NOT_ON_HARDWARE
from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES, TARGETS
from nkirun.ir import ON_CHIP, Program, View
from nkirun.isa import REGISTRY
from nkirun.isa.bound import Bound, Operands
from nkirun.checker.families import Families
from nkirun.checker.intern import Templates, Views, form_key
from nkirun.isa.spec import param_tables, views_of
from nkirun.views import access
from nkirun.views.operands import resolve


# (split, a call per instruction would cost what the shortcuts below save)
# long: check's per-instruction loop, its shortcuts sharing locals
def bind(program: Program, max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES, fast: bool = True
         ) -> tuple[list[Bound], list[Diagnostic]]:
    """Resolve operands and apply the per-parameter and per-instruction rules.
    `fast=False` takes the plain path for every instruction (the definition; tests only)."""
    bound, diags = [], []
    views = Views() if fast else None
    forms = Templates(program.dropped, views) if fast else None  # call-site forms
    families = Families(views.token) if fast and speed.OFFSET_FAMILIES else None
    passed: dict = {}  # interning: see the module docstring
    passed_form: dict = {}
    passed_at: dict = {}
    per_op: dict = {}  # op -> (spec, its view Params, {param: None}): looked up once per op
    # (kept only for the instructions a later one repeats: memory follows what is used)
    repeated = {i.repeat_of for i in program.instructions if i.repeat_of is not None}
    target = TARGETS[program.target]
    # Instructions the front end dropped for a bad keyword come last (`program.partial`,
    # with the keywords that did convert): their operands are still resolved and checked
    # against the per-parameter rules, so one bad keyword does not hide other errors.
    for inst in itertools.chain(program.instructions, program.partial):
        b = forms.bind(inst, program, target) if fast else None
        if b is not None:  # a later instruction of a call-site form that passed
            bound.append(b)
            continue
        like = passed_at.get(inst.repeat_of) if fast else None
        if like is not None:  # its views resolve to the same Resolved: no need to look
            like.args.shared = True
            bound.append(Bound(inst, like.spec, like.args, None, like.engine, target))
            continue
        spec, view_params, blank = per_op.get(inst.op) or _op_tables(per_op, inst.op)
        args = blank.copy()  # every param: given values over None
        args.update(inst.args)
        ok = _resolve_views(inst, args, view_params, program, views, diags)
        ok = ok and inst.index not in program.dropped
        same = (spec.name, *map(id, args.values())) if ok and fast else None
        like = passed.get(same)
        if like is not None:
            like.args.shared = True
            b = Bound(inst, spec, like.args, None, like.engine, target)
            forms.adopt(inst, b)
            bound.append(b)
            continue
        form = form_key(spec.name, args.values(), views.token) if same is not None else None
        like = passed_form.get(form) if form is not None else None
        if like is not None:
            b = Bound(inst, spec, Operands(args, like.args.form), None, like.engine, target)
            if inst.index in repeated:  # (not under `same`: a new tile's ids do not recur)
                passed_at[inst.index] = b
            forms.adopt(inst, b)
            bound.append(b)
            continue
        b = Bound(inst, spec, Operands(args, None if form is None else {}), None, "", target)
        family = families.key(spec.name, list(args.values())) if form is not None and \
            families is not None and args.get("mask") is None else None
        known = families.engine(family, list(args.values())) if family is not None else None
        if known is not None:  # a known offset family: its rules do not read these offsets
            b.engine, ok = known[0], True
            if known[1] is not None:
                b.args.form["names_plan"] = known[1]
        else:
            n0 = len(diags)
            ok = _apply_rules(b, ok, diags, program, max_hbm_bytes)
            if ok is None:  # an operand or keyword failed: b is left out
                continue
            if ok and family is not None and len(diags) == n0:
                families.learn(family, b, list(args.values()), _twin_rules(program, max_hbm_bytes))
        if ok and args.get("mask") is None and same is not None:
            forms.put(inst, b)
            passed[same] = b
            if inst.index in repeated:
                passed_at[inst.index] = b
            if form is not None:
                passed_form[form] = b
        bound.append(b)
    return bound, diags


def _twin_rules(program: Program, max_hbm_bytes: int):
    """Families.learn's `rules`: every rule applied to a twin, True when all passed and
    nothing was reported."""
    def rules(twin: Bound) -> bool:
        found: list = []
        return _apply_rules(twin, True, found, program, max_hbm_bytes) is True and not found
    return rules


def _op_tables(per_op: dict, op: str) -> tuple:
    """(spec, its view Params, {param: None}) of op, kept in per_op."""
    spec = REGISTRY[op]
    tables = param_tables(spec)
    hit = per_op[op] = (spec, tables.views, dict.fromkeys(tables.names))
    return hit


def _apply_rules(b: Bound, ok: bool, diags: list, program: Program, max_hbm_bytes: int):
    """The plain path for one instruction: its engine, the rules of each parameter, then
    (when every operand and keyword was fine: `ok`) the instruction's own check and its
    mask. Returns None when not ok, else whether b passed every rule."""
    spec = b.spec
    b.engine = spec.engine_of(b) if (ok and spec.engine_of) else spec.engine
    n0 = len(diags)
    diags.extend(_param_rules(b))
    if not ok:  # only the rules of each parameter apply
        return None
    if len(diags) == n0 and spec.check is not None:
        diags.extend(spec.check(b))
    passed = len(diags) == n0
    for name in _op_params(spec):
        if b.get(name) in NOT_ON_HARDWARE:
            diags.append(b.warn("W602", f"`{name}` {b.get(name)}: NKI documents nl.mod / "
                                "nl.fmod, but its release notes say modulo is no hardware "
                                "instruction (they fail when compiled for Trainium); nkirun "
                                "computes NumPy's", name,
                                hint="fine for a simulation; a kernel meant for hardware "
                                     "needs another way to compute it"))
    if b.get("mask") is not None and _fits(b.tile(spec.mask_on), program, max_hbm_bytes):
        # (a mask is an array the size of its tile: never built over a refused tensor)
        from nkirun.isa.mask import compile_mask
        b.mask, d = compile_mask(b)
        if d is not None:
            diags.append(d)
    return passed


def _resolve_views(inst, args: dict, view_params, program: Program, views: Views | None,
                   diags: list) -> bool:
    """Replace each view operand in `args` by its Resolved; False if one cannot be (its
    diagnostic is added and the operand left out)."""
    ok = True
    by_view = views.by_view if views is not None else None
    for p in view_params:
        v = args[p.name]
        if isinstance(v, tuple) and v and isinstance(v[0], View):  # a TILE_LIST
            rs = tuple(_resolve_item(x, p, inst, program, diags) for x in v)
            if any(r is None for r in rs):
                ok = False
                del args[p.name]
            else:
                args[p.name] = rs
            continue
        if not isinstance(v, View):
            continue
        r = by_view.get((v.tensor, id(v.index))) if views is not None else None
        decl = program.tensors.get(v.tensor) if r is None else None
        if r is None and decl is not None and views is not None:
            r = views.get(v.tensor, v.index, decl)
        if r is None:
            if decl is None:
                ok = False
                if v.tensor not in program.invalid_tensors:
                    from nkirun.diagnostics import did_you_mean
                    diags.append(error(
                        "E026", f"{inst.op}: unknown tensor `{v.tensor}` (in `{p.name}`)",
                        inst.arg_loc(p.name), inst.index,
                        hint=did_you_mean(v.tensor, program.tensors) or "declare it under `tensors:`"))
                del args[p.name]
                continue
            r, d = _resolve(View(v.tensor, v.index, inst.arg_loc(p.name)), decl, program)
            if d is not None:
                diags.append(_with_instruction(d, inst.op, inst.index))
                ok = False
                del args[p.name]
                continue
            if views is not None:
                views.put(v.tensor, v.index, decl, r)
        if p.per_partition and len(r.shape) > 2 and r.free_size == 1:
            # a (P, 1, 1) column serves as the (P, 1) tile the instruction computes with
            r = _as_column(r) if views is None else views.narrow(r, _as_column)
        args[p.name] = r
    return ok


def _as_column(r):
    return dataclasses.replace(r, shape=(r.partitions, 1), reshape=True)


def _resolve_item(v: View, p, inst, program: Program, diags: list):
    """The Resolved view of one element of a TILE_LIST param, or None after a diagnostic."""
    decl = program.tensors.get(v.tensor)
    if decl is None:
        if v.tensor not in program.invalid_tensors:
            from nkirun.diagnostics import did_you_mean
            diags.append(error(
                "E026", f"{inst.op}: unknown tensor `{v.tensor}` (in `{p.name}`)",
                inst.arg_loc(p.name), inst.index,
                hint=did_you_mean(v.tensor, program.tensors) or "declare it under `tensors:`"))
        return None
    r, d = _resolve(View(v.tensor, v.index, inst.arg_loc(p.name)), decl, program)
    if d is not None:
        diags.append(_with_instruction(d, inst.op, inst.index))
    return r


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


def _resolve(view: View, decl, program: Program):
    """resolve(), plus the index view of an indirect access pattern."""
    r, d = resolve(view, decl)
    if r is not None and r.ap is not None and r.ap.indirect is not None:
        from nkirun.views.indirect import bind_index
        from nkirun.checker.registers import declared
        r, msg = bind_index(r, program.tensors, resolve, declared(program))
        if r is None:
            return None, error("E035", f"view {view}: {msg}", view.loc,
                               hint="the index is an SBUF tensor of an integer dtype: (P, 1) "
                                    "for vector_offset, (1, 1) for scalar_offset")
    return r, d


def _with_instruction(d: Diagnostic, op: str, index: int) -> Diagnostic:
    return Diagnostic(d.severity, d.code, f"{op}: {d.message}", d.loc, index, d.hint)


_OP_PARAMS: dict = {}  # instruction -> its operator keywords (op, op0, ...)


def _op_params(spec) -> tuple:
    hit = _OP_PARAMS.get(spec.name)
    if hit is None:
        hit = _OP_PARAMS[spec.name] = tuple(p.name for p in spec.params if p.kind.name == "op")
    return hit


def _param_rules(b: Bound):
    tiles = []
    args = b.args
    for p, r in ((p, r) for p in param_tables(b.spec).views for r in views_of(args.get(p.name))):
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
        if r.dtype.packed > 1 and not b.spec.packed_copy and (
                p.dtypes is None or r.dtype.name not in p.dtypes):
            yield b.err("E490", f"`{p.name}` ({r.decl.name}) is {r.dtype.name}, four MX values "
                        f"packed per element; {b.op} does not compute on packed elements", p.name,
                        hint="quantize_mx writes and nc_matmul_mx reads x4 tiles; load, store, "
                             "dma_copy, tensor_copy and sendrecv copy their bits; memset fills "
                             "them with 0")
        if p.per_partition and r.free_size != 1:
            yield b.err("E061", f"`{p.name}` must hold one element per partition, shape (P, 1); "
                        f"got {list(r.shape)}", p.name,
                        hint=f"use a column view such as {r.decl.name}[:, 0:1]")
        if r.ap is not None and r.ap.indirect is not None and b.engine != "dma":
            yield b.err("E035", f"`{p.name}` uses indirect addressing (scalar_offset/"
                        "vector_offset), which only DMA instructions have", p.name,
                        hint="move the data with dma_copy first")
        if p.out and r.ap is not None and r.ap.overlapping and not (
                p.zero_steps and access.only_zero_steps(r.ap)):
            yield b.err("E039", f"`{p.name}` writes through an access pattern that addresses "
                        "some element more than once (a zero or overlapping step)", p.name,
                        hint=_overlap_hint(r.ap))
    if b.spec.packed_copy and len({r.dtype.name for _, r in tiles}) > 1:
        packed = [(p, r) for p, r in tiles if r.dtype.packed > 1]
        if packed:
            p, r = packed[0]
            yield b.err("E491", f"`{p.name}` is {r.dtype.name} but the other operand is not: "
                        "x4-packed MX data is copied bit for bit, never converted", p.name,
                        hint="give both tiles the same x4 dtype; quantize_mx converts to MX")
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
    from nkirun.hw.dtypes import FLOAT_NAMES, INT_NAMES
    s = set(names)
    if s == set(FLOAT_NAMES):
        return "a float dtype"
    if s == set(INT_NAMES):
        return "an integer dtype"
    return "one of " + ", ".join(sorted(s)) if len(s) > 1 else next(iter(s))


def _overlap_hint(s) -> str:
    """E039's hint (a Param with zero_steps, activation_reduce's dst, may have them)."""
    if any(st == 0 and n > 1 for st, n in zip(s.byte_strides, s.shape)):
        return ("a written view must address each element once; zero steps (broadcast) are "
                "for operands that are read (and activation_reduce's dst); write a scratch "
                "tile of the data's shape instead")
    return "a written view must address each element once"

