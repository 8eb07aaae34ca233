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

Timing constants (DMA engines, latencies, bandwidths) live in hw/cost_tables.py, one table
per NeuronCore generation; the DMA model itself in schedule/dma.py (docs/cost.md).
"""
from __future__ import annotations

from dataclasses import field

from nkirun.records import record

KIB = 1024

# DMA "cycles" are nanoseconds: the docs give DMA costs in time, not in cycles.
DMA_CLOCK_GHZ = 1.0

# The compute engines, in the order reports list them.
COMPUTE_ENGINES = ("tensor", "vector", "scalar", "gpsimd")


@record(frozen=True, slots=True)
class Target:
    """One chip generation's numbers (trn1, trn2, ...): partitions, buffer sizes, clocks."""
    name: str
    core: str
    partitions: int
    sbuf_bytes_per_partition: int
    psum_bytes_per_partition: int
    psum_bank_bytes: int
    clocks_ghz: dict[str, float] = field(default_factory=dict)
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

    @property
    def cost(self):
        """The timing table of this target's generation (hw/cost_tables.py)."""
        from nkirun.hw.cost_tables import cost_table
        return cost_table(self)

    @property
    def dma_queues(self) -> int:
        return self.cost.dma_engines

    def dma_ns(self, nbytes: float, partitions: int) -> float:
        """A lone transfer of `nbytes` over `partitions` partitions (from partition 0) with
        whole-row descriptors: latency + the largest engine share (schedule/dma.py)."""
        t = self.cost
        per = t.dma_partitions_per_engine
        rows = max(1, partitions)
        row_bytes = nbytes / rows
        share = min(rows, per) * row_bytes
        return t.dma_latency_ns + share * (1 + t.dma_descriptor_bytes / max(row_bytes, 1.0)) \
            / t.dma_engine_bytes_per_ns


# Clocks: NC-v2 Tensor 2.8 / Vector 1.12 / Scalar 1.4 / GpSimd 1.4 GHz [ARCH2];
# NC-v3 Tensor 2.4 / Vector 0.96 / Scalar 1.2 / GpSimd 1.2 GHz [ARCH3] (reference §5 table).
_V2_CLOCKS = {"tensor": 2.8, "vector": 1.12, "scalar": 1.4, "gpsimd": 1.4}
_V3_CLOCKS = {"tensor": 2.4, "vector": 0.96, "scalar": 1.2, "gpsimd": 1.2}
# NC-v4: Tensor 2.4 GHz, Vector/Scalar/GpSimd 1.2 GHz [ARCH4] (reference §5 table).
_V4_CLOCKS = {"tensor": 2.4, "vector": 1.2, "scalar": 1.2, "gpsimd": 1.2}

TARGETS: dict[str, Target] = {t.name: t for t in [
    # NC-v2: SBUF 24 MiB = 192 KiB per partition [ARCH2]; PSUM 2 MiB = 16 KiB per partition
    # = 8 banks x 2 KiB [ARCH2]. Timing constants: hw/cost_tables.py.
    Target("trn1", "NeuronCore-v2", 128, 192 * KIB, 16 * KIB, 2 * KIB, _V2_CLOCKS),
    Target("inf2", "NeuronCore-v2", 128, 192 * KIB, 16 * KIB, 2 * KIB, _V2_CLOCKS),
    # NC-v3: SBUF 28 MiB = 224 KiB per partition [ARCH3]; PSUM as v2 [ARCH3].
    Target("trn2", "NeuronCore-v3", 128, 224 * KIB, 16 * KIB, 2 * KIB, _V3_CLOCKS),
    # NC-v4: SBUF 32 MiB = 256 KiB per partition [ARCH4]; PSUM as v2/v3 [ARCH4].
    Target("trn3", "NeuronCore-v4", 128, 256 * KIB, 16 * KIB, 2 * KIB, _V4_CLOCKS),
]}

DEFAULT_TARGET = "trn2"  # the program format's default (program-format.md)

# HBM tensors larger than this are refused before anything is allocated (override: --max-hbm).
DEFAULT_MAX_HBM_BYTES = 4 * 1024**3

# Targets whose logical NeuronCore has two physical cores (LNC2 programs, --lnc 2).
LNC_TARGETS = ("trn2", "trn3")
