"""speed.CORES_BY_NAMES: a two-core program's ownership (E633) and race (W630) rules read
an instruction's tensor names first and its accesses only where one may matter; they give
the diagnostics of the plain rules (every instruction's accesses read), and leave the
Operands of a traced kernel's form instances unmade."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

from nkirun import speed
from nkirun.api_kernel import trace_call
from nkirun.checker.bind import bind
from nkirun.checker.cores import check_cores
from nkirun.checker.passes import validate
from nkirun.isa.bound import FormBound
from nkirun.source import parse_file
from trace_facts import diagnostic_facts

ROOT = pathlib.Path(__file__).resolve().parents[2]

# core c writes rows [c*64, c*64 + 128) of y: the middle 64 rows race (W630) every iteration
KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def halves(x, n):
    core = nl.program_id(0)
    y = nl.ndarray((n * 256, 512), dtype=x.dtype, buffer=nl.shared_hbm, name="y")
    for i in range(n):
        t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[0:128, :])
        u = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=2.0)
        nisa.activation(dst=t, op=nl.exp, data=u)
        start = i * 256 + core * 64
        nisa.dma_copy(dst=y[start:start + 128, :], src=t)
    return y
'''


def _traced(tmp_path):
    path = tmp_path / "cores_by_names_kernel.py"
    path.write_text(KERNEL)
    spec = importlib.util.spec_from_file_location("cores_by_names_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return trace_call(module.halves, (np.ones((128, 512), np.float32), 10), lnc=2).program



def _programs(tmp_path):
    yield _traced(tmp_path)
    for path in (ROOT / "tests" / "invalid" / "W630_race_on_shared_hbm.yaml",
                 ROOT / "tests" / "invalid" / "E633_other_cores_tile.yaml",
                 ROOT / "programs" / "two_core_halves.yaml"):
        yield parse_file(str(path))[0]


def test_rules_by_names_equal_the_plain_rules(tmp_path, monkeypatch):
    codes = set()
    for program in _programs(tmp_path):
        assert program.cores == 2
        fast_order, fast = check_cores(program, bind(program)[0])
        monkeypatch.setattr(speed, "CORES_BY_NAMES", False)
        plain_order, plain = check_cores(program, bind(program)[0])
        monkeypatch.setattr(speed, "CORES_BY_NAMES", True)
        assert diagnostic_facts(fast) == diagnostic_facts(plain)
        assert [b.index for b in fast_order] == [b.index for b in plain_order]
        assert (diagnostic_facts(validate(program)[1])
                == diagnostic_facts(_plain_validate(program, monkeypatch)))
        codes.update(d.code for d in fast)
    assert {"W630", "E633"} <= codes  # (both rules have something to find)


def _plain_validate(program, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(speed, "CORES_BY_NAMES", False)
        return validate(program)[1]


@pytest.mark.parametrize("by_names", [True, False])
def test_form_instances_stay_unmade(tmp_path, monkeypatch, by_names):
    program = _traced(tmp_path)
    bound, _ = bind(program)
    lazy = sum(b.__class__ is FormBound for b in bound)
    assert lazy > 20  # (the forms do apply)
    monkeypatch.setattr(speed, "CORES_BY_NAMES", by_names)
    _, diags = check_cores(program, bound)
    assert sum(d.code == "W630" for d in diags) == 10
    left = sum(b.__class__ is FormBound for b in bound)
    if by_names:  # only the DMAs touching shared HBM are read; the compute stays unmade
        assert left >= lazy // 2
    else:
        assert left == 0
