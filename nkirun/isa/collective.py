"""Shared by the `nki.collectives` instructions (all_reduce, all_gather, reduce_scatter,
all_to_all, collective_permute, collective_permute_implicit, rank_id, ...): the rank-list
parameter kind, the rules every collective shares, how one meets the other ranks at run
time, and the cost model.

Facts (the NKI 0.6 pages, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
nki.collectives.html and the pages of each function):
* a `ReplicaGroup` is a list of rank-lists; the collective runs independently within each
  rank-list, all rank-lists in parallel; a rank belongs to one rank-list only;
* tensors are on HBM or on SBUF, never a mix; several tensors in one call (coalesced) only
  on HBM; collective_dim is 0 on HBM, 0 or 1 on SBUF (2-D tensors).

Readings (the pages are silent):
* Matching: the k-th collective a rank runs meets the k-th collective of every other rank
  of its rank-list (each rank runs the same program, SPMD). With two cores per rank
  (LNC2) each core is its own stream: core c's k-th collective meets core c's k-th on the
  other ranks (nki-library's tiled SBUF all-gather gives each core different tiles). Ranks
  that call different collectives there (instruction, replica group, dtypes, shapes,
  keywords) are a mismatch (E691); a rank waiting for one that finishes, fails, or waits elsewhere forever is a
  deadlock (E692). runner/ranks.py keeps the meetings; nothing here waits.
* A collective moves data without computing on it, except the reductions: a reduction
  adds (min, max) in float32 (integers in int64) in the rank-list's order and rounds once
  to dst's dtype. Unwritten src elements arrive unwritten (as sendrecv: runner/carried.py),
  and a reduction over one is unwritten.
* A coalesced call (several srcs/dsts) is recorded as one instruction per src/dst pair:
  the same values as one call; the cost model then books them one after the other.
* Without a multi-rank run (`nkirun.simulate(kernel, ranks=N)`), a kernel runs as rank 0 of
  one rank: a collective whose rank-list has other ranks cannot run (E690 names ranks=N).
* Cost (ESTIMATED, no public latency or bandwidth per collective): a ring algorithm over
  the rank-list, each of its n-1 steps (2(n-1) for all_reduce) moving 1/n of the data over
  one link at LINK_GBPS after STEP_LATENCY_NS.
"""
from __future__ import annotations

from contextvars import ContextVar

import numpy as np

from nkirun.diagnostics import RunError, error
from nkirun.isa.kinds import ArgError, Kind
from nkirun.isa.spec import (INT, NKI_API_PAGES, OP, Bound, InstructionDef, NkiApi,
                             Param)

ENGINE = "collectives"  # the collective-communication engine; cycles are ns (1 GHz)
# ESTIMATED: NeuronLink-v3 is listed at 1 TB/s per Trainium2 chip over its links
# (https://aws.amazon.com/ec2/instance-types/trn2/); one ring link of 4 is assumed to carry
# a quarter of that in each direction. No per-step latency is published: 2 us assumed (the
# order of an inter-chip DMA round trip with semaphore signalling).
LINK_GBPS = 256.0  # bytes per ns = GB/s / 1
STEP_LATENCY_NS = 2000.0
REDUCE_OPS = ("add", "minimum", "maximum")
MAX_CHANNELS = 4  # the pages: at most 4 channels (2 for groups short of a node's devices)
MEMORY = frozenset({"hbm", "sbuf"})


class RankLists(Kind):
    """`[[rank, ...], ...]`: a ReplicaGroup's rank-lists (or collective_permute's
    [source, target] pairs)."""

    name, text = "rank_lists", "[[rank, ...], ...]"

    def convert(self, p, value, loc):
        value = getattr(value, "rank_lists", value)  # an nki.collectives.ReplicaGroup
        ok = isinstance(value, (list, tuple)) and value and all(
            isinstance(g, (list, tuple)) and g and all(
                isinstance(x, int) and not isinstance(x, bool) for x in g) for g in value)
        if not ok:
            raise ArgError(f"`{p.name}` must be a non-empty list of non-empty lists of rank "
                           f"numbers, e.g. [[0, 1, 2, 3]], got {value!r}")
        return tuple(tuple(int(x) for x in g) for g in value)

    def json_schema(self, p):
        return {"type": "array", "minItems": 1, "description": p.doc,
                "items": {"type": "array", "minItems": 1, "items": {"type": "integer"}}}


RANK_LISTS = RankLists()


# ---- static rules ------------------------------------------------------------------------
def group_rules(b: Bound, key: str = "replica_group"):
    """A replica group: ranks >= 0, each in one rank-list, the rank-lists of one size."""
    groups = b[key]
    ranks = [r for g in groups for r in g]
    if any(r < 0 for r in ranks):
        yield b.err("E690", f"{key} {list(map(list, groups))} names a negative rank", key)
    elif len(set(ranks)) != len(ranks):
        yield b.err("E690", f"{key} {list(map(list, groups))} names a rank twice; each rank "
                    "belongs to one rank-list", key,
                    hint="ReplicaGroup([[0, 1], [2, 3]]): disjoint rank-lists")
    elif len({len(g) for g in groups}) > 1:
        yield b.err("E690", f"{key} {list(map(list, groups))} has rank-lists of different "
                    "sizes; every rank of a collective must see the same shapes", key)


def memory_rules(b: Bound, *keys: str):
    """Tensors all on HBM or all on SBUF, of one dtype (a collective does not cast)."""
    tiles = [(k, b.tile(k)) for k in keys if b.tile(k) is not None]
    places = {r.decl.buffer for _, r in tiles}
    if not places <= MEMORY:
        k, r = next((k, r) for k, r in tiles if r.decl.buffer not in MEMORY)
        yield b.err("E693", f"`{k}` is in {r.decl.buffer.upper()}; collectives move HBM or "
                    "SBUF tensors", k, hint="copy the tile to SBUF or HBM first")
    elif len(places) > 1:
        yield b.err("E693", "the tensors mix HBM and SBUF; a collective's tensors are all on "
                    "HBM or all on SBUF", keys[-1])
    dtypes = {r.dtype.name for _, r in tiles}
    if len(dtypes) > 1:
        yield b.err("E693", f"the tensors have dtypes {sorted(dtypes)}; a collective does not "
                    "cast", keys[-1], hint="give src and dst the same dtype")


def dim_rules(b: Bound, key: str = "collective_dim"):
    """collective_dim: 0 on HBM; 0 or 1 on SBUF."""
    d, r = b[key], b.tile("src")
    allowed = (0,) if r is not None and r.decl.buffer == "hbm" else (0, 1)
    if d not in allowed:
        where = "HBM" if allowed == (0,) else "SBUF (2-D tiles)"
        yield b.err("E693", f"{key} is {d}; on {where} it is {' or '.join(map(str, allowed))}",
                    key)


def channel_rules(b: Bound):
    """channel_id 0..3, below num_channels when a kernel gives it (NKI 0.2's keyword)."""
    c, n = b.get("channel_id", 0), b.get("num_channels")
    if n is not None and not 1 <= n <= MAX_CHANNELS:
        yield b.err("E693", f"num_channels {n}: 1 to {MAX_CHANNELS}", "num_channels")
    elif not 0 <= c < (MAX_CHANNELS if n is None else n):
        yield b.err("E693", f"channel_id {c}" + ("" if n is None else f" of {n} channels")
                    + f": channels are numbered from 0, at most {MAX_CHANNELS}", "channel_id",
                    hint="channel_ids=[0, 1] for two channels")


def ring_size(b: Bound, key: str = "replica_group") -> int:
    return max(len(g) for g in b[key])


def shape_err(b: Bound, what: str, src, dst):
    return b.err("E693", f"dst has shape {list(dst.shape)} and src {list(src.shape)}; {what}",
                 "dst")


# ---- run time: meeting the other ranks -----------------------------------------------------
class RanksNeeded(RunError):
    """E690 of a run without ranks whose collective names other ranks (nki.cpu_simulate,
    which has no rank count, then runs them: api_kernel.simulate_world)."""


class Solo:
    """The world of a run without ranks: rank 0 alone (runner/ranks.py's World is the
    multi-rank one, bound to each rank's thread by `SEAT`)."""

    size = 1

    def meet(self, seat, k, b: Bound, group: tuple, key: tuple, payload):
        if group != (0,):
            raise RanksNeeded(error(
                "E690", f"{b.title}: its rank-list {list(group)} needs {max(group) + 1} "
                "ranks; this run has one (rank 0)", b.loc(), b.index,
                hint=f"nkirun.simulate(kernel, ranks={max(group) + 1})(...) (CLI: --ranks "
                     f"{max(group) + 1}), with per-rank inputs from nkirun.per_rank([...])"))
        return [payload]


class Seat:
    """One rank of a world, as its thread sees it: the rank, and how many collectives each
    of its cores has met so far (a core's k-th collective is `(core, k)`)."""

    __slots__ = ("world", "rank", "calls", "met")

    def __init__(self, world, rank: int):
        self.world, self.rank, self.calls, self.met = world, rank, {}, 0

    def next_call(self, core: int) -> tuple[int, int]:
        self.calls[core] = self.calls.get(core, 0) + 1
        self.met += 1
        return core, self.calls[core]


SEAT: ContextVar = ContextVar("nkirun_rank_seat", default=None)


def seat() -> Seat:
    s = SEAT.get()
    return s if s is not None else Seat(Solo(), 0)


def my_list(groups: tuple, rank: int) -> tuple | None:
    return next((g for g in groups if rank in g), None)


def meet(b: Bound, group: tuple, key: tuple, payload) -> list:
    """Every payload of `group`'s ranks, in the group's order, once all have arrived at
    this (the caller's k-th) collective. `key`: what must be equal on every rank."""
    s = seat()
    return s.world.meet(s, s.next_call(b.inst.core), b, group, key, payload)


def payload_of(m, r) -> tuple:
    """What a rank contributes: its src's values (a copy) and which hold data (None: all)."""
    return m.view(r).copy(), m.defined(r)


def deliver(m, r, values: np.ndarray, held) -> None:
    """Write a received block into dst; the elements that held no data hold none."""
    m.write(r, values.reshape(r.shape))
    if held is not None and not m.fills:
        m.forget(r, ~np.asarray(held).reshape(r.shape))


def reduce(op: str, arrays: list, dtype) -> np.ndarray:
    """The elementwise reduction in the rank-list's order: float32 (int64 for integers)."""
    wide = np.int64 if np.issubdtype(np.dtype(dtype.np_type), np.integer) else np.float32
    fold = {"add": np.add, "minimum": np.minimum, "maximum": np.maximum}[op]
    acc = arrays[0].astype(wide)
    for a in arrays[1:]:
        acc = fold(acc, a.astype(wide))
    return acc


def all_held(helds: list):
    """Which elements hold data in every contribution (None: all do)."""
    helds = [h for h in helds if h is not None]
    if not helds:
        return None
    out = helds[0].copy()
    for h in helds[1:]:
        out &= h
    return out


def describe(b: Bound, *keys: str) -> tuple:
    """What must agree across the ranks of a collective: the instruction, its tensors'
    dtypes and shapes, and its keywords."""
    parts = [b.op]
    for k in keys:
        v = b.get(k)
        if hasattr(v, "decl"):
            parts.append(f"{k} {v.dtype.name} {list(v.shape)}")
        else:
            parts.append(f"{k}={list(map(list, v)) if isinstance(v, tuple) else v}")
    return tuple(parts)


# ---- cost ------------------------------------------------------------------------------------
def ring_ns(n: int, data_bytes: int, rounds: int = 1) -> int:
    """A ring over n ranks: rounds x (n - 1) steps, each moving data_bytes / n over one link."""
    if n <= 1:
        return 1
    steps = rounds * (n - 1)
    return int(steps * (STEP_LATENCY_NS + data_bytes / n / LINK_GBPS))


COST_FORMULA = (f"ring over the rank-list's n ranks: steps x ({STEP_LATENCY_NS:.0f} ns + "
                f"bytes/n / {LINK_GBPS:.0f} B/ns) (ESTIMATED)")
COST_NOTE = ("ESTIMATED: no per-collective latency or bandwidth is published; the link rate "
             "is a quarter of Trn2's listed 1 TB/s NeuronLink bandwidth, the per-step "
             "latency an assumed 2 us")


def nbytes(r) -> int:
    return r.size * r.dtype.itemsize


# ---- what every collective's InstructionDef shares ---------------------------------------------
GROUP_RULE = "E690 a replica group of disjoint, equal rank-lists, and a run with its ranks"
MATCH_RULE = "E691/E692 every rank of the rank-list calls the same collective"


def group_param() -> Param:
    return Param("replica_group", RANK_LISTS, required=True,
                 doc="the rank-lists (nki.collectives.ReplicaGroup)")


def dim_param() -> Param:
    return Param("collective_dim", INT, required=True, doc="0 (HBM); 0 or 1 (SBUF)")


def op_param() -> Param:
    return Param("op", OP, required=True, choices=REDUCE_OPS, doc="add, minimum or maximum")


def collective_spec(name: str, signature: str, rule: str, steps: str, **fields):
    """The InstructionDef of collective `name`: on the collectives engine, meeting the
    other ranks (`collective`), with the shared cost model and rules; `rule`: its own
    E693 line; `steps`: what its ring moves."""
    url = f"{NKI_API_PAGES}/nki.collectives.{name}.html"
    return InstructionDef(
        name=name, engine=ENGINE, collective=True,
        same_partitions=(),  # (the shape rules are its own: check)
        direct_storage=True, cost_assumed=True, cost_note=COST_NOTE,
        cost_formula=f"{COST_FORMULA}, {steps}",
        constraints=(GROUP_RULE if "replica_group" in signature else
                     "E690 (source, target) pairs of ranks, each target once", rule,
                     MATCH_RULE),
        source=url,
        nki=NkiApi(signature, module="nki.collectives",
                   front_end=f"nkirun.source.kernel.collectives:{name}"),
        **fields)
