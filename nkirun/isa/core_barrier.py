"""nki.isa.core_barrier — wait until both cores of a Logical NeuronCore reach this point.

Facts (the NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.core_barrier.html):
* NeuronCore-v3 on, with LNC enabled; `cores` must be (0, 1);
* `data` is the shared-HBM tensor the cores synchronise on (the use case: both cores write
  disjoint parts of it, then both read all of it);
* `engine` (GpSimd by default) executes the semaphore update and wait; only that engine is
  blocked, the others run on.

Readings:
* The k-th core_barrier of one core meets the k-th of the other (a barrier never met is a
  deadlock, E635; at run time, inside runtime loops, E642). The k-th is the k-th to run.
  Unlike a sendrecv, the barrier stops its core's stream until the other core arrives. It orders every access before it on both cores before every access after
  it: the race check (checker/cores.py) and the run order rely on that. The values of `data`
  are not changed.
* `data` in SBUF or PSUM (nki-library's `router_topk`, reached from `moe_block_tkg` with
  tokens sharded, passes its SBUF affinities) is a warning (W680), not an error: the page
  asks for shared HBM, but the barrier's meaning does not depend on `data`.
* `data` is not read or written (no dataflow or race on it), but in the cost model the
  barrier is a fence on it: it starts after this core's earlier accesses to `data` have
  finished (the writes it signals), and this core's later accesses to `data` start after
  it. Only the barrier's engine waits for the other core; the others run on.
* nkirun runs each core's stream in program order, so at run time the whole core waits
  (values do not depend on it).
* Cost: no latency is documented; MIN_II cycles on its engine after both cores arrive is
  assumed.
"""
from __future__ import annotations

from nkirun.isa.common import is_nc_v2
from nkirun.isa.spec import ENUM, INT_LIST, TILE, Bound, InstructionDef, Meeting, NkiApi, Param

ENGINES = ("gpsimd", "vector", "scalar", "tensor", "sync")


def check(b: Bound):
    if is_nc_v2(b):
        yield b.err("E632", f"core_barrier needs a NeuronCore-v3 or newer target with LNC2 "
                    f"(trn2, trn3); {b.target.name} has one core per logical core",
                    hint="target: trn2")
    if tuple(b["cores"]) != (0, 1):
        yield b.err("E637", f"cores is {list(b['cores'])}; only (0, 1) is supported",
                    "cores", hint="cores: [0, 1]")
    data = b.tile("data")
    if data is not None and data.decl.on_chip:
        yield b.warn("W680", f"core_barrier: data `{data.decl.name}` is in "
                     f"{data.decl.buffer.upper()}; the documentation asks for the shared-HBM "
                     "tensor the cores synchronise on. nkirun synchronises the cores all the "
                     "same (data is never read or written)", "data",
                     hint="pass the shared HBM tensor both cores write")


def two_core_rules(b: Bound):
    data = b.tile("data")
    if data is not None and data.decl.core is not None and not data.decl.on_chip:  # (E040)
        yield b.err("E634", f"data `{data.decl.name}` is core {data.decl.core}'s private HBM; "
                    "a barrier synchronises on shared HBM", "data")


MEETING = Meeting(key=lambda b: ("core_barrier",), blocks_core=True, rules=two_core_rules,
                  fence="data", wait_words="barrier")


def engine_of(b: Bound) -> str:
    return b.get("engine") or "gpsimd"


def execute(b: Bound, m) -> None:
    """Nothing to compute: runner/cores.py holds each core at the barrier until both are."""


def cycles(b: Bound, target) -> int:
    return target.min_ii


SPEC = InstructionDef(
    name="core_barrier",
    engine="gpsimd",
    params=(
        Param("data", TILE, required=True, buffers=frozenset({"hbm", "sbuf", "psum"}),
              doc="the shared-HBM tensor both cores synchronise on (not changed; on chip: "
                  "W680)"),
        Param("cores", INT_LIST, required=True, doc="the cores to synchronise: [0, 1]"),
        Param("engine", ENUM, default="gpsimd", choices=ENGINES,
              doc="the engine that waits (the others run on)"),
    ),
    summary="two-core barrier: both cores reach it before either goes on (LNC2)",
    semantics=(
        "Two-core programs only. The k-th core_barrier of core 0 meets the k-th of core 1; "
        "everything either core did before it happens before everything either does after "
        "it. `data` (shared HBM) is not changed. trn2/trn3."),
    cost_formula="MIN_II cycles on its engine once both cores have arrived",
    execute=execute,
    cycles=cycles,
    check=check,
    engine_of=engine_of,
    not_accessed=("data",),
    meeting=MEETING,
    cost_assumed=True,
    constraints=("E632 needs trn2/trn3 (LNC2)", "E637 cores must be [0, 1]",
                 "E634 only in a two-core program; data not a core's private HBM",
                 "W680 data on chip (the page asks for shared HBM)",
                 "E635 a barrier the other core never reaches is a deadlock"),
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.core_barrier.html",
    example="- core_barrier: {data: shared, cores: [0, 1]}",
    nki=NkiApi("data cores engine=gpsimd"),
)
