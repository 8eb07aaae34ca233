"""The compiler's spills as DMA traffic (checker/capacity.py says when and what).

When the live SBUF (or PSUM) set of a compiler-placed program exceeds the capacity, the
compiler stores tensors to the next memory and reloads them before their next use
(`spill_save_bytes` / `spill_reload_bytes` in neuron-profile, nki_perf_guide). nkirun books
each save and reload of checker/capacity.py's plan on the DMA engines like a transfer of
that many bytes over all 16 engines (the profile's spill rows, `qSyncSpillReload`, are DMA
queues):

* a save starts when the tensor's last write before it has ended; the instruction that
  needed the room waits for it;
* a reload starts once its save has ended and the instruction before the reading one has
  started (the compiler reloads shortly before the use), and the reading instruction waits
  for it.

A PSUM spill goes to SBUF; nkirun books it on the same DMA engines (an assumption, said in
the notes). Two-core programs and programs with runtime loops are not costed with spills.
"""
from __future__ import annotations

from nkirun.hw.cost_tables import cost_table
from nkirun.hw.targets import Target
from nkirun.schedule.model import SPILL


def spill_events(program, bound, target: Target) -> dict[int, list]:
    """{position in bound: [(kind, tensor, bytes, buffer)]} for every on-chip buffer whose
    live set exceeds the capacity in a compiler-placed program (empty otherwise)."""
    from nkirun.checker.capacity import explicit, spill_plan
    from nkirun.checker.passes import live_peaks
    if explicit(program) or program.cores > 1 or program.loops or not bound:
        return {}  # (runtime loops: the schedule's sequence is not the bound program's)
    out: dict[int, list] = {}
    peaks = live_peaks(program, bound)
    for buf, cap in (("sbuf", target.sbuf_bytes_per_partition),
                     ("psum", target.psum_bytes_per_partition)):
        if peaks.get(buf, 0) <= cap:
            continue
        plan = spill_plan(program, bound, buf, cap)
        if plan["too_big"] is not None:
            continue  # E041: check refuses it
        for pos, kind, name, nbytes in plan["events"]:
            out.setdefault(pos, []).append((kind, name, nbytes, buf))
    return out


def transfer_shares(nbytes: int, target: Target) -> tuple:
    """(engine shares, latency ns, HBM ns) of a spill transfer: all engines alike, rows
    as long as the tile's partition row (one descriptor each)."""
    t = cost_table(target)
    per_engine = nbytes / t.dma_engines
    ns = per_engine / t.dma_engine_bytes_per_ns
    shares = tuple((e, ns) for e in range(t.dma_engines))
    return shares, t.dma_latency_ns, nbytes / t.hbm_bytes_per_ns


class Spills:
    """Books a program's spill events on a scheduler's DMA engines (see the docstring)."""

    def __init__(self, events: dict[int, list], target: Target):
        self.events, self.target = events, target
        self.saved_at: dict[str, float] = {}  # tensor -> when its last save ended
        self.totals = {"save_bytes": 0, "reload_bytes": 0, "transfers": 0, "dma_ns": 0.0}

    def hold(self, position: int, sched) -> tuple[float, str | None]:
        """(the time instruction `position` may start at the earliest, the tensor it waits
        for), after booking the spills placed before it."""
        until, why = 0.0, None
        for kind, name, nbytes, buf in self.events.get(position, ()):
            st = sched.tensors.get(name)
            if kind == "save":
                t0 = st.write_end if st is not None else 0.0
            else:
                prev = sched.sched.slots[-1].start_ns if sched.sched.slots else 0.0
                t0 = max(self.saved_at.get(name, 0.0), prev)
            shares, latency, hbm_ns = transfer_shares(nbytes, self.target)
            _, end, _ = sched.dma.book(t0 + latency, shares,
                                        hbm_ns if buf == "sbuf" else 0.0, True, position)
            if kind == "save":
                self.saved_at[name] = end
            self.totals[f"{kind}_bytes"] += nbytes
            self.totals["transfers"] += 1
            self.totals["dma_ns"] += latency + max(shares[0][1], hbm_ns)
            if end > until:
                until, why = end, name
        return until, why



def held(sched, ready, dep, kind, dep_tensor) -> tuple:
    """The scheduler's data_ready answer, or later: the compiler's spill or reload the
    instruction waits for (Spills.hold set `sched.hold` before placing it)."""
    hold, sched.hold = sched.hold, (0.0, None)
    if hold[0] > ready:
        slots = sched.sched.slots
        return hold[0], slots[-1].index if slots else None, SPILL, hold[1]
    return ready, dep, kind, dep_tensor
