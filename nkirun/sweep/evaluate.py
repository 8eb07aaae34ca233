"""One variant, cheapest first, stopping at the first failure: trace, check, cost, then
(when asked) a run on seeded inputs compared with a NumPy reference. The same function
runs in the local pool's workers, on ray and on dask; a search loop that drives nkirun
itself calls `evaluate` directly.

Status: ok, invalid (nkirun's checks refuse the program: the hardware or compiler would),
error (the candidate's Python fails: a syntax error, a missing module, an exception such
as the kernel's own assert, a parameter it does not take), mismatch (the run differs from
the reference), crashed (out of memory under the worker's cap; the pool also records a
worker that died), timeout (the pool records it), duplicate (set by the sweep: a program
identical to an earlier variant's)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from nkirun import limits
from nkirun.diagnostics import NkirunError

STATUSES = ("ok", "invalid", "error", "mismatch", "timeout", "crashed", "duplicate")
# Codes that say the candidate's own Python failed rather than a rule of the hardware.
_PYTHON_FAILED = {"E595", "E600", "E602", "E609"}  # E609: over the instruction budget


@dataclass
class Setup:
    """What every variant of one sweep shares; it travels with each task (no shared
    filesystem needed but for --input data files)."""

    sources: dict  # kernel file as given -> its source text
    values: dict = field(default_factory=dict)  # fixed parameters: TensorArg/array/value
    target: str | None = None
    lnc: int = 1
    grid: tuple = ()
    max_instructions: int | None = None
    reference: str | None = None  # REF.py::FN
    reference_source: str | None = None
    rtol: float = 0.0
    atol: float = 0.0
    seed: int = 0


@dataclass
class Variant:
    id: int
    kernel: str  # FILE.py::FN as given
    params: dict
    known: frozenset = frozenset()  # fingerprints already costed: skip their cost
    verify: bool = False


def _function(spec: str, source: str | None):
    from nkirun.diagnostics import Loc, error
    from nkirun.source.kernel.loader import KernelUsageError, find_function, split_spec
    from nkirun.sweep.loading import kernel_module
    path, func_name = split_spec(spec)
    module = kernel_module(path, source)
    try:
        return find_function(module, path, func_name)
    except KernelUsageError as e:
        raise NkirunError(error("E600", str(e), Loc(path))) from None


def trace_variant(setup: Setup, variant: Variant):
    """(Traced, its pipeline Front) of one variant (NkirunError: it cannot be traced)."""
    from nkirun.pipeline.front import traced_front
    from nkirun.pipeline.kernel_calls import _tensor_args, default_target
    from nkirun.pipeline.kernel_params import _enum_args
    from nkirun.source.kernel.modules import Kernel
    from nkirun.source.kernel.trace import check_names, trace
    path = variant.kernel.partition("::")[0]
    func = _function(variant.kernel, setup.sources.get(path))
    values = {k: _tensor_args(v) for k, v in {**setup.values, **variant.params}.items()}
    plain = func.func if isinstance(func, Kernel) else func
    _enum_args(getattr(plain, "__wrapped__", plain), values)
    check_names(plain, values)
    with limits.budget(setup.max_instructions):  # E609 stops a kernel that keeps recording
        traced = trace(func, values, setup.target or default_target(), setup.grid, setup.lnc)
    return traced, traced_front(traced, variant.kernel, path)


# ---- the evaluation ----------------------------------------------------------------------
def evaluate(setup: Setup, variant: Variant) -> dict:
    """The row of one variant: id, kernel, params, status, total_ns, codes, verify,
    seconds, plus message, fingerprint, instructions and assumed_share where known."""
    start, cpu = time.perf_counter(), time.process_time()
    row = {"id": variant.id, "kernel": variant.kernel, "params": variant.params,
           "status": "error", "total_ns": None, "codes": [], "verify": None,
           "message": None, "fingerprint": None, "instructions": None,
           "assumed_share": None, "duplicate_of": None}
    try:
        _evaluate(setup, variant, row)
    except MemoryError:
        _fail(row, "crashed", [], "out of memory (the worker's memory cap)")
    except NkirunError as e:
        codes = sorted({d.code for d in e.diagnostics if d.is_error}) or \
            sorted({d.code for d in e.diagnostics})
        first = next((d for d in e.diagnostics if d.is_error), None)
        message = first.message if first else str(e)
        if "raised MemoryError" in message:
            _fail(row, "crashed", codes, "out of memory (the worker's memory cap)")
        else:
            _fail(row, "error" if set(codes) & _PYTHON_FAILED or not codes else "invalid",
                  codes, message)
    except Exception as e:  # noqa: BLE001 - the sweep records it and goes on
        _fail(row, "error", [], f"{type(e).__name__}: {e}")
    row["seconds"] = round(time.perf_counter() - start, 6)
    row["cpu_seconds"] = round(time.process_time() - cpu, 6)
    return row


def _fail(row: dict, status: str, codes: list, message: str) -> None:
    row.update(status=status, codes=codes, message=message, total_ns=None)


def _evaluate(setup: Setup, variant: Variant, row: dict) -> None:
    from nkirun.pipeline import commands
    from nkirun.sweep.fingerprint import fingerprint
    traced, front = trace_variant(setup, variant)
    n = len(front.program.instructions)
    row["instructions"] = n
    row["fingerprint"] = fp = fingerprint(front.program)
    checked = commands.check(front)
    row["codes"] = sorted({d.code for d in checked.diagnostics})
    if checked.errors:
        row.update(status="invalid", message=checked.errors[0].message,
                   codes=sorted({d.code for d in checked.errors}))
        return
    if fp in variant.known and not variant.verify:  # the sweep costed this program already
        row["status"] = "duplicate"
        return
    sched = commands.cost(checked)
    row["total_ns"] = round(float(sched.total_ns), 3)
    row["assumed_share"] = assumed_share(sched)
    row["status"] = "ok"
    if variant.verify:
        from nkirun.sweep.verify import compare_with_reference
        row["verify"] = result = compare_with_reference(setup, variant, traced, checked)
        if result["mismatches"]:
            row["status"] = "mismatch"


def assumed_share(sched) -> float:
    """The share of the makespan on the critical path spent in instructions whose cost
    formula nkirun assumes (no page documents one)."""
    from nkirun.schedule.model import path_contributions
    total = sched.total_ns
    if not total:
        return 0.0
    path = sched.critical_path()
    assumed = sum(c for s, c in zip(path, path_contributions(path)) if s.assumed)
    return round(assumed / total, 4)


def verify(setup: Setup, variant: Variant) -> dict:
    """Re-trace a costed variant and compare a run with the reference: its row's status
    (ok or mismatch) and verify fields, as `evaluate` with variant.verify gives them."""
    v = Variant(variant.id, variant.kernel, variant.params, verify=True)
    return evaluate(setup, v)
