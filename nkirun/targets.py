"""Hardware targets as data: memory sizes, engine clocks, DMA characteristics.

Sources (see ../shared/docs/nki-reference.md §5): [ARCH2] NeuronCore-v2 architecture guide
(Trn1/Inf2), [ARCH3] NeuronCore-v3 guide (Trn2), [DMA] NKI DMA bandwidth guide.
"""
from __future__ import annotations

from dataclasses import dataclass, field

KIB = 1024


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    core: str
    partitions: int
    sbuf_bytes_per_partition: int
    psum_bytes_per_partition: int
    psum_bank_bytes: int
    clocks_ghz: dict[str, float] = field(default_factory=dict)
    dma_queues: int = 16
    dma_fixed_ns: float = 1300.0
    dma_bytes_per_ns: float = 17.0  # sustained, per queue
    min_ii: int = 64  # "MIN_II is roughly 64 engine cycles" (instruction pages)
    gpsimd_start: int = 150  # affine_select / iota start-up [OLD-ISA]


_V2_CLOCKS = {"tensor": 2.8, "vector": 1.12, "scalar": 1.4, "gpsimd": 1.4}  # [ARCH2]
_V3_CLOCKS = {"tensor": 2.4, "vector": 0.96, "scalar": 1.2, "gpsimd": 1.2}  # [ARCH3]

TARGETS: dict[str, Target] = {t.name: t for t in [
    # SBUF 192 KiB/partition [ARCH2]; PSUM 16 KiB = 8 banks x 2 KiB [ARCH2]; DMA ~1.3 us fixed
    # cost and 17 B/ns sustained per queue [DMA].
    Target("trn1", "NeuronCore-v2", 128, 192 * KIB, 16 * KIB, 2 * KIB, _V2_CLOCKS,
           dma_fixed_ns=1300.0, dma_bytes_per_ns=17.0),
    Target("inf2", "NeuronCore-v2", 128, 192 * KIB, 16 * KIB, 2 * KIB, _V2_CLOCKS,
           dma_fixed_ns=1300.0, dma_bytes_per_ns=17.0),
    # SBUF 224 KiB/partition (28 MiB / 128) [ARCH3]; DGE DMA ~600 ns per instruction [ARCH3];
    # 23 B/ns sustained per queue [DMA].
    Target("trn2", "NeuronCore-v3", 128, 224 * KIB, 16 * KIB, 2 * KIB, _V3_CLOCKS,
           dma_fixed_ns=600.0, dma_bytes_per_ns=23.0),
]}

DEFAULT_TARGET = "trn2"

# HBM tensors larger than this are refused before anything is allocated (override: --max-hbm).
DEFAULT_MAX_HBM_BYTES = 4 * 1024**3
