"""Static validation, generic over the instruction table.

`bind` resolves every operand against the declared tensors and applies each parameter's
declared rules (buffers, dtypes, (P, 1) shape, matching partitions) plus the
instruction's own `check`; `validate` adds the program-wide passes: memory capacity,
dataflow (reads before writes, unused results) and accumulator hazards. Every problem
is reported, not just the first. Nothing here names an instruction.
"""
from __future__ import annotations

import itertools

from nkirun.diagnostics import Diagnostic, Loc, error, warning
from nkirun.checker.bind import bind
from nkirun.checker.psum import psum_hazards
from nkirun.checker.registers import uses_registers
from nkirun.checker.control import read_in_loop
from nkirun.ir import ON_CHIP, Program, View
from nkirun.isa.spec import ACCUMULATORS, Bound
from nkirun.hw.dtypes import NCV4_ONLY
from nkirun.isa.bound import raw_args
from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES, TARGETS
from nkirun.source.tensor_fields import MAX_DIMS


def _tensor_rules(program: Program, max_hbm_bytes: int) -> list[Diagnostic]:
    """A dtype the target lacks (E680, per tensor); the size rules of each tensor (E017,
    E041, W042, E043), then of HBM as a whole.
    The size rules read a tensor's buffer, shape and itemsize only: a layout that passed is
    not checked again (a traced kernel declares 100,000s of tiles of a few layouts)."""
    target = TARGETS[program.target]
    out = []
    passed = set()  # (buffer, shape, itemsize) of tensors that passed
    before_v4 = target.version < 4
    for t in program.tensors.values():
        if before_v4 and t.dtype.name in NCV4_ONLY:
            out.append(error("E680", f"tensor `{t.name}` is {t.dtype.name}, which only "
                             f"NeuronCore-v4 (trn3) has; {target.name} is NeuronCore-v"
                             f"{target.version} (the NKI compiler refuses it there: NCC_EVRF051)",
                             t.key_locs.get("dtype", t.loc),
                             hint="use --target trn3, or float8_e4m3 (its max is 240, not 448)"))
        if len(t.shape) > MAX_DIMS:  # (a YAML declaration says so earlier; a trace here)
            out.append(error("E012", f"tensor `{t.name}`: a shape of {len(t.shape)} "
                             f"dimensions; at most {MAX_DIMS} are supported", t.loc,
                             hint="NKI tiles have a partition dimension and a few free ones"))
            continue
        layout = (t.buffer, t.shape, t.dtype.itemsize)
        if layout in passed:
            continue
        n = len(out)
        _one_tensor_rules(t, target, max_hbm_bytes, out)
        if len(out) == n:
            passed.add(layout)
    return out + _hbm_total(program, max_hbm_bytes)


def _one_tensor_rules(t, target, max_hbm_bytes: int, out: list) -> None:
    """The rules of one tensor (_tensor_rules), appended to `out`."""
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


def _hbm_total(program: Program, max_hbm_bytes: int) -> list[Diagnostic]:
    """The limit bounds all HBM tensors together too: each may fit while their sum, which
    a run allocates at once, does not."""
    hbm = [t for t in program.tensors.values() if t.buffer not in ON_CHIP]  # (not on_chip)
    total = sum(t.nbytes for t in hbm)
    if total <= max_hbm_bytes or any(t.nbytes > max_hbm_bytes for t in hbm):
        return []
    big = max(hbm, key=lambda t: t.nbytes)
    return [error("E043", f"the {len(hbm)} HBM tensors total {total:,} bytes, over the "
                  f"{max_hbm_bytes:,}-byte HBM limit (the largest is `{big.name}`, "
                  f"{big.nbytes:,} bytes)", big.key_locs.get("shape", big.loc),
                  hint="raise the limit with --max-hbm-bytes if this is intended")]


# ---- program-wide passes ---------------------------------------------------------------------
def _acc_hazard(b: Bound, state: dict[str, str]) -> list[Diagnostic]:
    """W052: reduce_cmd=reduce onto the spec's accumulator while it is undefined; updates
    `state` (accumulator name -> undefined / defined / clobbered)."""
    acc, cmd = b.spec.accumulator, b.get("reduce_cmd", b.spec.fixed_reduce_cmd or "idle")
    now, out = state.get(acc, "undefined"), []
    if cmd == "reduce" and now != "defined":
        why = ("an earlier idle op may have modified it" if now == "clobbered"
               else "nothing reset it")
        from nkirun.isa.accumulators import undefined_warning
        out.append(undefined_warning(b, ACCUMULATORS[acc].engine, why))
    if cmd in ("reset", "reset_reduce", "load_reduce"):
        state[acc] = "defined"
    elif cmd == "idle" and now == "defined" and ACCUMULATORS[acc].idle_may_modify:
        state[acc] = "clobbered"
    return out


def _dataflow(program: Program, bound: list[Bound], failed: set[int]) -> list[Diagnostic]:
    """E050, W051 and the accumulator hazards. `failed`: indices of instructions that had
    errors. One problem gets one diagnostic: a tensor such an instruction names may have
    lost its writer or its reader to the error, so it gets no E050 and no W051."""
    out = []
    defined = {n for n, t in program.tensors.items() if t.init is not None}
    lost = _named_by(program, failed) if failed else set()
    defined |= lost
    # tensor -> its last write when nothing read it since, else None, in the order the
    # tensors first appear. A tensor in it is defined (written, or read and reported once):
    # `defined` keeps only the others (one dict, not three: a traced kernel has 100,000s
    # of tiles)
    unread: dict[str, Bound | None] = {}
    acc_states: dict = {}  # core -> {accumulator -> undefined / defined / clobbered}
    for b in bound:
        args = raw_args(b)  # (names_plan())
        names = args.names
        plan = args.plan if names is not None else None
        if plan is None:
            plan, names = b.names_plan()  # (tensor_names() without spelling it out)
        n_reads = len(plan[0])
        for key, n in zip(plan[0], names):  # the reads
            if n not in unread and n not in defined:
                out.append(b.err("E050", f"`{key}` reads `{n}` before anything writes it", key,
                                 hint=f"give `{n}` initial contents (file, fill or data), or "
                                      "write it in an earlier instruction"))
            unread[n] = None  # (reported once)
        for n in names[n_reads:]:  # the writes
            unread[n] = b
        if b.spec.accumulator is not None:
            out += _acc_hazard(b, acc_states.setdefault(b.inst.core, {}))
    for n, b in unread.items():
        if b is not None and not program.tensors[n].output and n not in lost:
            if program.loops and read_in_loop(program, bound, n, b.index):
                continue  # read again by the next iteration of the loop around the write
            out.append(warning("W051", f"`{n}` is written by {b.op} (instruction {b.index}) but "
                               "never read afterwards and not an output", b.loc(), b.index,
                               hint="mark it `output: true`, or drop the write"))
    return out


def _named_by(program: Program, indices: set[int]) -> set[str]:
    """The tensors the operands of these instructions name (resolved or not); for a name
    that is not declared, also the declared name it probably meant (E026's did-you-mean)."""
    names = set()
    for inst in (*program.instructions, *program.partial):
        if inst.index in indices:
            names.update(v.tensor for v in inst.args.values() if isinstance(v, View))
    for n in [n for n in names if n not in program.tensors]:
        import difflib  # an error path only
        names.update(difflib.get_close_matches(n, list(program.tensors), n=1, cutoff=0.6))
    return names


def _deltas(program: Program, bound: list[Bound]) -> dict:
    """buffer -> the change of its live bytes per partition at each instruction."""
    if program.loops:  # a tensor used in a loop body and live before it stays live through it
        from nkirun.checker.control import widen_live
        first, last = _first_last(program, bound)
        widen_live(program.loops, first, last, bound)
        return _span_deltas(program, first, last, len(bound))
    return _live_deltas(program, bound)


def live_peaks(program: Program, bound: list[Bound]) -> dict[str, int]:
    """buffer -> its peak live bytes per partition (schedule/spills.py), every buffer from
    one pass over the instructions."""
    n = len(bound)
    return {buf: max(itertools.accumulate(itertools.islice(d, n)), default=0)
            for buf, d in _deltas(program, bound).items()}


def _capacity(program: Program, bound: list[Bound]) -> list[Diagnostic]:
    """Peak per-partition SBUF/PSUM use over the program, tensors live first to last use."""
    target = TARGETS[program.target]
    n = len(bound)
    delta = _deltas(program, bound)
    out = []
    for buf, cap in (("sbuf", target.sbuf_bytes_per_partition),
                     ("psum", target.psum_bytes_per_partition)):
        peak, peak_at = _peak_live(delta.get(buf, ()), n)
        if peak > cap:  # spilled (W047) unless the kernel places tensors itself (E041)
            from nkirun.checker.capacity import over_capacity
            out += over_capacity(program, bound, buf, cap, peak, peak_at, target.name,
                                 _live_at_peak(program, bound, buf, peak_at, target))
    return out


def _live_at_peak(program: Program, bound: list, buf: str, at: int, target) -> str:
    """E041's detail: the tiles live at the peak, largest first (where each was allocated,
    bytes per partition) and, for PSUM, the 2 KiB banks they take."""
    first, last = _first_last(program, bound)
    if program.loops:
        from nkirun.checker.control import widen_live
        widen_live(program.loops, first, last, bound)
    live = sorted((t for n, t in program.tensors.items() if t.buffer == buf
                   and first.get(n, at + 1) <= at <= last.get(n, -1)),
                  key=lambda t: -t.bytes_per_partition)
    shown = [f"`{t.name}` ({t.loc.line and f'line {t.loc.line}, '}"
             f"{t.bytes_per_partition:,} B)" for t in live[:8]]
    more = f" and {len(live) - 8} more" if len(live) > 8 else ""
    text = f"; live then: {', '.join(shown)}{more}" if shown else ""
    if buf == "psum":
        bank = target.psum_bank_bytes
        banks = sum(-(-t.bytes_per_partition // bank) for t in live)
        text += (f"; they take {banks} PSUM banks of {bank:,} bytes, the partition has "
                 f"{target.psum_bytes_per_partition // bank}")
    return text


def _first_last(program: Program, bound: list[Bound]) -> tuple[dict, dict]:
    """({on-chip tensor: first use}, {on-chip tensor: last use}), positions in bound; a
    tensor with contents is live from 0, an output to the end."""
    n = len(bound)
    first, last = {}, {}
    for t in program.tensors.values():
        if t.on_chip and (t.init is not None):
            first[t.name] = 0
        if t.on_chip and t.output:
            last[t.name] = n - 1
    for i, b in enumerate(bound):
        plan, names = b.names_plan()
        for name in map(names.__getitem__, plan[2]):  # each on-chip tensor it reads/writes
            first.setdefault(name, i)
            if last.get(name, i) <= i:  # an output's last use stays the end
                last[name] = i
    return first, last


def _add_span(delta: dict, t, f: int | None, last_use: int | None, n: int) -> None:
    """Count tensor t live from instruction f to last_use in delta (buffer -> change of its
    live bytes at each instruction); None: that end is counted by another call. t None:
    another core's (reported as E633)."""
    if t is not None and t.buffer in ("sbuf", "psum"):
        d = delta.get(t.buffer)
        if d is None:
            d = delta[t.buffer] = [0] * (n + 2)  # +2: used at 0 with n == 0
        size = _bytes_per_partition(t)
        if f is not None:
            d[f] += size
        if last_use is not None:
            d[last_use + 1] -= size


def _bytes_per_partition(t) -> int:
    """t.bytes_per_partition, remembered per (shape, itemsize): a traced kernel's tiles
    share a few."""
    key = (t.shape, t.dtype.itemsize)
    size = _SIZES.get(key)
    if size is None:
        size = t.bytes_per_partition
        if len(_SIZES) < 10_000:
            _SIZES[key] = size
    return size


_SIZES: dict = {}


def _span_deltas(program: Program, first: dict, last: dict, n: int) -> dict:
    """_add_span for each tensor of _first_last's live ranges (the definition)."""
    delta: dict = {}
    for name, f in first.items():
        _add_span(delta, program.tensors.get(name), f, last.get(name, f), n)
    return delta


def _live_deltas(program: Program, bound: list[Bound]) -> dict:
    """_span_deltas(program, *_first_last(program, bound), n) with one dict of names and
    no ints kept per tensor (a traced kernel has 100,000s of tiles): a tensor's first use
    counts where a forward pass meets it, its last use where a backward pass does. The
    dict holds per tensor its span (_span: its buffer's changes, its bytes per partition;
    None: not counted), found once per layout, so the backward pass looks nothing up."""
    n, tensors, delta, spans = len(bound), program.tensors, {}, {}
    live = {t.name: _span(delta, spans, t, n) for t in tensors.values()
            if t.init is not None and t.on_chip}  # (tiles have no contents: one test)
    for span in live.values():  # contents: live from the start
        if span is not None:
            span[0][0] += span[1]
    for i, b in enumerate(bound):
        args = raw_args(b)  # (names_plan())
        names = args.names
        plan = args.plan if names is not None else None
        if plan is None:
            plan, names = b.names_plan()
        for name in map(names.__getitem__, plan[2]):  # each on-chip tensor it reads/writes
            if name not in live:
                span = live[name] = _span(delta, spans, tensors.get(name), n)
                if span is not None:
                    span[0][i] += span[1]
    outputs = {t.name for t in tensors.values() if t.output and t.on_chip}
    ended = object()
    for i in range(n - 1, -1, -1):
        b = bound[i]  # (names_plan() was computed by the forward pass)
        args = raw_args(b)
        plan, names = args.plan, args.names
        for name in map(names.__getitem__, plan[2]):
            span = live.pop(name, ended)
            if span is not ended and span is not None:  # its last use
                span[0][(n if name in outputs else i + 1)] -= span[1]
    for name, span in live.items():  # contents, never used: live at 0 (an output to the end)
        if span is not None:
            span[0][n if name in outputs else 1] -= span[1]
    return delta


def _span(delta: dict, spans: dict, t, n: int):
    """(delta's list for t's buffer, t's bytes per partition) as _add_span counts them, one
    tuple per layout (kept in spans); None when _add_span does not count t."""
    if t is None or t.buffer not in ("sbuf", "psum"):
        return None
    key = (t.buffer, t.shape, t.dtype.itemsize)
    span = spans.get(key)
    if span is None:
        d = delta.get(t.buffer)
        if d is None:
            d = delta[t.buffer] = [0] * (n + 2)  # +2: used at 0 with n == 0
        span = spans[key] = (d, _bytes_per_partition(t))
    return span


def _peak_live(delta: list, n: int) -> tuple:
    """(the peak of the running sum of delta over instructions 0..n-1, the first
    instruction at it); the sum is not kept as a list (a traced kernel has 100,000s of
    instructions: those lists and their ints were its check's peak memory)."""
    peak = max(itertools.accumulate(itertools.islice(delta, n)), default=0)
    if peak <= 0:
        return peak, 0
    return peak, next(i for i, v in enumerate(itertools.accumulate(delta)) if v == peak)


def _peak_live_plain(delta: list, n: int) -> tuple:
    """_peak_live's definition: the running sum at every instruction (tests only)."""
    live = list(itertools.accumulate(delta[:n]))
    peak = max(live, default=0)
    return peak, (live.index(peak) if peak > 0 else 0)


def validate(program: Program, max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES):
    """All diagnostics for a parsed program; returns (bound instructions, diagnostics)."""
    diags = _tensor_rules(program, max_hbm_bytes)
    bound, d = bind(program, max_hbm_bytes)
    diags.extend(d)
    failed = set(program.dropped)
    failed.update(x.instruction for x in diags if x.is_error and x.instruction is not None)
    if len(bound) < len(program.instructions) + len(program.partial):
        # bind leaves out instructions naming a tensor whose declaration failed
        kept = {b.index for b in bound}
        failed.update(i.index for i in program.instructions if i.index not in kept)
    from nkirun.checker.cores import check_cores, per_core
    in_order, more = check_cores(program, bound)  # two cores: both streams in run order
    diags.extend(more)
    diags.extend(_dataflow(program, in_order, failed))
    if program.loops or uses_registers(program):  # registers, loops: checker/control.py
        from nkirun.checker.control import check_control
        diags.extend(check_control(program, bound))
    diags.extend(psum_hazards(program, bound))
    if not any(x.code in ("E017", "E041") for x in diags):
        for one_core, its_bound in per_core(program, bound):  # each core has its own SBUF
            diags.extend(_capacity(one_core, its_bound))
    return bound, diags


def sort_key(d: Diagnostic):
    return (d.loc.file, d.loc.line or 0, d.loc.column or 0)


__all__ = ["validate", "bind", "sort_key", "Loc"]
