"""Pre-0.2 `mask=` predicates that are no rectangle (legacy.py reads rectangles itself).

NKI's masking page: a mask is a comparison (`a < b`) or several joined by `&`, each side
an affine expression of `nl.arange()` (also of loop variables and `nl.program_id()`,
which are plain numbers while the kernel is traced). A masked instruction computes and
writes only the elements where the predicate holds; the others are neither read nor
written. Masks such as `(i_p < n) & (i_f < m)` select a rectangle and narrow the operands
(legacy.py); a triangle (`i_f <= i_p`) or a bound on a flattened index (`i_p * F + i_f <
n`) does not.

How nkirun reads them:
- `nl.arange` / `nl.mgrid` give `IndexArray`s (integer NumPy arrays). A comparison with
  one gives a `Mask`: the boolean array, plus each comparison as (`lhs - rhs` over the
  comparison's broadcast shape, operator). `&` of Masks keeps every comparison; any other
  combination (`|`, `~`, Python `and`) leaves a plain boolean array, which is fine for a
  rectangle and E608 otherwise (NKI allows only `&`).
- A non-rectangular Mask becomes the instruction's element predicate: the operands are
  narrowed to the smallest rectangle holding every selected element (as for a rectangle),
  and the IR's `mask:` string (docs/masks.md) says which elements of that rectangle the
  instruction computes, in the index names of the instruction's `mask_on` operand (`p` the
  partition, `f0`, `f1`, ... its free dims). The mask's axes are the operand's dims in
  order (the partition dim first), as for rectangles. Each comparison must be affine in
  the mask's axes (its `lhs - rhs` is `c + sum k_a * i_a`), else E608.
- The rectangle is what `cost` charges (NKI lowers a masked instruction to one over a
  smaller tile; the elements of the rectangle outside the predicate still pass through
  the engine): an upper bound for a triangle.
"""
from __future__ import annotations

import numpy as np

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.source.kernel import index_forms
from nkirun.source.kernel.index_arrays import affine
from nkirun.source.kernel.unsupported import kernel_error

_COMPARE = {np.less: "<", np.less_equal: "<=", np.greater: ">", np.greater_equal: ">=",
            np.equal: "==", np.not_equal: "!="}
_AND = (np.bitwise_and, np.logical_and)


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, np.ndarray) and type(x) is not np.ndarray \
        else x


class IndexArray(np.ndarray):
    """An integer index array (`nl.arange`, `nl.mgrid`): NumPy arithmetic, and comparisons
    that remember what they compared (a Mask). Read-only, as NKI's index expressions are
    immutable: `ix += 1` makes a new array (rebinds ix), as it does in NKI. With
    speed.INDEX_FORMS it carries its affine form where it is known (index_forms.py)."""

    _form = None  # (c, coefs) over its own shape, or None: unknown (index_forms.py)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """ufunc_plain, remembered (speed.INDEX_MEMO) when every input is a form array or
        an int and the result an index array (remembered: index_memo)."""
        if speed.INDEX_MEMO and speed.INDEX_FORMS and method == "__call__" and not kwargs:
            key = _inputs_key(inputs)
            if key is not None:
                return index_memo((ufunc, key), self.ufunc_plain, ufunc, method, *inputs)
        return self.ufunc_plain(ufunc, method, *inputs, **kwargs)

    def ufunc_plain(self, ufunc, method, *inputs, **kwargs):
        plain = [_plain(x) for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(o) for o in kwargs["out"])
        out = getattr(ufunc, method)(*plain, **kwargs)
        if method != "__call__" or "out" in kwargs or not isinstance(out, np.ndarray):
            return out
        if ufunc in _COMPARE and len(plain) == 2:
            return Mask.of(out, [(_difference(*plain), _COMPARE[ufunc])])
        if out.dtype.kind not in "iu":
            return out
        arr = index_array(out)
        if speed.INDEX_FORMS and not kwargs:
            arr._form = index_forms.of_ufunc(ufunc, inputs, out)
        return arr

    def __getitem__(self, key):
        """getitem_plain, remembered (speed.INDEX_MEMO) for a form array and a key of ints,
        None, `...` and slices of ints (`[:, None]`): in index_memo, and on the array itself
        (`_made`: a shared array is indexed the same few ways over and over)."""
        if speed.INDEX_MEMO and speed.INDEX_FORMS and self._form is not None:
            hk = _item_key(key)
            if hk is not None:
                made = self.__dict__.get("_made")
                if made is None:
                    made = self._made = {}
                hit = made.get(hk)
                if hit is None:
                    hit = index_memo((self._form, self.shape, self.dtype, hk),
                                     self.getitem_plain, key)
                    if hit.__class__ is IndexArray and len(made) < _MADE_MAX:
                        made[hk] = hit
                return hit
        return self.getitem_plain(key)

    def _with_int(self, ufunc, other: int, reflected: bool, plain):
        """self <op> other (other <op> self when reflected) for an int `other`: plain() (the
        ndarray operator: NumPy's ufunc, then __array_ufunc__ and index_memo), remembered
        on the array as __getitem__ does, without NumPy's dispatch."""
        if not (speed.INDEX_MEMO and speed.INDEX_FORMS and self._form is not None):
            return plain(other)
        made = self.__dict__.get("_made")
        if made is None:
            made = self._made = {}
        key = (ufunc, reflected, other)
        hit = made.get(key)
        if hit is None:
            hit = plain(other)
            if hit.__class__ is IndexArray and hit._form is not None and len(made) < _MADE_MAX:
                made[key] = hit
        return hit

    def __add__(self, other):
        if other.__class__ is int:
            return self._with_int(np.add, other, False, super().__add__)
        return super().__add__(other)

    def __radd__(self, other):
        if other.__class__ is int:
            return self._with_int(np.add, other, True, super().__radd__)
        return super().__radd__(other)

    def __sub__(self, other):
        if other.__class__ is int:
            return self._with_int(np.subtract, other, False, super().__sub__)
        return super().__sub__(other)

    def __rsub__(self, other):
        if other.__class__ is int:
            return self._with_int(np.subtract, other, True, super().__rsub__)
        return super().__rsub__(other)

    def __mul__(self, other):
        if other.__class__ is int:
            return self._with_int(np.multiply, other, False, super().__mul__)
        return super().__mul__(other)

    def __rmul__(self, other):
        if other.__class__ is int:
            return self._with_int(np.multiply, other, True, super().__rmul__)
        return super().__rmul__(other)

    def getitem_plain(self, key):
        out = super().__getitem__(key)
        if self._form is not None and out.__class__ is IndexArray:
            out._form = index_forms.of_index(self._form, self.shape, key, out.shape)
        return out

    # in-place arithmetic makes a new array (the operand is read-only, as in NKI)
    def __iadd__(self, other):
        return self + other

    def __isub__(self, other):
        return self - other

    def __imul__(self, other):
        return self * other


# ---- speed.INDEX_MEMO: an index expression made once ----------------------------------------
# A form array's values are a function of its form, shape and dtype (index_forms.py), and an
# index array is read-only: so `nl.arange(128)[:, None]`, `512 * i + nl.arange(512)[None, :]`
# are the same arrays each time a loop body makes them, and one object (its data frozen too)
# serves every call. Keys: (start, stop, step) of nl.arange (legacy.py), (form, shape,
# dtype, key) of an indexing, (ufunc, inputs) of arithmetic; the plain twins
# (IndexArray.getitem_plain, ufunc_plain, legacy.arange_plain) make them afresh
# (tests/kernel/test_index_memo.py). Only with speed.INDEX_FORMS (the keys are forms).
_MEMO: dict = {}
_MEMO_MAX = 50_000
_MADE_MAX = 1_000  # what one shared array remembers (IndexArray._made) stops growing there
_ITEM = frozenset({int, type(None)})


def index_memo(key, make, *args):
    """make(*args), remembered under `key` when it is an IndexArray (then frozen: neither
    it nor its data can be made writeable again)."""
    hit = _MEMO.get(key)
    if hit is None:
        hit = make(*args)
        if hit.__class__ is not IndexArray:
            return hit
        base = hit.base if hit.base is not None else hit
        base.flags.writeable = False
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = hit
    return hit


def _item_key(key):
    """An index of ints, None, `...` and slices of ints/None as a hashable tuple, or None.
    (`[:, None]` and `[None, :]`, most of a pre-0.2 kernel's, tested first.)"""
    if key.__class__ is tuple and len(key) == 2:
        a, b = key
        if b is None and a.__class__ is slice and a == _ALL:
            return _COLUMN
        if a is None and b.__class__ is slice and b == _ALL:
            return _ROW
    out = []
    for k in (key if key.__class__ is tuple else (key,)):
        c = k.__class__
        if c in _ITEM:
            out.append(k)
        elif k is Ellipsis:
            out.append("...")
        elif c is slice and k.start.__class__ in _ITEM and k.stop.__class__ in _ITEM and \
                k.step.__class__ in _ITEM:
            out.append((k.start, k.stop, k.step))
        else:
            return None
    return (key.__class__ is tuple, tuple(out))


_ALL = slice(None)
_COLUMN, _ROW = (True, ((None, None, None), None)), (True, (None, (None, None, None)))


def _inputs_key(inputs):
    """A ufunc's inputs, each a form array or an int, as a hashable tuple, or None."""
    out = []
    for x in inputs:
        if x.__class__ is int:
            out.append(x)
        elif x.__class__ is IndexArray and x._form is not None:
            out.append((x._form, x.shape, x.dtype))
        else:
            return None
    return tuple(out)


class Mask(np.ndarray):
    """A boolean array made by comparing index expressions, with the comparisons."""

    conds = None  # [(lhs - rhs array or None, operator)]; None: not comparisons alone

    @classmethod
    def of(cls, values: np.ndarray, conds):
        m = values.view(cls)
        m.conds = conds
        return m

    def __array_finalize__(self, obj):
        self.conds = None  # a slice or copy is a plain boolean array

    def __bool__(self):
        if self.size == 1:
            return bool(self.reshape(-1)[0])
        raise kernel_error("E608", "a comparison of index arrays has no truth value: a mask "
                           "joins its comparisons with `&` (Python's `and` / `or` ask for one)",
                           hint="write (a < b) & (c < d)")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [_plain(x) for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(o) for o in kwargs["out"])
        out = getattr(ufunc, method)(*plain, **kwargs)
        if ufunc in _AND and method == "__call__" and "out" not in kwargs \
                and all(_conds(x) is not None for x in inputs):
            return Mask.of(out, [c for x in inputs for c in _conds(x)])
        return out


def _conds(x):
    if isinstance(x, Mask):
        return x.conds
    if x is True or isinstance(x, np.bool_) and bool(x):
        return []  # `& True` adds nothing
    return None


def _difference(a, b):
    """lhs - rhs of a comparison, as exact integers where both sides are (else floats)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        return np.subtract(a, b, dtype=np.int64)
    return np.subtract(a, b, dtype=np.float64)


def index_array(arr: np.ndarray, form=None) -> IndexArray:
    """arr (a new array no one else holds) as a read-only IndexArray with `form`."""
    out = np.asarray(arr).view(IndexArray)
    out.flags.writeable = False
    if form is not None and speed.INDEX_FORMS:
        out._form = form
    return out


# ---- a non-rectangular mask -> the IR's predicate ------------------------------------------
class Predicate(list):
    """The bounding box of a non-rectangular mask (a list of (start, stop, size) per mask
    axis, as legacy.mask_box gives for rectangles), the mask, and its comparisons as
    (c, per-axis coefficients, operator): `c + sum k_a * i_a OP 0`. Built at the call that
    gives the mask, so its errors point there."""

    def __init__(self, box, mask: np.ndarray, conds):
        super().__init__(box)
        self.mask = np.asarray(mask)
        if conds is None:
            raise kernel_error("E608", "a mask that is no rectangle must be comparisons of "
                               "index expressions joined by `&` (NKI's rule; `|`, `~` and "
                               "`and` make no mask)", hint="write it as (a < b) & (c >= d)")
        self.fits = [_fit(diff, op, self.mask.ndim) for diff, op in conds]


def predicate(box, mask) -> Predicate:
    return Predicate(box, mask, getattr(mask, "conds", None))


def _fit(diff, op, ndim: int):
    d = np.asarray(diff)
    if d.dtype.kind == "f":
        if not np.array_equal(d, np.round(d)):
            raise kernel_error("E608", "a mask compares an index with a non-integer value; "
                               "nkirun writes masks over integer indices",
                               hint="compare with an int (i < 3 rather than i < 2.5)")
        d = d.astype(np.int64)
    if d.ndim > ndim:
        raise kernel_error("E608", "a comparison of the mask has more dims than the mask")
    d = d.reshape((1,) * (ndim - d.ndim) + d.shape)  # (NumPy broadcasting: right-aligned)
    fit = affine(d, d.shape)
    if fit is None:
        raise kernel_error("E608", "a side of a mask comparison is not affine in the index "
                           "arrays (NKI's rule: affine expressions of nl.arange)",
                           hint="compare expressions like i_p * 128 + i_f with bounds")
    return fit[0], fit[1], op


_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
        "==": np.equal, "!=": np.not_equal}


def predicate_text(pred: Predicate, box, space_shape) -> str | None:
    """The IR `mask:` string of `pred` over the instruction's `mask_on` operand, whose
    shape is `space_shape` once narrowed to `box` (the final rectangle: pred's own, or
    less). None when the predicate holds on the whole box (a rectangle after all). A
    comparison that holds on the whole box (a bound the narrowing already applies) is
    left out."""
    if pred.mask[tuple(slice(lo, hi) for lo, hi, _ in box)].all():
        return None
    terms = [_condition(c, coefs, op, box, space_shape) for c, coefs, op in pred.fits
             if not _holds_on(c, coefs, op, box)]
    return " & ".join(terms)


def _holds_on(c, coefs, op, box) -> bool:
    value = c
    for a, k in enumerate(coefs):
        if k:
            lo, hi, _ = box[a]
            value = value + k * np.arange(lo, hi).reshape([-1 if i == a else 1
                                                           for i in range(len(box))])
    return bool(np.all(_OPS[op](value, 0)))


def _condition(c, coefs, op, box, space_shape) -> str:
    """One comparison `c + sum k_a * i_a OP 0` in the operand's index names, shifted to the
    box (i_a = lo_a + the operand's index along dim a): `f0 - p <= 0`."""
    text = ""
    for a, k in enumerate(coefs):
        if not k:
            continue
        lo, hi, _ = box[a]
        if a >= len(space_shape) or space_shape[a] != hi - lo:
            raise kernel_error("E608", f"the mask's axis {a} ({box[a][2]} indices) does not "
                               f"match the instruction's operand {list(space_shape)}",
                               hint="index the mask like the instruction's result tile")
        c += k * lo
        name = "p" if a == 0 else f"f{a - 1}"
        term = name if abs(k) == 1 else f"{abs(k)}*{name}"
        text += (f"-{term}" if k < 0 else term) if not text else \
            (f" - {term}" if k < 0 else f" + {term}")
    if c:
        text += f" - {-c}" if c < 0 else f" + {c}"
    return f"{text} {op} 0"
