"""The timing constants of the cost model: one table per NeuronCore generation, each number
with its public source. The scheduler (schedule/scheduler.py, schedule/dma.py) and the
instruction modules' `cycles()` read these; nothing else holds a timing number.

Sources (AWS Neuron documentation, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/):
[DMA-BW]  nki/deep-dives/nki-dma-bandwidth-guide.html — 16 engines per NeuronCore; sustained
          17 / 23 / 33 B/ns per engine (trn1 / trn2 / trn3); "~1300 ns cross-engine"
          descriptor-setup, synchronisation and semaphore-to-start latency per transfer;
          < 256 B per partition "severely overhead-bound", >= 2 KiB "approaches peak",
          >= 4 KiB "fully amortizes per-packet overhead".
[DMA-OV]  nki/about/nki-dma-overview.html — each engine serves 8 partition lanes; a transfer
          is spread over up to 16 engines by its partitions; one engine moved 32 KiB
          HBM->SBUF in 1416 ns on trn2 (= 23.1 B/ns, the sustained figure).
[ARCH2]   nki/guides/architecture/trainium_inferentia2_arch.html — clocks; HBM 820 GB/s per
          Trn1 device of 2 NeuronCores (410 GB/s per core); Vector engine "Performance
          Consideration": back-to-back instructions that each depend on the previous one's
          output add a static instruction overhead of 100 engine cycles.
[ARCH3]   nki/guides/architecture/trainium2_arch.html — each DGE-based DMA instruction takes
          ~600 ns; HBM 2.9 TB/s per device of 8 NeuronCores (~362 GB/s per core).
[ARCH4]   nki/guides/architecture/trainium3_arch.html — HBM 4.7 TB/s per device of 8 cores
          (~590 GB/s per core); 8x128 MXFP8 input rows into the PE array (4x bf16's 2x128).
[PERF]    nki/deep-dives/nki_perf_guide.html — back-to-back dependent one-element ScalarE
          instructions: initiation interval ~189 ns = 264 ScalarE cycles on NC-v2; static
          instruction overhead ~100 cycles; TensorE MM_INIT_LATENCY 64 cycles on trn1 and fast
          LoadStationary ~N/4 cycles.

Readings (where the pages give no number, what nkirun assumes):
* The fixed ~1300 ns is latency, not occupancy: an engine streams the next transfer while
  the previous one's semaphore travels, so many transfers in flight pay it once (the guide's
  "pipelines" of DMA packets). nkirun charges it between a transfer's trigger and the start
  of its streaming, and keeps the engine free meanwhile.
* Descriptor overhead: one descriptor per contiguous run (at most one partition row); each
  costs the streaming time of `dma_descriptor_bytes` extra bytes. 360 B follows the guide's
  curve: 42 % of the engine rate at 256 B, 85 % at 2 KiB, 92 % at 4 KiB.
* Element width: the DMA datapath converts through fp32 [DMA-OV, nki.isa.dma_copy]; nkirun
  reads this as NC-v2 engines moving every element as a 4-byte word, so bf16 streams at half
  the byte rate on trn1/inf2. The trn2 measurement (32 KiB of bf16 at the full 23 B/ns)
  shows NC-v3 does not; NC-v4 is assumed like v3. This reading is what brings the matrix-
  multiplication tutorial's four trn1 times (bf16) within +20 % .. -12 %.
* The dependent-instruction interval is split into the instruction's own MIN_II (64
  cycles) and a read-after-write commit/semaphore latency of the remaining 200 ScalarE
  cycles = 143 ns; nkirun adds it when an instruction reads what a compute instruction wrote.
  NC-v3/v4 values are not published: the same nanoseconds are assumed. A Vector reader
  waits the architecture guide's own Vector figure instead, 100 Vector cycles (89 ns on
  NC-v2), the same cycles assumed on NC-v3/v4.
* DGE: a dma with dge_mode hwdge or swdge first spends `dge_ns` on the engine that builds its
  descriptors (hwdge: its `engine=`, default sync; swdge: gpsimd). NC-v4: v3's value assumed.

FITTED constants (every other number above is a public figure or arithmetic on one), each
with what it was fitted on and its error on points it was not fitted on (the calibration,
benchmarks/calibration/run.py; docs/cost.md "Calibration"):
* dma_min_element_bytes = 4 on NC-v2: FITTED on the four bf16 matrix-multiplication
  tutorial times (trn1); no held-out point moves bf16 through NC-v2 DMA (NKIBench is fp32),
  so its held-out error is unknown.
* dma_descriptor_bytes = 360: read off the bandwidth guide's efficiency curve (42 % at
  256 B, 85 % at 2 KiB), not fitted on a kernel; held out on the CS149 trn2 vector adds.
* kernel_launch_ns = 12 us: FITTED on three one-tile CS149 vector adds (trn2); refitted
  without each one's family (leave-one-family-out) those three land within 20 %.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CostTable:
    dma_engines: int  # DMA engines (rings) per NeuronCore [DMA-BW][DMA-OV]
    dma_partitions_per_engine: int  # partition lanes one engine serves [DMA-OV]
    dma_engine_bytes_per_ns: float  # sustained streaming rate of one engine [DMA-BW]
    dma_latency_ns: float  # trigger -> streaming start, overlapped across transfers [DMA-BW]
    dma_descriptor_bytes: int  # per-descriptor overhead, in bytes of streaming [DMA-BW curve]
    dma_min_element_bytes: int  # elements narrower than this stream as this many bytes
    hbm_bytes_per_ns: float  # HBM bandwidth one NeuronCore can use [ARCH2/3/4]
    dge_ns: float  # descriptor generation per DGE-based DMA instruction [ARCH3]
    raw_latency_ns: float  # write -> dependent read between compute instructions [PERF]
    # the Vector engine's "static instruction overhead" for an instruction that depends on
    # the output of the previous one, in Vector cycles (replaces raw_latency_ns for a Vector
    # reader) [ARCH2 "Vector Engine: Performance Consideration"]
    vector_dependent_cycles: int
    mm_init_cycles: int  # TensorE instruction turnaround MM_INIT_LATENCY [PERF]
    fp32_matmul_passes: int  # fp32 matmul: 4 passes (92 vs 23 TFLOPS on v2) [ARCH2][ARCH3]
    # fp8 double-row: moving elements per PE cycle ([K, 2, N] streams in N cycles): v3's
    # 4x128 FP8 vs 2x128 BF16 input rows [ARCH3]; v4 assumed the same for plain fp8
    fp8_rows_factor: int
    # FITTED: the fixed time of one kernel call beyond its instructions' makespan (launch,
    # the runtime's semaphores, the final write-back), on the public CS149 vector-add
    # kernels that run one tile (trn2, nc_latency p99 and total_time: 15 us measured against
    # 4.2 us of instructions at 25,600 elements; 28 and 26 us against 15.5 and 12.3 at
    # 256,000). Leave-one-family-out held-out error: benchmarks/calibration/run.py. No
    # public page gives a figure (the Mamba tutorial names a NEFF start-up and tear-down
    # overhead without one); the same value is assumed on every generation.
    kernel_launch_ns: float = 12_000.0
    sources: tuple[str, ...] = ()


_V2 = CostTable(
    dma_engines=16, dma_partitions_per_engine=8, dma_engine_bytes_per_ns=17.0,
    dma_latency_ns=1300.0, dma_descriptor_bytes=360, dma_min_element_bytes=4,
    hbm_bytes_per_ns=410.0, dge_ns=600.0,
    raw_latency_ns=(264 - 64) / 1.4, vector_dependent_cycles=100, mm_init_cycles=64, fp32_matmul_passes=4,
    fp8_rows_factor=1,  # NC-v2 has no double-row mode (refused by E484)
    sources=("DMA-BW: 17 B/ns x 16 engines, ~1300 ns", "DMA-OV: 8 partitions per engine",
             "ARCH2: 820 GB/s per 2-core device", "PERF: 189 ns = 264 ScalarE cycles",
             "PERF: MM_INIT_LATENCY 64 cycles"))
_V3 = CostTable(
    dma_engines=16, dma_partitions_per_engine=8, dma_engine_bytes_per_ns=23.0,
    dma_latency_ns=1300.0, dma_descriptor_bytes=360, dma_min_element_bytes=1,
    hbm_bytes_per_ns=362.0, dge_ns=600.0,
    raw_latency_ns=(264 - 64) / 1.4, vector_dependent_cycles=100, mm_init_cycles=64, fp32_matmul_passes=4,
    fp8_rows_factor=2,
    sources=("DMA-BW: 23 B/ns x 16 engines", "DMA-OV: 1416 ns for 32 KiB on one engine",
             "ARCH3: 2.9 TB/s per 8-core device; DGE ~600 ns; FP8 4x128 rows",
             "PERF (NC-v2 value assumed): dependent-instruction latency"))
_V4 = CostTable(
    dma_engines=16, dma_partitions_per_engine=8, dma_engine_bytes_per_ns=33.0,
    dma_latency_ns=1300.0, dma_descriptor_bytes=360, dma_min_element_bytes=1,
    hbm_bytes_per_ns=590.0, dge_ns=600.0,
    raw_latency_ns=(264 - 64) / 1.4, vector_dependent_cycles=100, mm_init_cycles=64, fp32_matmul_passes=4,
    fp8_rows_factor=2,
    sources=("DMA-BW: 33 B/ns x 16 engines", "ARCH4: 4.7 TB/s per 8-core device",
             "ARCH3 (assumed for v4): DGE ~600 ns", "PERF (NC-v2 value assumed)"))

COST_TABLES: dict[int, CostTable] = {2: _V2, 3: _V3, 4: _V4}


def cost_table(target) -> CostTable:
    """The table of `target`'s NeuronCore generation."""
    return COST_TABLES[target.version]


# Source tags that instruction modules write into their cost notes, and what each means: a
# report that shows a tag shows its meaning too.
SOURCE_TAGS = {
    "[OLD-ISA]": "the cost estimate of the legacy NKI ISA pages (the neuronxcc.nki.isa "
                 "docstrings of Neuron SDK 2.26.1, the last pages that give instruction "
                 "costs: https://github.com/aws-neuron/aws-neuron-sdk/blob/77a1c5a83f25/nki/"
                 "api/nki/isa/__init__.py), which the current pages no longer give",
}


def tag_meanings(texts) -> list[str]:
    """`TAG: meaning` for each source tag that appears in `texts`, in SOURCE_TAGS order."""
    joined = "\n".join(t for t in texts if t)
    return [f"{tag}: {meaning}" for tag, meaning in SOURCE_TAGS.items() if tag in joined]
