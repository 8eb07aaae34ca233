"""Registers and runtime loops in traced kernels: `nisa.register_alloc` and
`nl.dynamic_range`, `nl.fori_loop`, `nl.while_loop` (and `while reg:` on a register).

Unlike `affine_range` (Python's range: unrolled), a runtime loop's body is traced ONCE
into an ir.Loop (docs/program-format.md, nkirun/control.py): its iterations happen when
the program runs, on the values in registers. The loop variable is a VirtualRegister:
usable as a loop bound, a `scalar_offset` (`t.ap(..., scalar_offset=i, indirect_dim=0)`)
or a register_* operand, never as a Python number (E659: its value is not known while
tracing).

Readings:
- `register_alloc(x)` with a one-element tensor `x` (seen in nki-library, beyond the
  documented int) allocates the register and register_loads the tensor into it.
- A register is named after the variable it is assigned to (`n = nisa.register_alloc()`
  gives `n`); a loop is named after its Python loop variable (`for e in
  nl.dynamic_range(n)` is loop `e`, its index register too), `_` or none gives `i`, a
  while loop after its condition register. Those names are what `cost --trip NAME=N` takes.
- `while reg:` opens a while loop on `reg` when Python first tests it and closes it
  when Python tests it again at the end of the body (the body is traced once); the
  condition is re-read from `reg` after each iteration, so the body must write it
  (register_load / register_move).
- `break` or `return` out of a runtime loop body, or a register tested by `if`, leave a
  loop that cannot be expressed: E659.
"""
from __future__ import annotations

import re

from nkirun.ir import view_at
from nkirun.source import loops
from nkirun.source.kernel.legacy import flush
from nkirun.source.kernel.tensor import current
from nkirun.source.kernel.unsupported import frame_loc, here, kernel_error, kernel_frame

_FOR_VAR = re.compile(r"^\s*for\s+([A-Za-z_]\w*)\s+in\b")
_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


class VirtualRegister:
    """A register of the traced program (nki.isa.register_alloc's result, a loop index)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def register_view(self, loc):
        """The IR operand naming this register (an access pattern's scalar_offset)."""
        return view_at(self.name, None, loc)

    def to_ir(self):
        """The same, for a StridedView's runtime index (`.ap(scalar_offset=reg)`)."""
        return self.register_view(here())

    def __bool__(self) -> bool:
        return _while_test(self)

    def _no_value(self, *_):
        raise kernel_error("E659", f"register `{self.name}` has no value while the kernel is "
                           "traced: it is known only when the program runs",
                           hint="use it as a loop bound, a scalar_offset or a register_* "
                                "operand; compute on values in SBUF tensors")

    __int__ = __index__ = __float__ = __add__ = __radd__ = __sub__ = __rsub__ = _no_value
    __mul__ = __rmul__ = __floordiv__ = __mod__ = __lt__ = __le__ = __gt__ = __ge__ = _no_value

    def __repr__(self) -> str:
        return f"<VirtualRegister {self.name}>"


def _tracer():
    tracer = current()
    flush(tracer)  # an instruction recorded lazily (legacy.py) keeps its place before this
    return tracer


def _name(tracer, loc, pattern, fallback: str) -> str:
    import linecache
    m = pattern.match(linecache.getline(loc.file, loc.line) if loc.line else "")
    base = m.group(1) if m and m.group(1) != "_" else fallback
    return tracer.unique(base)


def _raw(value, what: str):
    """A loop bound as the program formats spell it: an int or a register name."""
    if isinstance(value, VirtualRegister):
        return value.name
    try:
        return int(value.__index__())
    except (AttributeError, TypeError):
        raise kernel_error("E659", f"{what} must be an int or a register, got "
                           f"{type(value).__name__}") from None


# ---- nki.isa.register_alloc -------------------------------------------------------------------
def register_alloc(x=None):
    tracer = _tracer()
    loc = frame_loc(kernel_frame(2))
    reg = VirtualRegister(_name(tracer, loc, _ASSIGN, "reg"))
    if x is not None and not isinstance(x, (int, VirtualRegister)):  # a tensor: then load it
        tracer.emit("register_alloc", {"dst": reg.name}, loc)
        tracer.emit("register_load", {"dst": reg.name, "src": x}, loc)
    else:
        tracer.emit("register_alloc", {"dst": reg.name, "x": x}, loc)
    return reg


# ---- loops -------------------------------------------------------------------------------------
def _begin(tracer, kind: str, fields: dict, loc) -> int:
    flush(tracer)  # an instruction recorded lazily before the loop stays before it
    loops.begin(tracer.builder, kind, {k: (v, loc) for k, v in fields.items()}, loc)
    return len(tracer.builder.open_loops)


def _end(tracer, depth: int, loc) -> None:
    flush(tracer)  # the body's last lazily recorded instruction stays inside the loop
    b = tracer.builder
    if len(b.open_loops) != depth:
        raise kernel_error("E659", "a runtime loop inside this one was left open (a `break`, "
                           "or an `if` on a register)", loc=loc)
    loops.end(b, loc)


def dynamic_range(start, stop=None, step=1):
    if stop is None:
        start, stop = 0, start
    return _ForLoop(start, stop, step, here())


class _ForLoop:
    def __init__(self, start, stop, step, loc):
        self.start, self.stop, self.step, self.loc = start, stop, step, loc

    def __iter__(self):
        tracer = _tracer()
        index = VirtualRegister(_name(tracer, self.loc, _FOR_VAR, "i"))
        depth = _open_for(tracer, index, self.start, self.stop, self.step, self.loc)
        try:
            yield index
        except GeneratorExit:  # `break`/`return`/an exception left the body
            b = tracer.builder
            b.diags.append(kernel_error(
                "E659", "a runtime loop's body was left early (`break` or `return`): the "
                "body is traced once and runs on every iteration", loc=self.loc).diagnostics[0])
            del b.open_loops[depth - 1:]
            return
        _end(tracer, depth, self.loc)  # the `for` statement asked for the next value


def _open_for(tracer, index, start, stop, step, loc) -> int:
    if not isinstance(step, int) or isinstance(step, bool) or step <= 0:
        raise kernel_error("E659", f"a runtime loop's step must be a positive int known when "
                           f"tracing, got {step!r}", loc=loc)
    return _begin(tracer, "for", {"index": index.name, "start": _raw(start, "the start"),
                                  "stop": _raw(stop, "the stop"), "step": step}, loc)


def fori_loop(lower, upper, body_fun, step=1):
    tracer = _tracer()
    loc = here()
    _callable(body_fun, "nl.fori_loop", loc)
    index = VirtualRegister(tracer.unique("i"))
    depth = _open_for(tracer, index, lower, upper, step, loc)
    body_fun(index)
    _end(tracer, depth, loc)


def while_loop(init, body_fun):
    tracer = _tracer()
    loc = here()
    _callable(body_fun, "nl.while_loop", loc)
    if not isinstance(init, VirtualRegister):
        raise kernel_error("E659", f"nl.while_loop: init must be a register, got "
                           f"{type(init).__name__}", loc=loc)
    cond = VirtualRegister(tracer.unique(f"{init.name}_cond"))
    tracer.emit("register_alloc", {"dst": cond.name}, loc)
    tracer.emit("register_move", {"dst": cond.name, "src": init.name}, loc)
    depth = _begin(tracer, "while", {"cond": cond.name}, loc)
    nxt = body_fun(cond)
    if not isinstance(nxt, VirtualRegister):
        raise kernel_error("E659", "nl.while_loop: the body must return the register holding "
                           f"the next condition, got {type(nxt).__name__}", loc=loc)
    if nxt.name != cond.name:
        tracer.builder.open_loops[-1][1]["next"] = nxt.name
        tracer.builder.open_loops[-1][3]["next"] = loc
    _end(tracer, depth, loc)


def _callable(body_fun, what: str, loc) -> None:
    if not callable(body_fun):
        raise kernel_error("E659", f"{what}: body_fun must be a function of the loop "
                           f"register, got {type(body_fun).__name__}", loc=loc)


def _while_test(reg: VirtualRegister) -> bool:
    """`while reg:`: the first test opens the loop, the test after the body closes it."""
    tracer = _tracer()
    loc = here()
    stack = tracer.__dict__.setdefault("while_tests", [])
    b = tracer.builder
    if stack and stack[-1][0] == reg.name and stack[-1][1] == len(b.open_loops):
        _, depth, _ = stack.pop()
        _end(tracer, depth, loc)
        return False
    depth = _begin(tracer, "while", {"cond": reg.name}, loc)
    stack.append((reg.name, depth, loc))
    return True


def check_closed(tracer) -> None:
    """After the kernel returned: a loop still open was left by `break`/`return` or opened
    by an `if` on a register (E659)."""
    b = tracer.builder
    if b.open_loops:
        kind, _, loc, _, _, _ = b.open_loops[0]
        b.open_loops.clear()
        raise kernel_error("E659", f"the runtime {kind} loop here never ends its body: a "
                           "`return`/`break` inside it, or a register tested by `if`",
                           loc=loc, hint="registers drive loops only (while reg:, "
                                         "nl.dynamic_range, nl.fori_loop, nl.while_loop)")


LANGUAGE = {"dynamic_range": dynamic_range, "fori_loop": fori_loop, "while_loop": while_loop}
