"""Run a test program with its arrays passed as run inputs instead of .npy files, and
collect the run-time warnings (Machine.warnings).

    outs, warns = run_inputs(tmp_path, {"x": sbuf(arr), "y": out((P, 8), "float32")}, [...])

Why not prog_helpers.run_program: NumPy writes ml_dtypes' float8_e5m2 arrays with the
header descr '<f1', which nkirun's .npy loader refuses, and run() does not return warnings.
"""
from __future__ import annotations

import numpy as np
from prog_helpers import NP_TYPES, write_program

from nkirun.api import run


def run_inputs(tmp_path, tensors: dict, instructions: list):
    decls, inputs = {}, {}
    for name, spec in tensors.items():
        spec = dict(spec)
        arr = spec.pop("array", None)
        if arr is not None:
            dtype = next(k for k, t in NP_TYPES.items() if np.dtype(t) == arr.dtype)
            spec.update(shape=list(arr.shape), dtype=dtype, fill=0)
            inputs[name] = arr
        if not spec.get("output"):
            spec.pop("output", None)
        decls[name] = spec
    machines = []
    outs = run(write_program(tmp_path, decls, instructions), inputs=inputs,
               after_each=lambda b, m: machines.append(m))
    return outs, (machines[-1].warnings if machines else [])
