"""Patterns the Neuron compiler and hardware accept, which nkirun once refused (issues 26
and 27): each is a small kernel of our own reproducing the pattern of a public kernel that
ran on hardware; `check` must accept it (warnings allowed) and, where it runs, `run` must
give the NumPy result. README "Readings of the pages" and docs/diagnostics.md say why."""
from __future__ import annotations

import json

import pytest

from click.testing import CliRunner

from nkirun.cli import cli
from tests.kernel.test_kernel_contract import write


def check_json(path: str, *args: str) -> dict:
    r = CliRunner().invoke(cli, ["check", path, *args, "--format", "json"])
    assert "Traceback" not in r.output, r.output
    return json.loads(r.stdout)


def codes(doc: dict, severity: str = "error") -> list[str]:
    return [d["code"] for d in doc["diagnostics"] if d["severity"] == severity]


UNUSED_IMPORT = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki import trace


@nki.jit
def kernel(x):
    from neuronxcc.nki import trace
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_an_unused_imported_nki_name_is_accepted(tmp_path):
    """NKIBench's kernels all import `trace` and never use it (E601 refused ten of them)."""
    doc = check_json(write(tmp_path, UNUSED_IMPORT) + "::kernel", "--shape", "x=float32[128,4]")
    assert doc["ok"], doc


def test_using_an_imported_unprovided_name_is_e601_where_it_is_used(tmp_path):
    path = write(tmp_path, UNUSED_IMPORT.replace("    return out", "    trace(out)\n    return out"))
    doc = check_json(path + "::kernel", "--shape", "x=float32[128,4]")
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "E601"]
    assert d["line"] == 14 and "nki.trace" in d["message"] and "imported at line 9" in d["message"]


KEEP_ALL = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def keep_all(x):
    n = x.shape[0] // 128
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tiles = []
    for i in range(n):
        t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=BUFFER, name=f"blk{i}")
        nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128, :])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        tiles.append(t)
    for i in range(n):
        nisa.tensor_scalar(dst=tiles[i], data=tiles[i], op0=nl.add, operand0=1.0)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=tiles[i])
    return out
"""


def test_a_live_set_over_sbuf_is_spilled_not_refused(tmp_path):
    """Four 96 KiB row blocks live at once (the fused-Mamba and NKIBench pattern the
    compiler spilled): W047 names the peak and the tiles; the kernel is accepted and runs."""
    import numpy as np

    import nkirun
    from tests.kernel.test_kernel_contract import nkirun_kernel
    path = write(tmp_path, KEEP_ALL.replace("BUFFER", "nl.sbuf"))
    doc = check_json(path + "::keep_all", "--shape", "x=float32[512,24576]")
    assert doc["ok"] and codes(doc, "warning") == ["W047"], doc
    (w,) = doc["diagnostics"]
    assert "`blk0` (line 12, 98,304 B)" in w["message"] and "393,216 bytes" in w["message"]
    x = np.arange(512 * 24576, dtype=np.float32).reshape(512, 24576)
    np.testing.assert_array_equal(nkirun.simulate(nkirun_kernel(path, "keep_all"))(x), 2 * x + 1)


def test_cost_books_the_spill_traffic_on_the_dma_engines(tmp_path):
    import nkirun
    from tests.kernel.test_kernel_contract import nkirun_kernel
    import numpy as np
    path = write(tmp_path, KEEP_ALL.replace("BUFFER", "nl.sbuf"))
    x = np.zeros((512, 24576), np.float32)
    spilled = nkirun.cost(nkirun_kernel(path, "keep_all"), x)
    assert spilled.spills["save_bytes"] == spilled.spills["reload_bytes"] == 2 * 128 * 98_304
    assert any("spills:" in n for n in spilled.notes())
    assert any(s.wait_kind == "spill" for s in spilled.slots)
    fits = nkirun.cost(nkirun_kernel(path, "keep_all"), x[:256])  # two blocks: no spill
    assert not fits.spills and spilled.total_ns > 2 * fits.total_ns


def test_a_kernel_that_places_its_tiles_itself_gets_e041(tmp_path):
    """Direct allocation (nki.compiler allocators): nothing spills, so over capacity is an
    error, as before."""
    src = KEEP_ALL.replace("BUFFER", "ncc.sbuf.mod_alloc(base_addr=0)").replace(
        "import nki\n", "import nki\nimport nki.compiler as ncc\n", 1)
    doc = check_json(write(tmp_path, src) + "::keep_all", "--shape", "x=float32[512,24576]")
    assert codes(doc) == ["E041"] and "places its tensors itself" in doc["diagnostics"][0]["message"]


EMPTY = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x, n_extra=0):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    extra = t[:, 4:4 + n_extra]  # a tail of no column when n_extra is 0
    if n_extra:
        nisa.dma_copy(dst=out[:, 0:n_extra], src=extra)
    nisa.dma_copy(dst=out, src=t)
    USE
    return out
"""


def test_an_empty_slice_nothing_reads_is_accepted(tmp_path):
    doc = check_json(write(tmp_path, EMPTY.replace("USE", "")) + "::kernel",
                     "--shape", "x=float32[128,4]")
    assert doc["ok"], doc


def test_an_instruction_on_an_empty_slice_is_e603_where_it_is_used(tmp_path):
    path = write(tmp_path, EMPTY.replace("USE", "nisa.dma_copy(dst=out[:, 0:0], src=extra)"))
    doc = check_json(path + "::kernel", "--shape", "x=float32[128,4]")
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "E603"]
    assert d["line"] == 15 and "selects nothing" in d["message"]


GATHER_RESHAPED = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gather_blocks(cache, blocks):
    # cache [64, 4, 16] read as 128 blocks of 32 (a reshape that halves its rows, as a
    # block KV cache is re-blocked); blocks [128, 6]: per fold, one block id per partition
    out = nl.ndarray((128, 64), dtype=cache.dtype, buffer=nl.shared_hbm)
    ids = nl.ndarray((128, 6), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ids, src=blocks)
    flat = cache.reshape((128, 32))
    rows = nl.ndarray((128, 64), dtype=cache.dtype, buffer=nl.sbuf)
    for f in range(2):
        cur = ids.ap([[6, 128], [1, 1]], offset=3 * f + 1)  # column 3f+1 of the table
        nisa.dma_copy(dst=rows[:, nl.ds(32 * f, 32)],
                      src=flat.ap([[32, 128], [1, 32]], offset=0, vector_offset=cur,
                                  indirect_dim=0))
    nisa.dma_copy(dst=out, src=rows)
    return out
"""


def test_a_runtime_index_over_a_reshape_of_the_tensor_is_accepted_and_gathers(tmp_path):
    """The index steps by a row of the reshape (32 elements), which is no dim of the
    declared [64, 4, 16] tensor: the DMA scales an index by any stride (nki-library's
    attention_tkg gathers KV blocks so; E604 refused it)."""
    import numpy as np

    import nkirun
    from tests.kernel.test_kernel_contract import nkirun_kernel
    path = write(tmp_path, GATHER_RESHAPED)
    doc = check_json(path + "::gather_blocks", "--shape", "cache=float32[64,4,16]",
                     "--shape", "blocks=int32[128,6]")
    assert doc["ok"], doc
    rng = np.random.default_rng(26)
    cache = rng.standard_normal((64, 4, 16)).astype(np.float32)
    blocks = rng.integers(0, 128, (128, 6)).astype(np.int32)
    got = nkirun.simulate(nkirun_kernel(path, "gather_blocks"))(cache, blocks)
    flat = cache.reshape(128, 32)
    np.testing.assert_array_equal(got, np.concatenate([flat[blocks[:, 1]], flat[blocks[:, 4]]], 1))


def test_the_index_stride_round_trips_through_the_text_form():
    from nkirun.views.access import parse_ap_text
    v = parse_ap_text("h.ap([[32,128],[1,32]],vector_offset=i,indirect_stride=32)", None,
                      lambda text, loc: text)
    assert v.index.indirect_stride == 32
    assert str(v.index) == ".ap([[32,128],[1,32]],vector_offset=i,indirect_stride=32)"


TRANSPOSE_PSUM = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.tensor_copy(dst=p, src=t)
    TRANSPOSE
    nisa.dma_copy(dst=out, src=tt)
    return out
"""


@pytest.mark.parametrize("call,warns", [
    ("tt = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.sbuf)\n"
     "    nisa.nc_transpose(dst=tt, data=p)", ["W264"]),
    ("tt = nl.copy(nl.transpose(p))", []),  # the language op copies PSUM into SBUF first
])
def test_a_transpose_wider_than_32_is_the_tensor_engines(tmp_path, call, warns):
    """A 128 x 64 transpose with engine unknown: the page says the compiler picks the
    engine by shape, so it is the Tensor engine's (the Vector engine's limit, 32 x 32,
    refused it with E260); where its buffers are not SBUF -> PSUM the compiler adds copies
    (W264)."""
    import numpy as np

    import nkirun
    from tests.kernel.test_kernel_contract import nkirun_kernel
    path = write(tmp_path, TRANSPOSE_PSUM.replace("TRANSPOSE", call))
    doc = check_json(path + "::kernel", "--shape", "x=float32[128,64]")
    assert doc["ok"] and codes(doc, "warning") == warns, doc
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    np.testing.assert_array_equal(nkirun.simulate(nkirun_kernel(path, "kernel"))(x), x.T)


PSUM_ALL_LIVE = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(a, b):
    out = nl.ndarray((128, 10 * 512), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    bt = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=a)
    nisa.dma_copy(dst=bt, src=b)
    accs = []
    for i in range(10):  # ten 2 KiB accumulators live at once: PSUM has 16 KiB
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=at, moving=bt)
        accs.append(acc)
    for i in range(10):
        o = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=accs[i])
        nisa.dma_copy(dst=out[:, i * 512:(i + 1) * 512], src=o)
    return out
"""


def test_a_psum_live_set_over_capacity_is_spilled_to_sbuf(tmp_path):
    """The memory-hierarchy page: the compiler spills "any on-chip memory" to the next
    tier; for PSUM that is SBUF (attention kernels with many PSUM tiles ran so)."""
    doc = check_json(write(tmp_path, PSUM_ALL_LIVE) + "::kernel",
                     "--shape", "a=float32[128,128]", "--shape", "b=float32[128,512]")
    assert doc["ok"] and codes(doc, "warning") == ["W047"], doc
    assert "live PSUM tensors need 20,480 bytes" in doc["diagnostics"][0]["message"]
    assert "spills to SBUF" in doc["diagnostics"][0]["message"]
