"""The `nki` package a traced kernel imports: `nki` (jit, simulate), `nki.isa`,
`nki.language` and `nki.collectives`, built once and put in `sys.modules` only while a
kernel is imported and traced (`installed()`), whatever `nki` was there before.

`import nkirun` also appends a finder at the end of `sys.meta_path` that answers
`import nki` with these modules only when no real `nki` is installed, so a test file can
import a kernel module and hand its function to `nkirun.simulate`.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys
import threading
import types
from contextlib import contextmanager

from nkirun.source.kernel.unsupported import NkiPackage, unsupported

NAMES = ("nki", "nki.isa", "nki.isa.constants", "nki.language", "nki.collectives",
         "nki.typing", "nki.compiler", "nki.dtype", "nki.language.dtypes", "nki.builtin",
         "neuronxcc", "neuronxcc.nki", "neuronxcc.nki.isa",
         "neuronxcc.nki.isa.constants", "neuronxcc.nki.language", "neuronxcc.nki.typing",
         "neuronxcc.nki.compiler")
_ROOTS = ("nki", "neuronxcc")
_MODULES: dict[str, types.ModuleType] = {}
_BUILT: dict = {}  # id(module) -> (module, its attributes as built)


class Kernel:
    """What `@nki.jit` returns: the function, launchable on a grid with `kernel[g]`."""

    def __init__(self, func, grid=(), options=None):
        self.func, self.grid, self.options = func, tuple(grid), dict(options or {})
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__qualname__ = getattr(func, "__qualname__", self.__name__)
        self.__doc__ = getattr(func, "__doc__", None)
        self.__module__ = getattr(func, "__module__", None)
        self.__wrapped__ = func

    def __getitem__(self, grid):
        grid = grid if isinstance(grid, tuple) else (grid,)
        if any(not isinstance(g, int) or g < 1 for g in grid):
            from nkirun.source.kernel.unsupported import kernel_error
            raise kernel_error("E603", f"{self.__name__}[{', '.join(map(str, grid))}]: a "
                               "launch grid is positive ints (no program instance would run)")
        return Kernel(self.func, tuple(int(g) for g in grid), self.options)

    def __call__(self, *args, **kwargs):
        from nkirun.source.kernel.session import tracing
        if tracing():  # a kernel calling another jit function: inline it
            return self.func(*args, **kwargs) if not self.grid else self._launch(args, kwargs)
        return _SIMULATOR[0](self)(*args, **kwargs)

    def _launch(self, args, kwargs):
        """`kernel[g](...)` inside a trace (a launcher function): every program instance
        traced in order into the same program; the first instance's result returned."""
        import itertools
        from nkirun.source.kernel import legacy
        from nkirun.source.kernel.session import current
        t = current()
        saved = t.grid, t.instance, t.shared, t.shared_at
        t.grid, t.shared, result = self.grid, [], None
        try:
            for inst in itertools.product(*(range(g) for g in self.grid)):
                t.instance, t.shared_at = inst, 0
                ret = self.func(*args, **kwargs)
                legacy.flush(t)
                if not any(inst):
                    result = ret
        finally:
            t.grid, t.instance, t.shared, t.shared_at = saved
        return result

    def __repr__(self) -> str:
        return f"<nki.jit kernel {self.__qualname__}" + (f"[{self.grid}]>" if self.grid else ">")


def jit(fn=None, **kwargs):
    if fn is None:
        return lambda f: Kernel(f, options=kwargs)
    return Kernel(fn, options=kwargs)


# `nkirun.simulate`, set by `import nkirun` (the API sits above the front ends: a front end
# never imports it; the `nki` shim calls whatever the API put here)
_SIMULATOR: list = [None, None]  # nkirun.simulate, api_kernel.simulate_world


def set_simulator(simulate, world=None) -> None:
    _SIMULATOR[0], _SIMULATOR[1] = simulate, world


def _simulate(kernel):
    return _SIMULATOR[0](kernel)


def _simulate_kernel(kernel, *args, **kwargs):
    """`nki.simulate_kernel(kernel, *arrays)` (neuronxcc.nki before 0.2)."""
    return _SIMULATOR[0](kernel)(*args, **kwargs)


class CpuSimulate:
    """`nki.cpu_simulate(kernel)[lnc](*arrays, **kwargs)`: NKI 0.6's CPU-simulator entry as
    nki-library's harness calls it, i.e. `nkirun.simulate(kernel, lnc=lnc, target=...)`
    (`nki.cpu_simulate(kernel)(...)`: one core). The target: `nkirun.install(target=)` /
    pytest's `--nkirun-target`, else NKI_NC_VERSION (gen2/gen3/gen4, which that harness
    sets), else nkirun's default (NEURON_PLATFORM_TARGET_OVERRIDE, trn2)."""

    target: str | None = None  # set by nkirun.install(target=...)
    uninitialized = "error"  # nkirun.install(uninitialized=...): as simulate(uninitialized=)

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, lnc):
        return _simulate_on(self.kernel, int(lnc))

    def __call__(self, *args, **kwargs):
        return self[1](*args, **kwargs)


def _simulate_on(kernel, lnc: int):
    import os
    from nkirun.source.kernel.consts import TARGET_VERSION
    # api_kernel.simulate_world: nkirun.simulate, and the ranks a collective kernel's
    # replica groups name (set_simulator: the API is above us)
    gen = os.environ.get("NKI_NC_VERSION", "").strip().lower()
    by_gen = {g: t for t, g in TARGET_VERSION.items() if t != "inf2"}
    return _SIMULATOR[1](kernel, CpuSimulate.target or by_gen.get(gen, gen or None), lnc,
                         uninitialized=CpuSimulate.uninitialized)


class _DtypeModule(types.ModuleType):
    """`nki.dtype` (= `nki.language.dtypes`): the dtype objects by name (`nki.dtype.float8_e4m3`),
    and, as an annotation or in isinstance, the type of a dtype."""

    def __instancecheck__(self, obj):
        from nkirun.source.kernel.consts import NL_DTYPES
        return isinstance(obj, NL_DTYPES)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported(f"nki.dtype.{name}")


def _same_kernel(fn=None, **kwargs):
    """`nki.baremetal`, `nki.benchmark`, `nki.profile`: a kernel as nki.jit makes it (their
    measurement options have no meaning here)."""
    return jit(fn, **kwargs)


def _passthrough(fn=None, **_):
    """`nki.compiler.skip_middle_end_transformations` and other compiler hints."""
    return fn if fn is not None else (lambda f: f)


SKIP_MIDDLE_END = "_nkirun_skip_middle_end"


def _skip_middle_end(fn=None, **_):
    """`nki.compiler.skip_middle_end_transformations`: marks the kernel (above or below
    @nki.jit) so its cost model keeps one buffer per allocation site (docs/cost.md)."""
    def mark(f):
        try:
            setattr(f, SKIP_MIDDLE_END, True)
        except (AttributeError, TypeError):  # a builtin or slotted object: no mark
            pass
        return f
    return mark(fn) if fn is not None else mark


class _Allocators:
    """`nki.compiler.sbuf` / `.psum`: the allocation strategies (`mod_alloc`,
    `auto_alloc`, `alloc`, ...) of NKI's direct allocation. nkirun gives every
    `nl.ndarray` its own storage, so each strategy is the plain buffer."""

    def __init__(self, buffer):
        self._buffer = buffer

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._placed

    def _placed(self, *args, **kwargs):  # the kernel places its tensors: none spill
        from nkirun.source.kernel.tensor import TRACERS
        if TRACERS:
            TRACERS[-1].placement = "explicit"  # (checker/capacity.py)
        return self._buffer


class _NoReorder:
    """`nki.compiler.no_reorder()`: a loop directive or a `with` block; nkirun keeps the
    kernel's instruction order anyway."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Annotation:
    """`nki.typing.scalar[...]`-style annotations (not evaluated on locals; usable on
    globals)."""

    def __class_getitem__(cls, item):
        return cls


class _IsTensor(type):
    def __instancecheck__(cls, obj):  # `isinstance(x, nt.tensor)`: the kernel's own checks
        from nkirun.source.kernel.tensor import ndarray
        return isinstance(obj, ndarray)


class _TensorType(_Annotation, metaclass=_IsTensor):
    """`nki.typing.tensor[...]` / `nki.tensor`: an annotation, and the type of tensors."""


def modules() -> dict[str, types.ModuleType]:
    if not _MODULES:
        from nkirun.source.kernel import collectives as ncc, consts, isa_shim, lang
        nki = NkiPackage("nki")
        nki.__path__ = []  # a package: `import nki.isa` works
        nki.__doc__ = "nkirun's nki package (see docs/kernels.md)"
        isa, language = isa_shim.build_module(), lang.build_module()
        collectives = ncc.build_module()
        nki.isa, nki.language, nki.collectives = isa, language, collectives
        nki.jit, nki.simulate, nki.Kernel = jit, _simulate, Kernel
        dtypes = _DtypeModule("nki.language.dtypes", "NKI dtypes (nkirun's nl dtype objects)")
        dtypes.__dict__.update(consts.DTYPES)
        nki.dtype = language.dtypes = dtypes
        nki.cpu_simulate = CpuSimulate
        nki.builtin = NkiPackage("nki.builtin", "NKI 0.6's nki.builtin: nkirun defines no names in it")
        nki.simulate_kernel = _simulate_kernel
        nki.tensor = _TensorType  # `x: nki.tensor` annotations (pre-0.2)
        nki.baremetal = nki.benchmark = nki.profile = _same_kernel
        typing = NkiPackage("nki.typing")
        typing.tensor = typing.mutable_tensor = _TensorType
        typing.scalar = _Annotation
        compiler = NkiPackage("nki.compiler")
        compiler.skip_middle_end_transformations = _skip_middle_end
        compiler.sbuf, compiler.psum = _Allocators(consts.sbuf), _Allocators(consts.psum)
        compiler.no_reorder = _NoReorder
        compiler.enable_stack_allocator = compiler.force_auto_alloc = _passthrough
        nki.typing, nki.compiler = typing, compiler
        neuronxcc = NkiPackage("neuronxcc")
        neuronxcc.__path__ = []
        neuronxcc.nki = nki
        mods = {"nki": nki, "nki.isa": isa, "nki.language": language,
                "nki.collectives": collectives, "nki.typing": typing, "nki.compiler": compiler,
                "nki.isa.constants": isa.constants, "nki.dtype": dtypes,
                "nki.language.dtypes": dtypes, "nki.builtin": nki.builtin}
        for name, m in mods.items():
            if not hasattr(m, "__path__"):  # `import nki.compiler.backends...`: the finder
                m.__path__ = []             # answers E601, not a ModuleNotFoundError
            _register(name, m, is_package=True)
        _register("neuronxcc", neuronxcc, is_package=True)
        for name, m in mods.items():  # `import neuronxcc.nki.language as nl`: the same modules
            _MODULES["neuronxcc." + name] = m
        _BUILT.update((id(m), (m, dict(vars(m)))) for m in _MODULES.values())
        _BUILT.update((id(v), (v, dict(vars(v)))) for m in _MODULES.values()
                      for v in vars(m).values() if _namespace(v))
    return _MODULES


def _register(name, m, is_package):
    m.__spec__ = importlib.machinery.ModuleSpec(name, _FINDER, is_package=is_package)
    m.__loader__ = _FINDER
    _MODULES[name] = m


# One kernel is imported or traced at a time in a process: sys.modules, sys.stdout, the
# working folder and the `nki` modules' attributes are process-wide (re-entrant: a kernel
# may call nkirun.simulate on another kernel)
KERNEL_LOCK = threading.RLock()


@contextmanager
def installed():
    """For the duration, under KERNEL_LOCK: our `nki` modules in sys.modules, as built (what
    an earlier kernel assigned to their attributes undone), the kernel's prints on stderr,
    no bytecode written beside the kernel; then what was there is put back, the working
    folder included (a kernel's os.chdir does not move the outputs)."""
    with KERNEL_LOCK:
        saved = {k: v for k, v in sys.modules.items() if _ours_name(k)}
        for k in saved:
            del sys.modules[k]
        sys.modules.update(modules())
        _pristine()
        cwd, bytecode, out = _cwd(), sys.dont_write_bytecode, sys.stdout
        sys.dont_write_bytecode, sys.stdout = True, sys.stderr
        try:
            yield
        finally:
            sys.dont_write_bytecode, sys.stdout = bytecode, out
            _chdir_back(cwd)
            _pristine()
            for k in [k for k in sys.modules if _ours_name(k)]:
                del sys.modules[k]
            sys.modules.update(saved)


def _namespace(v) -> bool:
    """An object of nkirun's own whose attributes a kernel may assign (`nl.tile_size`,
    `nisa.engine`, `nl.fp32`), not a function, class or module."""
    return (type(v).__module__ or "").startswith("nkirun.") and hasattr(v, "__dict__") \
        and not isinstance(v, (type, types.ModuleType, types.FunctionType)) and not callable(v)


def _pristine() -> None:
    """Every `nki` module's attributes, and those of the namespaces in them, as modules()
    built them (`nl.multiply = nl.add` in one kernel must not change the next one)."""
    for m, attrs in _BUILT.values():
        d = m.__dict__
        made = attrs.get("_made_on_use")  # (nki.isa's functions, made on first use)
        if made:
            attrs = {**attrs, **made}
        if len(d) != len(attrs) or any(d.get(k, d) is not v for k, v in attrs.items()):
            d.clear()
            d.update(attrs)


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # (a folder removed under the process)
        return None


def _chdir_back(cwd: str | None) -> None:
    if cwd is not None and _cwd() != cwd:
        os.chdir(cwd)


def _ours_name(k: str) -> bool:
    return k.split(".", 1)[0] in _ROOTS


def is_ours(module) -> bool:
    return module is not None and any(module is m for m in _MODULES.values())


class _Finder:
    """The last resort for `import nki` (see the module docstring): a meta path finder and
    the loader of what it finds (the protocols of importlib.abc.MetaPathFinder and Loader,
    whose module `import nkirun` does not import)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in NAMES:
            spec = modules()[fullname].__spec__
            if spec.name != fullname:  # neuronxcc.nki.*: the same module under its alias
                spec = importlib.machinery.ModuleSpec(fullname, _FINDER,
                                                      is_package=spec.submodule_search_locations
                                                      is not None)
            return spec
        root = fullname.split(".", 1)[0]
        if root in _ROOTS and "." in fullname and sys.modules.get(root) is modules()[root]:
            raise unsupported(fullname)  # a submodule NKI 0.6 does not document
        return None

    def create_module(self, spec):
        return modules()[spec.name]

    def exec_module(self, module):
        pass


_FINDER = _Finder()


def install_fallback_finder() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_FINDER)
