"""Call-site forms: instructions a front end knows to bind alike.

A traced kernel repeats the same few calls (one per line of its loop body) on ever new
tiles. Two calls from the same call site whose keywords hold equal values, whose tensor
operands have the same layout (buffer, shape, dtype and the very same IR index object) and
that name the same tensor in the same positions differ only in tensor names. The trace
gives such instructions one shared `FormLocs` as their `arg_locs` (keyword -> Loc, as
always) — its identity is the form — and lists the keywords whose tensor changes from
call to call (`views`).

The checker may then bind a later instruction of a form as the first one that passed every
rule, with its own tensors put in (checker/intern.py `Templates`): the rules and the engine
are functions of those values alone. The plain path ignores the form (a FormLocs is a
dict); tests/kernel/test_call_forms.py checks both paths give the same program,
diagnostics and bound operands.
"""
from __future__ import annotations


class FormLocs(dict):
    """An instruction's arg_locs that also names its call-site form (see the module)."""

    __slots__ = ("views",)

    def __init__(self, locs: dict, views: tuple):
        super().__init__(locs)
        self.views = views  # the keywords holding a traced tensor's view, in call order

    __hash__ = object.__hash__  # identity: the form
