"""Tracing a kernel function into a Program: binding its parameters (HBM tensors from
arrays, .npy files or shapes; other values as they are), running its Python with
nkirun's `nki`, and collecting the tensors it returns as the outputs."""
from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
from dataclasses import dataclass, field, replace

import numpy as np

from nkirun.diagnostics import NkirunError, error
from nkirun import limits
from nkirun.source.kernel import bounds, consts, legacy
from nkirun.source.kernel.loader import KernelUsageError, kernel_exception
from nkirun.source.kernel.modules import Kernel, installed
from nkirun.source.kernel.session import Tracer, new_tensor
from nkirun.source.kernel.tensor import ndarray


@dataclass
class TensorArg:
    """An HBM tensor parameter: its shape and dtype, and where its data comes from."""

    shape: tuple
    dtype: object  # an nkirun DType
    array: object = None  # a NumPy array (API), or None
    file: str | None = None  # a .npy path (CLI --input), or None


@dataclass
class Traced:
    program: object
    diagnostics: list
    outputs: list  # the returned handles (ndarray), in return order
    structure: object  # the returned value with each tensor replaced by its output index
    inputs: dict = field(default_factory=dict)  # tensor name -> array or path, for run
    names: dict = field(default_factory=dict)  # parameter -> tensor name


class Shape:
    """`nkirun.shape("float32", 128, 512)`: a tensor parameter known only by its shape."""

    def __init__(self, dtype, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        self.dtype, self.shape = dtype, tuple(int(n) for n in shape)

    def __repr__(self) -> str:
        return f"nkirun.shape({self.dtype!r}, {', '.join(map(str, self.shape))})"


def tensor_arg(value, name: str | None = None) -> TensorArg | None:
    """A TensorArg for an array or Shape, else None. `name`: the kernel parameter it is
    for, which a dtype error names."""
    from nkirun.hw import dtypes as dt
    whose = f"parameter `{name}`: " if name else ""
    if isinstance(value, Shape):
        d = consts.to_dtype(value.dtype)
        if d is None or d.nkirun is None:
            raise KernelUsageError(f"{whose}unknown dtype {value.dtype!r} (allowed: "
                                   f"{', '.join(dt.DTYPES)})")
        return TensorArg(value.shape, d.nkirun)
    if isinstance(value, np.generic):
        return None  # a NumPy scalar (np.float64(0.125)) is a number, not a tensor
    if isinstance(value, np.ndarray) or (hasattr(value, "__array__") and hasattr(value, "shape")
                                         and not isinstance(value, ndarray)):
        arr = np.asarray(value)
        if arr.dtype == np.bool_:
            arr = arr.view(np.uint8)  # nl.bool_ is stored as a byte (0 or 1)
        d = dt.from_numpy(arr.dtype)
        if d is None:
            like = dt.nki_stand_in(arr.dtype)
            fix = f"; pass {name or 'it'}.astype(np.{like})" if like else ""
            raise KernelUsageError(f"{whose}arrays of dtype {arr.dtype} are not NKI tensors"
                                   f"{fix} (allowed: {', '.join(dt.DTYPES)})")
        return TensorArg(tuple(arr.shape) or (1,), d, array=arr.reshape(arr.shape or (1,)))
    return None


def bind_parameters(func, args=(), kwargs=None) -> dict:
    """Parameter name -> value for a call; usage errors name the parameter."""
    kwargs = kwargs or {}
    sig = inspect.signature(func)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise KernelUsageError(f"{getattr(func, '__name__', 'kernel')}: {e}") from None
    return dict(bound.arguments)


def check_names(func, given: dict) -> None:
    """Every given name is a parameter and every parameter without a default is given."""
    params = inspect.signature(func).parameters
    fname = getattr(func, "__name__", "kernel")
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for name in given:
        if name not in params and not takes_kwargs:
            raise KernelUsageError(f"{fname} has no parameter `{name}` (its parameters: "
                                   f"{', '.join(params) or 'none'})")
    for name, p in params.items():
        if p.default is p.empty and name not in given and p.kind not in (
                p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise KernelUsageError(f"{fname}: parameter `{name}` is missing; give it with "
                                   f"--input {name}=FILE.npy, --shape {name}=DTYPE[...] or "
                                   f"--arg {name}=VALUE")


def trace(kernel, values: dict, target: str = "trn2", grid=None, lnc: int = 1,
          max_hbm_bytes: int | None = None) -> Traced:
    """Trace `kernel` (a function or nki.jit Kernel) called with `values` (parameter name ->
    TensorArg or plain value); `lnc=2`: once per core of a two-core program. The tensor
    parameters' sizes (`max_hbm_bytes`, default the limit in force: limits.py) and the grid
    are checked before the kernel runs;
    the trace stops at the instruction budget (nkirun/limits.py, bounds.py)."""
    func = kernel.func if isinstance(kernel, Kernel) else kernel
    grid = tuple(grid) if grid else (kernel.grid if isinstance(kernel, Kernel) else ())
    path = inspect.getsourcefile(func) or "<kernel>"
    if lnc > 1:
        grid = _lnc_grid(lnc, grid, target, path)
    locs = _parameter_locs(func, path)
    bounds.check_parameter_sizes(_tensor_parameters(values),
                                 max_hbm_bytes or limits.max_hbm_bytes(), locs)
    bounds.check_grid(grid, path)
    tracer = Tracer(path, target, grid)
    tracer.lnc = lnc
    result = None
    with installed(), tracer:  # (one trace at a time; prints go to stderr: modules.py)
        call, inputs, names, handles = _parameters(tracer, values, locs)
        instances = itertools.product(*(range(g) for g in grid)) if grid else [()]
        try:
            for inst in instances:
                tracer.instance, tracer.shared_at = inst, 0
                if lnc > 1:  # each instance is one core's stream
                    tracer.builder.cores, tracer.builder.core = lnc, inst[0]
                ret = _call(tracer, func, call)
                if not any(inst):  # the first instance's result is the kernel's
                    result = ret
        finally:
            tracer.budget.progress.close()
        from nkirun.source.kernel.control import check_closed
        check_closed(tracer)  # a runtime loop left open (E659)
        outputs, structure = _outputs(tracer, result)
        if result is None:  # the older API's output arguments: the parameters it writes
            outputs, _ = _outputs(tracer, _written_parameters(tracer, handles, names))
            if not outputs:
                raise _returns_nothing(func, path)
    program, diags = tracer.builder.finish()
    diags = [d for d in diags if d.code != "E004"]
    program = _mark_inputs(program, set(names.values()))  # (a file's init stays "file")
    if tracer.placement != program.placement:
        program = replace(program, placement=tracer.placement)
    return Traced(program, diags, outputs, structure, inputs, names)


def _call(tracer, func, call: dict):
    """One instance of the kernel's Python; its errors located in the kernel; Ctrl-C says
    where the kernel was (bounds.interrupted_at)."""
    try:
        ret = func(**call)
        legacy.flush(tracer)  # a result the kernel computed last (legacy.py)
        return ret
    except NkirunError:
        raise
    except KeyboardInterrupt as stop:
        if getattr(stop, "nkirun_at", None) is None:
            stop.nkirun_at = bounds.interrupted_at(stop.__traceback__, tracer.builder.count)
        raise
    except BaseException as exc:  # noqa: BLE001 - the kernel's own (sys.exit too)
        if not isinstance(exc, (Exception, SystemExit)):
            raise  # the caller's (a signal handler's: pytest-timeout's Failed)
        raise kernel_exception(exc) from None


def _tensor_parameters(values: dict) -> list:
    """(tensor name, parameter, TensorArg) of each tensor parameter, as _parameters names
    them (a list of arrays: `param_0`, `param_1`, ...)."""
    out = []
    for pname, v in values.items():
        if isinstance(v, TensorArg):
            out.append((pname, pname, v))
        elif isinstance(v, (list, tuple)):
            out += [(f"{pname}_{i}", pname, x) for i, x in enumerate(v)
                    if isinstance(x, TensorArg)]
    return out


def _lnc_grid(lnc: int, grid: tuple, target: str, path: str) -> tuple:
    """The launch grid of a two-core trace: one program per core."""
    from nkirun.hw.targets import LNC_TARGETS
    from nkirun.diagnostics import Loc
    if target not in LNC_TARGETS:
        raise NkirunError(error("E632", f"--lnc {lnc} needs a target with two cores per "
                                f"logical core (trn2, trn3); {target} has one", Loc(path),
                                hint="--target trn2"))
    if grid and grid != (lnc,):
        raise KernelUsageError(f"the launch grid {list(grid)} differs from the LNC degree "
                               f"{lnc}: an LNC{lnc} kernel runs one program per core")
    return (lnc,)


def _parameter_locs(func, path: str) -> dict:
    """Where each parameter is named in the kernel's `def` line(s): a parameter tensor's
    diagnostics (a bad --input file, say) point there, not into nkirun's own frames."""
    from nkirun.diagnostics import Loc
    try:
        lines, first = inspect.getsourcelines(func)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return {}
    indent = len(lines[0]) - len(lines[0].lstrip())
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs:
        return {}
    a = defs[0].args
    params = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
    return {p.arg: Loc(path, first + p.lineno - 1, p.col_offset + indent + 1)
            for p in params}


def _parameters(tracer, values, locs=None):
    """(the call's arguments, input arrays by tensor name, {key: tensor name}, {key:
    handle}) for the parameters; a list or tuple of arrays (nki-library's per-layer
    weights) is one HBM tensor per array, named `param_0`, `param_1`, ..."""
    call, inputs, names, handles = {}, {}, {}, {}

    def tensor(key, v, loc):
        init = ("file", v.file) if v.file is not None else None
        rec = tracer.allocate(v.shape, consts.DTYPES[v.dtype.name], consts.shared_hbm, key,
                              init=init, loc=loc)
        tracer.shared.remove(rec)  # parameters are shared by every instance already
        handles[key], names[key] = new_tensor(rec), rec.name
        if v.array is not None:
            inputs[rec.name] = v.array
        return handles[key]

    for pname, v in values.items():
        loc = (locs or {}).get(pname)
        if isinstance(v, TensorArg):
            call[pname] = tensor(pname, v, loc)
        elif isinstance(v, (list, tuple)) and any(isinstance(x, TensorArg) for x in v):
            call[pname] = type(v)(tensor(f"{pname}_{i}", x, loc) if isinstance(x, TensorArg)
                                  else x for i, x in enumerate(v))
        else:
            call[pname] = v
    return call, inputs, names, handles


def _written_parameters(tracer, handles: dict, names: dict) -> tuple:
    """The tensor parameters some instruction writes, in parameter order."""
    from nkirun.ir import View
    from nkirun.isa import REGISTRY
    written = set()
    for inst in tracer.builder.instructions:
        spec = REGISTRY.get(inst.op)
        for p in spec.params if spec is not None else ():
            v = inst.args.get(p.name) if p.out else None
            if isinstance(v, View):
                written.add(v.tensor)
    return tuple(handles[p] for p, name in names.items() if name in written)


def _returns_nothing(func, path: str) -> NkirunError:
    """E606: no returned tensor and no tensor parameter written — nothing to output."""
    from nkirun.diagnostics import Loc
    try:  # (its `def` line, below the decorators)
        lines, first = inspect.getsourcelines(func)
        line = first + next((i for i, s in enumerate(lines) if s.lstrip().startswith(
            ("def ", "async def "))), 0)
    except (OSError, TypeError):
        line = 0
    name = getattr(func, "__name__", "kernel")
    return NkirunError(error(
        "E606", f"kernel `{name}` returns nothing and writes no tensor parameter, so it has "
        "no output: did you forget `return out`?", Loc(path, line, 1 if line else 0),
        hint="return the HBM tensor(s) holding the result (`out = nl.ndarray(..., buffer="
             "nl.shared_hbm)`, store into it, `return out`), or store into an output "
             "parameter passed in (the pre-0.2 API)"))


def _outputs(tracer, result):
    """(the returned HBM tensors in order, the return structure with their positions)."""
    outputs: list = []
    return outputs, _output_structure(result, tracer, outputs)


def _output_structure(v, tracer, outputs: list):
    # (a module function, not a recursive closure: the closure's cell would make a cycle
    # that keeps the tracer, its Builder and so the whole traced IR alive until the
    # garbage collector runs, instead of freeing it when the caller drops the result)
    if isinstance(v, ndarray):
        if v._rec.buffer.ir != "hbm":
            raise NkirunError(error("E606", f"the kernel returns `{v.name}`, a "
                                    f"{v.buffer} tensor; outputs must be HBM tensors",
                                    v._rec.loc, hint="copy it to an nl.shared_hbm tensor "
                                    "with nisa.dma_copy and return that"))
        rec = v._rec
        if not rec.declared:
            tracer.declare(rec, output=True)
        else:
            decl = tracer.builder.tensors.get(rec.name)
            if decl is not None:
                tracer.builder.tensors[rec.name] = replace(decl, output=True)
        outputs.append(v)
        return len(outputs) - 1
    if isinstance(v, (tuple, list)):
        return type(v)(_output_structure(x, tracer, outputs) for x in v)
    if isinstance(v, dict):
        return {k: _output_structure(x, tracer, outputs) for k, x in v.items()}
    if v is None:
        return None
    from nkirun.source.kernel.loader import kernel_text
    raise NkirunError(error("E606", f"the kernel returns {type(v).__name__} "
                            f"{kernel_text(_repr(v), 200)}; "
                            "a kernel returns tensors (one, or a tuple/list of them)"))


def _repr(v) -> str:
    try:
        return repr(v)
    except BaseException as e:  # noqa: BLE001 - the kernel's own __repr__
        if isinstance(e, KeyboardInterrupt):
            raise
        return f"<repr() raised {type(e).__name__}>"


def _mark_inputs(program, given):
    """Parameters with no file are given at run time (or are only shapes, for check):
    their contents count as written, as `run --input` does for YAML programs."""
    tensors = {n: replace(t, init="input") if n in given and t.init is None else t
               for n, t in program.tensors.items()}
    return replace(program, tensors=tensors)
