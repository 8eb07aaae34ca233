"""Small programs around the register instructions, as YAML text (tests of
register_alloc/move/load/store and of runtime loops)."""
from __future__ import annotations

import numpy as np

from nkirun import api
from nkirun.diagnostics import NkirunError


def program(tensors: dict, body: str) -> str:
    """A YAML program: `tensors` name -> flow mapping text, `body` the instruction entries
    (already indented by two blanks per level under `instructions:`)."""
    text = "version: 1\ntensors:\n"
    text += "".join(f"  {n}: {{{d}}}\n" for n, d in tensors.items())
    return text + "instructions:\n" + body


def codes(text: str) -> list[str]:
    return [d.code for d in api.check(text)]


def run(text: str, **inputs) -> dict:
    return api.run(text, inputs=inputs or None)


def run_error(text: str, **inputs):
    """The diagnostics of a run that must fail."""
    try:
        api.run(text, inputs=inputs or None)
    except NkirunError as e:
        return e.diagnostics
    raise AssertionError("the run succeeded")


def int32_out(name: str = "out") -> dict:
    return {name: "buffer: hbm, shape: [1, 1], dtype: int32, output: true"}


def scalar(value, dtype="int32", buffer="sbuf") -> str:
    return f"buffer: {buffer}, shape: [1, 1], dtype: {dtype}, data: [[{value}]]"


__all__ = ["program", "codes", "run", "run_error", "int32_out", "scalar", "np"]
