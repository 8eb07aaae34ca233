"""Recomputation the compiler removes: a compute instruction that computes again a value an
earlier instruction computed, from the same elements, none of them written since, while the
earlier result is still intact, costs nothing in the schedule (common-subexpression
elimination / loop-invariant code motion, which the Neuron compiler applies to an unrolled
kernel).

Why nkirun models it: the fused Mamba tutorial's v2 moves the loads of `delta` and `u` out
of the state loop, so `delta * u` is computed 16 times from unchanged tiles. The published
profile shows the Vector engine's busy time falling by about a quarter from v1 to v2 (2.34 ms
at 92 % active to 1.61 ms at 99.6 % active, channels 4096, seq 512): the work of one of the
five element-wise Vector instructions per state. Only the removal of the repeated product
explains that; the loads that v2 stops repeating cannot shorten Vector time.

Only values of at most `MAX_REUSE_BYTES` per partition are reused. This bound is fitted, not
published: the same tutorial shows v2 at seq 512 (2 KiB fp32 rows) reusing the product, and v2
at seq 1024 to 6144 running about 4/3 of v3's time (v3 keeps 512-element tiles) while the
profile shows spill/reload traffic. That is the cost of the fifth Vector instruction per state
again: the compiler no longer keeps the wide product in SBUF. Fitted on the tutorial's v2/v3
points at seq 512, 1024, 2048 and 4096 (channels 4096).

What counts as the same value (`value_key`, the plain definition): the same instruction on
the same engine, the same non-tensor operands, the same regions read at the same versions
(a tensor's version counts every write to any part of it), and written regions of the same
shape and dtype. Loads: a language-level load (SPEC.value_load: `nl.load`) of HBM elements already
loaded into a tile of the same shape that is still intact, none of them written since, is
elided too (the compiler keeps the tile: loop-invariant code motion). NKIBench's trn1
profiles show it: add_rmsnorm_matmul reads 42 MB of HBM where its loads, as written, read
the 8 MB weight 32 times over; the same profile column shows the wide (16 KiB per
partition) loads of the 4096x12288x5120 matmul paid in full, the MAX_REUSE_BYTES bound.
This is the compiler of NKIBench's runs (the Neuron DLAMI's PyTorch 2.7 environment, 2025);
the SDK 2.26.1 matrix-multiplication tutorial's table (51.8 ms for the tiled version,
21.0 ms measured under a late-2025 toolchain) predates it. Not elided: explicit DMA
instructions (`nisa.dma_copy`, `dma_transpose`, ...: the optimisation tutorial's v2 on
trn2 pays its repeated dma_copy loads, 39.9 ms with DMA 99.9 % active), the Tensor
engine (PSUM accumulation), random-number instructions (`spec.random`), instructions that
read nothing or write no tensor (PRNG seeding), runtime-indexed views, and programs with
runtime loops or two cores (where a version count per tensor is not the whole story).
"""
from __future__ import annotations

from itertools import repeat

from nkirun.isa.bound import raw_args, views_of

ENGINES = frozenset({"vector", "scalar", "gpsimd"})
MAX_REUSE_BYTES = 2048  # per partition (fitted; see above)



def applies(program) -> bool:
    """Whether the program's schedule may elide recomputation at all."""
    return program.cores == 1 and not program.loops


def value_key(b) -> tuple | None:
    """What identifies the value `b` computes, up to the versions of what it reads (None:
    never elided). Reads are (tensor, box); written operands contribute shape and dtype."""
    if (b.engine not in ENGINES and not b.spec.value_load) or b.spec.random \
            or b.mask is not None:
        return None
    acc = b.accesses()
    if not acc.reads or not acc.writes:  # (PRNG seeding writes only the generator's state)
        return None
    written = {k for k, _ in acc.writes}
    parts = [b.spec.name, b.engine]
    args = b.args
    for p in b.spec.params:
        v = args.get(p.name)
        views = views_of(v)
        if views:
            if any(r.ap is not None and r.ap.indirect is not None for r in views):
                return None
            if p.name in written:
                if any(r.free_size * r.dtype.itemsize > MAX_REUSE_BYTES for r in views):
                    return None
                parts.append(tuple((r.shape, r.dtype.name) for r in views))
            else:
                parts.append(tuple((r.decl.name, r.box) for r in views))
        elif v.__class__ in _PLAIN:
            parts.append(v)
        else:
            try:
                hash(v)
            except TypeError:
                return None  # an operand nkirun cannot compare cheaply: never elided
            parts.append(v)
    return tuple(parts)


_PLAIN = frozenset({str, int, float, bool, type(None)})
_ZEROS = repeat(0)  # (map(get, names, _ZEROS): get(name, 0) for each name)
_UNSET = object()


def fast_key(b, reads) -> tuple | object | None:
    """`value_key`, computed once per operand form (checker/intern.py: operands equal up to
    the naming of tensors) and completed with the names the instruction reads (`reads`: its
    (tensor, box) pairs in operand order). Equal fast keys imply equal value keys; a match
    the fast key misses (equal scalars the front end did not share) only costs a
    recomputation. Operands with no form take the plain key."""
    form = raw_args(b).form  # (a FormBound's pending Operands stay unmade)
    if form is None:
        return value_key(b)
    shape = form.get("value_key", _UNSET)
    if shape is _UNSET:
        shape = form["value_key"] = None if value_key(b) is None else object()
    if shape is None or b.mask is not None:
        return None
    return (shape, tuple([n for n, _ in reads]))


class Recomputes:
    """Per schedule: tensor versions and the values computed so far.

    `lookup(key, reads)` gives (an earlier instruction computing the same value whose result
    is intact, as (index, end_ns), or None; the read versions); `store` bumps the versions
    of what an instruction writes and, with a key, notes the value it computed; `wrote`
    only bumps (instructions never elided)."""

    __slots__ = ("versions", "values", "kept")

    def __init__(self):
        self.versions: dict[str, int] = {}
        self.values: dict[tuple, tuple[int, float, tuple, tuple]] = {}
        self.kept: set[str] = set()  # tensors a stored value wrote: their versions stay

    def forget(self, names) -> None:
        """Drop the versions of tensors no later instruction reads or writes (history.py
        last_uses), except those a stored value wrote: a lookup compares theirs."""
        kept, versions = self.kept, self.versions
        for n in names:
            if n not in kept:
                versions.pop(n, None)

    def lookup(self, key, read_names) -> tuple:
        get = self.versions.get
        rv = tuple(map(get, read_names, _ZEROS))  # (each name's version, 0 if none yet)
        hit = self.values.get((key, rv))
        if hit is not None:
            index, end, written, versions = hit
            if tuple(map(get, written, _ZEROS)) == versions:
                return (index, end), rv
        return None, rv  # never computed, or its result was overwritten since

    def wrote(self, write_names) -> None:
        versions = self.versions
        for n in write_names:
            versions[n] = versions.get(n, 0) + 1

    def store(self, key, rv, write_names, index: int, end: float) -> None:
        """Instruction `index` computed the value of `key` (read at versions `rv`), readable
        from `end`."""
        versions = self.versions
        for n in write_names:
            versions[n] = versions.get(n, 0) + 1
        self.kept.update(write_names)
        self.values[(key, rv)] = (index, end, write_names,
                                  tuple(map(versions.__getitem__, write_names)))
