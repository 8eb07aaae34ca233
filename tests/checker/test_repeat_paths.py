"""The shortcuts for repeated instructions (issue 9, docs/performance.md) change nothing.

A repeated text line is rebuilt from the first one's IR (`Instruction.repeat_of`); the
checker reuses that instruction's bound args, and the dataflow, capacity and cost passes
memoise per shared args dict. The same program with a comment on every line goes through
the careful scanner, where none of this applies: both must give the same diagnostics, the
same bound values, the same run results and the same schedule.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nkirun import api
from nkirun.schedule import schedule

HEADER = """version 1
tensor x hbm [128, 512] float32 fill=1.5
tensor t sbuf [128, 512] float32
tensor u sbuf [128, 512] bfloat16
tensor c sbuf [128, 1, 1] float32 fill=0.5
tensor m sbuf [128, 4] float32 fill=0
tensor y hbm [128, 512] float32 output
tensor ym hbm [128, 4] float32 output
"""
# every line twice: full tiles, views, a (P, 1, 1) bias, masks, DMA on fewer queues
VALID = """load dst=t src=x
activation dst=t op=exp data=t bias=c
memset dst=t[:, 0:256] value=0 mask="p < 64"
load dst=t[0:32, :] src=x[0:32, :]
range_select dst=t on_true_tile=t comp_op0=greater_equal comp_op1=less bound0=c bound1=c reduce_cmd=reset_reduce reduce_res=m[:, 1:2]
tensor_tensor dst=t[:, 0:128] data1=t[:, 0:128] data2=t[:, 128:256] op=add
store dst=y src=t
store dst=ym src=m
"""
# errors and warnings that a repeat must report again, at its own line
INVALID = """load dst=q src=x
tensor_tensor dst=t data1=t data2=zz op=add
load dst=t[:, 0:600] src=x
range_select dst=u on_true_tile=u comp_op0=greater_equal comp_op1=less bound0=c bound1=c reduce_cmd=reduce
activation dst=t op=exp data=t bias=c
store dst=y src=t
"""


def doubled(body: str, comment: bool) -> str:
    lines = [ln + ("  # careful path" if comment else "") for ln in body.splitlines()]
    return HEADER + "".join(f"{ln}\n{ln}\n" for ln in lines)


def both(tmp_path, body):
    out = []
    for comment in (False, True):
        path = tmp_path / f"p{int(comment)}.nkis"
        path.write_text(doubled(body, comment))
        out.append(api.check_program(str(path)))
    return out


def view_of(diags):
    return [(d.severity, d.code, d.message, d.loc.line, d.loc.column, d.instruction, d.hint)
            for d in diags]


@pytest.mark.parametrize("body", [VALID, INVALID], ids=["valid", "invalid"])
def test_repeated_lines_check_like_the_careful_path(tmp_path, body):
    fast, careful = both(tmp_path, body)
    assert view_of(fast.diagnostics) == view_of(careful.diagnostics)
    assert [i.repeat_of for i in careful.program.instructions] == [None] * len(
        careful.program.instructions)
    if body is VALID:
        assert fast.ok and not fast.diagnostics
        assert [(b.engine, b.args) for b in fast.bound] == [(b.engine, b.args)
                                                            for b in careful.bound]
    else:
        assert {d.code for d in fast.errors} >= {"E026", "E031", "E050"}
        assert {d.code for d in fast.diagnostics if not d.is_error} >= {"W052"}


def test_repeats_share_args_and_cost_the_same(tmp_path):
    fast, careful = both(tmp_path, VALID)
    insts = fast.program.instructions
    assert [i.repeat_of for i in insts[1:4]] == [0, None, 2]
    # a repeat reuses its first line's bound args (the memo key of the later passes) ...
    assert fast.bound[1].args is fast.bound[0].args
    assert fast.bound[3].args is fast.bound[2].args
    assert fast.bound[1].inst is insts[1] and fast.bound[1].loc().line == insts[1].loc.line
    # ... and a masked instruction is bound on its own, with its own mask
    assert fast.bound[5].mask is not None and fast.bound[5].args is not fast.bound[4].args
    placed = schedule(fast.program, fast.bound).slots
    slots = [dataclasses.astuple(s) for s in placed]
    assert slots == [dataclasses.astuple(s) for s in schedule(careful.program,
                                                              careful.bound).slots]
    # DMA engines follow the partitions (engine e serves 8e..8e+7): t[0:32] -> engines 0-3
    assert {s.queue for s in placed} >= {"dma.q0-15", "dma.q0-3"}


def test_repeats_run_like_the_careful_path(tmp_path):
    outs = []
    for comment in (False, True):
        path = tmp_path / f"r{int(comment)}.nkis"
        path.write_text(doubled(VALID, comment))
        outs.append(api.run(str(path)))
    for name in ("y", "ym"):
        np.testing.assert_array_equal(outs[0][name].view(np.uint32),
                                      outs[1][name].view(np.uint32))
