"""`record`: `dataclasses.dataclass` made for less at import (issue 28, start-up).

`dataclass` writes each method it adds as Python source and compiles it, six per frozen
class: most of the cost of making the ~30 dataclasses `nkirun check` imports (about a
third of its own start-up, docs/performance.md). `record(...)` takes the same keywords and
gives the same class: dataclass itself makes the class, its fields and its `__init__` (and
a frozen class's `__setattr__`/`__delattr__`); `__repr__`, `__eq__` and `__hash__` are
shared functions over the fields' values, which compile nothing, following dataclass's own
rules (the fields each one reads, `NotImplemented` for another class, the `__hash__` table
of eq/frozen/an explicit hash, `...` for a recursive repr, methods of the class body kept).

Plain twin: `dataclasses.dataclass` with the same keywords. tests/test_records.py checks
that the two give equal reprs, equality, hashes, pickles, copies, `replace`, `fields`,
`__match_args__` and `__dataclass_params__` over every kind of field nkirun uses.
"""
from __future__ import annotations

import dataclasses
import sys
import threading
from operator import attrgetter


def record(cls=None, /, **kwargs):
    """`@record(frozen=True, slots=True)` is `@dataclass(frozen=True, slots=True)`
    (see the module docstring); `repr=False`, `eq=False`, `order=True` or `unsafe_hash=True`
    go to dataclass as they are."""
    def wrap(c):
        if not (kwargs.get("repr", True) and kwargs.get("eq", True)) \
                or kwargs.get("order") or kwargs.get("unsafe_hash"):
            return dataclasses.dataclass(c, **kwargs)
        body = dict(c.__dict__)
        c = dataclasses.dataclass(c, **{**kwargs, "repr": False, "eq": False})
        fields = dataclasses.fields(c)
        if "__repr__" not in body:
            _add(c, _repr([f.name for f in fields if f.repr]))
        if "__eq__" not in body:
            _add(c, _eq([f.name for f in fields if f.compare]))
        explicit = body.get("__hash__", None) is not None or \
            ("__hash__" in body and "__eq__" not in body)
        if not explicit:
            if kwargs.get("frozen"):
                names = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
                _add(c, _hash(_values(names)))
            else:
                c.__hash__ = None
        params = c.__dataclass_params__
        params.repr = params.eq = True
        return c
    return wrap if cls is None else wrap(cls)


def _add(cls, fn) -> None:
    fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
    setattr(cls, fn.__name__, fn)


def _values(names: list[str]):
    """self -> the tuple of these attributes (as dataclass's `(self.a,self.b,)`)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda self: (one(self),)
    return lambda self: ()


def _repr(names: list[str]):
    running: set = set()
    get_ident = threading.get_ident

    def __repr__(self):
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            return self.__class__.__qualname__ + \
                f"({', '.join([f'{n}={getattr(self, n)!r}' for n in names])})"
        finally:
            running.discard(key)
    return __repr__


def _eq(names: list[str]):
    if sys.version_info >= (3, 13):  # dataclass compares field by field: `a==a2 and b==b2`
        getters = [attrgetter(n) for n in names]

        def __eq__(self, other):
            if self is other:
                return True
            if other.__class__ is self.__class__:
                same = True
                for get in getters:
                    same = get(self) == get(other)
                    if not same:
                        break
                return same
            return NotImplemented
        return __eq__
    values = _values(names)

    def __eq__(self, other):  # (before 3.13: `(self.a,self.b,)==(other.a,other.b,)`)
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented
    return __eq__


def _hash(values):
    def __hash__(self):
        return hash(values(self))
    return __hash__
