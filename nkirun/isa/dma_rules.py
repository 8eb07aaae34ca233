"""Rules the DMA instructions share (dma_copy, dma_transpose, dma_compute): the NeuronCore
generation of the target, `priority`, and the `engine` that triggers a hardware-DGE transfer.

Facts (NKI 0.6 API pages of dma_copy / dma_transpose,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.dma_copy.html):
* priority: "DMA quality-of-service priority level 0-3 where lower is higher priority
  (NeuronCore-v4+ only)"; it changes no value.
* dma_copy engine: "the engine to use for HWDGE descriptor generation: engine.sync or
  engine.scalar. Only valid when dge_mode=hwdge"; unknown by default.
"""
from __future__ import annotations

from nkirun.isa.spec import Bound

PRIORITIES = range(4)
DGE_ENGINES = ("unknown", "sync", "scalar")


def target_of(b: Bound):
    """The program's Target: b.target when bind attaches the typed Target, else the name
    bind records in b.extra["target"]."""
    t = getattr(b, "target", None)
    if t is None or isinstance(t, str):
        from nkirun.hw.targets import DEFAULT_TARGET, TARGETS
        t = TARGETS[t or (getattr(b, "extra", None) or {}).get("target", DEFAULT_TARGET)]
    return t


def core_version(b: Bound) -> int:
    """The NeuronCore generation of the program's target (2 for trn1/inf2, 3 for trn2, ...)."""
    return int(target_of(b).core.rsplit("v", 1)[1])  # "NeuronCore-v3"


def target_name(b: Bound) -> str:
    return target_of(b).name


def priority_rules(b: Bound):
    """E396: priority outside 0..3; E397: priority below NeuronCore-v4."""
    p = b.get("priority")
    if p is None:
        return
    if p not in PRIORITIES:
        yield b.err("E396", f"priority {p} is not a DMA priority level", "priority",
                    hint="allowed: 0, 1, 2, 3 (lower is higher priority)")
    elif core_version(b) < 4:
        yield b.err("E397", f"priority needs a NeuronCore-v4 target; {target_name(b)} is "
                    f"NeuronCore-v{core_version(b)}", "priority",
                    hint="leave priority unset (the QoS levels exist from NeuronCore-v4 on)")


def hwdge_target_rule(b: Bound, code: str):
    """`code`: dge_mode hwdge on a NeuronCore-v2 target (the hardware DGE is v3 on)."""
    if b.get("dge_mode") == "hwdge" and core_version(b) < 3:
        yield b.err(code, f"dge_mode hwdge needs a NeuronCore-v3 target (trn2); "
                    f"{target_name(b)} has no hardware DGE", "dge_mode",
                    hint="use dge_mode: unknown (or swdge), or target: trn2")


def engine_rule(b: Bound):
    """E398: an explicit DGE trigger engine without dge_mode hwdge."""
    e = b.get("engine", "unknown")
    if e != "unknown" and b.get("dge_mode") != "hwdge":
        yield b.err("E398", f"engine {e} picks the sequencer that triggers the hardware DGE; it "
                    "is only valid with dge_mode: hwdge", "engine",
                    hint="add dge_mode: hwdge, or leave engine unset")
