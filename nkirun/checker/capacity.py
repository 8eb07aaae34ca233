"""A live SBUF/PSUM set over capacity: what the compiler spills, or E041.

Where the compiler places tensors itself (a kernel that pins no address: no
`nki.compiler.sbuf/psum` allocator, no `address=`; every YAML/text program), live data
over an on-chip memory's capacity is spilled: "the Neuron compiler will insert the
necessary spills or refills between that memory and the next-tier memory in the
hierarchy" (NKI memory hierarchy page,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/get-started/about/memory-hierarchy-overview.html;
the profiler's `spill_save_bytes` / `spill_reload_bytes`, nki_perf_guide). That is warning
W047, naming the peak and its largest tiles; `spill_plan` estimates the traffic, which
`nkirun cost` books on the DMA queues (schedule/spills.py).

E041 stays where nothing can be spilled: a kernel that places its tensors itself, and one
instruction whose own on-chip operands exceed the capacity (they must all be resident),
unless it is elementwise (its SPEC's `free_split`): the compiler can issue such an
instruction in free-axis pieces, as nki-library's cross_entropy_forward needs on trn2 (two
(64, 65535) bfloat16 tiles, 262,140 bytes per partition, in one tensor_scalar; its
pre-commit tests run that shape on the default trn2 target,
https://github.com/aws-neuron/nki-library test/integration/nkilib/experimental/loss).
The spill estimate is nkirun's, not the compiler's: Belady's rule (evict the tensor used
again furthest ahead; store it once while it is dirty, reload it before its next use).
"""
from __future__ import annotations

import heapq

from nkirun.diagnostics import Diagnostic, error, warning
from nkirun.isa.bound import raw_args

def _uses(program, bound, buf: str) -> tuple[dict, list]:
    """({tensor: [instruction positions using it]}, [(tensors used, tensors written,
    tensors read, whether it is a load: a DMA reading no on-chip tensor)] per instruction)
    for the tensors of buffer `buf`; a tensor with contents is used at 0, an output at the
    end."""
    tensors = program.tensors
    uses: dict[str, list[int]] = {}
    per: list = []
    for i, b in enumerate(bound):
        args = raw_args(b)
        plan, names = (args.plan, args.names) if args.names is not None else (None, None)
        if plan is None:
            plan, names = b.names_plan()
        n_reads = len(plan[0])
        here, wrote, read = {}, set(), set()  # (here: in operand order, so that spills
        # at one instruction come in an order of the program's, not of string hashes)
        load = b.engine == "dma" and all(pos >= n_reads for pos in plan[2])
        for pos, name in enumerate(names):  # (plan[2] lists a tensor read and written once)
            t = tensors.get(name)
            if t is None or t.buffer != buf:
                continue
            here[name] = None
            (wrote if pos >= n_reads else read).add(name)
        for name in here:
            uses.setdefault(name, []).append(i)
        per.append((here, wrote, read, load))
    n = len(bound)
    for t in tensors.values():
        if t.buffer == buf and t.name in uses:
            if t.init is not None and uses[t.name][0] != 0:
                uses[t.name].insert(0, 0)
            if t.output and uses[t.name][-1] != n - 1:
                uses[t.name].append(n - 1)
    return uses, per


def _size(t) -> int:
    return t.bytes_per_partition


def spill_plan(program, bound, buf: str, cap: int) -> dict:
    """Belady's spill schedule for buffer `buf` (per partition capacity `cap`):
    {"events": [(position, "save" | "reload", tensor, bytes)], "save_bytes", "reload_bytes",
    "too_big": (position, bytes per partition) of an instruction whose operands alone
    exceed cap, or None; "split": [(position, bytes per partition)] of the elementwise ones
    the compiler issues in free-axis pieces}. Bytes are whole-tensor bytes (all partitions).
    An elementwise instruction whose operands together exceed cap (each alone fits) streams
    the excess through the next memory: one save and one reload of it, nkirun's estimate.
    A tile that is a copy of HBM data (written by a load, not modified since) needs no save:
    it is loaded again from its source; one evicted before anything read it costs nothing
    (the compiler issues the load later, where the room is)."""
    uses, per = _uses(program, bound, buf)
    b = _Belady(program.tensors, uses, cap)
    for i, (here, wrote, read, load) in enumerate(per):
        need = sum(b.bring(name, i) for name in here)
        b.fresh -= read
        if load:
            b.dirty -= wrote
            b.fresh |= wrote
        else:
            b.dirty |= wrote
            b.fresh -= wrote
        if need > cap:
            if _streams(bound[i], here, b, cap):
                b.stream(i, here, wrote, need - cap)
            elif b.out["too_big"] is None:
                b.out["too_big"] = (i, need)
        b.evict(here, i)
        b.free_dead(here)
    return b.out


def _streams(b, here: dict, belady, cap: int) -> bool:
    """Whether instruction `b`, whose operands `here` do not fit together, can be issued in
    free-axis pieces: elementwise (its SPEC's free_split), each operand fitting alone."""
    split = b.spec.free_split
    return (split is not None and split(b)
            and all(belady.resident[name] <= cap for name in here))


class _Belady:
    """spill_plan's state: the resident tiles, the evicted ones and the next uses."""

    def __init__(self, tensors, uses: dict, cap: int):
        self.tensors, self.uses, self.cap = tensors, uses, cap
        self.nxt = {name: 0 for name in uses}  # index into uses[name] of the next use
        self.resident: dict[str, int] = {}     # name -> bytes per partition
        self.spilled: set[str] = set()         # evicted; its next use reloads it
        self.dirty: set[str] = set()           # written by a compute (or from on-chip data)
        self.fresh: set[str] = set()           # loaded from HBM and not read since
        self.heap: list = []                   # (-next use, name)
        self.used = 0
        self.out = {"events": [], "save_bytes": 0, "reload_bytes": 0, "too_big": None,
                    "split": []}

    def stream(self, i: int, here: dict, wrote: set, over: int) -> None:
        """Book `over` bytes per partition of instruction i's operands as saved and reloaded
        (the pieces that did not fit), named after its largest output (else operand)."""
        pool = (wrote & here.keys()) or here.keys()
        name = max(sorted(pool), key=lambda n: self.resident[n])
        t = self.tensors[name]
        nbytes = over * (t.nbytes // max(_size(t), 1))
        self.out["split"].append((i, over + self.cap))
        self.out["events"] += [(i, "save", name, nbytes), (i, "reload", name, nbytes)]
        self.out["save_bytes"] += nbytes
        self.out["reload_bytes"] += nbytes

    def bring(self, name: str, i: int) -> int:
        """Make `name` resident for instruction i (reloading it if it was spilled);
        returns its bytes per partition."""
        t = self.tensors[name]
        if name not in self.resident:
            if name in self.spilled:
                self.spilled.discard(name)
                self.out["events"].append((i, "reload", name, t.nbytes))
                self.out["reload_bytes"] += t.nbytes
            self.resident[name] = _size(t)
            self.used += self.resident[name]
        lst, k = self.uses[name], self.nxt[name]
        while k < len(lst) and lst[k] <= i:
            k += 1
        self.nxt[name] = k
        if k < len(lst):
            heapq.heappush(self.heap, (-lst[k], name))
        return self.resident[name]

    def evict(self, here: dict, i: int) -> None:
        """Evict the tiles used again furthest ahead until the rest fit (none of `here`)."""
        while self.used > self.cap and self.heap:
            neg, name = heapq.heappop(self.heap)
            if name not in self.resident or name in here:
                continue
            k = self.nxt[name]
            if k >= len(self.uses[name]) or self.uses[name][k] != -neg:
                continue  # a stale entry
            t = self.tensors[name]
            if name in self.dirty:
                self.out["events"].append((i, "save", name, t.nbytes))
                self.out["save_bytes"] += t.nbytes
                self.dirty.discard(name)
            if name not in self.fresh:  # (a load nothing read yet: the load moves)
                self.spilled.add(name)
            self.used -= self.resident.pop(name)

    def free_dead(self, here: dict) -> None:
        """The tiles of `here` whose last use this was leave."""
        for name in here:
            if self.nxt[name] >= len(self.uses[name]) and name in self.resident:
                self.used -= self.resident.pop(name)
                self.dirty.discard(name)
                self.fresh.discard(name)


def explicit(program) -> bool:
    """Whether the program places its on-chip tensors itself (nothing can spill)."""
    return program.placement == "explicit"


def over_capacity(program, bound, buf: str, cap: int, peak: int, at: int,
                  target_name: str, live: str) -> list[Diagnostic]:
    """E041 or W047 for a live set of `peak` bytes per partition at position `at`; `live`
    names the tiles live there (passes._live_at_peak)."""
    b = bound[at]
    head = (f"live {buf.upper()} tensors need {peak:,} bytes per partition at instruction "
            f"{at} ({b.op}); {target_name} has {cap:,}")
    if explicit(program):
        return [error("E041", head + live + "; this kernel places its tensors itself, so "
                      "nothing spills", b.loc(), at,
                      hint="finish with a tile before the next is first used (a tile lives "
                           "from its first to its last use), reuse tiles, or split the "
                           "work into smaller tiles")]
    plan = spill_plan(program, bound, buf, cap)
    if plan["too_big"] is not None:
        i, need = plan["too_big"]
        bi = bound[i]
        return [error("E041", f"the {buf.upper()} operands of instruction {i} ({bi.op}) "
                      f"need {need:,} bytes per partition together; {target_name} has "
                      f"{cap:,} (they must all be resident, none can spill)", bi.loc(), i,
                      hint="split the instruction's operands into smaller tiles")]
    split = ""
    if plan["split"]:
        i, need = plan["split"][0]
        more = f" (and {len(plan['split']) - 1} more)" if len(plan["split"]) > 1 else ""
        split = (f"; the operands of instruction {i} ({bound[i].op}){more} need {need:,} "
                 f"bytes per partition together: an elementwise instruction, which the "
                 f"compiler issues in free-axis pieces")
    mb = (plan["save_bytes"] + plan["reload_bytes"]) / 1e6
    nxt = "SBUF" if buf == "psum" else "HBM"
    estimate = (f"nkirun's estimate: {plan['save_bytes'] / 1e6:,.2f} MB saved and "
                f"{plan['reload_bytes'] / 1e6:,.2f} MB reloaded ({mb:,.2f} MB of DMA, costed "
                "by `nkirun cost`)" if plan["events"] else
                "nkirun's estimate: no spill traffic, as the tiles over capacity are loads "
                "nothing read yet, which the compiler can issue later")
    return [warning("W047", f"{head}{live}: the compiler spills to {nxt} or reorders"
                    f"{split}. {estimate}", b.loc(), at,
                    hint="allocate tiles inside the loop that uses them, or tile the long "
                         "dimension, so fewer are live at once")]
