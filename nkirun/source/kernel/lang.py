"""`nki.language` for traced kernels: allocation, views, ranges, the launch grid,
constants, operator tokens and the convenience compute functions.

Readings:
- `affine_range`, `sequential_range`, `static_range` and `range` are Python's `range`
  (NKI 0.6: "an alias for Python's range ... a fully unrolled loop"). `dynamic_range`,
  `fori_loop` and `while_loop` are runtime loops traced once (kernel/control.py).
- Without a launch grid `program_ndim()` is 0, `program_id(axis)` 0 and
  `num_programs(axes)` 1.
- `shared_constant(array_or_path)` is an HBM tensor holding the data;
  `shared_identity_matrix(n, dtype)` an SBUF tensor holding the identity (one per n and
  dtype in a trace, as the compiler shares them).
- `device_print` prints its prefix to standard error while tracing (values are only
  known when the program runs).
"""
from __future__ import annotations

import sys
import types
from contextlib import contextmanager

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.source.kernel import consts, convenience as cv, legacy, nl_wrappers as nw
from nkirun.source.kernel.tensor import DynSlice, ndarray
from nkirun.source.kernel.tile_ops import LoopReduce  # (and ndarray's operators: provided)
from nkirun.source.kernel.unsupported import here, kernel_error, unsupported


class NKIObject:
    """Base class kernels derive their configuration objects from (NKI 0.6).

    Readings (NKI runs the kernel's classes through its own tracer, and nki-library relies
    on what it accepts; its tests of these kernels run under NKI):
    - a subclass without its own `__init__` (a `@dataclass` one included: dataclasses
      never replace an `__init__` the class already has) is built from keywords naming any
      attribute, or positionally in field order; `attention_cte` builds `SectionParams`,
      whose attributes are plain class attributes (no dataclass fields), by keyword;
    - a field left out takes its default, else None: `mlp_tkg` builds its
      `MLPTKGConstantsDimensionSizes` dataclass without `remainderIFused`;
    - `__post_init__` runs after the fields are set, as a dataclass's would."""

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in cls.__dict__.get("__annotations__", {}):
            if name not in cls.__dict__:
                setattr(cls, name, None)  # a field without default: None (see above)
        inherited = cls.__init__
        if "__init__" not in cls.__dict__ and (inherited is NKIObject.__init__
                                               or getattr(inherited, "_nki_record", False)):
            cls.__init__ = _record_init


def _field_names(cls) -> list:
    import dataclasses
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    names: list = []
    for klass in reversed(cls.__mro__):
        names += [n for n in klass.__dict__.get("__annotations__", {}) if n not in names]
    return names


def _record_init(self, *args, **kwargs):
    """An NKIObject subclass's constructor (see NKIObject's readings)."""
    import dataclasses
    cls = type(self)
    names = _field_names(cls)
    if len(args) > len(names):
        raise TypeError(f"{cls.__name__}() takes {len(names)} positional arguments but "
                        f"{len(args)} were given")
    values = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in values:
            raise TypeError(f"{cls.__name__}() got multiple values for argument {k!r}")
        values[k] = v
    fields = getattr(cls, "__dataclass_fields__", {})
    for name in names:
        if name not in values:
            f = fields.get(name)
            if f is not None and f.default_factory is not dataclasses.MISSING:
                values[name] = f.default_factory()
            elif f is not None and f.default is not dataclasses.MISSING:
                values[name] = f.default
            else:
                values[name] = getattr(cls, name, None)
    for k, v in values.items():
        object.__setattr__(self, k, v)  # frozen dataclasses too
    post = getattr(self, "__post_init__", None)
    if post is not None:
        post()


_record_init._nki_record = True


def ds(start, size):
    return DynSlice(start, size)


def affine_range(start, stop=None, step=1, **_directives):
    try:
        return range(start) if stop is None else range(start, stop, step)
    except (TypeError, ValueError) as e:  # e.g. a float bound: the kernel's mistake, located
        raise kernel_error("E603", f"nl.affine_range/sequential_range/static_range/range: {e}",
                           hint="loop bounds and step are Python ints (step not 0)") from None


sequential_range = static_range = affine_range


def _grid():
    from nkirun.source.kernel.session import current
    return current()


def program_id(axis=0):
    t = _grid()
    if not t.grid:
        return 0
    if not 0 <= axis < len(t.grid):
        raise kernel_error("E603", f"nl.program_id: axis {axis} outside the {len(t.grid)}-d "
                           "launch grid")
    return t.instance[axis]


def num_programs(axes=0):
    t = _grid()
    if not t.grid:
        return 1
    if axes is None:
        return int(np.prod(t.grid))
    axes_list = [axes] if isinstance(axes, int) else list(axes)
    return int(np.prod([t.grid[a] for a in axes_list]))


def program_ndim():
    return len(_grid().grid)


def shared_constant(constant, dtype=None):
    from nkirun.source.kernel.session import current
    arr = np.load(constant) if isinstance(constant, str) else np.asarray(constant)
    d = consts.to_dtype(dtype or arr.dtype)
    if d is None or d.nkirun is None:
        raise kernel_error("E605", f"nl.shared_constant: dtype {arr.dtype} is not supported "
                           "by nkirun")
    tracer = current()
    rec = tracer.allocate(arr.shape if arr.ndim else (1,), d, consts.shared_hbm,
                          "constant", init=("data", arr.reshape(arr.shape or (1,)).tolist()),
                          loc=here())
    from nkirun.source.kernel.session import new_tensor
    return new_tensor(rec)


def shared_identity_matrix(n, dtype=consts.DTYPES["uint8"], dst=None):
    from nkirun.source.kernel.session import current, new_tensor
    tracer = current()
    # one per core of a two-core trace: an SBUF tile belongs to the core that made it
    key = (n, str(dtype), tracer.builder.core if tracer.lnc > 1 else None)
    t = tracer.identity.get(key)
    if t is None:
        rec = tracer.allocate((n, n), dtype, consts.sbuf, f"identity{n}",
                              init=("data", np.eye(n).tolist()), loc=here())
        t = tracer.identity[key] = new_tensor(rec)
    if dst is not None:
        cv._emit("tensor_copy", dst=dst, src=t)
        return dst
    return t


def device_print(print_prefix, tensor=None):
    print(f"device_print {print_prefix}: {tensor!r} (values are known only when run)",
          file=sys.stderr)


@contextmanager
def no_reorder():
    yield


def _loop_reduce(x, op, loop_indices, dtype=None, mask=None, **_):
    legacy.flush(_grid())  # x is read where the reduction is assigned
    return LoopReduce(x, op, loop_indices, dtype, mask)


def nc(n):
    """`nl.nc(n)`: n NeuronCores along a launch-grid dim (inside `nl.spmd_dim`)."""
    return int(n)


def spmd_dim(*sizes):
    """`nl.spmd_dim(size, nl.nc(k))`: a launch-grid dim of size * k program instances (the
    instances are traced one after the other whatever core runs them)."""
    n = 1
    for size in sizes:
        n *= int(size)
    return n


def static_cast(x, dtype):
    """`nl.static_cast(array, dtype)` on NumPy data (outside a kernel, as tests use it)."""
    d = consts.to_dtype(dtype)
    if d is None or d.nkirun is None:
        raise kernel_error("E605", f"nl.static_cast: dtype {dtype!r} is not supported")
    return np.asarray(x).astype(d.nkirun.np_type)


def expand_dims(x, axis):
    return x.expand_dim(axis)


def is_hbm(buffer):
    return consts.to_buffer(buffer).ir == "hbm"


def is_on_chip(buffer):
    return not is_hbm(buffer)


def is_psum(buffer):
    return consts.to_buffer(buffer) is consts.psum


def is_sbuf(buffer):
    return consts.to_buffer(buffer) is consts.sbuf


_RUNTIME_LOOPS = ("dynamic_range", "fori_loop", "while_loop")
_NOT_PROVIDED = ("random_seed",
                 "softmax", "rms_norm", "all", "var", "prod", "tan", "cos",
                 "trunc")


class _Limits:
    """`nl.fp32.min` and friends (pre-0.2): the finite range of a float type."""

    def __init__(self, np_type):
        info = np.finfo(np_type)
        self.min, self.max = float(info.min), float(info.max)


class MemoryRegion:
    sbuf, psum = consts.sbuf, consts.psum
    private_hbm, shared_hbm = consts.private_hbm, consts.shared_hbm


def build_module(name: str = "nki.language") -> types.ModuleType:
    m = _LangModule(name)
    m.__doc__ = "nkirun's nki.language (see docs/kernels.md)"
    m.__path__ = []  # a package: `import nki.language.foo` reaches the finder (E601)
    ns = m.__dict__
    ns.update(consts.DTYPES)
    dt.register_ml_names()  # (np.zeros(n, dtype=nl.bfloat16) in the kernel's own code)
    ns.update(consts.BUFFERS)
    ns.update(ndarray=ndarray, NkiTensor=ndarray, NKIObject=NKIObject, tile_size=consts.tile_size,
              MemoryRegion=MemoryRegion, DType=consts.NlDType, ds=ds,
              affine_range=affine_range, sequential_range=sequential_range,
              static_range=static_range, range=affine_range, program_id=program_id, num_programs=num_programs,
              program_ndim=program_ndim, shared_constant=shared_constant,
              shared_identity_matrix=shared_identity_matrix, device_print=device_print,
              no_reorder=no_reorder, expand_dims=expand_dims, is_hbm=is_hbm,
              is_on_chip=is_on_chip, is_psum=is_psum, is_sbuf=is_sbuf,
              full=cv.full, zeros=cv.zeros, ones=cv.ones, zeros_like=cv.zeros_like,
              empty_like=cv.empty_like, load=cv.load, store=cv.store,
              broadcast_to=cv.broadcast_to, transpose=cv.transpose, matmul=cv.matmul,
              where=cv.where, mean=cv.mean, load_transpose2d=cv.load_transpose2d,
              arange=legacy.arange, mgrid=legacy.mgrid,
              par_dim=legacy.par_dim, static_cast=static_cast, loop_reduce=_loop_reduce, nc=nc,
              spmd_dim=spmd_dim,
              fp32=_Limits(np.float32), fp16=_Limits(np.float16), Tensor=ndarray)
    from nkirun.source.kernel.control import LANGUAGE  # runtime loops: traced once
    ns.update(LANGUAGE)
    tok = consts.Token
    for op in cv.BINARY:
        ns[op] = tok(op, f"nl.{op}", cv.binary(op))
    for func in cv.UNARY:
        ns[func] = tok(func, f"nl.{func}", cv.unary(func))
    ns["copy"] = tok("copy", "nl.copy", cv.copy)
    for op in ("invert", "logical_not"):
        ns[op] = tok(op, f"nl.{op}", cv.unary_alu(op))
    ns["floor"] = cv.rounding("floor", "greater", "subtract")
    ns["ceil"] = cv.rounding("ceil", "less", "add")
    ns["negative"] = tok("negative", "nl.negative", cv.negative)
    ns["dropout"] = nw.dropout
    ns["gather_flattened"] = nw.gather_flattened
    ns["rand"] = nw.rand
    for name_, op in (("sum", "add"), ("max", "maximum"), ("min", "minimum")):
        ns[name_] = tok(op, f"nl.{name_}", cv.reduction(op, name_))
    for op in ("abs_max", "abs_min", "invert", "logical_not", "bypass", "identity", "prelu",
               "average"):
        ns.setdefault(op, tok(op, f"nl.{op}"))
    return m


class _LangModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _RUNTIME_LOOPS:
            raise unsupported(f"nki.language.{name}", "a run-time loop on registers")
        raise unsupported(f"nki.language.{name}")
