"""The compiler's engine choice for an instruction whose kernel leaves the engine open.

A kernel that names no `engine=` for a copy, an affine tensor_scalar or a reciprocal lets
the compiler choose between the Vector engine and the Scalar (activation) engine, which runs
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

_AFFINE = frozenset({"add", "subtract", "multiply"})
_CANDIDATES = frozenset({"tensor_copy", "tensor_scalar", "reciprocal"})
OPEN = (None, "unknown")


def scalar_cycles(b, target) -> int | None:
    """The instruction's cycles as one Scalar-engine activation when the compiler may put it
    there (its kernel left the engine open and Scalar can compute it), else None."""
    name = b.spec.name
    if name not in _CANDIDATES or b.args.get("engine") not in OPEN or b.mask is not None:
        return None
    if name == "tensor_scalar":
        ops = (b.args.get("op0"), b.args.get("op1"))
        if ops[0] not in _AFFINE or ops[1] not in _AFFINE | {None}:
            return None
    src = b.tile("src") if name == "tensor_copy" else b.tile("data")
    if src is None:
        return None
    return max(target.min_ii, src.free_size)  # activation: max(MIN_II, N)
