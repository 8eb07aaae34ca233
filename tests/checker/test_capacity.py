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
    _check(tmp_path, BOTH_LIVE, target)
    # at the second load, where b becomes live
    d, _ = reported_at(tmp_path / "p.yaml", "E041", line=11, column=5, only=True)
    assert "240,000 bytes per partition at instruction 1 (load)" in d.message
    assert f"{target} has {limit}" in d.message


def test_peak_by_change_points_equals_the_per_instruction_definition():
    """passes._peak_live (the live bytes only where they change) against
    _peak_live_plain (the live bytes at every instruction): random live ranges, some
    starting at 0, some running past the last instruction, some on another buffer or core."""
    import random
    from types import SimpleNamespace

    from nkirun.checker.passes import _peak_live, _peak_live_plain
    rng = random.Random(14)
    for trial in range(300):
        n = rng.randint(0, 12)
        tensors, first, last = {}, {}, {}
        for k in range(rng.randint(0, 8)):
            name = f"t{k}"
            if rng.random() < 0.9:  # else: another core's (not in this program's tensors)
                tensors[name] = SimpleNamespace(buffer=rng.choice(["sbuf", "psum"]),
                                                bytes_per_partition=rng.choice([4, 256, 1000]))
            f = rng.randint(0, max(n - 1, 0))
            first[name] = f
            if rng.random() < 0.8:
                last[name] = rng.randint(f, max(n - 1, f))
        program = SimpleNamespace(tensors=tensors)
        for buf in ("sbuf", "psum"):
            assert _peak_live(program, buf, first, last, n) == \
                _peak_live_plain(program, buf, first, last, n), (trial, buf)
