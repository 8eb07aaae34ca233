"""Shared by the register instructions (register_alloc, register_move, register_load,
register_store; the nki.isa.register_* documentation): the register parameter kinds and
the rule for the tensor a register is loaded from or stored to.

A register is a named 32-bit integer of the machine (ir.Register), declared by
register_alloc or by a `for` loop's index; nkirun/checker/control.py checks every use.

Readings:
- A register holds a signed 32-bit integer: register_move and register_alloc take a
  value in int32, register_load reads an integer dtype of at most 32 bits (a float's bits
  as a loop bound would be a surprise, so float tensors are refused), register_store
  writes the value cast like any integer store (wrapping to the tensor's width).
- The engine sequencers execute them (no compute engine); the documentation gives no
  cost: nkirun assumes a few cycles for a move and a DMA-like fixed cost for a load or
  store through memory.
"""
from __future__ import annotations

import re

from nkirun.diagnostics import Loc
from nkirun.hw.dtypes import INT_NAMES
from nkirun.ir import Register
from nkirun.isa.kinds import INT_STRING, ArgError, Kind, value_kind

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
# The tensors a register moves through: one element of an integer dtype up to 32 bits.
SCALAR_DTYPES = frozenset(n for n in INT_NAMES if "64" not in n)
MEMORY = frozenset({"sbuf", "hbm"})
ENGINE = "sync"  # the engine sequencers (nkirun shows them as one `sync` engine)
MOVE_CYCLES = 4  # assumed: a sequencer register write
MEMORY_CYCLES = 64  # assumed: a 32-bit read or write through the memory system


class RegisterKind(Kind):
    name, text, is_register = "register", "register", True

    def convert(self, p, value, loc: Loc):
        if isinstance(value, str) and NAME.fullmatch(value.strip()):
            return Register(value.strip())
        raise ArgError(f"`{p.name}` must be a register name (letters, digits, _), got "
                       f"{value_kind(value)} {value!r}",
                       hint="declare one with - register_alloc: {dst: n}")

    def json_schema(self, p):
        return {"type": "string", "pattern": r"^\s*[A-Za-z_][A-Za-z0-9_]*\s*$",
                "patternErrorMessage": "a register name: letters, digits and _",
                "description": p.doc + " — a register name (declared by register_alloc)"}


class RegisterOrInt(RegisterKind):
    name, text = "register_or_int", "register or int"

    def convert(self, p, value, loc: Loc):
        if isinstance(value, bool):
            raise ArgError(f"`{p.name}` must be an integer or a register, got a boolean")
        if isinstance(value, int):
            return int32(p, value)
        if isinstance(value, str) and re.fullmatch(INT_STRING, value):
            return int32(p, int(value.strip().replace("_", ""), 0))
        return RegisterKind.convert(self, p, value, loc)

    def json_schema(self, p):
        return {"anyOf": [{"type": "integer"}, RegisterKind.json_schema(self, p)],
                "description": p.doc + " — an integer or a register name"}


def int32(p, value: int) -> int:
    if not INT32_MIN <= value <= INT32_MAX:
        raise ArgError(f"`{p.name}` must fit in a 32-bit register (int32), got {value}",
                       code="E653")
    return value


REGISTER = RegisterKind()
REGISTER_OR_INT = RegisterOrInt()


def scalar_rule(b, key: str):
    """E653: the tensor a register moves through holds exactly one integer element."""
    r = b.tile(key)
    if r is None:
        return
    if r.size != 1:
        one = "[0:1, 0:1]" if len(r.decl.shape) > 1 else "[0:1]"
        yield b.err("E653", f"`{key}` must hold exactly one element (shape [1] or [1, 1]); "
                    f"got {list(r.shape)}", key, hint=f"use a view such as {r.decl.name}{one}")
    if r.dtype.name not in SCALAR_DTYPES:
        yield b.err("E653", f"`{key}` must be an integer dtype of at most 32 bits (a register "
                    f"holds an int32); got {r.dtype.name}", key,
                    hint="copy the value into an int32 tile first")
