"""Two shortcuts of the shadow against their plain forms: the mirrored step
(shadow_stores.mirrorable: an instruction whose inputs agree in both runs takes the real
run's values instead of executing a second time; plain: Shadow.mirror off) and adopted
stores (ShadowMachine._adoptable: a fresh whole-tensor result becomes the tensor's storage
instead of being copied there; plain: never adopted). Each gives the same rows, field for
field, and the same float32 shadow contents at the end."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from tests.runner.shadow_helpers import bf16_kernel, rows, same_rows

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def shadows(monkeypatch):
    """The Shadow objects created while the test runs, and how many steps mirrored."""
    from nkirun.runner import shadow, shadow_stores
    made, mirrored = [], []
    init = shadow.Shadow.__init__

    def remember(self, *a, **k):
        init(self, *a, **k)
        made.append(self)
    monkeypatch.setattr(shadow.Shadow, "__init__", remember)

    def counted(b, s):
        ok = shadow_stores.mirrorable(b, s)
        mirrored.append(ok)
        return ok
    monkeypatch.setattr(shadow, "mirrorable", counted)
    return made, mirrored


def _both(run, shadows, monkeypatch) -> int:
    """run() with the mirror and adoption on, then off: one report and one shadow state;
    returns how many instructions the first run mirrored."""
    from nkirun.runner.shadow import Shadow, ShadowMachine
    made, mirrored = shadows
    on = rows(run())
    count = sum(mirrored)
    monkeypatch.setattr(Shadow, "mirror", False)
    monkeypatch.setattr(ShadowMachine, "_adoptable", lambda self, r, v: False)
    off = rows(run())
    same_rows(on, off)
    a, b = made[-2].machine, made[-1].machine
    if a is None or b is None:
        assert a is b
        return count
    assert a.buffers.keys() == b.buffers.keys()
    for name in a.buffers:
        x, y = a.buffers[name], b.buffers[name]
        assert x.dtype == y.dtype and x.shape == y.shape, name
        if name in a.shadowed:  # (only what the run wrote: fresh tiles start as garbage)
            w = a.real.written.get(name)
            sel = Ellipsis if w is None else w
            assert np.array_equal(x[sel], y[sel], equal_nan=True), name
    return count


@pytest.mark.parametrize("name", __import__("nkirun.isa", fromlist=["MODULES"]).MODULES)
def test_mirrored_shadow_equals_executed_on_every_instruction_example(tmp_path, name,
                                                                      shadows, monkeypatch):
    from spec_examples import example_program

    from nkirun import run
    path = example_program(tmp_path, name)
    _both(lambda: run(path, shadow=True), shadows, monkeypatch)


def _programs():
    return sorted(p.name for p in (ROOT / "programs").iterdir()
                  if p.suffix in (".yaml", ".nkis"))


@pytest.mark.parametrize("program", _programs())
def test_mirrored_shadow_equals_executed_on_every_example_program(program, shadows,
                                                                  monkeypatch):
    from nkirun import run
    _both(lambda: run(ROOT / "programs" / program, shadow=True), shadows, monkeypatch)


@pytest.mark.parametrize("kernel", ["rmsnorm", "attention_bf16"])
def test_mirrored_shadow_equals_executed_on_the_bf16_kernels(kernel, shadows, monkeypatch):
    import nkirun
    fn, args = bf16_kernel(kernel, 3)
    n = _both(lambda: nkirun.simulate(fn, shadow=True)(*args), shadows, monkeypatch)
    assert n > 0  # (the comparison is not vacuous: some instructions were mirrored)


def test_mirror_needs_reads_in_the_real_dtype_and_stores_through_write():
    from nkirun import api
    from nkirun.isa import REGISTRY
    from nkirun.runner.machine import Machine
    from nkirun.runner.shadow import ShadowMachine
    from nkirun.runner.shadow_stores import mirrorable, stores_through_write
    src = ("version: 1\ntensors:\n"
           "  x: {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}\n"
           "  h: {buffer: sbuf, shape: [4, 8], dtype: bfloat16, fill: 1}\n"
           "  y: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}\n"
           "instructions:\n"
           "  - tensor_scalar: {dst: y, data: x, op0: multiply, operand0: 3.0}\n"
           "  - tensor_scalar: {dst: y, data: h, op0: multiply, operand0: 3.0}\n")
    c = api.require_valid(src)
    real = Machine({"x": np.ones((4, 8), np.float32),
                    "h": np.ones((4, 8), np.dtype("bfloat16")),
                    "y": np.zeros((4, 8), np.float32)}, {})
    s = ShadowMachine(real, set())
    for name in ("x", "h", "y"):
        s.enter(name)
    assert mirrorable(c.bound[0], s)  # float32 read: the same array in both runs
    assert not mirrorable(c.bound[1], s)  # bfloat16 read: the shadow's is float32
    assert stores_through_write(REGISTRY["tensor_scalar"])
    assert not stores_through_write(REGISTRY["nc_match_replace8"])  # (changes dst in place)



def test_direct_storage_is_declared_by_every_module_that_touches_storage():
    """SPEC.direct_storage must hold exactly where the module's execute code reaches a
    machine's storage past read()/write() (m.view, m.buffers, m._typed_flat): a module
    that starts doing so without declaring it would be mirrored by the shadow wrongly."""
    import inspect
    import re
    import sys

    from nkirun.isa import REGISTRY
    in_place = re.compile(r"\bm\.(view|buffers|_typed_flat)\b"
                          r"|\bcc\.payload_of\b")  # (isa/collective.py: m.view, checked below)
    for name, spec in REGISTRY.items():
        module = sys.modules[spec.execute.__module__]
        touches = bool(in_place.search(inspect.getsource(module)))
        assert spec.direct_storage == touches, name
    assert REGISTRY["nc_matmul"].direct_storage  # (accumulates into its PSUM dst)
    from nkirun.isa import collective
    assert in_place.search(inspect.getsource(collective.payload_of))

def _machine():
    from nkirun import api
    from nkirun.runner.machine import Machine
    from nkirun.runner.shadow import ShadowMachine
    src = ("version: 1\ntensors:\n"
           "  a: {buffer: sbuf, shape: [4, 8], dtype: bfloat16, fill: 1}\n"
           "  c: {buffer: sbuf, shape: [4, 8], dtype: bfloat16, fill: 1}\n"
           "instructions:\n"
           "  - tensor_scalar: {dst: a, data: c, op0: multiply, operand0: 3.0}\n"
           "  - tensor_scalar: {dst: 'a[0:4, 0:4]', data: 'c[0:4, 0:4]', op0: add, operand0: 1.0}\n")
    c = api.require_valid(src)
    bf = np.dtype("bfloat16")
    real = Machine({"a": np.ones((4, 8), bf), "c": np.ones((4, 8), bf)}, {})
    s = ShadowMachine(real, set())
    s.enter("a")
    s.enter("c")
    s.current, s.records = c.bound[0], []
    return c.bound, s


def test_a_fresh_whole_result_is_adopted_and_a_second_store_keeps_the_first_record():
    bound, s = _machine()
    r = bound[0]["dst"]
    v = np.arange(32, dtype=np.float32).reshape(4, 8)
    s.write(r, v)
    assert np.shares_memory(s.buffers["a"], v)  # adopted: no copy
    s.write(r, np.full((4, 8), 7, np.float32))  # the same tensor again in one instruction
    assert np.array_equal(s.records[0][1], np.arange(32).reshape(4, 8))  # first record kept
    assert not np.shares_memory(s.buffers["a"], v) and (s.buffers["a"] == 7).all()


def test_views_of_tensors_partial_stores_and_arguments_are_copied_not_adopted():
    bound, s = _machine()
    r = bound[0]["dst"]
    s.write(r, s.buffers["c"].reshape(4, 8))  # another tensor's storage
    assert not np.shares_memory(s.buffers["a"], s.buffers["c"])
    part = np.full((4, 4), 5, np.float32)
    s.write(bound[1]["dst"], part)  # not the whole tensor
    assert not np.shares_memory(s.buffers["a"], part)
    wide = np.zeros((4, 16), np.float32)
    s.write(r, wide[:, :8])  # a part of a larger array
    assert not np.shares_memory(s.buffers["a"], wide)
    ones = np.ones((4, 8), np.float32)
    s.write(r, ones, mask=np.ones((4, 8), bool))  # masked
    assert not np.shares_memory(s.buffers["a"], ones)


def test_an_auto_accumulating_matmul_into_a_differing_psum_tile_is_compared():
    """nc_matmul without `accumulate` adds to the PSUM elements that hold data without
    listing its dst as read: with exact operands but a dst the shadow holds differently,
    the row must carry that difference (it was once reported as 0 and dst marked equal)."""
    from nkirun import api
    from nkirun.runner.shadow import execute_shadowed
    src = ("version: 1\ntensors:\n"
           "  x: {buffer: sbuf, shape: [8, 8], dtype: float32, fill: 0}\n"
           "  h: {buffer: sbuf, shape: [8, 8], dtype: bfloat16}\n"
           "  p: {buffer: psum, shape: [8, 8], dtype: float32, output: true}\n"
           "instructions:\n"
           "  - tensor_copy: {dst: h, src: x}\n"
           "  - nc_matmul: {dst: p, stationary: h, moving: h}\n"
           "  - nc_matmul: {dst: p, stationary: x, moving: x}\n")
    c = api.require_valid(src)
    x = (1 + np.random.default_rng(0).random((8, 8)) / 7).astype(np.float32)
    m, sh = execute_shadowed(c.program, c.bound, {"x": x})
    gap = float(np.abs(m.buffers["p"] - sh.machine.buffers["p"]).max())
    assert gap > 0
    assert sh.rows[2].carried.abs == gap and sh.rows[2].added.abs == 0
