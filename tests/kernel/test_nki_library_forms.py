"""Forms nki-library (aws-neuron/nki-library) kernels use that the NKI 0.6 docs spell
differently: enum members passed as their integer values, and the enums imported from
`nki.isa.constants`."""
from __future__ import annotations

import numpy as np

import nkirun
from tests.kernel.test_kernel_contract import invoke, nkirun_kernel, write

INT_ENUMS = """\
import nki
import nki.isa as nisa
import nki.language as nl

STATIC_DMA = 3  # dge_mode.none's value, as nki-library spells it


@nki.jit
def copy_twice(x):
    staged = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=staged, src=x, dge_mode=STATIC_DMA, oob_mode=0)
    doubled = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(doubled, staged, nl.multiply, 2.0, engine=5)
    total = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    act = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=act, op=nl.copy, data=doubled, reduce_op=nl.add, reduce_res=total,
                    reduce_cmd=3)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=doubled, dge_mode=2)
    sums = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=sums, src=total)
    return out, sums
"""


def test_integer_enum_values_mean_their_members(tmp_path):
    k = nkirun_kernel(write(tmp_path, INT_ENUMS), "copy_twice")
    x = np.random.default_rng(3).standard_normal((37, 5)).astype(np.float32)
    out, sums = nkirun.simulate(k)(x)
    np.testing.assert_array_equal(out, 2 * x)
    np.testing.assert_allclose(sums[:, 0], (2 * x).sum(1), rtol=1e-5)


def test_integer_that_is_no_member_is_refused_at_its_line(tmp_path):
    path = write(tmp_path, INT_ENUMS.replace("dge_mode=2)", "dge_mode=7)"))
    r = invoke("check", f"{path}::copy_twice", "--shape", "x=float32[37,5]")
    assert r.exit_code == 1
    assert "E025" in r.output and "dge_mode" in r.output and ":19:" in r.output
    assert "hwdge" in r.output  # the allowed members are named


CONSTANTS = """\
import nki
import nki.isa as nisa
import nki.language as nl
from nki.isa.constants import dge_mode, oob_mode
from nki.isa import constants as isa_constants
import neuronxcc.nki.isa.constants as old_constants
import neuronxcc.nki.typing as nt


@nki.jit
def copy(x: nt.tensor):
    staged = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=staged, src=x, dge_mode=dge_mode.none, oob_mode=oob_mode.error)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=staged, dge_mode=isa_constants.dge_mode.hwdge,
                  oob_mode=old_constants.oob_mode.error)
    return out
"""


def test_enums_import_from_nki_isa_constants(tmp_path):
    k = nkirun_kernel(write(tmp_path, CONSTANTS), "copy")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(nkirun.simulate(k)(x), x)


def test_constants_are_the_same_members_as_nki_isa():
    from nkirun.source.kernel.modules import modules
    isa, constants = modules()["nki.isa"], modules()["nki.isa.constants"]
    for enum in ("dge_mode", "oob_mode", "engine", "reduce_cmd", "matmul_perf_mode"):
        assert getattr(constants, enum) is getattr(isa, enum)



ZERO_STEP_DST = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def square_sums(x):
    data = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=data, src=x)
    sums = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    last = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation_reduce(dst=last.ap(pattern=[[1, x.shape[0]], [0, x.shape[1]]]),
                           op=nl.square, data=data, reduce_op=nl.add, reduce_res=sums)
    out = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=sums)
    last_out = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=last_out, src=last)
    return out, last_out
"""


def test_activation_reduce_dst_may_have_zero_steps(tmp_path):
    # nki-library's qkv_cte (fused RMSNorm) gives activation_reduce a one-column dst it
    # never reads; each element keeps the last value streamed to it
    k = nkirun_kernel(write(tmp_path, ZERO_STEP_DST), "square_sums")
    x = np.random.default_rng(4).standard_normal((37, 9)).astype(np.float32)
    sums, last = nkirun.simulate(k)(x)
    np.testing.assert_allclose(sums[:, 0], (x * x).sum(1), rtol=1e-5)
    np.testing.assert_array_equal(last[:, 0], x[:, -1] * x[:, -1])


def test_activation_reduce_dst_zero_steps_under_shadow(tmp_path):
    path = write(tmp_path, ZERO_STEP_DST)
    np.save(tmp_path / "x.npy", np.ones((16, 8), np.float32))
    r = invoke("run", f"{path}::square_sums", "--input", f"x={tmp_path / 'x.npy'}",
               "--out", tmp_path / "o", "--shadow")
    assert r.exit_code == 0, r.output


def test_other_zero_step_dst_is_refused_with_the_workaround(tmp_path):
    source = ZERO_STEP_DST.replace(
        "nisa.activation_reduce(dst=last.ap(", "nisa.tensor_copy(dst=last.ap(").replace(
        "op=nl.square, data=data, reduce_op=nl.add, reduce_res=sums)", "src=data)")
    path = write(tmp_path, source)
    r = invoke("check", f"{path}::square_sums", "--shape", "x=float32[16,8]")
    assert r.exit_code == 1 and "E039" in r.output and ":12:" in r.output
    assert "scratch tile of the data's shape" in r.output


IDENTITY_LNC2 = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def transpose_per_core(x):
    core = nl.program_id(0)
    rows = x.shape[0] // 2
    data = nl.ndarray((rows, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=data, src=x[core * rows:(core + 1) * rows, :])
    identity = nl.shared_identity_matrix(rows, dtype=nl.float32)
    flipped = nl.ndarray((x.shape[1], rows), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=flipped, stationary=data, moving=identity)
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    staged = nl.ndarray((x.shape[1], rows), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=staged, src=flipped)
    nisa.dma_copy(dst=out[:, core * rows:(core + 1) * rows], src=staged)
    return out
"""


def test_shared_identity_matrix_is_each_cores_own_under_lnc2(tmp_path):
    # nki-library's bwmm_shard_on_I transposes through nl.shared_identity_matrix on both
    # cores: each core gets its own SBUF identity (an SBUF tile belongs to one core)
    k = nkirun_kernel(write(tmp_path, IDENTITY_LNC2), "transpose_per_core")
    x = np.random.default_rng(6).standard_normal((64, 24)).astype(np.float32)
    np.testing.assert_array_equal(nkirun.simulate(k, lnc=2)(x), x.T)
