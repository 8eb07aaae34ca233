"""nki.isa.sendrecv — exchange a tile between the two cores of a Logical NeuronCore.

Facts (the NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.sendrecv.html):
* the calling core sends its `src` tile to the `dst` of core `send_to_rank` and, at the same
  time, receives into its own `dst` the `src` of core `recv_from_rank`;
* NeuronCore-v3 on (trn2, trn3), only with LNC enabled; both ranks are 0 or 1;
* `src` and `dst` in SBUF, with the same dtype, shape, partitions and elements per partition;
* `pipe_id` groups transfers: the transfers of one pipe complete together, different pipes
  progress independently;
* `dma_engine`: `dma` (the shared DMA engines, the default) or `gpsimd_dma` (GpSimd's own DMA,
  at most 1024 bytes per partition for 32-bit dtypes, 512 for 16-bit, 256 for 8-bit).

Readings (the page is silent; the meeting-point facts are MEETING below, which the
two-core passes checker/cores.py, runner/cores.py and schedule/cores.py apply):
* Matching: the k-th sendrecv of pipe p on one core pairs with the k-th sendrecv of pipe p on
  the core it sends to; that one must receive from the first (E636). Sending to its own rank
  is a local copy (dst = src) that waits for no one. Inside runtime loops the k-th is the
  k-th to run (occurrence), not the k-th in the file.
* "Operations with the same pipe_id form a logical group where all operations in the group
  must complete before any can proceed. Operations with different pipe_id values can
  progress independently": a core that reaches a sendrecv before its partner does not stop.
  It runs on; only its later instructions that touch this sendrecv's src or dst tensors
  (the hardware's semaphores on the DMA's tiles) and its next sendrecv of the same pipe wait
  for the transfer. So two cores may meet on two pipes in crossed orders (core 0: pipe 0
  then pipe 1, core 1: pipe 1 then pipe 0) without deadlock, as long as nothing between
  touches the pending transfer's tiles.
* A matched pair completes as one step: both sources are read, then both destinations are
  written (so src and dst may be the same tile, a swap). The transfer moves the whole tile
  without computing on it (an x4-packed MX tile moves as its bits, as dma_copy moves it:
  nki-library's rmsnorm_mx_quantize_tkg trades its quantised halves so); src elements that
  hold no data are not an error here (nki-library
  sends fixed-size buffers only partly written, e.g. attention_tkg's 16-row max buffer
  holding 4 rows); the dst elements they land in hold no data, and an instruction that
  later reads one is E090 (runner/carried.py). Each core's later instructions see
  the received data; the pair orders every access made before it on either core before
  every access made after it completes (as core_barrier does), which the race check relies
  on. A core that ran on past its pending sendrecv made those accesses before the pair
  completed: they are concurrent with the partner's accesses before its side.
* Cost: the transfer is a DMA of the tile's bytes (the dma_copy model) that starts once both
  cores have reached it; the core that arrives first waits (a "sendrecv" wait). gpsimd_dma
  runs on GpSimd with the same transfer time. The page gives no latency: assumed.
"""
from __future__ import annotations

from nkirun.isa.common import DMA_COST_FORMULA, dma_cycles, is_nc_v2
from nkirun.isa.spec import ENUM, INT, TILE, Bound, InstructionDef, Meeting, NkiApi, Param

SBUF = frozenset({"sbuf"})
GPSIMD_DMA_BYTES = {4: 1024, 2: 512, 1: 256}  # per partition, by dtype size


def check(b: Bound):
    src, dst = b.tile("src"), b.tile("dst")
    if is_nc_v2(b):
        yield b.err("E632", f"sendrecv needs a NeuronCore-v3 or newer target with LNC2 "
                    f"(trn2, trn3); {b.target.name} has one core per logical core",
                    hint="target: trn2")
    for key in ("send_to_rank", "recv_from_rank"):
        if b[key] not in (0, 1):
            yield b.err("E640", f"{key} is {b[key]}; the two cores of an LNC2 logical core "
                        "are ranks 0 and 1", key)
    if src.dtype != dst.dtype:
        yield b.err("E638", f"src is {src.dtype.name} and dst is {dst.dtype.name}; sendrecv "
                    "does not cast", "dst", hint="give src and dst the same dtype")
    if src.shape != dst.shape:
        yield b.err("E639", f"src has shape {list(src.shape)} and dst {list(dst.shape)}; "
                    "they must have the same shape and layout", "dst")
    if b["dma_engine"] == "gpsimd_dma":
        cap = GPSIMD_DMA_BYTES.get(src.dtype.itemsize)
        per = src.free_size * src.dtype.itemsize
        if cap is not None and per > cap:
            yield b.err("E641", f"dma_engine gpsimd_dma moves at most {cap} bytes per "
                        f"partition of a {8 * src.dtype.itemsize}-bit dtype; src has {per}",
                        "dma_engine", hint="use dma_engine: dma, or send smaller tiles")


def meeting_key(b: Bound):
    """The pipe a transfer to the other core waits on; None for a copy to its own rank."""
    return None if b["send_to_rank"] == b.inst.core else ("sendrecv", b["pipe_id"])


def exchange(pair, m) -> None:
    """Read what each side of a pair receives (the other's src; a send to its own rank: its
    own src) into m.inbox, before either destination is written: the values, and which of
    them hold data (a transfer carries unwritten elements as such: runner/carried.py)."""
    senders = pair if len(pair) == 1 else (pair[1], pair[0])
    for b, sender in zip(pair, senders):
        src = sender["src"]
        m.inbox[b.index] = (m.view(src).copy(), m.defined(src))


def pair_rules(sender: Bound, receiver: Bound) -> list:
    """What `receiver`'s dst gets from `sender`'s src must fit: same dtype and shape."""
    src, dst = sender.tile("src"), receiver.tile("dst")
    if src is None or dst is None or (src.dtype == dst.dtype and src.shape == dst.shape):
        return []
    code = "E638" if src.dtype != dst.dtype else "E639"
    return [receiver.err(code, f"dst ({dst.dtype.name} {list(dst.shape)}) receives core "
                         f"{sender.inst.core}'s src ({src.dtype.name} {list(src.shape)}) at "
                         f"instruction {sender.index} ({sender.op}) at {sender.loc()}; they "
                         "must have the same dtype and shape", "dst")]


def two_core_rules(b: Bound):
    if b["send_to_rank"] != b["recv_from_rank"]:
        yield b.err("E636", f"sends to core {b['send_to_rank']} but receives from core "
                    f"{b['recv_from_rank']}; with two cores a transfer exchanges with one "
                    "partner (or, to its own rank, copies locally)", "recv_from_rank",
                    hint="give send_to_rank and recv_from_rank the same core")


MEETING = Meeting(key=meeting_key, blocks_core=False, exchange=exchange,
                  pair_rules=pair_rules, rules=two_core_rules, wait_words="sendrecv")


def engine_of(b: Bound) -> str:
    return "gpsimd" if b.get("dma_engine") == "gpsimd_dma" else "dma"


def execute(b: Bound, m) -> None:
    """Writes the tile this core received (`exchange` read the sender's src into m.inbox
    first, for both cores of a pair, before either is written); elements the sender's src
    held no data in hold none in dst."""
    values, held = m.inbox.pop(b.index)
    # (under --uninitialized nan|zero the sender's fill travels too, still unwritten)
    m.write(b["dst"], values, None, None if m.fills else held)
    if held is not None:
        m.forget(b["dst"], ~held)


SPEC = InstructionDef(
    name="sendrecv",
    engine="dma",
    params=(
        Param("src", TILE, required=True, buffers=SBUF,
              doc="SBUF tile this core sends to core send_to_rank"),
        Param("dst", TILE, required=True, out=True, buffers=SBUF,
              doc="SBUF tile that receives core recv_from_rank's src"),
        Param("send_to_rank", INT, required=True, doc="the core (0 or 1) that receives src"),
        Param("recv_from_rank", INT, required=True, doc="the core (0 or 1) whose src lands "
                                                        "in dst"),
        Param("pipe_id", INT, required=True,
              doc="transfers of one pipe complete together; the k-th of a pipe on one core "
                  "pairs with the k-th of that pipe on the other"),
        Param("dma_engine", ENUM, default="dma", choices=("dma", "gpsimd_dma"),
              doc="dma (shared DMA engines) or gpsimd_dma (GpSimd's DMA, small tiles)"),
    ),
    summary="two-core exchange: send src to a core, receive its src into dst (LNC2)",
    semantics=(
        "Two-core programs only. Core c sends its src to the dst of core send_to_rank and "
        "receives the src of core recv_from_rank into its own dst. The k-th sendrecv of a "
        "pipe_id on one core pairs with the k-th of that pipe on the partner (inside runtime "
        "loops: as they run); both sources are read before either destination is written, "
        "and the pair orders everything before it on both cores before everything after "
        "it completes. The core does not stop at it: only its later accesses to src/dst and its next "
        "sendrecv of the pipe wait for the partner (pipes progress independently). Same "
        "dtype and shape, SBUF only; trn2/trn3."),
    cost_formula=DMA_COST_FORMULA + ", starting when both cores have reached it",
    execute=execute,
    packed_copy=True,
    direct_storage=True,
    cycles=dma_cycles,
    check=check,
    engine_of=engine_of,
    meeting=MEETING,
    cost_assumed=True,
    cost_note="no latency is documented; the dma_copy model of the tile's bytes is assumed, "
              "after both cores arrive",
    constraints=("E632 needs trn2/trn3 (LNC2)", "E638 src and dst of one dtype",
                 "E639 src and dst of one shape", "E640 ranks are 0 or 1",
                 "E641 gpsimd_dma size per partition",
                 "E634 only in a two-core program; E636 the partner must receive from it"),
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.sendrecv.html",
    example="- sendrecv: {src: mine, dst: theirs, send_to_rank: 1, recv_from_rank: 1, "
            "pipe_id: 0}",
    nki=NkiApi("src dst send_to_rank recv_from_rank pipe_id dma_engine=dma"),
)
