"""Hardware targets as data: memory sizes, engine clocks, DMA characteristics.

One `Target` per target name; nothing else in nkirun hard-codes a hardware number (the
instruction modules read `min_ii`/`gpsimd_start` from here, the cost model reads clocks and
the DMA model). Source tags name public NKI documentation
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/):
[ARCH2] NeuronCore-v2 architecture guide (Trn1/Inf2), [ARCH3] NeuronCore-v3 guide (Trn2),
[ARCH4] Trainium3 architecture guide (NeuronCore-v4,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/guides/architecture/trainium3_arch.html),
[DMA] NKI DMA overview and DMA bandwidth guide, [OLD-ISA] legacy nki.isa docstrings
(their "Estimated instruction cost" lines).

The DMA model (the only place it lives; `isa/common.dma_cycles` and the scheduler call it):
  * a transfer touching P partitions is spread over `ceil(P / 8)` of the 16 DMA queues
    (capped at 16): each DMA engine serves about 8 partitions (128 / 16) [DMA; reference §5];
  * it takes `fixed + bytes / (queues * per-queue B/ns)` ns: the fixed cost is paid once
    per transfer (the queues work in parallel), the bytes are split evenly over the queues;
  * the queues it uses are busy for the whole time, fixed cost included (a conservative
    reading: the guide's ~1.3 us is "semaphore to start" latency, which hardware may overlap
    with other in-flight transfers; nkirun does not model that overlap);
  * DMA has no clock of its own in the docs: nkirun counts DMA "cycles" in nanoseconds
    (a nominal 1 GHz clock).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

KIB = 1024

# DMA "cycles" are nanoseconds: the docs give DMA costs in time, not in cycles.
DMA_CLOCK_GHZ = 1.0
# Partitions served by one DMA engine/queue: 128 partitions / 16 engines [DMA; reference §5].
DMA_PARTITIONS_PER_QUEUE = 8

# The compute engines, in the order reports list them.
COMPUTE_ENGINES = ("tensor", "vector", "scalar", "gpsimd")


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    core: str
    partitions: int
    sbuf_bytes_per_partition: int
    psum_bytes_per_partition: int
    psum_bank_bytes: int
    clocks_ghz: dict[str, float] = field(default_factory=dict)
    dma_queues: int = 16  # 16 DMA engines (queues) per NeuronCore [ARCH2][DMA]
    dma_fixed_ns: float = 1300.0  # fixed cost per transfer [DMA]
    dma_bytes_per_ns: float = 17.0  # sustained bandwidth per queue [DMA]
    # "MIN_II is roughly 64 engine cycles" (the range_select, nc_match_replace8 and
    # tensor_tensor_scan pages); NC-v3's own MIN_II is not documented, so the v2 value is
    # used for every target.
    min_ii: int = 64
    gpsimd_start: int = 150  # GpSimd start-up of affine_select / iota [OLD-ISA] (ref. §1.9/1.10)

    @property
    def version(self) -> int:
        """The NeuronCore generation: 2 (trn1/inf2), 3 (trn2), 4 (trn3); NKI's nc_version."""
        return int(self.core.rsplit("-v", 1)[1])

    def clock(self, engine: str) -> float | None:
        """The engine's clock in GHz (DMA: the nominal 1 GHz); None when undocumented."""
        if engine == "dma":
            return DMA_CLOCK_GHZ
        return self.clocks_ghz.get(engine)

    def dma_queues_for(self, partitions: int) -> int:
        """How many DMA queues a transfer over `partitions` partitions is spread across."""
        return max(1, min(self.dma_queues, math.ceil(partitions / DMA_PARTITIONS_PER_QUEUE)))

    def dma_ns(self, nbytes: int, partitions: int) -> float:
        """Duration (ns) of one DMA transfer of `nbytes` bytes over `partitions` partitions."""
        queues = self.dma_queues_for(partitions)
        return self.dma_fixed_ns + nbytes / (queues * self.dma_bytes_per_ns)


# Clocks: NC-v2 Tensor 2.8 / Vector 1.12 / Scalar 1.4 / GpSimd 1.4 GHz [ARCH2];
# NC-v3 Tensor 2.4 / Vector 0.96 / Scalar 1.2 / GpSimd 1.2 GHz [ARCH3] (reference §5 table).
_V2_CLOCKS = {"tensor": 2.8, "vector": 1.12, "scalar": 1.4, "gpsimd": 1.4}
_V3_CLOCKS = {"tensor": 2.4, "vector": 0.96, "scalar": 1.2, "gpsimd": 1.2}
# NC-v4: Tensor 2.4 GHz, Vector/Scalar/GpSimd 1.2 GHz [ARCH4] (reference §5 table).
_V4_CLOCKS = {"tensor": 2.4, "vector": 1.2, "scalar": 1.2, "gpsimd": 1.2}

TARGETS: dict[str, Target] = {t.name: t for t in [
    # NC-v2: SBUF 24 MiB = 192 KiB per partition [ARCH2]; PSUM 2 MiB = 16 KiB per partition
    # = 8 banks x 2 KiB [ARCH2]. DMA: ~1300 ns fixed cost per transfer ("semaphore to start")
    # and 17 B/ns sustained per queue (272 GB/s per NeuronCore) [DMA bandwidth guide].
    Target("trn1", "NeuronCore-v2", 128, 192 * KIB, 16 * KIB, 2 * KIB, _V2_CLOCKS,
           dma_fixed_ns=1300.0, dma_bytes_per_ns=17.0),
    Target("inf2", "NeuronCore-v2", 128, 192 * KIB, 16 * KIB, 2 * KIB, _V2_CLOCKS,
           dma_fixed_ns=1300.0, dma_bytes_per_ns=17.0),
    # NC-v3: SBUF 28 MiB = 224 KiB per partition [ARCH3]; PSUM as v2 [ARCH3]. DMA: each
    # DGE-based DMA instruction takes ~600 ns [ARCH3]; 23 B/ns sustained per queue
    # (368 GB/s per NeuronCore) [DMA bandwidth guide].
    Target("trn2", "NeuronCore-v3", 128, 224 * KIB, 16 * KIB, 2 * KIB, _V3_CLOCKS,
           dma_fixed_ns=600.0, dma_bytes_per_ns=23.0),
    # NC-v4: SBUF 32 MiB = 256 KiB per partition [ARCH4]; PSUM as v2/v3 [ARCH4]. DMA: 33 B/ns
    # sustained per queue (528 GB/s per NeuronCore) [DMA bandwidth guide]; the per-DMA fixed
    # cost is not documented for v4: v3's ~600 ns DGE figure is assumed.
    Target("trn3", "NeuronCore-v4", 128, 256 * KIB, 16 * KIB, 2 * KIB, _V4_CLOCKS,
           dma_fixed_ns=600.0, dma_bytes_per_ns=33.0),
]}

DEFAULT_TARGET = "trn2"  # the program format's default (program-format.md)

# HBM tensors larger than this are refused before anything is allocated (override: --max-hbm).
DEFAULT_MAX_HBM_BYTES = 4 * 1024**3
