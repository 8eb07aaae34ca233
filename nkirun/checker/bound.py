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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nkirun.diagnostics import Diagnostic, Loc, error, warning
from nkirun.ir import Instruction
from nkirun.source.operands import Resolved



def views_of(value) -> tuple:
    """The Resolved views a bound value holds: one, a TILE_LIST's, or none."""
    if isinstance(value, Resolved):
        return (value,)
    if isinstance(value, tuple) and value and isinstance(value[0], Resolved):
        return value
    return ()


if TYPE_CHECKING:
    from nkirun.hw.targets import Target
    from nkirun.isa.spec import InstructionDef


class Operands(dict):
    """An instruction's bound keyword values (Resolved views, typed scalars): a dict that
    refuses changes once built, so instructions may share it and passes may cache on it."""

    __slots__ = ("memo",)

    def __init__(self, values):
        super().__init__(values)
        self.memo: dict = {}  # derived facts, e.g. "accesses" -> Accesses

    def _refuse(self, *a, **k):
        raise TypeError("bound operands are read-only (instructions share them)")

    __setitem__ = __delitem__ = update = pop = popitem = setdefault = clear = _refuse  # type: ignore
    __ior__ = _refuse  # type: ignore
    __hash__ = object.__hash__  # identity: one interned object per distinct binding


@dataclass(frozen=True, slots=True)
class Accesses:
    """The tensor regions an instruction reads and writes: (keyword, Resolved) pairs.
    An `out` operand that the instruction also reads (`reads_out`, e.g. an accumulating
    matmul) appears in both."""

    reads: tuple[tuple[str, Resolved], ...]
    writes: tuple[tuple[str, Resolved], ...]


@dataclass(slots=True)
class Bound:
    """An instruction with its operands resolved against the declared tensors."""

    inst: Instruction
    spec: InstructionDef
    args: Operands  # every param: Resolved for tiles, typed values otherwise (read-only)
    mask: Any = None  # compiled mask (nkirun.checker.mask), or None
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
        acc = self.args.memo.get("accesses")
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
            acc = self.args.memo["accesses"] = Accesses(tuple(reads), tuple(writes))
        return acc

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
