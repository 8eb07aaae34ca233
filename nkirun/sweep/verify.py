"""A costed variant run on seeded inputs and compared with a NumPy reference function
(`--reference REF.py::FN`): it takes the same arrays and keywords as the kernel and
returns the expected outputs in the kernel's return structure. Tolerances as `run
--expect` (exact by default; --rtol/--atol)."""
from __future__ import annotations

import numpy as np

from nkirun.diagnostics import Loc, NkirunError, error


def seeded_array(shape, dtype, seed: int, name: str) -> np.ndarray:
    """The same array for the same (seed, parameter name, shape, dtype) in every process:
    floats standard-normal, ints in [-8, 8) (unsigned [0, 16)), cast to the dtype."""
    import zlib
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    np_type = dtype.np_type
    if dtype.is_float:
        return rng.standard_normal(shape).astype(np.float32).astype(np_type)
    low = 0 if np.dtype(np_type).kind == "u" else -8
    return rng.integers(low, low + 16, size=shape).astype(np_type)


def _reference(setup):
    from nkirun.source.kernel.loader import split_spec
    from nkirun.sweep.loading import kernel_module
    path, name = split_spec(setup.reference)
    module = kernel_module(path, setup.reference_source)
    func = getattr(module, name or "", None)
    if not callable(func):
        raise NkirunError(error("E600", f"--reference {setup.reference}: {path} has no "
                                f"function `{name}`", Loc(path)))
    return getattr(func, "__wrapped__", func)


def _inputs(setup, variant, traced):
    """(tensor name -> array for the run, parameter -> value for the reference)."""
    from nkirun.runner.files import load_npy
    from nkirun.source.kernel.trace import TensorArg
    given = {**setup.values, **variant.params}
    run_inputs, call = {}, {}
    for pname, v in given.items():
        tname = traced.names.get(pname)
        if tname is None:
            call[pname] = v
            continue
        if isinstance(v, np.ndarray):
            a = v
        elif isinstance(v, TensorArg) and v.array is not None:
            a = v.array
        elif isinstance(v, TensorArg) and v.file is not None:
            decl = traced.program.tensors[tname]
            a = load_npy(v.file, decl, f"--input {pname}", Loc(v.file))
        else:
            decl = traced.program.tensors[tname]
            a = seeded_array(decl.shape, decl.dtype, setup.seed, pname)
        run_inputs[tname] = call[pname] = a
    return run_inputs, call


def compare_with_reference(setup, variant, traced, checked) -> dict:
    """Run the checked variant (pipeline.commands.run) on its inputs and compare each
    output with the reference's: mismatches (summed) and the max abs/rel error."""
    from nkirun.pipeline import commands
    from nkirun.runner.compare import Tolerance, compare
    if setup.reference is None:
        raise NkirunError(error("E600", "verification needs --reference REF.py::FN",
                                Loc(variant.kernel)))
    run_inputs, call = _inputs(setup, variant, traced)
    checked.front.inputs.update(run_inputs)
    actual = list(commands.run(checked, progress=False).outputs.values())
    expected = _reference(setup)(**call)
    if isinstance(expected, dict):
        expected = list(expected.values())
    elif not isinstance(expected, (list, tuple)):
        expected = [expected]
    if len(expected) != len(actual):
        raise NkirunError(error("E600", f"--reference returned {len(expected)} outputs; the "
                                f"kernel returns {len(actual)}", Loc(variant.kernel)))
    tol = Tolerance(setup.rtol, setup.atol, None, 0.0)
    out = {"mismatches": 0, "max_abs": 0.0, "max_rel": 0.0}
    for i, (a, e) in enumerate(zip(actual, expected)):
        e = np.asarray(e)
        if a.shape != e.shape:
            e = e.reshape(a.shape) if e.size == a.size else e
        if a.shape != e.shape:
            out["mismatches"] += int(a.size)
            continue
        d = compare(f"out{i}", a, e, tol=tol)
        out["mismatches"] += d.mismatches
        out["max_abs"] = max(out["max_abs"], float(d.max_abs))
        out["max_rel"] = max(out["max_rel"], float(d.max_rel))
    return out
