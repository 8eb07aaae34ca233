"""The instruction table: every instruction nkirun knows, one module each.

To add an instruction: write `nkirun/isa/<name>.py` defining `SPEC = InstructionDef(...)`
and add its module name below.
"""
from __future__ import annotations

from importlib import import_module

from .spec import InstructionDef

MODULES = (
    "load", "store", "memset",
    "range_select", "select_reduce", "affine_select", "iota",
    "nc_find_index8", "nc_transpose", "nc_matmul",
    "max8", "nc_match_replace8", "tensor_tensor_scan",
    "activation", "tensor_tensor", "tensor_scalar", "tensor_reduce", "tensor_copy",
    "dma_copy",
)

REGISTRY: dict[str, InstructionDef] = {}
for _name in MODULES:
    _spec = import_module(f"{__name__}.{_name}").SPEC
    REGISTRY[_spec.name] = _spec
