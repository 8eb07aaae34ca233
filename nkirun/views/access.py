"""General access-pattern views (NKI's `.ap()`): parsing, checking and resolving them.

A view `x.ap([[step, num], ...], offset=, dtype=)` addresses the tensor's storage directly:
element (k0, k1, ...) is storage element `offset + sum(step_i * k_i)`, in elements of
`dtype` (the tensor reinterpreted as that dtype; default its own) from the start of the
tensor. For SBUF/PSUM tensors the first pair is the partition entry: its step must be the
partition's element count (every partition follows the same free pattern), the offset
picks the first partition (`offset // free`) and the start inside it; free entries must
stay inside the partition. HBM tensors are flat: any pattern inside the tensor's bytes.
Zero steps broadcast (reads only). Everything is checked statically; a resolved pattern
is a NumPy strided view of the tensor's buffer (runner/machine.py). The scheduler gets the
exact per-dim box when the pattern is a basic slice in disguise, else its bounding box.
Patterns indexed at run time (scalar_offset/vector_offset) are in views/indirect.py.

Readings (where the NKI docs leave it open; docs/views.md):
  * steps may be negative (the hardware stride is a signed int16); the view still has to
    stay inside the tensor;
  * an on-chip pattern of one entry is a (P, 1) tile, as every on-chip operand is >= 2-D;
  * the partition step is free when the pattern reads one partition (`[[1, 1], [1, 1]]`
    on a (1, 1) tile is used by public kernels);
  * a write through a pattern that addresses an element twice is refused (E039): NKI
    defines no order for it. Except activation_reduce's dst through zero steps only
    (a Param with zero_steps, isa/spec.py): each element keeps the last value streamed to it.
"""
from __future__ import annotations

import ast
import re
from math import prod

import numpy as np

from nkirun.records import record
from nkirun.diagnostics import Loc, error
from nkirun.hw import dtypes as dt
from nkirun.ir import AccessPattern, TensorDecl, View
from nkirun.views.indirect import Indirect, static_part

MAX_DIMS = 5  # the partition entry + up to 4 free dims (NKI language guide: "up to 5")
MAX_PARTITIONS = 128
_AP_TEXT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*?)\s*\.ap\s*\((.*)\)\s*", re.S)
_AP_COMPACT = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*?)\.ap\(\[((?:\[-?\d+,\d+\],?)+)\]"
                         r"(?:,offset=(\d+))?(?:,dtype=(\w+))?\)")
_INTS = re.compile(r"-?\d+")
_AP_KEYS = ("pattern", "offset", "scalar_offset", "vector_offset", "indirect_dim", "dtype",
            "indirect_stride")
_EXACT_LIMIT = 1 << 22  # overlap of a write pattern: enumerate up to this many elements


class APSyntaxError(ValueError):
    pass


@record(frozen=True, slots=True)
class Strided:
    """A resolved access pattern: where its elements sit in the tensor's buffer."""

    dtype: dt.DType  # the view's element type (after reinterpretation)
    shape: tuple[int, ...]  # the pattern's shape (the on-chip (P, 1) tail included)
    byte_offset: int
    byte_strides: tuple[int, ...]  # per view dim (the on-chip (P,1) tail has stride 0)
    overlapping: bool  # some element is addressed twice (zero or overlapping steps)
    exact_box: bool  # Resolved.box is exactly the storage elements touched, else a bound
    indirect: Indirect | None = None  # runtime-indexed (views/indirect.py)


# ---- spelling ----------------------------------------------------------------------------------
def is_ap_text(text: str) -> bool:
    return ".ap" in text and "(" in text


def parse_ap_text(text: str, loc: Loc | None, parse_view) -> View:
    """`x.ap([[s, n], ...], offset=O, dtype=D, ...)` (NKI's keyword names and order)."""
    m = _AP_COMPACT.fullmatch(text)
    if m is not None:  # the form `convert` writes: no need for Python's parser
        name, pairs, offset, dtype = m.groups()
        nums = [int(x) for x in _INTS.findall(pairs)]
        values = {"pattern": list(zip(nums[::2], nums[1::2])), "offset": int(offset or 0)}
        if dtype:
            values["dtype"] = dtype
        return View(name, make_ap(values), loc or Loc())
    m = _AP_TEXT.fullmatch(text)
    if m is None:
        raise APSyntaxError(f"expected `name.ap([[step, num], ...], offset=N, dtype=D)`, "
                            f"got {text!r}")
    try:
        call = ast.parse(f"f({m.group(2)})", mode="eval").body
    except SyntaxError:
        raise APSyntaxError(f"cannot read the arguments of {text!r}") from None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        raise APSyntaxError(f"expected one `.ap(...)` call, got {text!r}")
    if len(call.args) > len(_AP_KEYS):
        raise APSyntaxError(f"too many arguments in {text!r}")
    given = dict(zip(_AP_KEYS, call.args))
    for kw in call.keywords:
        if kw.arg not in _AP_KEYS or kw.arg in given:
            raise APSyntaxError(f"unknown or repeated argument `{kw.arg}` in {text!r}; "
                                f"allowed: {', '.join(_AP_KEYS)}")
        given[kw.arg] = kw.value
    src = m.group(2)
    values = {k: _arg(k, node, f"f({src})", loc, parse_view) for k, node in given.items()}
    return View(m.group(1), make_ap(values), loc or Loc())


def _arg(key: str, node, src: str, loc, parse_view):
    if key in ("scalar_offset", "vector_offset"):
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
            else ast.get_source_segment(src, node)
        return parse_view(text, loc)
    if key == "dtype":
        if isinstance(node, ast.Constant):
            return node.value
        return ast.get_source_segment(src, node)  # nl.bfloat16, bfloat16
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise APSyntaxError(f"`{key}` must be a literal, got "
                            f"`{ast.get_source_segment(src, node)}`") from None


def make_ap(values: dict) -> AccessPattern:
    """An AccessPattern from plain values (text arguments or a YAML mapping)."""
    unknown = set(values) - set(_AP_KEYS)
    if unknown:
        raise APSyntaxError(f"unknown access-pattern key(s) {', '.join(sorted(unknown))}; "
                            f"allowed: {', '.join(_AP_KEYS)}")
    pat = values.get("pattern")
    if (not isinstance(pat, (list, tuple))
            or not all(isinstance(e, (list, tuple)) and len(e) == 2
                       and all(isinstance(x, int) and not isinstance(x, bool) for x in e)
                       for e in pat)):
        raise APSyntaxError(f"`pattern` must be a list of [step, num] integer pairs, got {pat!r}")
    offset = values.get("offset") or 0
    indirect = values.get("indirect_dim") or 0
    for k, v in (("offset", offset), ("indirect_dim", indirect)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise APSyntaxError(f"`{k}` must be an integer, got {v!r}")
    stride = values.get("indirect_stride")
    if stride is not None and (not isinstance(stride, int) or isinstance(stride, bool)
                               or stride < 1):
        raise APSyntaxError(f"`indirect_stride` must be a positive integer, got {stride!r}")
    dtype = values.get("dtype")
    if dtype is not None and not isinstance(dtype, dt.DType):
        d = dt.lookup(str(dtype))
        if d is None:
            raise APSyntaxError(f"unknown dtype {dtype!r} in an access pattern")
        dtype = d
    return AccessPattern(tuple((int(s), int(n)) for s, n in pat), offset, dtype,
                         values.get("scalar_offset"), values.get("vector_offset"), indirect,
                         stride)


# ---- resolution --------------------------------------------------------------------------------
def resolve_ap(view: View, decl: TensorDecl, resolved_cls):
    """Check `view` (an AccessPattern view) against `decl`; (Resolved, None) or (None, diag).
    An indirect pattern's index view is resolved later, by bind (indirect.bind_index)."""
    ap, loc = view.index, view.loc

    def bad(code, msg, hint=None):
        return None, error(code, f"view {view}: {msg}", loc, hint=hint)

    if not ap.pattern or len(ap.pattern) > MAX_DIMS:
        return bad("E035", f"an access pattern has 1 to {MAX_DIMS} [step, num] entries "
                   f"(got {len(ap.pattern)})")
    if any(n < 1 for _, n in ap.pattern):
        return bad("E035", "every num of an access pattern must be at least 1",
                   hint="pattern entries are [step, num]: the step comes first")
    if ap.offset < 0:
        return bad("E035", f"the offset must not be negative (got {ap.offset})")
    dtype = ap.dtype or decl.dtype
    unit = decl.bytes_per_partition if decl.on_chip else decl.nbytes
    if unit % dtype.itemsize:
        where = "a partition of " if decl.on_chip else ""
        return bad("E037", f"{where}`{decl.name}` holds {unit} bytes, not a whole number of "
                   f"{dtype.name} elements ({dtype.itemsize} bytes)",
                   hint=f"reinterpret as a dtype whose size divides {unit}")
    pattern, ind = ap.pattern, None
    if ap.scalar_offset is not None or ap.vector_offset is not None:
        ind, got = static_part(ap, decl, dtype)
        if ind is None:
            return bad("E035", got)
        pattern = got
    start, problem = _start(decl, dtype, unit // dtype.itemsize, pattern, ap.offset)
    if problem is not None:
        return bad(*problem)
    return _resolved(decl, dtype, pattern, ap.pattern, start, ind, resolved_cls), None


def _start(decl: TensorDecl, dtype, extent: int, pattern, offset: int):
    """The pattern's first byte, or a problem (code, message, hint): the partition entry
    (on chip) and every address inside the tensor (inside one partition, on chip)."""
    name, bpp = decl.name, decl.bytes_per_partition
    free, p0, f0 = pattern, 0, offset
    if decl.on_chip:
        (pstep, pnum), free = pattern[0], pattern[1:]
        if pnum > MAX_PARTITIONS:
            return 0, ("E036", f"the partition entry reads {pnum} partitions; at most "
                       f"{MAX_PARTITIONS}", "tile the partition dimension by 128")
        if pnum > 1 and pstep != extent:
            return 0, ("E036", f"the partition step must be {extent}, the elements of "
                       f"{dtype.name} in one partition of `{name}` (got {pstep})",
                       f"write the first entry as [{extent}, {pnum}]: a view cannot skip "
                       "or repeat partitions")
        p0, f0 = divmod(offset, extent)
        if p0 + pnum > decl.partitions:
            return 0, ("E038", f"it reads partitions {p0}..{p0 + pnum - 1} but `{name}` has "
                       f"{decl.partitions}", f"allowed: offset // {extent} + {pnum} <= "
                                             f"{decl.partitions}")
    lo = f0 + sum(min(0, s * (n - 1)) for s, n in free)
    hi = f0 + sum(max(0, s * (n - 1)) for s, n in free)
    if lo < 0 or hi >= extent:
        what = "inside one partition of" if decl.on_chip else "inside"
        return 0, ("E038", f"it addresses {dtype.name} elements {lo}..{hi} {what} `{name}`, "
                   f"which has {extent}", f"allowed: 0..{extent - 1}")
    return p0 * bpp + f0 * dtype.itemsize, None


def _resolved(decl, dtype, pattern, given, start: int, ind, resolved_cls):
    """The Resolved of a checked pattern: its strided layout, box and overlap."""
    isz = dtype.itemsize
    shape = tuple(n for _, n in given)
    strides = tuple(s * isz for s, _ in pattern)
    if decl.on_chip:
        strides = (decl.bytes_per_partition,) + strides[1:]
        if len(shape) == 1:
            shape, strides = shape + (1,), strides + (0,)
    if ind is None:
        box, exact = _box(decl, dtype, start, shape, strides)
        overlapping = _overlapping(shape, strides, isz)
    else:  # the index decides which elements: assume the whole tensor
        box, exact = tuple((0, n, 1) for n in decl.shape), False
        # a vector index gives each partition its own row: only the rest can overlap
        rest = ((1,) + shape[1:]) if ind.per_partition else shape
        overlapping = _overlapping(rest, strides, isz)
    s = Strided(dtype, shape, start, strides, overlapping, exact, ind)
    first = box[0]
    return resolved_cls(decl, None, shape, False, first[0], first[2], box, s)


def _overlapping(shape, strides, isz) -> bool:
    """Whether two elements of the view share bytes (sufficient test, exact fallback)."""
    dims = sorted((abs(s), n) for s, n in zip(strides, shape) if n > 1)
    reach = 0
    for s, n in dims:
        if s == 0:
            return True
        if s < reach + isz:
            break
        reach += s * (n - 1)
    else:
        return False
    count = prod(shape)
    if count > _EXACT_LIMIT:
        return True  # too large to enumerate: treat as overlapping (writes are refused)
    offs = _byte_offsets(0, shape, strides).reshape(-1)
    offs.sort()
    return bool(np.any(np.diff(offs) < isz))


def _byte_offsets(base: int, shape, strides) -> np.ndarray:
    off = np.full(shape, base, np.int64)
    for axis, (n, s) in enumerate(zip(shape, strides)):
        if n > 1 and s:
            ix = [1] * len(shape)
            ix[axis] = n
            off += (np.arange(n, dtype=np.int64) * s).reshape(ix)
    return off


def static_offsets(r) -> np.ndarray:
    """The byte offset of every element of a pattern view, in the pattern's shape (for an
    indirect pattern: with index 0)."""
    s = r.ap
    return _byte_offsets(s.byte_offset, s.shape, s.byte_strides)


def storage_elements(r, off: np.ndarray | None = None) -> np.ndarray:
    """The flat indices of the tensor's storage elements each view element covers:
    shape r.shape + (k,), k storage elements per view element (reinterpretation).
    `off`: the elements' byte offsets when the run decided them (indirect patterns)."""
    s, ssz = r.ap, r.decl.dtype.itemsize
    off = (static_offsets(r) if off is None else off).reshape(r.shape)
    k = max(1, s.dtype.itemsize // ssz)
    return (off // ssz)[..., None] + np.arange(k, dtype=np.int64)


def _box(decl: TensorDecl, dtype, byte_offset: int, shape, strides):
    """Per tensor dim (start, count, step) covering every element the view touches, and
    whether it is exact. Exact when each stepping view dim walks one tensor dim (the view
    is a NumPy basic slice in disguise); else the bounding box of its flat range."""
    ssz, dims = decl.dtype.itemsize, decl.shape
    tstr = [ssz * prod(dims[d + 1:]) for d in range(len(dims))]
    if dtype.itemsize == ssz and byte_offset % ssz == 0:
        box = _exact_box(dims, tstr, byte_offset, shape, strides)
        if box is not None:
            return box, True
    lo = byte_offset + sum(min(0, s * (n - 1)) for s, n in zip(strides, shape))
    hi = byte_offset + sum(max(0, s * (n - 1)) for s, n in zip(strides, shape))
    first, last = lo // ssz, (hi + dtype.itemsize - 1) // ssz
    if decl.on_chip:  # partitions are exact; bound the free range inside each
        free = dims[1:]
        fsize = prod(free)
        p0, pnum = first // fsize, shape[0]
        a = first % fsize
        b = a + (last - first) - (pnum - 1) * fsize
        return ((p0, pnum, 1),) + _flat_box(free, a, b), False
    return _flat_box(dims, first, last), False


def _exact_box(dims, tstr, byte_offset, shape, strides):
    coords = _unravel(byte_offset // tstr[-1], dims) if dims else []
    box = [(int(c), 1, 1) for c in coords]
    used = set()
    for s, n in zip(strides, shape):
        if n == 1 or s == 0:
            continue
        d = next((d for d in range(len(dims)) if d not in used and abs(s) % tstr[d] == 0
                  and abs(s) // tstr[d] * (n - 1) < dims[d]), None)
        if d is None:
            return None
        used.add(d)
        q = s // tstr[d]
        start = box[d][0] + min(0, q * (n - 1))
        if start < 0 or start + abs(q) * (n - 1) >= dims[d]:
            return None
        box[d] = (start, n, abs(q))
    return tuple(box)


def _unravel(flat: int, dims) -> list[int]:
    """np.unravel_index for one index, without NumPy's call overhead."""
    out = [0] * len(dims)
    for d in range(len(dims) - 1, -1, -1):
        flat, out[d] = divmod(flat, dims[d])
    return out


def _flat_box(dims, a: int, b: int):
    """The smallest per-dim box holding the flat (C-order) element range a..b."""
    ca, cb = _unravel(a, dims), _unravel(b, dims)
    out, split = [], False
    for d, n in enumerate(dims):
        if split:
            out.append((0, n, 1))
        elif ca[d] == cb[d]:
            out.append((int(ca[d]), 1, 1))
        else:
            out.append((int(ca[d]), int(cb[d] - ca[d] + 1), 1))
            split = True
    return tuple(out)


def view_from_mapping(value: dict, loc: Loc | None, parse_view) -> View:
    """The YAML mapping spelling: `{tensor: x, pattern: [[512, 128], [1, 512]], offset: 8,
    dtype: bfloat16}` (the same keys as `.ap()`)."""
    m = dict(value)
    name = m.pop("tensor", None)
    if not isinstance(name, str) or not name:
        raise APSyntaxError("an access-pattern mapping needs `tensor: NAME` and "
                            "`pattern: [[step, num], ...]`")
    for k in ("scalar_offset", "vector_offset"):
        if m.get(k) is not None:
            m[k] = parse_view(str(m[k]), loc)
    return View(name, make_ap(m), loc or Loc())


def only_zero_steps(s: Strided) -> bool:
    """Whether a pattern addresses elements twice only through zero steps (without those
    dims it addresses each element once)."""
    rest = [(n, st) for n, st in zip(s.shape, s.byte_strides) if not (st == 0 and n > 1)]
    return not _overlapping([n for n, _ in rest], [st for _, st in rest], s.dtype.itemsize)
