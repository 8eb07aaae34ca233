"""A digest of a traced program that two variants share exactly when their programs are the
same (tensors, instructions, loops), whatever file or line each came from: the sweep costs
such programs once. Stable across processes and runs (blake2b, no Python hash())."""
from __future__ import annotations

import hashlib

from nkirun.ir import AccessPattern, View


def _value(v) -> str:
    """A value's text without source locations (a View's loc is not part of it)."""
    if isinstance(v, View):
        return f"V({v.tensor},{_value(v.index)})"
    if isinstance(v, AccessPattern):
        return (f"AP({v.pattern},{v.offset},{getattr(v.dtype, 'name', None)},"
                f"{_value(v.scalar_offset)},{_value(v.vector_offset)},{v.indirect_dim})")
    if isinstance(v, (tuple, list)):
        return "(" + ",".join(_value(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{_value(x)}" for k, x in v.items()) + "}"
    return repr(v)


def _args(args, forms: dict) -> str:
    form = getattr(args, "form", None)
    if form is not None and hasattr(args, "names"):  # a FormArgs: its form once, then names
        text = forms.get(id(form))
        if text is None:
            text = forms[id(form)] = _value(dict(form.template)) + repr(tuple(form.views))
        return text + repr(args.names)
    return _value(dict(args))


def fingerprint(program) -> str:
    h = hashlib.blake2b(digest_size=16)
    parts = [f"{program.target}|{program.cores}"]
    for name, t in program.tensors.items():
        parts.append(f"T{name},{t.buffer},{t.shape},{t.dtype.name},{t.output},{t.core}")
    forms: dict = {}
    keep = []  # the form objects stay alive while their id() keys the cache
    for inst in program.instructions:
        keep.append(getattr(inst.args, "form", None))
        parts.append(f"I{inst.op},{inst.core},{_args(inst.args, forms)}")
    for lp in program.loops:
        parts.append(f"L{lp.kind},{lp.first},{lp.end},{lp.index},{lp.start},{lp.stop},"
                     f"{lp.step},{lp.cond},{lp.next},{lp.core}")
    h.update("\n".join(parts).encode())
    return h.hexdigest()
