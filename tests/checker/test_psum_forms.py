"""speed.PSUM_BY_FORM: the PSUM hazard pass (checker/psum.py) reads the instances of a
call-site form through the form and gives the diagnostics reading every instance's
Operands gives; and it leaves those Operands unmade."""
from __future__ import annotations

import importlib.util

import numpy as np

from nkirun import speed
from nkirun.api_kernel import trace_call
from nkirun.checker.bind import bind
from nkirun.checker.psum import psum_hazards
from nkirun.isa.bound import FormBound
from trace_facts import diagnostic_facts

KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def hazards(a, b, n):
    out = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.sbuf)
    reused = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.psum)
    for i in range(n):
        acc = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.psum)
        if i % 3 == 1:
            nisa.memset(dst=acc, value=0.0)                         # W053 on the matmul
        nisa.nc_matmul(dst=acc, stationary=a, moving=b)
        nisa.nc_matmul(dst=acc[:, 0:48], stationary=a, moving=b[:, 0:48])
        if i % 4 == 2:
            nisa.nc_matmul(dst=acc, stationary=a, moving=b, accumulate=False)  # W054
        nisa.tensor_copy(dst=s, src=acc)
        nisa.nc_matmul(dst=reused, stationary=a, moving=b)     # W055 from i == 1 on
        nisa.tensor_copy(dst=s[:, 0:32], src=reused[:, 0:32])
    nisa.dma_copy(dst=out, src=s)
    return out
'''


def _traced(tmp_path):
    path = tmp_path / "psum_forms_kernel.py"
    path.write_text(KERNEL)
    spec = importlib.util.spec_from_file_location("psum_forms_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    a = np.ones((128, 64), np.float32)
    b = np.ones((128, 96), np.float32)
    return trace_call(module.hazards, (a, b, 12))



def test_hazards_through_forms_equal_the_plain_pass(tmp_path, monkeypatch):
    program = _traced(tmp_path).program
    bound, _ = bind(program)
    lazy = sum(b.__class__ is FormBound for b in bound)
    assert lazy > 20  # (the forms do apply)
    fast = psum_hazards(program, bound)
    # left unmade (but where a warning's words read the instruction's name)
    assert sum(b.__class__ is FormBound for b in bound) >= lazy - len(fast)
    monkeypatch.setattr(speed, "PSUM_BY_FORM", False)
    plain = psum_hazards(program, bind(program)[0])
    assert diagnostic_facts(fast) == diagnostic_facts(plain)
    assert {d.code for d in fast} == {"W053", "W054", "W055"}
    assert sum(d.code == "W055" for d in fast) >= 10
