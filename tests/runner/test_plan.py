"""The execution plan (runner/plan.py) against the plain interpreter it stands in for:
every example program, every example kernel, every instruction's own example, the invalid
programs that check without errors (warnings only), and targeted cases (unwritten reads,
partial writes, masks, slots reused across dtypes, the uninitialized policies). Outputs
must agree bit for bit; errors and run-time warnings must be the same."""
from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

from nkirun.api import check_program
from nkirun.diagnostics import NkirunError
from nkirun.isa import MODULES
from nkirun.runner.interpret import execute, outputs
from nkirun.runner.plan import _Planner, execute_planned, last_uses, plannable
from repo_paths import INVALID, PROGRAMS
from spec_examples import example_program

RNG = np.random.default_rng(11)


def _bits(a: np.ndarray) -> tuple:
    a = np.ascontiguousarray(a)
    return a.dtype.str, a.shape, a.view(np.uint8).tobytes()


def _outcome(run):
    """(the outputs as bits, run-time warnings) or the error's diagnostics."""
    try:
        out, warnings = run()
    except NkirunError as e:
        return ("error", [(d.code, d.message, d.loc, d.hint) for d in e.diagnostics])
    return ({k: _bits(v) for k, v in out.items()},
            [(w.code, w.message, w.loc) for w in warnings])


def both_ways(program, bound, inputs=None, policy="error"):
    """The outcome of the plain interpreter and of the plan, which must be plannable."""
    assert plannable(program)

    def plain():
        m = execute(program, bound, inputs, uninitialized=policy, plan=False)
        return outputs(program, m), m.warnings

    def planned():
        m = execute_planned(program, bound, inputs, policy)
        return outputs(program, m), m.warnings
    return _outcome(plain), _outcome(planned)


def program_paths():
    paths = sorted(PROGRAMS.glob("*.yaml")) + sorted(PROGRAMS.glob("*.nkis"))
    return [p for p in paths if "two_core" not in p.name]


@pytest.mark.parametrize("path", program_paths(), ids=lambda p: p.name)
@pytest.mark.parametrize("policy", ["error", "nan"])
def test_every_example_program_runs_the_same_from_the_plan(path, policy):
    c = check_program(str(path))
    assert c.ok
    if not plannable(c.program):
        pytest.skip("runtime loops or two cores: the plain path")
    plain, planned = both_ways(c.program, c.bound, policy=policy)
    assert plain == planned and plain[0] != "error"


@pytest.mark.parametrize("name", MODULES)
def test_every_instruction_example_runs_the_same_from_the_plan(tmp_path, name):
    c = check_program(example_program(tmp_path, name))
    if not plannable(c.program):
        pytest.skip("runtime loops or two cores: the plain path")
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned


@pytest.mark.parametrize("path", sorted(INVALID.glob("W*.yaml")), ids=lambda p: p.name)
def test_programs_with_warnings_run_the_same_from_the_plan(path):
    c = check_program(str(path))
    if not c.ok or not plannable(c.program):
        pytest.skip("not runnable, or the plain path")
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned


def _program(tmp_path, text):
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent(text))
    c = check_program(str(path))
    assert c.ok, [d.one_line() for d in c.diagnostics]
    return c


PARTIAL = """\
    version: 1
    tensors:
      x: {buffer: hbm, dtype: float32, shape: [4, 8], fill: 1.5}
      t: {buffer: sbuf, dtype: float32, shape: [4, 8]}
      u: {buffer: sbuf, dtype: float32, shape: [4, 8]}
      y: {buffer: hbm, dtype: float32, shape: [4, 8], output: true}
    instructions:
      - dma_copy: {dst: "t[:, 0:4]", src: "x[:, 0:4]"}
      - dma_copy: {dst: "t[:, 4:8]", src: "x[:, 4:8]"}
      - tensor_tensor: {dst: u, data1: t, data2: t, op: add}
      - dma_copy: {dst: y, src: u}
"""


def test_a_tile_written_in_parts_is_tracked_and_then_read(tmp_path):
    c = _program(tmp_path, PARTIAL)
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned and plain[0] != "error"


@pytest.mark.parametrize("policy", ["error", "nan", "zero"])
def test_reading_an_unwritten_element_is_the_same_error(tmp_path, policy):
    c = _program(tmp_path, PARTIAL.replace(
        '      - dma_copy: {dst: "t[:, 4:8]", src: "x[:, 4:8]"}\n', ""))
    plain, planned = both_ways(c.program, c.bound, policy=policy)
    assert plain == planned
    assert (plain[0] == "error" and plain[1][0][0] == "E090") == (policy == "error")


def test_an_output_written_in_part_is_the_same_error(tmp_path):
    c = _program(tmp_path, PARTIAL.replace('dma_copy: {dst: y, src: u}',
                                           'dma_copy: {dst: "y[:, 0:4]", src: "u[:, 0:4]"}'))
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned and plain[0] == "error" and plain[1][0][0] == "E092"


def test_slots_are_reused_only_between_tensors_of_one_shape_and_dtype(tmp_path):
    """Tiles of two dtypes in turn: a bf16 tile never lands in a float32 tile's array, and a
    tile written through a cast reads back what the plain path reads."""
    lines = ["version: 1", "tensors:",
             "  x: {buffer: hbm, dtype: float32, shape: [8, 16], file: x.npy}",
             "  y: {buffer: hbm, dtype: float32, shape: [8, 16], output: true}",
             "  acc: {buffer: sbuf, dtype: float32, shape: [8, 16]}"]
    body = ["  - memset: {dst: acc, value: 0.25}"]
    for i in range(6):
        dtype = "bfloat16" if i % 2 else "float32"
        lines.append(f"  t{i}: {{buffer: sbuf, dtype: {dtype}, shape: [8, 16]}}")
        lines.append(f"  s{i}: {{buffer: sbuf, dtype: float32, shape: [8, 16]}}")
        body += [f"  - dma_copy: {{dst: t{i}, src: x}}" if dtype == "float32" else
                 f"  - tensor_copy: {{dst: t{i}, src: acc}}",
                 f"  - tensor_copy: {{dst: s{i}, src: t{i}}}",
                 f"  - tensor_tensor: {{dst: acc, data1: acc, data2: s{i}, op: multiply}}"]
    body.append("  - dma_copy: {dst: y, src: acc}")
    np.save(tmp_path / "x.npy", RNG.standard_normal((8, 16)).astype(np.float32))
    c = _program(tmp_path, "\n".join(lines + ["instructions:"] + body) + "\n")
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned and plain[0] != "error"
    from nkirun.runner.files import initial_buffers
    from nkirun.runner.machine import Machine
    from dataclasses import replace
    head = replace(c.program, tensors={"x": c.program.tensors["x"]})
    m = Machine(*initial_buffers(head))
    planner = _Planner(c.program, c.bound, m, last_uses(c.bound, {"x", "y"})[0], "error")
    assert planner.made == 5  # y, acc, one float32 and one bf16 t slot, one s slot


def test_one_form_on_several_slots_and_outputs_of_a_tile_kind(tmp_path):
    """The instructions of one checked form share a recipe (_Recipe) but not a call when
    their tiles sit in different arrays: two tiles live at once alternate between two
    slots. Outputs of the tiles' shape and dtype, first written whole while a tile's array
    is free, keep arrays of their own (a later tile would overwrite them)."""
    lines = ["version: 1", "tensors:",
             "  x: {buffer: hbm, dtype: float32, shape: [4, 8], file: x.npy}",
             "  xs: {buffer: sbuf, dtype: float32, shape: [4, 8]}",
             "  acc: {buffer: sbuf, dtype: float32, shape: [4, 8]}",
             "  y0: {buffer: hbm, dtype: float32, shape: [4, 8], output: true}",
             "  y1: {buffer: hbm, dtype: float32, shape: [4, 8], output: true}"]
    body = ["  - dma_copy: {dst: xs, src: x}", "  - memset: {dst: acc, value: 0.5}"]
    for i in range(7):
        lines.append(f"  t{i}: {{buffer: sbuf, dtype: float32, shape: [4, 8]}}")
        body.append(f"  - tensor_copy: {{dst: t{i}, src: {'acc' if i % 2 else 'xs'}}}")
        if i:
            body.append(f"  - tensor_tensor: {{dst: acc, data1: acc, data2: t{i - 1}, op: add}}")
        if i == 3:
            body.append("  - dma_copy: {dst: y0, src: t2}")
    body += ["  - tensor_tensor: {dst: acc, data1: acc, data2: t6, op: add}",
             "  - dma_copy: {dst: y1, src: acc}"]
    np.save(tmp_path / "x.npy", RNG.standard_normal((4, 8)).astype(np.float32))
    c = _program(tmp_path, "\n".join(lines + ["instructions:"] + body) + "\n")
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned and plain[0] != "error"
    from nkirun.runner.files import initial_buffers
    from nkirun.runner.machine import Machine
    from dataclasses import replace
    m = Machine(*initial_buffers(replace(c.program, tensors={"x": c.program.tensors["x"]})))
    planner = _Planner(c.program, c.bound, m,
                       last_uses(c.bound, {"x", "y0", "y1"})[0], "error")
    adds = [r for r in planner.recipes.values() if len(r.calls) >= 2]
    assert adds, "the accumulating add of one form runs on two tile slots"
    assert planner.made == 6  # xs, acc, y0, y1 and two tile slots


def test_a_masked_instruction_takes_the_plain_path_and_agrees(tmp_path):
    c = _program(tmp_path, """\
        version: 1
        tensors:
          x: {buffer: sbuf, dtype: float32, shape: [4, 8], fill: 2.0}
          t: {buffer: sbuf, dtype: float32, shape: [4, 8]}
          u: {buffer: sbuf, dtype: float32, shape: [4, 8]}
          y: {buffer: hbm, dtype: float32, shape: [4, 8], output: true}
        instructions:
          - memset: {dst: t, value: -1.0}
          - tensor_copy: {dst: t, src: x, mask: "p < 2 and f < 5"}
          - tensor_tensor: {dst: u, data1: t, data2: x, op: add, mask: "p < 3"}
          - memset: {dst: "u[3:4, :]", value: 7.0}
          - dma_copy: {dst: y, src: u}
        """)
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned and plain[0] != "error"


# ---- the example kernels (programs/kernels/) -------------------------------------------------
def f32(*shape, positive=False):
    a = RNG.random(shape) if positive else RNG.standard_normal(shape)
    return a.astype(np.float32)


KERNEL_CASES = {
    "matmul_tiled": (dict(lhsT=f32(256, 128), rhs=f32(256, 512)), {}),
    "rmsnorm": (dict(x=f32(256, 200), w=f32(1, 200)), {"eps": 1e-5}),
    "softmax": (dict(x=f32(128, 333)), {}),
    "flash_attention": (dict(q=f32(64, 128), k=f32(64, 256), v=f32(256, 64)), {}),
    "attention_bf16": (dict(q=f32(64, 128), k=f32(64, 128), v=f32(128, 64)), {}),
    "mamba_scan": (dict(delta=f32(128, 256, positive=True), u=f32(128, 256),
                        A=-f32(128, 1, positive=True), B=f32(1, 256), Cm=f32(1, 256)),
                   {"chunk": 128}),
    "topk": (dict(x=f32(100, 300)), {"k": 16}),
}


@pytest.mark.parametrize("name", sorted(KERNEL_CASES))
def test_every_example_kernel_runs_the_same_from_the_plan(name):
    from nkirun.api_kernel import output_array, require_valid, trace_call
    from nkirun.runner.freeing import execute_freeing
    from repo_paths import PROGRAMS as progs
    sys.path.insert(0, str(progs / "kernels"))
    try:
        kernel = getattr(__import__(name), name)
    finally:
        sys.path.remove(str(progs / "kernels"))
    arrays, args = KERNEL_CASES[name]
    traced = trace_call(kernel, tuple(arrays.values()), args)
    bound, _ = require_valid(traced)
    assert plannable(traced.program)

    def run(observe):
        m = execute_freeing(traced.program, bound, traced.inputs, observe)
        return {str(i): output_array(m, h) for i, h in enumerate(traced.outputs)}, m.warnings
    plain = _outcome(lambda: run(lambda b, m: None))  # an observer: the plain path
    planned = _outcome(lambda: run(None))
    assert plain == planned and plain[0] != "error"


def test_an_exception_inside_a_planned_call_names_its_instruction(tmp_path, monkeypatch):
    import dataclasses
    from nkirun.diagnostics import InternalError
    from nkirun.isa import REGISTRY

    def boom():
        raise ZeroDivisionError("injected")
    monkeypatch.setitem(REGISTRY, "tensor_tensor", dataclasses.replace(
        REGISTRY["tensor_tensor"], plan=lambda b: (lambda view: boom)))
    c = _program(tmp_path, PARTIAL.replace(
        '      - dma_copy: {dst: "t[:, 4:8]", src: "x[:, 4:8]"}\n', "").replace(
        '"t[:, 0:4]", src: "x[:, 0:4]"', "t, src: x"))
    with pytest.raises(InternalError) as e:
        execute_planned(c.program, c.bound)
    assert e.value.where.startswith("instruction 1 (tensor_tensor)")
    assert isinstance(e.value.exc, ZeroDivisionError)
