"""Refusing a run larger than memory before allocating anything (issue 12).

Without this, a program whose tensors fit the HBM limit one by one but not the machine is
killed by the OS half-way (or, under `ulimit -v`, fails deep inside NumPy). The estimate is
what `initial_buffers` allocates: every tensor's bytes, plus one byte per element for the
"written" mask of a tensor that starts undefined; the working copies instructions make are
small next to that and are left out.
"""
from __future__ import annotations

import resource

from nkirun.diagnostics import Loc, RunError, error
from nkirun.ir import Program


def needed_bytes(program: Program, inputs=None) -> int:
    given = set(inputs or ())
    return sum(t.nbytes + (t.size if t.init is None and t.name not in given else 0)
               for t in program.tensors.values())


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _vm_size() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def available_bytes() -> int | None:
    """What this process can still allocate: the machine's available memory, and under
    `ulimit -v` (RLIMIT_AS) what is left of the address space. None when unknown."""
    limits = [_meminfo_available()]
    for which in ("RLIMIT_AS", "RLIMIT_DATA"):
        rlim = getattr(resource, which, None)
        if rlim is None:
            continue
        soft, _ = resource.getrlimit(rlim)
        if soft != resource.RLIM_INFINITY:
            limits.append(max(0, soft - _vm_size()))
    known = [x for x in limits if x is not None]
    return min(known) if known else None


def refuse_if_too_large(program: Program, inputs=None) -> None:
    need, have = needed_bytes(program, inputs), available_bytes()
    if have is not None and need > have:
        raise RunError(error(
            "E091", f"the program's tensors need {need:,} bytes of memory and about {have:,} "
            "are available: refused before allocating anything",
            Loc(program.path), hint="make the tensors smaller, or run on a machine with more "
            "memory"))
