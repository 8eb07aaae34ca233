"""One DMA transfer's plan, alone: which engines it uses and how long each streams (the
model in words: docs/cost.md "DMA model"; constants and sources: hw/cost_tables.py). An
instruction's own cost (`cycles()` of the DMA instructions, isa/common.py) is this plan's
time; schedule/dma.py books the plans on the engines and HBM as shared servers."""
from __future__ import annotations

from operator import itemgetter

from nkirun.hw.cost_tables import cost_table


def run_elems(r) -> int:
    """Elements of the longest contiguous run of view `r` in its tensor's row-major storage
    (the DMA descriptor size on that side)."""
    if r.ap is not None:  # a strided pattern: runs of unit byte stride, innermost first
        size, run = r.ap.dtype.itemsize, 1
        for n, st in zip(reversed(r.ap.shape[1:]), reversed(r.ap.byte_strides[1:])):
            if n == 1:
                continue
            if st != run * size:
                break
            run *= n
        return run
    run, full = 1, True
    for (_, count, step), dim in zip(reversed(r.box), reversed(r.decl.shape)):
        if not full:
            break
        if count == 1:
            continue
        if step != 1:
            break
        run *= count
        full = count == dim
    return run


_COUNT_STEP = itemgetter(1, 2)
_PLANS: dict[tuple, tuple] = {}  # geometry -> plan (traces repeat shapes at new offsets)
_PLANS_MAX = 1 << 14


def _geometry(r) -> tuple:
    """What of an operand the plan depends on: not where in HBM it starts."""
    decl = r.decl
    ap = r.ap
    return (decl.shape, decl.on_chip, r.shape, r.part_start if decl.on_chip else 0,
            r.part_step, r.box if ap is not None else tuple(map(_COUNT_STEP, r.box)),
            None if ap is None else (ap.shape, ap.byte_strides, ap.dtype.name),
            decl.dtype.name)


def plan(b, target) -> tuple:
    """(engine shares ((engine, stream ns), ...), latency ns, HBM ns, dge issuer or None,
    queue-ns, whether every engine has the same share, the engines, the uncontended ns,
    bytes delivered, descriptor bytes (the contiguous run)):
    the uncontended work
    of one DMA instruction `b` (any instruction on the "dma" engine with src/dst or srcs)."""
    args = b.args
    src = args.get("src")
    sides = (args["dst"], src) if src is not None else (args["dst"], *args["srcs"])
    key = (id(cost_table(target)), b.spec.name, args.get("dge_mode"), args.get("engine"),
           *(_geometry(r) for r in sides))
    hit = _PLANS.get(key)
    if hit is None:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        hit = _PLANS[key] = _plan(b, target, sides)
    return hit


def _plan(b, target, sides) -> tuple:
    t = cost_table(target)
    word = t.dma_min_element_bytes  # narrower elements stream as words of this size
    if b.spec.dma_bytes is not None:
        nbytes = b.spec.dma_bytes(b) * max(1.0, word / min(r.dtype.itemsize for r in sides))
    else:
        nbytes = max(r.size * max(r.dtype.itemsize, word) for r in sides)
    on_chip = [r for r in sides if r.decl.on_chip]
    lanes = on_chip[0] if on_chip else sides[-1]
    first = lanes.part_start if on_chip else 0
    rows = lanes.partitions if on_chip else min(lanes.partitions, 128)
    step = max(1, lanes.part_step if on_chip else 1)
    per = t.dma_partitions_per_engine
    counts = _lanes_per_engine(first, rows, step, per, t.dma_engines)
    row_bytes = nbytes / rows
    run = min(row_bytes, min(run_elems(r) * r.dtype.itemsize for r in sides))
    run = max(run, 1.0)
    bw = t.dma_engine_bytes_per_ns
    factor = (1.0 + t.dma_descriptor_bytes / run) / bw
    shares = tuple((e, n * row_bytes * factor) for e, n in sorted(counts.items()))
    hbm_bytes = sum(r.size * r.dtype.itemsize for r in sides if not r.decl.on_chip)
    dge = _dge_issuer(b)
    latency = t.dma_latency_ns + (t.dge_ns if dge else 0.0)
    uniform = len(shares) == t.dma_engines and len({w for _, w in shares}) == 1
    hbm_ns = hbm_bytes / t.hbm_bytes_per_ns
    alone = int(round(latency + max(max(w for _, w in shares), hbm_ns)))
    moved = max(r.size * r.dtype.itemsize for r in sides)  # the bytes the transfer delivers
    return (shares, latency, hbm_ns, dge, sum(w for _, w in shares), uniform,
            tuple(e for e, _ in shares), alone, moved, run)


def _lanes_per_engine(first: int, rows: int, step: int, per: int, engines: int) -> dict:
    """{engine: partitions it serves} for partitions first, first+step, ... (rows of them)."""
    if step == 1 and first % per == 0 and rows % per == 0 and rows <= per * engines:
        return {first // per + i: per for i in range(rows // per)}  # the common case
    counts: dict[int, int] = {}
    for p in range(first, first + rows * step, step):
        e = (p // per) % engines
        counts[e] = counts.get(e, 0) + 1
    return counts


def _dge_issuer(b) -> str | None:
    mode = b.args.get("dge_mode")
    if mode == "hwdge":
        eng = b.args.get("engine")
        return eng if eng in ("scalar", "sync", "gpsimd") else "sync"
    if mode == "swdge":
        return "gpsimd"
    return None


def plan_ns(p) -> int:
    """A plan's uncontended time: latency + the longest engine share (HBM if slower)."""
    return p[7]


def uncontended_ns(b, target) -> int:
    """A lone transfer's time in ns (what `cycles()` of the DMA instructions reports)."""
    return plan_ns(plan(b, target))
