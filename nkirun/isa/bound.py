"""The checked IR: an instruction bound to its resolved operands.

`bind` (checker/bind.py) turns each IR `Instruction` into a `Bound`: every keyword converted,
every tensor view resolved against its declaration (`Resolved`), the engine chosen and the
target attached. Instruction modules' `check`, `execute` and `cycles` receive it; the
program-wide passes, the interpreter, the scheduler and the watcher read its operands here.

Operands are immutable (`Operands`): a trace repeats instructions, and bind interns the
operands of identical ones into one object, so facts derived from them (which tensor regions
an instruction reads and writes, its cycles) are computed once per distinct operand set and
cached on that object — never keyed on `id()` of something that could change.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nkirun.records import record
from nkirun.diagnostics import Diagnostic, Loc, error, warning
from nkirun.ir import Instruction
from nkirun.views.operands import Resolved



def views_of(value) -> tuple:
    """The Resolved views a bound value holds: one, a TILE_LIST's, or none."""
    if isinstance(value, Resolved):
        return (value,)
    if isinstance(value, tuple) and value and isinstance(value[0], Resolved):
        return value
    return ()


def _names_of(args, acc: Accesses) -> tuple:
    """(plan, names) of accesses `acc`: names = the tensors read then written, in order;
    plan = (keywords read, keywords written — None unless every view is an operand of its
    own, not a TILE_LIST item or a runtime index —, positions in names of the first use of
    each on-chip tensor)."""
    both = acc.reads + acc.writes
    names = tuple(r.decl.name for _, r in both)
    first: dict = {}
    for i, (_, r) in enumerate(both):
        if r.decl.on_chip:
            first.setdefault(r.decl.name, i)
    by_keys = all(args.get(k) is r for k, r in both)
    plan = (tuple(k for k, _ in acc.reads), tuple(k for k, _ in acc.writes) if by_keys else None,
            tuple(first.values()), tuple(k for k, _ in both))
    return plan, names


if TYPE_CHECKING:
    from nkirun.hw.targets import Target


class Operands(dict):
    """An instruction's bound keyword values (Resolved views, typed scalars): a dict that
    refuses changes once built, so instructions may share it and passes may cache on it."""

    __slots__ = ("form", "accesses", "plan", "names", "spelled")

    def __init__(self, values, form: dict | None = None):
        super().__init__(values)
        # facts shared by every Operands equal to this one up to tensor names (one dict per
        # checker/intern.form_key; None: not interned), e.g. "names_plan"
        self.form = form
        # derived facts, computed once (Bound.accesses, Bound.tensor_names); slots rather
        # than a dict: a traced kernel binds 100,000s of instructions
        self.accesses: Accesses | None = None
        self.plan: tuple | None = None  # see Bound.names_plan
        self.names: tuple | None = None
        # Bound.tensor_names, kept when shared: None (not shared), _SHARED (shared, not
        # spelled yet) or the tuple; one slot for both facts (100,000s of Operands)
        self.spelled: tuple | None = None

    def _refuse(self, *a, **k):
        raise TypeError("bound operands are read-only (instructions share them)")

    __setitem__ = __delitem__ = update = pop = popitem = setdefault = clear = _refuse  # type: ignore
    __ior__ = _refuse  # type: ignore
    __hash__ = object.__hash__  # identity: one interned object per distinct binding

    @property
    def shared(self) -> bool:
        """Bound to more than one instruction (bind sets it)."""
        return self.spelled is not None

    @shared.setter
    def shared(self, value: bool) -> None:
        if not value:
            self.spelled = None
        elif self.spelled is None:
            self.spelled = _SHARED


_SHARED = ()  # Operands.spelled of a shared Operands whose names are not spelled out yet


@record(frozen=True, slots=True)
class Accesses:
    """The tensor regions an instruction reads and writes: (keyword, Resolved) pairs.
    An `out` operand that the instruction also reads (`reads_out`, e.g. an accumulating
    matmul) appears in both."""

    reads: tuple[tuple[str, Resolved], ...]
    writes: tuple[tuple[str, Resolved], ...]


@record(slots=True)
class Bound:
    """An instruction with its operands resolved against the declared tensors."""

    inst: Instruction
    spec: Any  # its isa.spec.InstructionDef (which imports this module)
    args: Operands  # every param: Resolved for tiles, typed values otherwise (read-only)
    mask: Any = None  # compiled mask (nkirun.isa.mask), or None
    engine: str = ""
    target: Target | None = None

    def __getitem__(self, key: str) -> Any:
        return self.args[key]

    def get(self, key: str, default=None):
        v = self.args.get(key)
        return default if v is None else v

    def tile(self, key: str) -> Resolved | None:
        v = self.args.get(key)
        return v if isinstance(v, Resolved) else None

    def accesses(self) -> Accesses:
        """Which views this instruction reads and writes (computed once per Operands)."""
        acc = self.args.accesses
        if acc is None:
            reads, writes = [], []
            for p in self.spec.params:
                if p.kind.is_view and p.name not in self.spec.not_accessed:  # (TILE_LIST too)
                    for r in views_of(self.args.get(p.name)):
                        (writes if p.out else reads).append((p.name, r))
            if self.spec.reads_out is not None:  # e.g. an accumulating matmul reads its dst
                reads += [(n, self.tile(n)) for n in self.spec.reads_out(self)
                          if self.tile(n) is not None]
            reads += [(n, r.ap.indirect.index) for n, r in reads + writes  # the index is read
                      if r.ap is not None and r.ap.indirect is not None
                      and r.ap.indirect.index is not None]  # (None: a register)
            acc = Accesses(tuple(reads), tuple(writes))
            self.args.accesses = acc
        return acc

    def names_plan(self) -> tuple:
        """(plan, names): the names of the tensors accesses() reads, then of those it
        writes, in order — one tuple per Operands —, and the plan of _names_of (keywords
        read, keywords written, positions of the on-chip tensors), shared by the Operands
        of one interned form. Compact, as a traced kernel binds 100,000s of instructions;
        tensor_names() spells it out. A FormBound's pending Operands know both already
        (checker/intern.py PendingOperands): they are not made for it."""
        args = raw_args(self)
        if args.__class__ is not Operands:  # (PendingOperands: plan and names as they will be)
            return args.plan, args.names
        if args.names is None:
            form = args.form
            plan = form.get("names_plan") if form is not None else None
            if plan is not None and plan[1] is not None:  # _names_of, by the keywords
                args.names = tuple([args[k].decl.name for k in plan[3]])
            else:
                plan, args.names = _names_of(args, self.accesses())
                if form is not None:
                    form.setdefault("names_plan", plan)
            args.plan = plan
        return args.plan, args.names

    def tensor_names(self) -> tuple:
        """(((keyword, tensor) read, ...), (tensor written, ...), (on-chip tensor, ...))
        from accesses(): names_plan() spelled out, and kept when the Operands serves
        several instructions (the passes then loop over it once per instruction)."""
        args = self.args
        spelled = args.spelled
        if spelled is None or spelled is _SHARED:
            plan, names = self.names_plan()
            n = len(plan[0])
            spelled = (tuple(zip(plan[0], names)), names[n:],
                       tuple(names[i] for i in plan[2]))
            if args.spelled is not None:  # shared: keep it
                args.spelled = spelled
        return spelled

    @property
    def index(self) -> int:
        return self.inst.index

    @property
    def op(self) -> str:
        return self.spec.name

    @property
    def title(self) -> str:
        """The op, with the program's `name=` label when it has one: `tensor_copy (name=k1)`."""
        label = self.args.get("name")
        return f"{self.spec.name} (name={label})" if label else self.spec.name

    def loc(self, key: str | None = None) -> Loc:
        return self.inst.arg_loc(key) if key else self.inst.loc

    def err(self, code: str, message: str, key: str | None = None, hint: str | None = None
            ) -> Diagnostic:
        return error(code, f"{self.title}: {message}", self.loc(key), self.index, hint)

    def warn(self, code: str, message: str, key: str | None = None, hint: str | None = None
             ) -> Diagnostic:
        return warning(code, f"{self.title}: {message}", self.loc(key), self.index, hint)


_ARGS_SLOT = Bound.__dict__["args"]  # Bound's own `args` slot (FormBound's property aside)
raw_args = _ARGS_SLOT.__get__  # b's Operands, or a FormBound's PendingOperands as is
_set_args = _ARGS_SLOT.__set__


class FormBound(Bound):
    """A Bound whose `args` slot holds checker/intern.py's PendingOperands (`names`,
    `plan`, `form` and `operands()`): the Operands are made when
    something first reads `args`, and the Bound then becomes a plain Bound (its class
    switched: later reads cost nothing). Most instances of a traced loop's forms are only
    ever read through `raw_args` (checker passes, the run's plan)."""

    __slots__ = ()

    @property
    def args(self) -> Operands:
        args = raw_args(self)
        if args.__class__ is not Operands:  # (PendingOperands)
            args = args.operands()
            _set_args(self, args)
        self.__class__ = Bound
        return args

    @args.setter
    def args(self, value) -> None:
        _set_args(self, value)
        self.__class__ = Bound
