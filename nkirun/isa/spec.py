"""What an instruction module declares, and the generic operand conversion.

Each `nkirun/isa/<name>.py` builds one `InstructionDef`: its keyword parameters (`Param`),
engine, semantics (`execute`), cost (`cycles`), extra rules (`check`) and docs. The parser,
validator, interpreter, cost model and `explain` are all generic over these definitions.
"""
from __future__ import annotations

from typing import Any, Callable

from nkirun.records import record
from nkirun.hw import dtypes as dt
from nkirun.diagnostics import Loc
from nkirun.isa.bound import Bound, views_of  # noqa: F401  (re-exported for instruction modules)

from nkirun.isa.kinds import (  # noqa: F401  (the kinds, re-exported for instruction modules)
    BOOL, DTYPE, ENUM, ENUM_PREFIXES, INT, INT_LIST, LABEL, MASK, NUMBER_LIST, OP, PATTERN, SCALAR,
    TILE, TILE_LIST, TILE_OR_SCALAR, ArgError, Kind)
from nkirun.isa.nki_api import NkiApi  # noqa: F401  (re-exported for instruction modules)

REDUCE_CMDS = ("idle", "reset", "reduce", "reset_reduce")  # (+ load_reduce: isa/accumulators.py)
# NKI's generated API pages (https://awsdocs-neuron.readthedocs-hosted.com, NKI 0.6).
NKI_API_PAGES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated"

# Prefixes stripped from instruction names (nisa.iota)
NAME_PREFIXES = ("nki.isa.", "nisa.", "nl.", "nki.language.", "isa.")


@record(frozen=True, slots=True)
class Param:
    """One keyword of an instruction: its kind, default and whether it is required."""
    name: str
    kind: Kind
    required: bool = False
    default: Any = None
    out: bool = False  # the instruction writes this operand
    buffers: frozenset | None = None  # allowed buffers for a tile (None: sbuf or psum)
    dtypes: frozenset | None = None  # allowed dtypes for a tile (None: any)
    choices: tuple | None = None  # allowed values for OP / ENUM
    per_partition: bool = False  # a (P, 1) tile: one element per partition
    doc: str = ""
    # a written view may address elements through zero steps (each keeps the last value
    # streamed to it, runner/streamed.py); other written views must address each once (E039)
    zero_steps: bool = False
    # a register operand that declares the register it names (register_alloc's dst;
    # checker/registers.py): it is not a use of the register
    declares: bool = False


@record(frozen=True, slots=True)
class AccumulatorDef:
    """A per-partition accumulator register file that reduce_cmd drives (the NKI ISA documentation)."""

    engine: str  # for messages: "Vector", "Scalar"
    idle_may_modify: bool  # whether an instruction with reduce_cmd=idle may change it


ACCUMULATORS = {
    # §4 [NEW-ISA]: even with idle the Vector accumulator "may still be modified"
    "vector": AccumulatorDef("Vector", True),
    # §4: idle means "do not use the accumulator registers" (Scalar engine / ACT)
    "scalar": AccumulatorDef("Scalar", False),
}


@record(frozen=True, slots=True)
class Meeting:
    """A meeting point of the two cores of an LNC2 program (sendrecv, core_barrier): how the
    instruction pairs with one of the other core's. The passes (checker/cores.py,
    runner/cores.py, schedule/cores.py, runner/shadow.py) know nothing more about it."""

    # (Bound) -> what it waits for on the other core (the k-th arrival at a key on one core
    # pairs with the k-th on the other), or None: it completes alone
    key: Callable
    # True: the core's whole stream waits for the partner (core_barrier); False: the core
    # runs on, only its later accesses to this instruction's tensors and its next arrival
    # at the same key wait (sendrecv: different pipes progress independently)
    blocks_core: bool
    # (pair of Bounds, machine) -> None, before the pair executes: what each side receives
    # (pair: (first arrival, second arrival), or (b,) for one that completes alone)
    exchange: Callable | None = None
    # (one side, the other side) -> diagnostics about what they exchange (E638/E639)
    pair_rules: Callable | None = None
    # (Bound) -> diagnostics of the instruction in a two-core program (E634/E636)
    rules: Callable | None = None
    # a param named but not accessed that costing treats as a fence (core_barrier's data)
    fence: str | None = None
    # how a report names the wait: "core 1 <words> (after #k)"
    wait_words: str = ""


NAME_PARAM = Param("name", LABEL, doc="a label naming this instruction (NKI's name=) in "
                                       "traces, cost reports and messages; no effect on results")


@record(frozen=True, slots=True)
class InstructionDef:
    """Everything about one instruction: parameters, rules, semantics and cost."""
    name: str
    engine: str  # default engine; `engine_of` may refine per instruction
    params: tuple[Param, ...]
    summary: str  # one line
    semantics: str  # one paragraph, shown by `nkirun explain`
    cost_formula: str  # human-readable formula, shown in reports and `explain`
    execute: Callable  # (Bound, Machine) -> None
    cycles: Callable  # (Bound, Target) -> int, in the engine's own cycles
    check: Callable | None = None  # (Bound) -> Iterable[Diagnostic]
    engine_of: Callable | None = None  # (Bound) -> engine name
    cost_assumed: bool = False  # the pages give no formula: ours is an assumption
    cost_note: str = ""
    example: str = ""  # a YAML snippet for `explain`
    same_partitions: tuple[str, ...] | None = None  # None: every tile param
    # The engine accumulator its `reduce_cmd` drives (a key of ACCUMULATORS), or None;
    # validate's hazard pass (W052) tracks each accumulator separately.
    accumulator: str | None = None
    source: str = ""  # where the facts come from
    # The operand whose index space `mask=` is written in (docs/masks.md): dst unless the
    # page applies the mask to an input (max8: src; nc_match_replace8/nc_find_index8: data).
    mask_on: str = "dst"
    # (Bound) -> names of `out` params that the instruction also reads (e.g. nc_matmul with
    # accumulate=true adds into dst): the dataflow pass and the cost model count them as reads.
    reads_out: Callable | None = None
    # Those reads are the engine adding into its own output on its pipelined path (the
    # Tensor engine accumulating into PSUM): the cost model orders them as the write they
    # are, with no commit latency, so an explicit accumulate=True costs what the auto rule
    # (no declared read) costs.
    pipelined_accumulate: bool = False
    # Moves x4-packed MX tiles bit for bit (load, store, dma_copy, tensor_copy, sendrecv,
    # memset of 0): the binder lets packed dtypes through only here or where a Param lists them, and
    # requires every tile of such a copy to have the same dtype (E490/E491).
    packed_copy: bool = False
    # DMA instructions whose engines stream more than the bytes they move (transposing,
    # accumulating): (Bound) -> bytes of streaming (schedule/dma.py; default the larger side).
    dma_bytes: Callable | None = None
    # Writes values drawn from nkirun's PRNG model (hw/prng.py), not the hardware's bits:
    # `run --expect` marks every output that depends on it.
    random: bool = False
    # execute touches a tensor's storage itself (m.view / m.buffers: accumulating into
    # PSUM, changing data in place), not only through m.read/m.write: `run --shadow` then
    # counts its destinations as inputs and never mirrors it (runner/shadow_stores.py).
    direct_storage: bool = False
    # The compiler may run this instruction as one Scalar-engine activation when the kernel
    # names no engine: (Bound, target) -> its Scalar cycles then, or None where it cannot
    # (schedule/placement.py). None: never moved.
    activation_form: Callable | None = None
    # A language-level load (nl.load) the compiler treats as a value: repeated from
    # unchanged elements it is elided like a recomputation (schedule/recompute.py).
    value_load: bool = False
    # Each output element depends only on the inputs at its own position (per-partition
    # scalar columns aside), so the compiler can issue the instruction in free-axis pieces:
    # its operands need not all be resident at once (checker/capacity.py). (Bound) -> bool.
    free_split: Callable | None = None
    # The instruction's own rules, one line each with its code, for `explain` (the rules
    # the Params declare are listed from them).
    constraints: tuple[str, ...] = ()
    # The reduce_cmd an instruction without a `reduce_cmd` keyword always applies to its
    # accumulator (activation_reduce: reset_reduce), for the hazard pass.
    fixed_reduce_cmd: str | None = None
    # View params the instruction names but neither reads nor writes (core_barrier's
    # `data`: what the cores synchronise on): no dataflow, dependence or race on them.
    not_accessed: tuple[str, ...] = ()
    # A meeting point of the two cores of an LNC2 program (Meeting above), or None.
    meeting: Meeting | None = None
    # An nki.collectives instruction: it meets the other ranks of a multi-rank run
    # (isa/collective.py), so it runs once per occurrence and moves unwritten elements itself.
    collective: bool = False
    # The fast form for runner/plan.py: (Bound) -> None when it does not apply, else
    # build(view) -> a no-argument call doing what execute(b, m) does on fixed operand
    # arrays (view(r, shape=None): r's storage without a copy, or None; view.holds(r):
    # whether r's elements hold data before b; view.scratch(tag, shape): a work array;
    # runner/plan_writes.py Viewer; build may return None). Applies only where b writes
    # each output in full (no mask).
    plan: Callable | None = None
    # How NKI's Python API spells it (isa/nki_api.py): the NKI 0.6 signature, nki.isa or
    # nki.language, the pre-0.2 call forms; the kernel front end reads only this.
    nki: NkiApi = NkiApi()

    def __post_init__(self) -> None:
        # NKI accepts `name=` on every instruction: the label goes into the IR (args["name"])
        # and names the instruction in traces, cost reports and messages
        if all(p.name != "name" for p in self.params):
            object.__setattr__(self, "params", (*self.params, NAME_PARAM))

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def page_url(self) -> str:
        """The instruction's public NKI API page (`nki.module`: load/store are nki.language
        functions)."""
        return f"{NKI_API_PAGES}/{self.nki.module}.{self.name}.html"


def elementwise(b: Bound) -> bool:
    """`free_split` of an instruction that is elementwise in every form."""
    return True


def convert(p: Param, value: Any, loc: Loc) -> Any:
    """Turn a plain front-end value (str/int/float/bool/list) into `p`'s typed value."""
    return p.kind.convert(p, value, loc)


@record(frozen=True, slots=True)
class ParamTables:
    """Lookups over one spec's params for the per-instruction loops of the front end and
    the checker (InstructionDef.param is a linear search)."""

    by_name: dict  # keyword -> Param
    defaults: dict  # keyword -> default, every param
    required: tuple  # the required Params
    views: tuple  # the TILE / TILE_OR_SCALAR / TILE_LIST Params: the only ones bound to views
    names: tuple  # every keyword, in declaration order


_TABLES: dict[str, tuple] = {}


def param_tables(spec: InstructionDef) -> ParamTables:
    """spec's ParamTables, built once."""
    hit = _TABLES.get(spec.name)
    if hit is None or hit[0] is not spec:
        ps = spec.params
        hit = _TABLES[spec.name] = (spec, ParamTables(
            {p.name: p for p in ps}, {p.name: p.default for p in ps},
            tuple(p for p in ps if p.required),
            tuple(p for p in ps if p.kind.is_view), tuple(p.name for p in ps)))
    return hit[1]


def normalize_name(name: str) -> str:
    """Strip the `nisa.`/`nl.` prefixes users copy from kernels."""
    for prefix in NAME_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def out_dtype(b: Bound) -> dt.DType:
    """The dtype an instruction's result is cast to before it is stored into dst."""
    d = b.get("dtype")
    if d is not None:
        return d
    return b.tile("dst").dtype


def common_tail(*, mask: bool = True, dtype: bool = True) -> tuple[Param, ...]:
    """The optional `mask`/`dtype` keywords most legacy instructions take."""
    tail = []
    if mask:
        tail.append(Param("mask", MASK, doc="compile-time predicate over p and the free "
                                            "indices; masked-off dst elements keep their value"))
    if dtype:
        tail.append(Param("dtype", DTYPE, doc="cast the result to this dtype before it is "
                                              "stored (dst's own dtype applies last)"))
    return tuple(tail)



