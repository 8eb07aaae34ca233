"""Diagnostics in the input's language. The checker words its fixes for programs (YAML);
where a fix is spelled in the program format, this table spells it as a kernel author
(Python, nki.isa / nki.language) or a text-format author writes it. One place per fix:
a front end adding a language adds its column here."""
from __future__ import annotations

import re
from dataclasses import replace

_NAME = r"`([^`]+)`"


def _read_before_write(m, d, front):
    n = m.group(1)
    t = front.program.tensors.get(n) if front.program is not None else None
    if t is not None and t.buffer == "hbm":
        return (f"pass `{n}` to the kernel as a parameter (an array, or --input / --shape), "
                f"or write it first: nisa.dma_copy(dst={n}, src=...)")
    return (f"write `{n}` before this read, e.g. nisa.memset(dst={n}, value=0.0) or "
            f"nisa.dma_copy(dst={n}, src=<an HBM tensor>)")


def _never_read(m, d, front):
    n = m.group(1)
    t = front.program.tensors.get(n) if front.program is not None else None
    if t is not None and t.buffer == "hbm":
        return f"return it from the kernel (`return {n}`), or drop the write"
    return (f"read `{n}` in a later call (e.g. nisa.dma_copy(dst=<HBM tensor>, src={n}) and "
            "return that tensor), or drop the write")


# code -> (pattern over the message, the Python hint (a function of the match, the
# diagnostic and the Front), the text-format hint or None)
_PYTHON = {
    "E050": (re.compile(rf"reads {_NAME} before anything writes it"), _read_before_write),
    "W051": (re.compile(rf"^{_NAME} is written by"), _never_read),
}
_HINT_PATTERNS = {  # YAML spellings inside any hint -> (Python, text)
    "- load: {dst: tile, src: hbm_tensor}": (
        "t = nl.ndarray(shape, dtype, buffer=nl.sbuf); nisa.dma_copy(dst=t, src=hbm_tensor)",
        "load dst=tile src=hbm_tensor"),
    "- register_alloc: {dst: n}": ("n = nisa.register_alloc(0)", "register_alloc dst=n"),
}


def in_language(diags: list, front) -> list:
    """The diagnostics with their fixes written for `front.language` (python, text; YAML
    as the checker words them)."""
    if front.language == "yaml":
        return diags
    out = []
    for d in diags:
        hint = d.hint
        rule = _PYTHON.get(d.code) if front.language == "python" else None
        m = rule[0].search(d.message) if rule is not None and hint else None
        if m is not None:
            hint = rule[1](m, d, front)
        elif hint:
            for yaml_form, (py, text) in _HINT_PATTERNS.items():
                if yaml_form in hint:
                    hint = hint.replace(yaml_form, py if front.language == "python" else text)
        out.append(d if hint == d.hint else replace(d, hint=hint))
    return out
