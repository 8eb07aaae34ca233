"""How much does exact uninitialised-read tracking (machine.py, E090) cost?

Runs one large program (128 x 16384 float32 tiles, 50 instructions: full loads, tiles
written in column chunks and under masks, reads of partially written tiles, a
range_select chain) twice: as nkirun runs it, and with tracking switched off (every
tensor treated as defined from the start). Prints the best-of-N execute() times.

    python benchmarks/bench_init_tracking.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

P, F = 128, 16384
CHUNK = 1024


def program_text() -> str:
    ins = ["- load: {dst: a, src: x}",
           "- load: {dst: lo, src: xlo}",
           "- load: {dst: hi, src: xhi}"]
    # c is written in 16 column chunks; after each of the first 8 a range_select reads
    # the chunk just written (a read of a partially written tensor)
    for k in range(F // CHUNK):
        s = f"c[:, {k * CHUNK}:{(k + 1) * CHUNK}]"
        ins.append(f"- memset: {{dst: '{s}', value: {k}.0}}")
        if k < 8:
            ins.append(f"- range_select: {{dst: '{s}', on_true_tile: '{s}', comp_op0: "
                       "greater_equal, comp_op1: less, bound0: lo, bound1: hi}")
    # b is written under two complementary masks
    ins.append("- memset: {dst: b, value: 1.0, mask: 'f < 8192'}")
    ins.append("- memset: {dst: b, value: 2.0, mask: 'f >= 8192'}")
    while len(ins) < 48:
        src = "a" if len(ins) % 2 else "c"
        ins.append(f"- range_select: {{dst: b, on_true_tile: {src}, comp_op0: greater_equal, "
                   "comp_op1: less, bound0: lo, bound1: hi, reduce_cmd: reset_reduce, "
                   "reduce_res: m}")
    ins += ["- store: {dst: y, src: b}", "- store: {dst: ymax, src: m}"]
    assert len(ins) == 50, len(ins)
    return f"""\
version: 1
tensors:
  x:   {{buffer: hbm, shape: [{P}, {F}], dtype: float32, fill: 0}}
  xlo: {{buffer: hbm, shape: [{P}, 1], dtype: float32, fill: 0}}
  xhi: {{buffer: hbm, shape: [{P}, 1], dtype: float32, fill: 0}}
  y:   {{buffer: hbm, shape: [{P}, {F}], dtype: float32, output: true}}
  ymax: {{buffer: hbm, shape: [{P}, 1], dtype: float32, output: true}}
  a:   {{buffer: sbuf, shape: [{P}, {F}], dtype: float32}}
  b:   {{buffer: sbuf, shape: [{P}, {F}], dtype: float32}}
  c:   {{buffer: sbuf, shape: [{P}, {F}], dtype: float32}}
  lo:  {{buffer: sbuf, shape: [{P}, 1], dtype: float32}}
  hi:  {{buffer: sbuf, shape: [{P}, 1], dtype: float32}}
  m:   {{buffer: sbuf, shape: [{P}, 1], dtype: float32}}
instructions:
""" + "".join(f"  {line}\n" for line in ins)


def rows_program_text() -> str:
    """The worst case: a 128 x 16384 tile written one partition at a time (128 memsets of
    16384 elements, almost no compute per instruction), then stored."""
    ins = [f"- memset: {{dst: 't[{k}:{k + 1}, :]', value: {k}.0}}" for k in range(P)]
    ins.append("- store: {dst: y, src: t}")
    return f"""\
version: 1
tensors:
  t: {{buffer: sbuf, shape: [{P}, {F}], dtype: float32}}
  y: {{buffer: hbm, shape: [{P}, {F}], dtype: float32, output: true}}
instructions:
""" + "".join(f"  {line}\n" for line in ins)


def measure(text: str, inputs: dict, repeat: int, check: str) -> tuple[float, float, int]:
    """Best-of-`repeat` CPU seconds of execute() without and with tracking."""
    from nkirun import api
    from nkirun.runner import interpret
    from nkirun.runner import files as loader
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.yaml")
        with open(path, "w") as f:
            f.write(text)
        c = api.require_valid(path)
    real = loader.initial_buffers

    def untracked(program, inp=None):
        buffers, written = real(program, inp)
        return buffers, {k: None for k in written}

    def once(tracking: bool):
        interpret.initial_buffers = real if tracking else untracked
        try:
            t0 = time.process_time()  # CPU time: less noise from other processes
            m = interpret.execute(c.program, c.bound, inputs)
            return time.process_time() - t0, m
        finally:
            interpret.initial_buffers = real

    # interleave the two variants so that machine load affects both alike; keep the best
    t_off = t_on = float("inf")
    for _ in range(repeat):
        t, m_off = once(False)
        t_off = min(t_off, t)
        t, m_on = once(True)
        t_on = min(t_on, t)
    assert np.array_equal(m_off.buffers[check], m_on.buffers[check])
    return t_off, t_on, len(c.bound)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((P, F), dtype=np.float32),
              "xlo": np.full((P, 1), 100, np.float32),
              "xhi": np.full((P, 1), 9000, np.float32)}
    for title, text, inp, check in (
            ("mixed program", program_text(), inputs, "b"),
            ("worst case, one partition per write", rows_program_text(), None, "t")):
        t_off, t_on, n = measure(text, inp, args.repeat, check)
        print(f"{title}: {n} instructions, tiles {P}x{F} float32, best of {args.repeat}")
        print(f"  tracking off: {t_off * 1e3:8.1f} ms")
        print(f"  tracking on:  {t_on * 1e3:8.1f} ms   overhead {100 * (t_on / t_off - 1):+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
