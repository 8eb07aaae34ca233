"""Offset families: instructions equal up to tensor names AND view offsets, whose rules were
found not to read the offsets.

A kernel's loop often writes `out[0:128, 512*i:512*(i+1)]` or reads `x[128*i:128*(i+1), :]`:
each iteration's call is a new call-site form (source/forms.py keys a view by its index
object) and a new form for bind (checker/intern.py: a layout token includes the index), so
each went through every rule. Most rules never look at where a view starts — only at its
buffer, shape, dtype, partition count and steps —; some do (a partition start that must be
a multiple of 32, a PSUM bank, two views of one tensor that must not overlap, ...); bounds
are resolve's, which runs for every new view anyway.

Which rules read an offset is not declared anywhere: it is observed. The first instruction
of a family that passed every rule (and reported nothing) is checked a second time on a
twin whose views note any read of their offset fields (`np_index`, `part_start`, `box`:
`Watched`); the family keeps which fields of which operands the rules read (`R`) and, per
value of what was read (a partition start, a box, or for `np_index` the view's exact
layout), the engine. A later instruction of the family whose values there are known passes
the same rules with the same engine: a rule is a function of the bound values (the premise
of every form shortcut, intern.py), and one that read only values on which the two
instructions agree takes the same path on both. A twin run that fails, raises, reports or
reads more than `R` leaves its offsets to the plain path. A rule reading an offset through
anything but the operands' fields — the IR instruction's own views — would break the
premise (tests/checker/test_offset_families.py lists who reads `b.inst.args`).

`speed.OFFSET_FAMILIES = False` (or `bind(..., fast=False)`) applies every rule to every
instruction; tests/checker/test_offset_families.py compares the two.
"""
from __future__ import annotations

from nkirun.isa.bound import Bound, Operands
from nkirun.views.operands import Resolved

_new = object.__new__
_FIELDS = Resolved.__slots__
_GET = {f: getattr(Resolved, f).__get__ for f in _FIELDS}
_SET = {f: getattr(Resolved, f).__set__ for f in _FIELDS}
OFFSET_FIELDS = ("np_index", "part_start", "box")  # what differs within a family


class Watched(Resolved):
    """A Resolved that notes (`read`: a bit per field of OFFSET_FIELDS) which of its
    offset fields were read."""

    __slots__ = ("read",)


_READ_GET, _READ_SET = Watched.read.__get__, Watched.read.__set__


def _watching(field: str, bit: int) -> property:
    get = _GET[field]

    def read(self):
        _READ_SET(self, _READ_GET(self) | bit)
        return get(self)
    return property(read, doc=f"{field}, noted as read")


NP_INDEX, PART_START, BOX = 1, 2, 4  # Watched.read's bits
for _f, _bit in zip(OFFSET_FIELDS, (NP_INDEX, PART_START, BOX)):
    setattr(Watched, _f, _watching(_f, _bit))


def watched(r: Resolved) -> Watched:
    """A copy of r that notes reads of its offsets."""
    w = _new(Watched)
    for f in _FIELDS:
        _SET[f](w, _GET[f](r))
    _READ_SET(w, 0)
    return w


def shape_token(r: Resolved):
    """r's value without its offsets: what two views of a family agree on. An access
    pattern keeps its whole value (its offset is not separated out here)."""
    d = r.decl
    if r.ap is not None:
        return None
    return (d.buffer, d.shape, d.dtype, r.shape, r.reshape, r.part_step,
            tuple([(c, st) for _, c, st in r.box]),
            tuple([i.__class__ is int for i in r.np_index]))


class Families:
    """The families of one bind (see the module): `key` of an instruction's bound values,
    `engine` of a known member, `learn` from a member that passed the plain way."""

    def __init__(self, token: dict):
        self.token = token  # intern.Views.token: id(Resolved) -> its exact layout token
        self.shapes: dict = {}  # layout token -> shape_token (None: no family)
        # family key -> ((position, Watched.read bits) of the offsets the rules read,
        # {those offsets (_exact): engine}, the names plan or None)
        self.known: dict = {}

    def key(self, op: str, values: list):
        """(op, which operands are one tensor, per value its shape token or identity); None
        when a view has no layout token, is an access pattern or a TILE_LIST."""
        token, shapes = self.token, self.shapes
        decls, key = [], [op, None]
        for v in values:
            c = v.__class__
            if c is Resolved:
                t = token.get(id(v))
                s = shapes.get(t, _UNSEEN) if t is not None else None
                if s is _UNSEEN:
                    s = shapes[t] = shape_token(v)
                if s is None:
                    return None
                decls.append(id(v.decl))
                key.append(s)
            elif c is tuple and v and v[0].__class__ is Resolved:
                return None
            else:
                key.append(id(v))
        key[1] = tuple(map(decls.index, decls))
        return tuple(key)

    def _exact(self, values: list, read: tuple) -> tuple:
        """What the rules read of the operands' offsets: per (position, bits) of `read`,
        the view's exact layout token when its np_index was read, else its partition
        start and box as read."""
        token = self.token
        return tuple([token[id(values[i])] if bits & NP_INDEX else
                      (_GET_PART_START(values[i]) if bits & PART_START else None,
                       _GET_BOX(values[i]) if bits & BOX else None) for i, bits in read])

    def engine(self, key, values: list):
        """(engine, names plan) of a member whose read operands match a learnt one, else
        None. The names plan (Bound.names_plan's: keywords read and written, positions of
        the on-chip tensors) is the family's, as it depends on the operands' kinds, buffers
        and aliasing only."""
        hit = self.known.get(key)
        if hit is None:
            return None
        engine = hit[1].get(self._exact(values, hit[0]) if hit[0] else ())
        return None if engine is None else (engine, hit[2])

    def learn(self, key, b, values: list, rules) -> None:
        """b (bound the plain way, every rule passed, nothing reported) joins its family:
        `rules(twin)` applies the rules to a Bound like b whose views are Watched (returns
        whether all passed with nothing reported)."""
        hit = self.known.get(key)
        twin_values = [watched(v) if v.__class__ is Resolved else v for v in values]
        twin = Bound(b.inst, b.spec, Operands(dict(zip(b.args, twin_values))), None, "",
                     b.target)
        try:
            passed = rules(twin)
        except Exception:  # (a rule that cannot run on a Watched: no family)
            return
        if not passed or twin.engine != b.engine or twin.mask is not None:
            return
        read = tuple((i, _READ_GET(v)) for i, v in enumerate(twin_values)
                     if v.__class__ is Watched and _READ_GET(v))
        if hit is None:
            plan = b.names_plan()[0]
            hit = self.known[key] = (read, {}, plan if plan[1] is not None else None)
        elif not _within(read, hit[0]):
            return  # (the rules read other offsets here: these offsets stay plain)
        hit[1][self._exact(values, hit[0])] = b.engine


def _within(read: tuple, known: tuple) -> bool:
    """Whether every (position, bits) read is among those `known` reads."""
    bits = dict(known)
    return all(b & ~bits.get(i, 0) == 0 for i, b in read)


_UNSEEN = object()
_GET_PART_START, _GET_BOX = _GET["part_start"], _GET["box"]

__all__ = ["Families", "Watched", "shape_token", "watched"]
