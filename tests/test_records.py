"""nkirun.records.record gives the class dataclasses.dataclass gives (its plain twin):
the same repr, equality, hash, pickling, copying, replace, fields, match args and params,
over the kinds of fields and options nkirun's records use."""
from __future__ import annotations

import copy
import dataclasses
import math
import pickle
from typing import Any

import numpy as np
import pytest

from nkirun.records import record

OPTIONS = [dict(frozen=True, slots=True), dict(frozen=True), dict(slots=True), dict()]


def _bodies():
    """Fresh undecorated classes of every field kind."""
    class Empty:
        pass

    class One:
        x: Any

    class Many:
        """A docstring of its own."""
        a: int
        b: Any = None
        c: tuple = ()
        d: dict = dataclasses.field(default_factory=dict, compare=False)
        e: str = dataclasses.field(default="e", repr=False)
        f: Any = dataclasses.field(default=0, hash=False)
        g: Any = dataclasses.field(default=0, compare=False, hash=True)
    return Empty, One, Many


def _kinds(make, prefix: str):
    """The classes decorated by `make` (record or dataclass), as module globals named
    prefix + name (so that pickle finds them)."""
    out = []
    for cls in _bodies():
        cls.__name__ = cls.__qualname__ = prefix + cls.__name__
        cls = make(cls)
        globals()[cls.__qualname__] = cls
        out.append(cls)
    return out


def _instances(Empty, One, Many):
    nan = math.nan
    return [Empty(), One(1), One(nan), One([1, 2]), One(None),
            Many(1), Many(1, "x", (1, 2), {"k": 1}, "f", 2, 3), Many(2, nan),
            Many(1, b=Many(3)), Many(1, d={"other": 1}, g=5), Many(1, f=7)]


def _observe(objs):
    out = []
    for a in objs:
        row = [repr(a), a.__class__.__qualname__, a.__match_args__ if hasattr(a, "__match_args__")
               else None, [f.name for f in dataclasses.fields(a)]]
        row.append([a == b for b in objs])
        row.append([a.__eq__(b) is NotImplemented for b in objs])
        try:
            row.append(hash(a))
        except TypeError as e:
            row.append(str(e))
        row.append(repr(pickle.loads(pickle.dumps(a))) == repr(a))
        row.append(repr(copy.copy(a)) == repr(a) and repr(copy.deepcopy(a)) == repr(a))
        fields = dataclasses.fields(a)
        if fields:
            name = fields[0].name
            row.append(repr(dataclasses.replace(a, **{name: 9})))
            try:
                setattr(a, name, 8)
                row.append(("set", repr(a)))
            except dataclasses.FrozenInstanceError as e:
                row.append(("frozen", str(e)))
        out.append(row)
    return out


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_record_equals_dataclass(options):
    plain = _kinds(dataclasses.dataclass(**options), "Plain")
    ours = _kinds(record(**options), "Ours")
    for p, o in zip(plain, ours):
        assert p.__doc__.replace("Plain", "") == o.__doc__.replace("Ours", "")
        assert repr(p.__dataclass_params__) == repr(o.__dataclass_params__)
        assert p.__hash__ is None and o.__hash__ is None or \
            p.__hash__ is not None and o.__hash__ is not None
        assert hasattr(p, "__slots__") == hasattr(o, "__slots__")
        assert hasattr(p, "__getstate__") == hasattr(o, "__getstate__")
    assert repr(_observe(_instances(*ours))).replace("Ours", "") == \
        repr(_observe(_instances(*plain))).replace("Plain", "")


def test_recursive_repr_and_arrays_as_dataclass():
    for make in (dataclasses.dataclass(frozen=True), record(frozen=True)):
        @make
        class Box:
            items: list
        box = Box([])
        box.items.append(box)
        assert repr(box).endswith("Box(items=[...])")
        with pytest.raises(ValueError):  # an array's == is elementwise; the tuple's is not
            Box(np.zeros(2)) == Box(np.zeros(2))  # noqa: B015


def test_methods_of_the_class_body_are_kept():
    for make in (dataclasses.dataclass(frozen=True, slots=True),
                 record(frozen=True, slots=True)):
        @make
        class Own:
            x: int

            def __eq__(self, other):
                return "eq"

            def __repr__(self):
                return "own"
        assert Own(1) == Own(2) == "eq" and repr(Own(1)) == "own" and hash(Own(1)) == hash((1,))

        @make
        class Hashed:
            x: int

            def __hash__(self):
                return 7
        assert hash(Hashed(1)) == 7 and Hashed(1) == Hashed(1) != Hashed(2)


def test_the_records_nkirun_makes_at_start_up_are_its_dataclasses():
    from nkirun.diagnostics import Loc
    from nkirun.ir import Instruction, Program, View
    from nkirun.isa import REGISTRY
    for cls in (Loc, View, Instruction, Program, type(REGISTRY["load"])):
        p = cls.__dataclass_params__
        assert (p.init, p.repr, p.eq, p.frozen, p.order) == (True, True, True, True, False)
        assert cls.__hash__ is not None and "__slots__" in cls.__dict__
    loc = Loc("p.yaml", 3, 4)
    assert repr(loc) == "Loc(file='p.yaml', line=3, column=4)"
    assert loc == Loc("p.yaml", 3, 4) and hash(loc) == hash(("p.yaml", 3, 4))
    with pytest.raises(dataclasses.FrozenInstanceError):
        loc.line = 5
