"""Issue 25: a diagnostic's fix is written in the input's language, and works for the
tile at hand; E041 names the live tiles at the peak (and PSUM banks)."""
from __future__ import annotations

import numpy as np
import pytest

import nkirun

KERNEL = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    bias = nl.ndarray((1, 128), dtype=x.dtype, buffer=nl.sbuf)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    junk = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=junk, src=t)
    u = nl.ndarray((1, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=bias)
    nisa.dma_copy(dst=out, src=t)
    return out
'''
YAML = """version: 1
tensors:
  bias: {buffer: sbuf, shape: [1, 128], dtype: float32}
  u: {buffer: sbuf, shape: [1, 128], dtype: float32}
instructions:
  - tensor_copy: {dst: u, src: bias}
"""
PSUM = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ps = []
    for i in range(9):
        p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.memset(dst=p, value=0.0)
        ps.append(p)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for p in ps:
        nisa.tensor_copy(dst=t, src=p)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def _load(tmp_path, text, name):
    import importlib.util
    (tmp_path / f"{name}.py").write_text(text)
    spec = importlib.util.spec_from_file_location(name, tmp_path / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


def test_kernel_hints_are_python(tmp_path):
    diags = nkirun.check(_load(tmp_path, KERNEL, "kh"), nkirun.shape("float32", 4, 128))
    (e050,) = [d for d in diags if d.code == "E050"]
    w051 = [d for d in diags if d.code == "W051" and "`junk`" in d.message]
    assert "nisa.memset(dst=bias" in e050.hint and "file, fill or data" not in e050.hint
    assert "output: true" not in w051[0].hint and "src=junk" in w051[0].hint


def test_yaml_hints_stay_yaml():
    (d,) = [d for d in nkirun.check(YAML) if d.code == "E050"]
    assert "file, fill or data" in d.hint


def test_e041_names_the_live_tiles_and_psum_banks(tmp_path):
    """A kernel that places its tiles itself (an nki.compiler allocator) cannot spill: E041;
    where the compiler places them it spills (W047, issue 26), naming the same tiles."""
    pinned = PSUM.replace("import nki\n", "import nki\nimport nki.compiler as ncc\n", 1).replace(
        "buffer=nl.psum)", "buffer=ncc.psum.mod_alloc(base_bank=0))")
    with pytest.raises(nkirun.NkirunError) as e:
        nkirun.simulate(_load(tmp_path, pinned, "kp"))(np.zeros((128, 512), np.float32))
    (d,) = [d for d in e.value.diagnostics if d.code == "E041"]
    assert "`p` (line 12, 2,048 B)" in d.message and "and 1 more" in d.message
    assert "9 PSUM banks of 2,048 bytes, the partition has 8" in d.message
    (w,) = [d for d in nkirun.check(_load(tmp_path, PSUM, "kq"), nkirun.shape("float32", 128, 512))
            if d.code == "W047"]
    assert "`p` (line 11, 2,048 B)" in w.message and "9 PSUM banks" in w.message
