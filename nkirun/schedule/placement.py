"""Where the compiler puts things the kernel leaves open: the engine of an instruction that
names none, and (under skip_middle_end_transformations) the buffer of a loop's tile.

A kernel that names no `engine=` for an instruction whose module gives an
`activation_form` (a copy, an affine tensor_scalar, a reciprocal) lets the compiler choose
between the Vector engine and the Scalar (activation) engine, which runs
all three as one activation pass: func(data * scale + bias) with identity / reciprocal as
func [the nki.isa.activation documentation]. The legacy ISA page of nki.isa.reciprocal
says the Vector form is about 8x slower than activation(reciprocal).

What nkirun models (the current compiler, read off public profiles): the instruction runs
on whichever of the two finishes it first, given what each engine already has queued, as
a list scheduler places it. The evidence is the NKIBench profiles on trn1 (AccelOpt,
neuron-profile per-engine active time): bmm's 6,144 unpinned PSUM-to-SBUF copies show as
37 % ScalarE and 0 % VectorE active, which is their N-cycle activation time at 1.4 GHz
(1.69 ms of 4.61 ms); adamw's VectorE time equals its six tensor_tensor passes alone,
while ScalarE carries its seven tensor_scalar passes, the reciprocal and the sqrt. GpSimd,
which could also run them, shows no activity in those profiles: it is not a candidate.
"""
from __future__ import annotations

from nkirun.isa.bound import raw_args
from nkirun.schedule.model import ENGINE, READY

_UNSET = object()


def scalar_cycles(b, target) -> int | None:
    """The instruction's cycles as one Scalar-engine activation when the compiler may put it
    there (its module's SPEC.activation_form), else None."""
    form = b.spec.activation_form
    return None if form is None else form(b, target)


def storage_names(program) -> dict[str, str]:
    """On-chip tensor -> the buffer it shares with every tensor allocated at the same place
    with the same layout (Program.reuse_buffers)."""
    out = {}
    for d in program.tensors.values():
        if d.on_chip and d.loc.line:
            out[d.name] = (f"{d.buffer}@{d.loc.file}:{d.loc.line}:{d.loc.column}:"
                           f"{d.shape}:{d.dtype.name}")
    return out


def on_scalar(sched, b, reads, writes, vector_end: float) -> tuple | None:
    """The placement on the Scalar engine (of scheduler `sched`) when it may run `b` and
    finishes it before `vector_end` (the Vector engine's end): (engine, cycles, start, end,
    ready, dep, kind, tensor), else None."""
    form = raw_args(b).form if b.mask is None else None
    if form is None:
        cycles = scalar_cycles(b, sched.target)
    else:  # equal for every instance of a form (operands equal up to tensor names): once
        key = (id(form), "activation_form")  # (sched.by_form: the form dicts outlive it)
        cycles = sched.by_form.get(key, _UNSET)
        if cycles is _UNSET:
            cycles = sched.by_form[key] = scalar_cycles(b, sched.target)
    if cycles is None:
        return None
    ready, dep, kind, tensor = sched.data_ready(reads, writes, 1.0)
    start, dep, kind, tensor = earliest_start(ready, dep, kind, tensor,
                                              *sched.compute_resource("scalar", None))
    end = start + cycles / sched.clock("scalar")
    if end >= vector_end:
        return None
    return "scalar", cycles, start, end, ready, dep, kind, tensor


def earliest_start(ready, dep, kind, tensor, free, blocker) -> tuple:
    """(start, instruction waited on, kind, tensor): the later of the data being ready and
    the engine being free; a data dependence wins ties (it is the more informative reason)."""
    if dep is not None and ready >= free:
        return ready, dep, kind, tensor
    if blocker is not None and free > 0:
        return free, blocker, ENGINE, None
    return 0.0, None, READY, None
