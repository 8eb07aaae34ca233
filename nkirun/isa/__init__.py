"""The instruction table: every instruction nkirun knows, one module each.

To add an instruction: write `nkirun/isa/<name>.py` defining `SPEC = InstructionDef(...)`
(the module is named after the instruction) and add its name below.

`REGISTRY` maps each name to its `InstructionDef` and imports the module the first time
that instruction is looked up, so `nkirun check` loads only the instructions a program
uses (start-up time, docs/performance.md). Listing it (iteration, `len`, `in`) needs the
table alone; `.values()` / `.items()` load everything.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from importlib import import_module

from nkirun.isa.spec import InstructionDef

MODULES = (
    "load", "store", "memset",
    "range_select", "select_reduce", "affine_select", "iota",
    "nc_find_index8", "nc_transpose", "nc_matmul",
    "max8", "nc_match_replace8", "tensor_tensor_scan",
    "activation", "tensor_tensor", "tensor_scalar", "tensor_reduce", "tensor_copy",
    "dma_copy",
    "quantize_mx", "nc_matmul_mx",
    "rng", "dropout", "rand2", "set_rng_seed", "rand_set_state", "rand_get_state",
    "reciprocal", "exponential", "activation_reduce", "activate2", "scalar_tensor_tensor",
    "tensor_scalar_reduce", "tensor_scalar_cumulative", "tensor_copy_predicated",
    "tensor_partition_reduce", "bn_stats", "bn_aggr",
    "nc_stream_shuffle", "dma_transpose", "nc_n_gather", "local_gather",
    "sequence_bounds", "nonzero_with_count", "topk", "dma_compute",
    "sendrecv", "core_barrier",
    "register_alloc", "register_move", "register_load", "register_store",
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute",
    "collective_permute_implicit", "collective_permute_implicit_reduce",
    "collective_permute_implicit_current_processing_rank_id", "rank_id",
)



class _Registry(MutableMapping):
    """name -> InstructionDef over MODULES, importing each module on first use.
    (Mutable so that tests can substitute a spec.)"""

    def __init__(self, names):
        self._names = dict.fromkeys(names)  # the table, in order
        self._specs: dict[str, InstructionDef] = {}  # the ones loaded so far

    def __getitem__(self, name: str) -> InstructionDef:
        spec = self._specs.get(name)
        if spec is None:
            if name not in self._names:
                raise KeyError(name)
            spec = import_module(f"{__name__}.{name}").SPEC
            if spec.name != name:
                raise ImportError(f"nkirun/isa/{name}.py defines the instruction {spec.name!r}")
            self._specs[name] = spec
        return spec

    def get(self, name, default=None):  # (the front ends' lookup; no KeyError raised)
        spec = self._specs.get(name)
        if spec is not None:
            return spec
        return self[name] if name in self._names else default

    def __contains__(self, name) -> bool:
        return name in self._names

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __setitem__(self, name: str, spec: InstructionDef) -> None:
        self._names[name] = None
        self._specs[name] = spec

    def __delitem__(self, name: str) -> None:
        del self._names[name]
        self._specs.pop(name, None)

    def __repr__(self) -> str:
        return f"REGISTRY({', '.join(self._names)})"


REGISTRY: MutableMapping[str, InstructionDef] = _Registry(MODULES)
