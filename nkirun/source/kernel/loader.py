"""Finding the kernel: `PATH.py::FUNCTION` (or `PATH.py`, its only `@nki.jit` function),
imported with nkirun's `nki`; and turning the kernel's own exceptions into diagnostics
that show the kernel's frames, not nkirun's."""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback

from nkirun.diagnostics import Loc, NkirunError, error

NKIRUN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _in_nkirun(filename: str) -> bool:
    return os.path.abspath(filename).startswith(NKIRUN_DIR + os.sep)


def _ours(filename: str) -> bool:
    """nkirun's frames and the import machinery's: not shown as the kernel's."""
    return _in_nkirun(filename) or filename.startswith("<frozen")


class KernelUsageError(NkirunError, TypeError):
    """A usage error about the kernel or its parameters (exit status 2). In the API it is a
    TypeError, as Python's own call of the function would raise, and an NkirunError
    carrying one E595 diagnostic, as every nkirun error does (the kernel contract)."""

    def __init__(self, message: str, loc: Loc | None = None):
        super().__init__(error("E595", message, loc or Loc()))
        self.args = (message,)  # str(e): the message alone (the CLI's usage line)




def split_spec(spec: str) -> tuple[str, str | None]:
    path, sep, func = spec.partition("::")
    return path, (func or None) if sep else None


def module_name_for(path: str) -> tuple[str, str]:
    """(dotted module name, the folder to put on sys.path): packages are walked up so that
    the kernel's relative imports work. A folder whose name is no Python identifier
    (`neuron-team-kernels/`) cannot be imported as a package: the walk stops below it, as
    Python would run such a file with its own folder on the path."""
    path = os.path.abspath(path)
    folder, stem = os.path.split(path)
    parts = [stem[:-3]]
    if not parts[0].isidentifier():  # `my.kernel.py`: importable only as a plain file
        return parts[0], folder
    while os.path.isfile(os.path.join(folder, "__init__.py")) \
            and os.path.basename(folder).isidentifier():
        folder, pkg = os.path.split(folder)
        parts.insert(0, pkg)
    return ".".join(parts), folder


def import_kernel_module(path: str):
    """Import the kernel file (under nkirun's `nki`, which the caller has installed)."""
    if not os.path.isfile(path):
        raise NkirunError(error("E600", f"kernel file {path} not found", Loc(path)))
    try:  # an unreadable file is the input's fault, not an exception "the kernel raised"
        with open(path, "rb") as f:
            f.read(1)
    except OSError as e:
        raise NkirunError(error("E600", f"cannot read kernel file {path}: {e.strerror or e}",
                                Loc(path), hint="make it readable (chmod u+r)")) from None
    name, root = module_name_for(path)
    if root not in sys.path:  # after the standard library: a json.py beside the kernel
        sys.path.insert(_after_stdlib(), root)  # must not replace nkirun's json
    try:
        if "." in name and os.path.basename(path)[:-3].isidentifier():
            sys.modules.pop(name, None)
            return importlib.import_module(name)
        # a plain file (`my.kernel.py` too): private, so `__main__` blocks do not run
        name = "_nkirun_kernel_" + "".join(c if c.isalnum() else "_" for c in name)
        spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    except (NkirunError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - the kernel file's own (sys.exit too)
        raise kernel_exception(exc) from None


def _after_stdlib() -> int:
    """The sys.path position just after the standard library's folders (and before
    site-packages), where the kernel's folder goes."""
    import sysconfig
    std = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    at = 0
    for i, p in enumerate(sys.path):
        real = os.path.realpath(p or os.curdir)
        inside = any(real == s or real.startswith(s + os.sep) for s in std)
        if inside and not {"site-packages", "dist-packages"} & set(real.split(os.sep)) \
                or os.path.basename(real).startswith("python") and real.endswith(".zip"):
            at = i + 1
    return at


def find_function(module, path: str, func: str | None):
    from nkirun.source.kernel.modules import Kernel
    if func is not None:
        obj = getattr(module, func, None)
        if obj is None or not callable(obj):
            found = sorted(n for n, v in vars(module).items()
                           if isinstance(v, Kernel) or callable(v) and getattr(
                               v, "__module__", None) == module.__name__ and not n.startswith("_"))
            raise KernelUsageError(f"{path} has no function `{func}`"
                                   + (f" (it defines: {', '.join(found)})" if found else ""))
        return obj
    jitted = [n for n, v in vars(module).items() if isinstance(v, Kernel)
              and getattr(v.func, "__module__", None) == module.__name__]
    if len(jitted) != 1:
        what = "no @nki.jit function" if not jitted else \
            f"several @nki.jit functions ({', '.join(jitted)})"
        raise KernelUsageError(f"{path} has {what}; name one as {path}::FUNCTION")
    return getattr(module, jitted[0])


def kernel_exception(exc: BaseException) -> Exception:
    """E602 for an exception the kernel's own code raised (SystemExit included): its
    message and the kernel's frames (file:line and source line; nkirun's frames left out;
    kernel text escaped and bounded: kernel_text). An exception raised inside nkirun's own
    code is a bug in nkirun: InternalError (exit 3) — except the kernel's recursion
    running out of stack there, or memory."""
    every = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in every if not _ours(f.filename)]
    if every and _in_nkirun(every[-1].filename) and not isinstance(
            exc, (SyntaxError, RecursionError, MemoryError)):
        from nkirun.diagnostics import InternalError
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "kernel"
        return InternalError(f"tracing the kernel call at {where}", exc)
    lines = [f"  {f.filename}:{f.lineno} in {f.name}" + (
        f"\n    {kernel_text(f.line, LINE_LIMIT)}" if f.line else "") for f in frames]
    if len(lines) > MAX_FRAMES:  # (a runaway recursion: its first and last frames)
        lines[MAX_FRAMES // 2:-MAX_FRAMES // 2] = [
            f"  ... {len(lines) - MAX_FRAMES} more frames ..."]
    loc = Loc(frames[-1].filename, frames[-1].lineno, (frames[-1].colno or 0) + 1) \
        if frames else Loc()
    if isinstance(exc, SyntaxError) and exc.filename:  # the kernel's file did not parse
        loc = Loc(exc.filename, exc.lineno or 0, exc.offset or 0)
        frames, lines = [], [f"  {exc.filename}:{exc.lineno}" + (
            f"\n    {kernel_text(exc.text.strip(), LINE_LIMIT)}" if exc.text else "")]
    text = kernel_text(_str(exc), MESSAGE_LIMIT)
    message = f"the kernel raised {type(exc).__name__}" + (f": {text}" if text else "")
    hint = "kernel traceback (most recent call last):\n" + "\n".join(lines) if lines else None
    return NkirunError(error("E602", message, loc, hint=hint))


MESSAGE_LIMIT, LINE_LIMIT, MAX_FRAMES = 2000, 200, 40


def _str(exc: BaseException) -> str:
    """str(exc), or what went wrong making it (a kernel's __str__ may raise)."""
    try:
        return str(exc)
    except BaseException as e:  # noqa: BLE001 - the kernel's __str__ is the kernel's code
        if isinstance(e, KeyboardInterrupt):
            raise
        return f"<str() of the exception raised {type(e).__name__}>"


def kernel_text(text: str, limit: int) -> str:
    """Text from the kernel for a diagnostic: control characters (terminal escape codes)
    shown escaped, at most `limit` characters of it."""
    short = text[:limit]
    if not short.isprintable():
        short = "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in short)
    return short + (f"... ({len(text) - limit} more characters)" if len(text) > limit else "")
