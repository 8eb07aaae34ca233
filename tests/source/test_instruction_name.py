"""NKI's `name=` keyword on every instruction: accepted in YAML, text and kernels, kept in
the IR, shown where an instruction is named (trace, cost, messages), round-tripped by convert."""
from __future__ import annotations

import json

import numpy as np
import pytest

import nkirun
from nkirun.api import check_program, cost, run
from nkirun.isa import MODULES, REGISTRY
from nkirun.source.write import to_text, to_yaml
from prog_helpers import codes, out, sbuf, write_program
from tests.kernel.test_kernel_contract import nkirun_kernel, write


def _program(tmp_path, label):
    x = np.full((4, 8), 1.5, np.float32)
    return write_program(tmp_path, {"x": sbuf(x), "y": out((4, 8), "float32")},
                         [{"tensor_scalar": {"dst": "y", "data": "x", "op0": "multiply",
                                             "operand0": 2.0, "name": label}}])


@pytest.mark.parametrize("name", MODULES)
def test_every_instruction_accepts_name(name):
    p = REGISTRY[name].param("name")
    assert p is not None and not p.required and p.default is None


def test_name_is_kept_and_changes_no_result(tmp_path):
    path = _program(tmp_path, "double it")
    result = check_program(path)
    assert codes(result.diagnostics) == []
    assert result.program.instructions[0].args["name"] == "double it"
    np.testing.assert_array_equal(run(path)["y"], np.full((4, 8), 3.0, np.float32))


def test_name_must_be_a_string(tmp_path):
    result = check_program(_program(tmp_path, 7))
    assert codes(result.diagnostics) == ["E024"]
    assert "`name` must be a non-empty string" in result.diagnostics[0].message


def test_cost_report_and_json_show_the_name(tmp_path):
    s = cost(_program(tmp_path, "qk_max"))
    assert s.slots[0].title == "tensor_scalar (name=qk_max)"
    from nkirun.schedule.views import instruction_row
    assert instruction_row(s.slots[0], s.own_ns(s.slots[0]))["name"] == "qk_max"
    plain = cost(_program(tmp_path, None))
    assert "name" not in instruction_row(plain.slots[0], plain.own_ns(plain.slots[0]))


def test_trace_shows_the_name(tmp_path):
    from prog_helpers import invoke
    r = invoke("run", _program(tmp_path, "qk_max"), "--trace", "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    assert "#0 tensor_scalar (name=qk_max) [vector]" in r.output
    from nkirun.runner.watch import Tracer
    import io
    tracer = Tracer(stream=io.StringIO(), rich=False)
    run(_program(tmp_path, "qk_max"), after_each=tracer)
    row = tracer.rows[0].as_dict()
    assert row["op"] == "tensor_scalar" and row["name"] == "qk_max"


def test_diagnostics_name_the_instruction(tmp_path):
    x = np.ones((4, 8), np.float32)
    path = write_program(tmp_path, {"x": sbuf(x), "y": out((4, 4), "float32")},
                         [{"tensor_copy": {"dst": "y", "src": "x", "name": "copy_a"}}])
    msgs = [d.message for d in check_program(path).diagnostics]
    assert msgs and all(m.startswith("tensor_copy (name=copy_a): ") for m in msgs), msgs


def test_convert_round_trips_the_name(tmp_path):
    program = check_program(_program(tmp_path, "double it")).program
    text = to_text(program)
    assert 'name="double it"' in text
    (tmp_path / "p.nkis").write_text(text)
    again = check_program(str(tmp_path / "p.nkis")).program
    assert again.instructions[0].args["name"] == "double it"
    assert 'name: "double it"' in to_yaml(again) or "name: double it" in to_yaml(again)


def test_kernel_name_keyword_reaches_the_ir(tmp_path):
    path = write(tmp_path, """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def k(x):
            t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x, name="load_x")
            u = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=u, src=t, name=None)
            o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=o, src=u)
            return o
        """)
    k = nkirun_kernel(path, "k")
    x = np.ones((4, 4), np.float32)
    s = nkirun.cost(k, x)
    assert [sl.title for sl in s.slots][:2] == ["dma_copy (name=load_x)", "tensor_copy"]
    json.dumps([sl.title for sl in s.slots])
