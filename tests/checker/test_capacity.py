"""Issue 3, memory: the SBUF/PSUM capacity rule counts the tensors *live* at each
instruction (first write to last use), and E041 names the peak and the instruction where it
peaks. trn2 has 224 KiB of SBUF per partition (nki-reference.md §5)."""
from __future__ import annotations

import pytest

from nkirun.api import check_program
from prog_helpers import reported_at

HEADER = """\
version: 1
target: TARGET
tensors:
  x: {buffer: hbm, shape: [128, 30000], dtype: float32, fill: 1}
  y: {buffer: hbm, shape: [128, 30000], dtype: float32, output: true}
  z: {buffer: hbm, shape: [128, 30000], dtype: float32, output: true}
  a: {buffer: sbuf, shape: [128, 30000], dtype: float32}
  b: {buffer: sbuf, shape: [128, 30000], dtype: float32}
instructions:
"""
# a and b are 120,000 bytes per partition each: one fits, both do not (229,376 on trn2)
ONE_AFTER_THE_OTHER = ["load: {dst: a, src: x}", "store: {dst: y, src: a}",
                       "load: {dst: b, src: x}", "store: {dst: z, src: b}"]
BOTH_LIVE = ["load: {dst: a, src: x}", "load: {dst: b, src: x}",
             "store: {dst: y, src: a}", "store: {dst: z, src: b}"]


def _check(tmp_path, instructions, target="trn2"):
    p = tmp_path / "p.yaml"
    p.write_text(HEADER.replace("TARGET", target) + "".join(f"  - {i}\n" for i in instructions))
    return check_program(str(p)).diagnostics


def test_tensors_whose_live_ranges_do_not_overlap_share_the_space(tmp_path):
    assert _check(tmp_path, ONE_AFTER_THE_OTHER) == []


@pytest.mark.parametrize("target,limit", [("trn2", "229,376"), ("trn1", "196,608")])
def test_peak_and_its_instruction_are_reported(tmp_path, target, limit):
    """The compiler places a program's tensors and spills what does not fit: W047, not
    E041 (issue 26), naming the peak, the tiles live there and the spill traffic."""
    _check(tmp_path, BOTH_LIVE, target)
    # at the second load, where b becomes live
    d, _ = reported_at(tmp_path / "p.yaml", "W047", line=11, column=5, only=True)
    assert "240,000 bytes per partition at instruction 1 (load)" in d.message
    assert f"{target} has {limit}" in d.message
    assert "`a` (line 7, 120,000 B), `b` (line 8, 120,000 B)" in d.message
    # b is a load nothing read yet: the compiler can load it after a's last use
    assert "no spill traffic" in d.message


def _with_c(tmp_path, instructions, extra=""):
    p = tmp_path / "p.yaml"
    c = ("  c: {buffer: sbuf, shape: [128, 30000], dtype: float32}\n" + extra
         + "instructions:\n")
    p.write_text(HEADER.replace("TARGET", "trn2").replace("instructions:\n", c)
                 + "".join(f"  - {i}\n" for i in instructions))
    return p


def test_one_instructions_operands_over_capacity_are_e041(tmp_path):
    """What one instruction reads and writes must be resident together: nothing spills.
    An activation that also sums its rows into the accumulator is not elementwise."""
    p = _with_c(tmp_path, [
        "load: {dst: a, src: x}",
        "activation: {dst: c, data: a, op: exp, reduce_op: add, reduce_res: r, "
        "reduce_cmd: reset_reduce}",
        "store: {dst: y, src: c}", "store: {dst: w, src: r}"],
        "  r: {buffer: sbuf, shape: [128, 1], dtype: float32}\n"
        "  w: {buffer: hbm, shape: [128, 1], dtype: float32, output: true}\n")
    d, _ = reported_at(p, "E041", line=14, column=5, only=True)
    assert "operands of instruction 1 (activation) need" in d.message


ELEMENTWISE = ["load: {dst: a, src: x}", "load: {dst: b, src: x}",
               "tensor_tensor: {dst: c, data1: a, data2: b, op: add}",
               "store: {dst: y, src: c}"]


def test_an_elementwise_instructions_operands_over_capacity_stream(tmp_path):
    """An elementwise instruction can be issued in free-axis pieces (nki-library's
    cross_entropy_forward has one tensor_scalar over two (64, 65535) bfloat16 tiles on trn2):
    W047, not E041, with the excess saved and reloaded once, and `cost` books it."""
    from nkirun.api import cost
    from nkirun.checker.capacity import spill_plan
    p = _with_c(tmp_path, ELEMENTWISE)
    d, _ = reported_at(p, "W047", line=13, column=5, only=True)
    assert ("the operands of instruction 2 (tensor_tensor) need 360,000 bytes per partition "
            "together: an elementwise instruction") in d.message
    checked = check_program(str(p))
    plan = spill_plan(checked.program, checked.bound, "sbuf", 229_376)
    over = (360_000 - 229_376) * 128
    assert plan["too_big"] is None and plan["split"] == [(2, 360_000)]
    assert (2, "save", "c", over) in plan["events"] and (2, "reload", "c", over) in plan["events"]
    sched = cost(str(p))
    assert sched.spills["save_bytes"] >= over and sched.spills["reload_bytes"] >= over


@pytest.mark.parametrize("program,events", [
    # a computed (dirty) tile is stored once and reloaded before its next use
    (["load: {dst: a, src: x}", "tensor_scalar: {dst: a, data: a, op0: multiply, operand0: 2}",
      "load: {dst: b, src: x}", "store: {dst: y, src: a}", "store: {dst: z, src: b}"],
     [(2, "save", "a"), (3, "reload", "a")]),
    # a loaded tile already read is loaded again from HBM: no save
    (["load: {dst: a, src: x}", "store: {dst: z, src: a}", "load: {dst: b, src: x}",
      "store: {dst: y, src: a}", "store: {dst: z, src: b}"], [(3, "reload", "a")]),
])
def test_spill_plan_evicts_the_tile_used_furthest_ahead(tmp_path, program, events):
    from nkirun.checker.capacity import spill_plan
    _check(tmp_path, program)
    checked = check_program(str(tmp_path / "p.yaml"))  # (the program, bound as check binds it)
    plan = spill_plan(checked.program, checked.bound, "sbuf", 229_376)
    assert plan["events"] == [(*e, 120_000 * 128) for e in events]


def test_peak_without_lists_equals_the_per_instruction_definition():
    """passes._peak_live (a running sum, not kept) against _peak_live_plain (the live
    bytes at every instruction, as a list): random changes, some past the last instruction."""
    import random

    from nkirun.checker.passes import _peak_live, _peak_live_plain
    rng = random.Random(14)
    for trial in range(500):
        n = rng.randint(0, 12)
        delta = [0] * (n + 2)
        for _ in range(rng.randint(0, 8)):
            f = rng.randint(0, max(n - 1, 0))
            size = rng.choice([4, 256, 1000])
            delta[f] += size
            delta[rng.randint(f, max(n - 1, f)) + 1] -= size
        assert _peak_live(delta, n) == _peak_live_plain(delta, n), (trial, delta)


def test_live_deltas_by_one_dict_equal_first_and_last_uses():
    """passes._live_deltas (one dict, last uses from a backward pass) against the changes
    of _first_last's live ranges: random instructions naming random tiles; some tiles have
    contents, some are outputs, on either buffer, or on another core (not declared)."""
    import random
    from types import SimpleNamespace

    from nkirun.isa.bound import Bound, _set_args
    from nkirun.checker.passes import _first_last, _live_deltas, _span_deltas
    rng = random.Random(14)
    for trial in range(300):
        tiles = [f"t{k}" for k in range(rng.randint(1, 6))]
        sizes = {name: rng.choice([4, 256, 1000]) for name in tiles}
        tensors = {name: SimpleNamespace(name=name, on_chip=rng.random() < 0.9,
                                         init=1 if rng.random() < 0.3 else None,
                                         output=rng.random() < 0.3,
                                         buffer=rng.choice(["sbuf", "psum"]),
                                         bytes_per_partition=sizes[name],
                                         shape=(1, sizes[name]),
                                         dtype=SimpleNamespace(itemsize=1))
                   for name in tiles}
        bound = []
        for _ in range(rng.randint(0, 10)):
            names = tuple(rng.sample(tiles, rng.randint(0, len(tiles))))
            on_chip = tuple(k for k, name in enumerate(names) if tensors[name].on_chip)
            plan = ((), (), on_chip, ())
            b = Bound.__new__(Bound)  # (its args slot: the names and plan, as a form's)
            _set_args(b, SimpleNamespace(names=names, plan=plan, form=None))
            bound.append(b)
        program = SimpleNamespace(tensors=tensors)
        plain = _span_deltas(program, *_first_last(program, bound), len(bound))
        if rng.random() < 0.2:  # one tile is another core's
            del tensors[tiles[0]]
            plain = _span_deltas(program, *_first_last(program, bound), len(bound))
        assert _live_deltas(program, bound) == plain, trial


SPILL_TWO_AT_ONCE = [  # a and b are spilled, then reloaded at one instruction
    "load: {dst: a, src: x}", "tensor_scalar: {dst: a, data: a, op0: multiply, operand0: 2}",
    "load: {dst: b, src: x}", "tensor_scalar: {dst: b, data: b, op0: multiply, operand0: 2}",
    "load: {dst: c, src: x}", "tensor_scalar: {dst: c, data: c, op0: multiply, operand0: 2}",
    "load: {dst: d, src: x}", "tensor_scalar: {dst: d, data: d, op0: multiply, operand0: 2}",
    "load: {dst: e, src: x}", "tensor_tensor: {dst: e, data1: e, data2: d, op: add}",
    "store: {dst: z, src: e}", "tensor_tensor: {dst: c, data1: a, data2: b, op: add}",
    "store: {dst: y, src: c}"]


def test_the_spill_plan_does_not_depend_on_string_hashes(tmp_path):
    """Two reloads at one instruction come in operand order, in every process (the order
    followed the hash of the tensors' names: `cost` differed between runs)."""
    import os
    import subprocess
    import sys

    from repo_paths import ROOT
    p = tmp_path / "p.yaml"
    small = HEADER.replace("30000", "17500").replace("TARGET", "trn2").replace(
        "instructions:\n", "".join(f"  {n}: {{buffer: sbuf, shape: [128, 17500], "
                                   f"dtype: float32}}\n" for n in "cde") + "instructions:\n")
    p.write_text(small + "".join(f"  - {i}\n" for i in SPILL_TWO_AT_ONCE))
    code = ("import sys; from nkirun.api import check_program; "
            "from nkirun.checker.capacity import spill_plan; c = check_program(sys.argv[1]); "
            "print(spill_plan(c.program, c.bound, 'sbuf', 229_376)['events'])")
    seen = {subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True,
                           text=True, check=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT),
                                "PYTHONHASHSEED": str(seed)}).stdout
            for seed in range(6)}
    assert len(seen) == 1, seen
    assert "(11, 'reload', 'a', 8960000), (11, 'reload', 'b', 8960000)" in seen.pop()
