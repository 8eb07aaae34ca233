"""Two-core (LNC2) programs for tests: built as the YAML form's dict, run through the API."""
from __future__ import annotations

import numpy as np

from nkirun.api import check_program, cost, run


def empty(shape, dtype, core=None, buffer="sbuf", output=False) -> dict:
    return _own({"buffer": buffer, "shape": list(shape), "dtype": dtype}, core, output)


def _own(d, core, output):
    if core is not None:
        d["core"] = core
    if output:
        d["output"] = True
    return d


def program(tensors: dict, core0: list, core1: list, target: str = "trn2") -> dict:
    return {"version": 1, "target": target, "tensors": tensors,
            "cores": [{"instructions": core0}, {"instructions": core1}]}


def run2(tensors, core0, core1, target="trn2", **kw):
    return run(program(tensors, core0, core1, target), **kw)


def codes2(tensors, core0, core1, target="trn2") -> list[str]:
    return [d.code for d in check_program(program(tensors, core0, core1, target)).diagnostics]


def diags2(tensors, core0, core1, target="trn2"):
    return check_program(program(tensors, core0, core1, target)).diagnostics


def cost2(tensors, core0, core1, target="trn2"):
    return cost(program(tensors, core0, core1, target))
