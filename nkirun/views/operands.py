"""Operand views: parsing `t[:, 0:512]` and resolving it against a tensor's shape.

Views follow NumPy basic indexing, with NKI's on-chip rule: an SBUF/PSUM view left with
only its partition dimension is a (P, 1) tile, and the partition index must be a slice.
"""
from __future__ import annotations

import re

from nkirun.records import record
from nkirun.diagnostics import Loc, error
from nkirun.ir import Slice, TensorDecl, View
from nkirun.views import access

_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*")
_INT = r"[+-]?\d+"
_ITEM_INT = re.compile(rf"^\s*({_INT})\s*$")
_ITEM_SLICE = re.compile(rf"^\s*({_INT})?\s*:\s*({_INT})?\s*(?::\s*({_INT})?\s*)?$")


class ViewSyntaxError(ValueError):
    pass


# text -> (tensor, index): instruction traces repeat the same few views many times
_PARSED: dict[str, tuple] = {}
_PARSED_MAX = 200_000


def parse_view(text: str, loc: Loc | None = None) -> View:
    """Parse `name` or `name[i, a:b:c, :]`; raises ViewSyntaxError with what is allowed."""
    hit = _PARSED.get(text)
    if hit is None:
        if access.is_ap_text(text):
            try:
                view = access.parse_ap_text(text, loc, parse_view)
            except access.APSyntaxError as e:
                raise ViewSyntaxError(str(e)) from None
        else:
            view = _parse_view(text, loc)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = (view.tensor, view.index)
        return view
    return View(hit[0], hit[1], loc or Loc())


_MAX_INDEX_DIGITS = 18  # an index beyond int64 can only be a mistake


def _index(digits: str) -> int:
    """An index as written; its own located error when it is absurdly long (Python would
    raise ValueError past 4,300 digits, NumPy overflow past 19)."""
    n = len(digits.strip().lstrip("+-"))
    if n > _MAX_INDEX_DIGITS:
        raise ViewSyntaxError(f"an index of {n:,} digits is out of range (indices fit in "
                              f"{_MAX_INDEX_DIGITS} digits)")
    return int(digits)


def _parse_view(text: str, loc: Loc | None) -> View:
    m = _NAME.match(text)
    if not m:
        raise ViewSyntaxError(f"expected a tensor name, got {text!r}")
    name, rest = m.group(1), text[m.end():].strip()
    if not rest:
        return View(name, None, loc or Loc())
    if not (rest.startswith("[") and rest.endswith("]")):
        raise ViewSyntaxError(f"expected `{name}[index, ...]`, got {text!r}")
    body = rest[1:-1]
    if "[" in body or "]" in body:
        raise ViewSyntaxError("nested brackets are not allowed in a view")
    if body.rstrip().endswith(",") and body.strip(" ,"):
        body = body.rstrip()[:-1]  # `t[:, 0:4,]`: one trailing comma, as in NumPy
    items: list[int | Slice] = []
    for part in body.split(","):
        part = part.strip()
        if part == "...":
            raise ViewSyntaxError("ellipsis (`...`) is not supported; write `:` for each dimension")
        if mi := _ITEM_INT.match(part):
            items.append(_index(mi.group(1)))
        elif ms := _ITEM_SLICE.match(part):
            start, stop, step = (None if g is None else _index(g) for g in ms.groups())
            items.append(Slice(start, stop, step))
        else:
            raise ViewSyntaxError(
                f"bad index {part!r} in {text!r}: allowed are ints, `start:stop[:step]` and `:`")
    return View(name, tuple(items), loc or Loc())


@record(frozen=True, slots=True)
class Resolved:
    """A view bound to its tensor: what the checker, interpreter and cost model need."""

    decl: TensorDecl
    np_index: tuple  # NumPy index into the tensor's storage
    shape: tuple[int, ...]  # logical shape of the operand (on-chip: at least 2-D)
    reshape: bool  # True when the NumPy view must be reshaped to `shape`
    part_start: int  # first partition (on-chip) / first row (hbm)
    part_step: int
    # Per dimension (start, count, step) of the selected region, in the tensor's own dims;
    # used for exact byte-range overlap in the cost model.
    box: tuple[tuple[int, int, int], ...]
    # An access-pattern view (`.ap`): its strided layout; np_index is then None and `box`
    # is exact or the bounding box of what it touches (ap.exact_box).
    ap: access.Strided | None = None

    @property
    def partitions(self) -> int:
        return self.shape[0]

    @property
    def free_size(self) -> int:
        n = 1
        for s in self.shape[1:]:
            n *= s
        return n

    @property
    def size(self) -> int:
        return self.partitions * self.free_size

    @property
    def dtype(self):
        return self.decl.dtype if self.ap is None else self.ap.dtype

    @property
    def buffer(self) -> str:
        return self.decl.buffer

    @property
    def is_whole(self) -> bool:
        return self.ap is None and all(c == dim and st == 1 and s == 0
                   for (s, c, st), dim in zip(self.box, self.decl.shape))


def resolve(view: View, decl: TensorDecl):
    """Resolve `view` against `decl`: returns (Resolved, None) or (None, Diagnostic)."""
    if view.index is not None and not isinstance(view.index, tuple):
        return access.resolve_ap(view, decl, Resolved)
    loc = view.loc
    dims = decl.shape
    index = view.index if view.index is not None else tuple(Slice() for _ in dims)
    if len(index) > len(dims):
        return None, error("E030", f"view {view} has {len(index)} indices but {decl.name} has "
                           f"{len(dims)} dimensions {list(dims)}", loc,
                           hint="use one index per dimension (missing trailing ones mean `:`)")
    index = tuple(index) + tuple(Slice() for _ in range(len(dims) - len(index)))
    np_index, shape, box = [], [], []
    for axis, (item, dim) in enumerate(zip(index, dims)):
        if isinstance(item, int):
            i = item + dim if item < 0 else item
            if not 0 <= i < dim:
                return None, error("E031", f"index {item} is out of bounds for dimension {axis} of "
                                   f"{decl.name} (size {dim})", loc,
                                   hint=f"allowed: {-dim}..{dim - 1}")
            if axis == 0 and decl.on_chip:
                return None, error("E033", f"the partition index of on-chip view {view} must be a "
                                   "slice, not an integer", loc,
                                   hint=f"write {decl.name}[{i}:{i + 1}, ...] for one partition")
            np_index.append(i)
            box.append((i, 1, 1))
            continue
        step = 1 if item.step is None else item.step
        if step <= 0:
            return None, error("E032", f"slice step must be positive in {view} (got {step})", loc,
                               hint="negative and zero steps are not supported")
        start = 0 if item.start is None else item.start
        stop = dim if item.stop is None else item.stop
        start = start + dim if start < 0 else start
        stop = stop + dim if stop < 0 else stop
        if not (0 <= start <= dim and 0 <= stop <= dim):
            return None, error("E031", f"slice {item} is out of bounds for dimension {axis} of "
                               f"{decl.name} (size {dim})", loc,
                               hint=f"allowed: start and stop within 0..{dim}")
        count = max(0, -(-(stop - start) // step))
        if count == 0:
            return None, error("E031", f"slice {item} selects no elements of dimension {axis} of "
                               f"{decl.name} (size {dim})", loc)
        np_index.append(slice(start, stop, step))
        shape.append(count)
        box.append((start, count, step))
    reshape = False
    if decl.on_chip and len(shape) == 1:
        shape.append(1)  # a view left with only its partition dim is a (P, 1) tile
        reshape = True
    if not shape:
        return None, error("E031", f"view {view} selects a single element; an operand must keep at "
                           "least one dimension", loc, hint=f"write a slice such as {decl.name}[0:1]")
    first = box[0]
    return Resolved(decl, tuple(np_index), tuple(shape), reshape, first[0], first[2],
                    tuple(box)), None
