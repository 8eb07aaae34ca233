"""`nkirun sweep`: screen many variants of a kernel — trace, check, cost and verify each,
rank them (docs/sweep.md).

    rows = nkirun.sweep("mm.py::matmul", nkirun.shape("bfloat16", 1024, 512),
                        nkirun.shape("bfloat16", 1024, 2048),
                        vary={"TILE_N": [128, 256, 512], "BLOCK_N": [1, 2, 4]},
                        where="TILE_N * BLOCK_N <= 1024", reference="mm.py::reference")
    rows.best(3)                                  # the three fastest `ok` rows

    row = nkirun.sweep.evaluate(...)              # one variant, for your own search loop
"""
from __future__ import annotations

import hashlib
import inspect
import os
import sys
import types

from nkirun.sweep.driver import Plan, SweepResult, parse_verify, run_plan
from nkirun.sweep.evaluate import STATUSES, Setup, Variant
from nkirun.sweep.evaluate import evaluate as _evaluate
from nkirun.sweep.space import SpaceError, Where, candidate_files, parse_varies, variants

__all__ = ["sweep", "evaluate", "make_backend", "STATUSES", "SweepResult", "SpaceError"]


def make_backend(spec: str = "local", jobs: int | None = None, timeout: float = 300.0,
                 memory_cap: int | None = None):
    """`local`, `ray[:ADDRESS]` or `dask[:ADDRESS]` (ValueError for anything else)."""
    kind, _, address = (spec or "local").partition(":")
    if kind == "local" and not address:
        from nkirun.sweep.pool import LocalPool
        return LocalPool(jobs, timeout, memory_cap)
    if kind in ("ray", "dask"):
        from nkirun.sweep.cluster import cluster_backend
        return cluster_backend(kind, address or None, jobs, timeout, memory_cap)
    raise ValueError(f"--backend {spec!r}: expected local, ray[:ADDRESS] or dask[:ADDRESS]")


def _source(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None  # the worker reports the missing file (E600) for each variant


def _spec_of(kernel) -> str:
    """`FILE.py::FN` for a kernel given as that string or as a function in a file."""
    if isinstance(kernel, str):
        return kernel
    func = getattr(kernel, "func", kernel)
    func = getattr(func, "__wrapped__", func)
    path = inspect.getsourcefile(func) if isinstance(func, types.FunctionType) else None
    if path is None:
        raise TypeError(f"{kernel!r}: a sweep needs a kernel defined in a file (its source "
                        "travels to the workers), or 'FILE.py::FN'")
    return f"{path}::{func.__name__}"


def build_plan(kernel: str, values: dict, vary: dict, where: str | None = None, *,
               target=None, lnc: int = 1, grid=(), reference=None, verify: str = "top:5",
               rtol: float = 0.0, atol: float = 0.0, max_instructions=None,
               fixed_text=None) -> Plan:
    """The plan of a sweep; `values` the fixed parameters (TensorArg/array/Shape/value),
    `fixed_text` how they read in sweep.json (for --resume)."""
    parse_verify(verify)  # (a usage error before anything runs)
    files, func = candidate_files(kernel)
    condition = Where(where, vary) if where else None
    space = variants(files, func, vary, condition)
    if not space:
        raise SpaceError("no variant is left: --where excludes every combination")
    ref_spec = _spec_of(reference) if reference is not None else None
    ref_source = _source(ref_spec.partition("::")[0]) if ref_spec else None
    sources = {f: _source(f) for f in files}
    setup = Setup(sources, values, target, lnc, tuple(grid or ()), max_instructions,
                  ref_spec, ref_source, rtol, atol)
    meta = {"nkirun_version": _version(), "kernel": kernel,
            "sources": {f: s and hashlib.sha256(s.encode()).hexdigest()
                        for f, s in sources.items()},
            "space": {"vary": {k: [repr(x) for x in v] for k, v in vary.items()},
                      "where": where}, "target": target, "lnc": lnc, "grid": list(grid or ()),
            "arguments": fixed_text if fixed_text is not None else
            {k: _describe(v) for k, v in values.items()},
            "max_instructions": max_instructions}
    return Plan(setup, space, meta, verify)


def _version() -> str:
    """nkirun's version (from its installed metadata: `nkirun.__version__` would import the
    package's top, above this layer)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("nkirun")
    except PackageNotFoundError:
        return "unknown"


def _describe(v) -> str:
    shape, dtype = getattr(v, "shape", None), getattr(v, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{getattr(dtype, 'name', dtype)}{list(shape)}"
    return repr(v)


def sweep(kernel, *args, vary: dict, where: str | None = None, reference=None,
          target: str | None = None, jobs: int | None = None, backend: str = "local",
          out: str | None = None, verify: str = "top:5", rtol: float = 0.0,
          atol: float = 0.0, timeout: float = 300.0, max_instructions: int | None = None,
          lnc: int = 1, grid=(), resume: bool = False, memory_cap: int | None = None,
          **kernel_kwargs) -> SweepResult:
    """Sweep `kernel` (a function in a file, or "FILE.py::FN", or a glob of candidate
    files) over `vary` ({name: [values]}), called with `args`/`kernel_kwargs` (arrays or
    nkirun.shape(...) for tensors). The rows (id order), with `best(k)`; `out`: the
    directory for results.jsonl and summary.csv (a temporary one if None)."""
    spec = _spec_of(kernel)
    values = _bind(spec, args, kernel_kwargs)
    vary = {k: list(v) for k, v in vary.items()}
    plan = build_plan(spec, values, vary, where, target=target, lnc=lnc, grid=grid,
                      reference=reference, verify=verify, rtol=rtol, atol=atol,
                      max_instructions=max_instructions)
    pool = make_backend(backend, jobs, timeout, memory_cap)
    if out is None:
        import tempfile
        with tempfile.TemporaryDirectory(prefix="nkirun-sweep-") as tmp:
            rows = run_plan(plan, pool, tmp)
            return SweepResult([rows[i] for i in sorted(rows)], None)
    from nkirun.sweep.results import write_summary
    rows = run_plan(plan, pool, out, resume)
    result = SweepResult([rows[i] for i in sorted(rows)], out)
    write_summary(out, result)
    return result


def _bind(spec: str, args: tuple, kwargs: dict) -> dict:
    """Parameter name -> value of the fixed arguments (positional ones bound by the first
    candidate's signature)."""
    if not args:
        return dict(kwargs)
    files, func = candidate_files(spec)
    first = f"{files[0]}::{func}" if func else files[0]
    from nkirun.sweep.evaluate import _function
    f = _function(first, None)
    f = getattr(f, "func", f)
    names = [p for p in inspect.signature(f).parameters]
    if len(args) > len(names):
        raise TypeError(f"{first}: {len(args)} positional arguments for {len(names)} "
                        "parameters")
    return {**dict(zip(names, args)), **kwargs}


def evaluate(kernel, *args, params: dict | None = None, target: str | None = None,
             reference=None, verify: bool = False, rtol: float = 0.0, atol: float = 0.0,
             max_instructions: int | None = None, lnc: int = 1, grid=(),
             **kernel_kwargs) -> dict:
    """One variant in this process, as a sweep's worker evaluates it: its row (status,
    total_ns, codes, verify, ...). `params` are the varied keywords; `verify=True` runs it
    and compares with `reference`."""
    spec = _spec_of(kernel)
    values = _bind(spec, args, kernel_kwargs)
    ref = _spec_of(reference) if reference is not None else None
    setup = Setup({}, values, target, lnc, tuple(grid), max_instructions, ref, None,
                  rtol, atol)
    return _evaluate(setup, Variant(0, spec, dict(params or {}), verify=verify))


class _Callable(types.ModuleType):
    """`nkirun.sweep(...)` calls the sweep; `nkirun.sweep.evaluate` etc. stay reachable."""

    def __call__(self, *args, **kwargs):
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _Callable
