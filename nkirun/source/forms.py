"""Call-site forms: instructions a front end knows to bind alike.

A traced kernel repeats the same few calls (one per line of its loop body) on ever new
tiles. Two calls from the same call site whose keywords hold equal values, whose tensor
operands have the same layout (buffer, shape, dtype and the very same IR index object) and
that name the same tensor in the same positions differ only in tensor names. The trace
gives such instructions one shared `FormLocs` as their `arg_locs` (keyword -> Loc, as
always) — its identity is the form — and lists the keywords whose tensor changes from
call to call (`views`).

The instructions after the first of a form keep only their tensor names: their `args`
is a `FormArgs` (the first instruction's args with those names put in, spelled out when
read), not a dict of their own. Everything reads it as the dict it stands for; the
checker's template path (checker/intern.py) reads the names directly.

The checker may then bind a later instruction of a form as the first one that passed every
rule, with its own tensors put in (checker/intern.py `Templates`): the rules and the engine
are functions of those values alone. The plain path ignores the form (a FormLocs is a
dict); tests/kernel/test_call_forms.py checks both paths give the same program,
diagnostics and bound operands.
"""
from __future__ import annotations

from nkirun.ir import view_at


class FormLocs(dict):
    """An instruction's arg_locs that also names its call-site form (see the module)."""

    __slots__ = ("views", "template")

    def __init__(self, locs: dict, views: tuple, template: dict | None = None):
        super().__init__(locs)
        self.views = views  # the keywords holding a traced tensor's view, in call order
        self.template = template  # the args of the form's first instruction

    __hash__ = object.__hash__  # identity: the form


_tuple_new = tuple.__new__
_item = tuple.__getitem__
_REST = slice(1, None)


class FormArgs(tuple):
    """The `args` of a later instruction of form `form`: the form's template with the tensor
    names `names` (one per `form.views` keyword) put in. A read-only mapping equal to the
    dict `spelled()` gives; each read spells what it returns (nothing here is kept: a trace
    holds 100,000s of these). Stored as the tuple (form, *names): one small object per
    instruction, its tuple methods replaced by the mapping's."""

    __slots__ = ()

    def __new__(cls, form: FormLocs, names):
        return _tuple_new(cls, (form, *names))

    @property
    def form(self) -> FormLocs:
        return _item(self, 0)

    @property
    def names(self) -> tuple:
        return _item(self, _REST)

    def spelled(self) -> dict:
        """The args dict this stands for (what the plain trace gives the instruction)."""
        form = _item(self, 0)
        d = form.template.copy()
        for k, name in zip(form.views, _item(self, _REST)):
            v = d[k]
            if v.tensor != name:
                d[k] = view_at(name, v.index, v.loc)
        return d

    def __getitem__(self, key):
        form = _item(self, 0)
        v = form.template[key]
        if key in form.views:
            name = _item(self, form.views.index(key) + 1)
            if v.tensor != name:
                return view_at(name, v.index, v.loc)
        return v

    def get(self, key, default=None):
        return self[key] if key in _item(self, 0).template else default

    def __contains__(self, key) -> bool:
        return key in _item(self, 0).template

    def __iter__(self):
        return iter(_item(self, 0).template)

    def __len__(self) -> int:
        return len(_item(self, 0).template)

    def keys(self):
        return _item(self, 0).template.keys()

    def values(self):
        return self.spelled().values()

    def items(self):
        return self.spelled().items()

    def copy(self) -> dict:
        return self.spelled()

    def __eq__(self, other) -> bool:
        if other.__class__ is FormArgs:
            other = other.spelled()
        return self.spelled() == other if isinstance(other, dict) else NotImplemented

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]  (a dict's value semantics)

    def __repr__(self) -> str:
        return repr(self.spelled())

    def __reduce__(self):  # pickle and copy: the dict it stands for
        return dict, (self.spelled(),)
