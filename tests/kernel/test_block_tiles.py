"""A legacy block buffer's tiles made from the call site's allocation plan
(speed.BLOCK_TILES, source/kernel/tile_ops.py block_tiles) are the tiles its plain
definition (block_tiles_plain: an nl.ndarray per tile) makes: the same names, in the same
order, so that later tiles from the same line keep theirs; every TensorRec slot; and the
same traced program, tensors, diagnostics and run results; across buffers in SBUF and
PSUM, lazily filled ones, a buffer of one block, one allocated in a loop (its plan found),
a named one, and an allocation plan table that is full (no plan: the plain path)."""
from __future__ import annotations

import numpy as np
import pytest

from nkirun import speed
from nkirun.api_kernel import check_traced, run_traced, trace_call
from nkirun.source.kernel import call_forms, tile_ops, unsupported
from repo_paths import load_module
from trace_facts import assert_same_outcome, instruction_facts

KERNEL = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def blocks(a, n):
    out = nl.ndarray((4, 64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    one = nl.ndarray((1, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    named = nl.ndarray((2, 2, nl.par_dim(128), 64), dtype=nl.float32, name="named",
                       buffer=nl.sbuf)
    acc = nl.zeros((4, nl.par_dim(64), 64), dtype=nl.float32, buffer=nl.psum)
    ip, im, jf = nl.arange(128)[:, None], nl.arange(64)[:, None], nl.arange(64)[None, :]
    one[0, ip, jf] = nl.load(a[0, ip, jf])
    for i in nl.affine_range(n):
        t = nl.ndarray((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
        t = nl.ndarray((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(4):
            t[j, ip, jf] = nl.load(a[j, ip, jf])
            named[j // 2, j % 2, ip, jf] = nl.multiply(t[j, ip, jf], one[0, ip, jf])
            acc[j, im, jf] += nisa.nc_matmul(named[j // 2, j % 2, ip, jf], t[j, ip, jf])
    for j in nl.affine_range(4):
        res = nl.copy(acc[j, im, jf])
        nl.store(out[j, im, jf], value=res)
    return out
'''


@pytest.fixture
def kernel(tmp_path):
    (tmp_path / "block_tiles_kernel.py").write_text(KERNEL)
    return load_module(tmp_path / "block_tiles_kernel.py", "block_tiles_kernel").blocks


A = (np.arange(4 * 128 * 64, dtype=np.float32).reshape(4, 128, 64) % 7) / 7




def _slots(v):
    """Everything of a tile's handle and TensorRec (tests/kernel/test_fast_trace.py's
    comparison of rec_of_kind with TensorRec)."""
    r = v._rec
    return (v._dtype, v._ir, v._lk, v._v is r.whole, r.name, r.shape, r.dtype, r.buffer,
            r.loc, r.init, r.declared, r.core, r.compared, r.on_chip, r.strides, r.layout,
            r.decl.name, r.decl.shape, r.decl.dtype, r.decl.on_chip, r.whole.decl is r.decl,
            r.whole.shape, r.whole.strides, r.whole.offset, r.whole.dtype, r.whole.basic,
            r.whole.tail, r.whole.indirect)


@pytest.fixture
def made(monkeypatch):
    """The tiles each block buffer was given, and how many the plain twin made (the
    wrappers below count as nkirun's frames: a tile's location is the kernel's line)."""
    seen = {"tiles": [], "plain": 0}
    fast, plain = tile_ops.block_tiles, tile_ops.block_tiles_plain
    inside = unsupported._is_inside
    monkeypatch.setattr(unsupported, "_TABLES", {})
    monkeypatch.setattr(unsupported, "_is_inside",
                        lambda code: inside(code) or code.co_filename == __file__)

    def counted_plain(count, *args):
        seen["plain"] += count
        return plain(count, *args)

    def kept(*args):
        tiles = fast(*args)
        seen["tiles"].append([_slots(t) for t in tiles])
        return tiles
    monkeypatch.setattr(tile_ops, "block_tiles_plain", counted_plain)
    monkeypatch.setattr(tile_ops, "block_tiles", kept)
    return seen


def _traced(kernel, monkeypatch, made, on: bool, n: int = 3):
    monkeypatch.setattr(speed, "BLOCK_TILES", on)
    made["tiles"].clear()
    made["plain"] = 0
    traced = trace_call(kernel, (A, n))
    bound, diags = check_traced(traced)
    results = [a.tobytes() for a in run_traced(traced, bound)]
    return traced, diags, results, list(made["tiles"]), made["plain"]


def test_block_tiles_from_plans_equal_the_plain_tiles(kernel, monkeypatch, made):
    fast, fast_diags, fast_results, fast_tiles, fast_plain = \
        _traced(kernel, monkeypatch, made, True)
    plain, plain_diags, plain_results, plain_tiles, plain_plain = \
        _traced(kernel, monkeypatch, made, False)
    # one (1), named (4), acc (4), t twice per trip (4 each): the plain twin makes every
    # tile after each buffer's first; from plans, only the one-block buffer has none
    assert plain_plain == 3 + 3 + 3 * 2 * 3
    assert fast_plain == 0
    assert fast_tiles == plain_tiles
    assert [len(tiles) for tiles in fast_tiles] == [1, 4, 4] + [4] * 6
    names = [s[4] for tiles in fast_tiles for s in tiles]
    assert len(set(names)) == len(names)  # (each tile's own name: t, t_1, ... t_23)
    assert_same_outcome((fast, fast_diags, fast_results), (plain, plain_diags, plain_results))


@pytest.mark.parametrize("forms_max", [0, 2])
def test_a_full_plan_table(kernel, monkeypatch, made, forms_max):
    monkeypatch.setattr(call_forms, "FORMS_MAX", forms_max)
    fast, _, fast_results, fast_tiles, fast_plain = _traced(kernel, monkeypatch, made, True)
    plain, _, plain_results, plain_tiles, plain_plain = \
        _traced(kernel, monkeypatch, made, False)
    assert fast_tiles == plain_tiles
    assert instruction_facts(fast.program) == instruction_facts(plain.program)
    assert fast.program.tensors == plain.program.tensors
    assert fast_results == plain_results
    if forms_max == 0:  # no plan kept at all: every tile by the plain twin
        assert fast_plain == plain_plain
    else:  # the first two sites' plans kept (one, named): the rest by the plain twin
        assert fast_plain == plain_plain - 3
