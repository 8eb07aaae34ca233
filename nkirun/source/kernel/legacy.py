"""The NKI API before 0.2 (`neuronxcc.nki`), which public tutorials still use: index
arrays (`nl.arange`, `nl.mgrid`), masks, instructions that return their result instead
of writing `dst=`, assignment into tiles (`t[...] = expr`, `psum[...] += matmul`),
`nl.par_dim` and tile arithmetic.

How nkirun reads them:
- `nl.arange(n)` is a NumPy integer array and `nl.mgrid[...]` a tuple of open (broadcastable)
  grids with `.p`/`.x`/`.y`/`.z`: index expressions (`i * 128 + ix`) are NumPy arithmetic.
  A tensor indexed with such arrays is the strided view they describe: every index array
  must be affine in the positions of the broadcast shape (`c + sum(k_a * pos_a)`), which
  makes the view `[[sum_d k_da * stride_d, n_a] ...]` with offset `sum_d c_d * stride_d`.
  A non-affine index (`i // 2`), or index arrays mixed with slices, is E607.
- `mask=` is a boolean array (a comparison of index expressions) over the instruction's
  iteration space (its `dst` shape). Every operand whose dim `a` has the mask's size there
  is narrowed to the smallest rectangle holding the selected elements; an all-true mask
  changes nothing and an all-false mask drops the instruction. A mask that selects no
  rectangle (a triangle, a bound on a flattened index) also becomes the IR's element
  predicate over that rectangle (legacy_mask.py). Elements a mask leaves out are not
  written (reading them later is the dataflow check's business).
- An instruction or `nl` function called without `dst` allocates its result (SBUF, or
  PSUM for nc_matmul/nc_transpose) and returns it. The call is recorded lazily: when the
  next thing the kernel does is assigning the result into a tile (`out[i] = nl.exp(x)`),
  the instruction writes straight into that tile, as the compiler would; `psum[...] +=
  nisa.nc_matmul(...)` becomes the matmul with `accumulate` left to the auto rule (the
  first write to an element overwrites, later ones add), `psum[...] = nisa.nc_matmul(...)`
  an overwriting one. Any other use records it with its own result tile.
- `t[key] = tile` is a tensor_copy (a dma_copy when either side is in HBM), `t[key] =
  number` a memset; `+=`, `-=`, `*=` a tensor_tensor or tensor_scalar into the tile.
"""
from __future__ import annotations

import numpy as np

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.source.kernel import consts, index_forms
from nkirun.source.kernel.index_arrays import affine, affine_plain, advanced_pattern, \
    with_pattern  # noqa: F401 (affine, affine_plain: legacy_affine.py and tests use them)
from nkirun.source.kernel.legacy_gather import narrowed
from nkirun.source.kernel.legacy_mask import Predicate, index_array, index_memo, predicate, \
    predicate_text
from nkirun.source.kernel.tensor import current, ndarray
from nkirun.source.kernel.unsupported import here, kernel_error
from nkirun.source.kernel.views import index_view


class ParDim(int):
    """`nl.par_dim(n)`: marks the partition dim in a shape (an int)."""


def par_dim(n):
    return ParDim(n)


def arange(start, stop=None, step=1):
    """`nl.arange`: arange_plain, made once per (start, stop, step) of ints under
    speed.INDEX_MEMO with INDEX_FORMS (legacy_mask.index_memo: an index array is
    read-only)."""
    if speed.INDEX_MEMO and speed.INDEX_FORMS and start.__class__ is int and \
            step.__class__ is int and (stop is None or stop.__class__ is int):
        return index_memo(("arange", start, stop, step), arange_plain, start, stop, step)
    return arange_plain(start, stop, step)


def arange_plain(start, stop=None, step=1):
    arr = np.arange(start, stop, step) if stop is not None else np.arange(start)
    return index_array(arr, index_forms.of_arange(arr, 0 if stop is None else start, step))


class Grid(tuple):
    """What `nl.mgrid[...]` returns: the open grids, also as `.p`, `.x`, `.y`, `.z`."""

    @property
    def p(self):
        return self[0]

    @property
    def x(self):
        return self[1]

    @property
    def y(self):
        return self[2]

    @property
    def z(self):
        return self[3]


class _MGrid:
    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        return Grid(index_array(g, _form(g)) for g in np.ogrid[key])


def _form(g: np.ndarray):
    """The affine form of an ogrid array, proved once (index_forms.py)."""
    fit = affine_plain(g, g.shape) if g.dtype == np.int64 and g.size else None
    return fit and (fit[0], tuple(fit[1]))


mgrid = _MGrid()


def is_index_array(k) -> bool:
    return isinstance(k, np.ndarray) and k.dtype.kind in "iu"


# ---- masks ------------------------------------------------------------------------------------
def mask_box(mask):
    """None (no restriction), "empty", or per mask axis (start, stop, size)."""
    if mask is None or mask is True:
        return None
    m = np.asarray(mask)
    if m.dtype != bool:
        raise kernel_error("E608", f"mask= must be a comparison of index expressions, got "
                           f"{type(mask).__name__}")
    if m.all():
        return None
    if not m.any():
        return "empty"
    box = []
    for a in range(m.ndim):
        hit = np.flatnonzero(m.any(axis=tuple(i for i in range(m.ndim) if i != a)))
        box.append((int(hit[0]), int(hit[-1]) + 1, m.shape[a]))
    inside = m[tuple(slice(lo, hi) for lo, hi, _ in box)]
    if not inside.all() or int(m.sum()) != inside.size:
        return predicate(box, mask)  # no rectangle: an element predicate (legacy_mask.py)
    return box


def apply_mask(values: dict, box) -> bool:
    """Narrow every tile operand in `values` to `box`; False when nothing is left."""
    if box is None:
        return True
    if box == "empty":
        return False
    for key, v in list(values.items()):
        if isinstance(v, ndarray):
            values[key] = narrow(v, box)
    return True


def narrow(v, box):
    """v sliced to `box` on the dims where v has the mask's size (StridedView slicing)."""
    key, changed = [], False
    for a, n in enumerate(v.shape):
        if a < len(box) and box[a][2] == n and n > 1 and (box[a][0], box[a][1]) != (0, n):
            key.append(slice(box[a][0], box[a][1]))
            changed = True
        else:
            key.append(slice(None))
    if not changed:
        return v
    g = narrowed(v, tuple(key), index_view)  # an indirect view: its index tile narrows with it
    return g if g is not None else index_view(v, tuple(key))


class _Box:
    """A mask already read (at the call that gave it, so its errors point there)."""

    __slots__ = ("box",)

    def __init__(self, box):
        self.box = box


def pop_mask(values: dict):
    m = values.pop("mask", None)
    if isinstance(m, str):  # the IR's own predicate spelling (docs/masks.md): kept
        values["mask"] = m
        return None
    return m.box if m.__class__ is _Box else mask_box(m)


# ---- results recorded lazily -------------------------------------------------------------------
class Pending:
    __slots__ = ("result", "op", "values", "loc", "tables")

    def __init__(self, result, op, values, loc, tables):
        self.result, self.op, self.values = result, op, values
        self.loc, self.tables = loc, tables


def record(tracer, op: str, values: dict, loc, tables=None) -> None:
    """Record the instruction now, narrowed by its `mask=` (dropped when all masked), or
    by the rectangle a masked instruction left written in a tile it reads."""
    valid = tracer.__dict__.get("legacy_valid")
    if valid is None:
        valid = tracer.legacy_valid = {}
    if not valid and values.get("mask") is None:  # the common case: nothing to narrow
        values.pop("mask", None)
        tracer.emit(op, values, loc, tables)
        return
    box = pop_mask(values)
    pred = box if box.__class__ is Predicate else None
    flip = _transposes(op) and len(values["data"].shape) == 2 == len(values["dst"].shape)
    if valid and box != "empty":
        inherited = _inherited(values, valid)
        if flip and isinstance(inherited, list):
            inherited = inherited[::-1]  # data's written rows are the transpose's columns
        box = _intersect(box, inherited)
    dst = values.get("dst")
    tracked = dst is not None and getattr(dst, "_rec", None) is not None \
        and dst._rec.on_chip and (not dst._rec.declared or dst._rec in valid)
    whole = dst is not None and _whole(dst)
    if flip and isinstance(box, list):  # the box is dst's; data is narrowed transposed
        values["dst"], values["data"] = narrow(dst, box), narrow(values["data"], box[::-1])
    elif not apply_mask(values, box):
        return
    if pred is not None:
        _element_mask(op, values, pred, box)
    tracer.emit(op, values, loc, tables)
    if dst is None or not dst._rec.on_chip:
        return
    rec = dst._rec
    if box is None:
        if whole or dst.shape[0] == rec.shape[0] and dst.strides[0] == rec.strides[0]:
            valid.pop(rec, None)  # every partition written
    elif tracked and whole:
        valid[rec] = [box[a] if a < len(box) and box[a][2] == n else (0, n, n)
                      for a, n in enumerate(dst.shape)]
    elif tracked and box[0][2] == dst.shape[0] and dst.strides[0] == rec.strides[0]:
        p0 = dst.offset // rec.strides[0]  # a view: remember the partitions written
        valid[rec] = [(p0 + box[0][0], p0 + box[0][1], rec.shape[0])] + \
            [(0, n, n) for n in rec.shape[1:]]


def _element_mask(op: str, values: dict, pred, box) -> None:
    """Give the instruction the IR predicate of a non-rectangular mask, over its `mask_on`
    operand (already narrowed to `box`)."""
    from nkirun.isa import REGISTRY
    spec = REGISTRY[op]
    space = values.get(spec.mask_on)
    if not any(p.name == "mask" for p in spec.params) or not hasattr(space, "shape"):
        raise kernel_error("E608", f"nki.isa.{op} takes no mask= in nkirun, so a mask that "
                           "is no rectangle cannot apply to it",
                           hint="split it into instructions whose masks are rectangles")
    text = predicate_text(pred, box, tuple(space.shape))
    if text is not None:
        values["mask"] = text


def _transposes(op: str) -> bool:
    from nkirun.isa import REGISTRY
    spec = REGISTRY.get(op)
    return spec is not None and spec.nki.transposes


def _intersect(box, inherited):
    """The mask's rectangle within what the tiles it reads hold: rows a mask selects but
    no instruction wrote are garbage on hardware too, so nothing is computed there."""
    if inherited is None or box is None:
        return box if inherited is None else inherited
    if inherited == "empty":
        return "empty"
    out = list(box)
    for a, (lo, hi, n) in enumerate(inherited):
        if a < len(out) and out[a][2] == n:
            lo, hi = max(lo, out[a][0]), min(hi, out[a][1])
            if hi <= lo:
                return "empty"
            out[a] = (lo, hi, n)
    return out


def _whole(v) -> bool:
    rec = getattr(v, "_rec", None)
    return v.__class__ is ndarray and rec.on_chip and v.offset == 0 \
        and tuple(v.shape) == rec.shape and tuple(v.strides) == rec.strides


def _inherited(values: dict, valid: dict):
    """The written rectangle of a partly written tile an instruction reads: the whole
    rectangle for a read of the whole tile, its partition range for a read of a view."""
    for key, v in values.items():
        if key == "dst" or v.__class__ is not ndarray or v._rec not in valid:
            continue
        if _whole(v):
            return valid[v._rec]
        rec, (lo, hi, _) = v._rec, valid[v._rec][0]
        row = rec.strides[0]
        if v.strides[0] != row:
            continue
        p0, count = v.offset // row, v.shape[0]
        lo, hi = max(lo - p0, 0), min(hi - p0, count)
        return "empty" if hi <= lo else [(lo, hi, count)]
    return None


def flush(tracer) -> None:
    p = tracer.__dict__.get("legacy_pending")
    if p is not None:
        tracer.legacy_pending = None
        record(tracer, p.op, p.values, p.loc, p.tables)


def defer(tracer, result, op, values, loc, tables=None):
    if values.get("mask") is not None and not isinstance(values["mask"], str):
        values["mask"] = _Box(mask_box(values["mask"]))
    flush(tracer)
    tracer.legacy_pending = Pending(result, op, values, loc, tables)
    return result


def take(tracer, value):
    """The pending instruction whose result is `value`, taken off the queue; or None."""
    p = getattr(tracer, "legacy_pending", None)
    if p is not None and p.result is value:
        tracer.legacy_pending = None
        return p
    return None


def dst_first(args, required, kwargs, tiles=frozenset()) -> bool:
    """Whether positional `args` start with dst (NKI 0.2+) rather than leave it out: they
    must cover the required parameters, each required tile operand with a tensor (the
    pre-0.2 `local_gather(src, index, 4, 4)` would put the number 4 in `index`)."""
    if not args:
        return False
    if not isinstance(args[0], ndarray):
        return False
    given = set(required[:len(args)]) | set(kwargs)
    if not all(n in given for n in required):
        return False
    return all(isinstance(a, ndarray) for n, a in zip(required, args) if n in tiles)


def first_operand(values: dict):
    """The input a result without dst= takes its shape and dtype from (not an output
    operand such as nc_match_replace8's dst_idx), or None."""
    return next((values[k] for k in ("data", "src", "data1", "data0", "on_true_tile",
                                     "on_true", "stationary", "src_buffer", "segment_ids")
                 if hasattr(values.get(k), "shape")), None)


def result_shape(op: str, values: dict, rule=None):
    """(shape, buffer) of the result an instruction called without dst= makes: the first
    input's shape in SBUF, unless the instruction's spec says otherwise (`rule`: its
    SPEC.nki.result; it is also asked when there is no input tile, as for the pre-0.2
    `memset(shape, value, dtype)`, and answers None when it cannot tell)."""
    if "_legacy_shape" in values:  # an index expression's shape (legacy_affine.FORMS)
        return values.pop("_legacy_shape"), consts.sbuf
    first = first_operand(values)
    got = rule(values, first) if rule is not None and (first is not None
                                                      or "shape" in values) else None
    if got is None and first is None:
        raise kernel_error("E607", f"nki.isa.{op} without dst=: nkirun cannot tell the "
                           "result's shape", hint="allocate the result and pass dst=")
    if got is None:
        return tuple(first.shape), consts.sbuf
    shape, buffer = got
    return tuple(shape), consts.BUFFERS[buffer]


# ---- assignment into tiles (tile_ops.py, convenience.py) ------------------------------
def record_now(op: str, values: dict, loc=None, tables=None) -> None:
    """Record one instruction now (after the pending one), honouring its `mask=`."""
    tracer = current()
    flush(tracer)
    record(tracer, op, values, loc or here(), tables)


def fit(view, shape):
    """`view` with the shape `shape` when the two differ only in size-1 dims."""
    shape = tuple(shape)
    if tuple(view.shape) == shape:
        return view
    pairs = [(s, c) for s, c in view.get_pattern() if c != 1]
    if [c for c in shape if c != 1] != [c for _, c in pairs]:
        raise kernel_error("E603", f"cannot assign a {list(shape)} value into a "
                           f"{list(view.shape)} view of {view.name}")
    it = iter(pairs)
    pattern = [next(it) if c != 1 else (1, 1) for c in shape]
    return with_pattern(view, pattern, view.offset)
