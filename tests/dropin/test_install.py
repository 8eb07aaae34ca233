"""nkirun.install(): `import nki` and the `nki_cpu_simulator` package nki-library's harness
imports resolve to nkirun's modules, with NKI 0.6's simulator surface (cpu_simulate,
nki.dtype, nki.language.dtypes, nki.builtin, nl.range, x4 dtypes NumPy accepts)."""
from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import nkirun
from nkirun.dropin import installed, uninstall
from nkirun.hw import dtypes as dt


@pytest.fixture
def dropin():
    nkirun.install()
    try:
        yield
    finally:
        uninstall()


def _kernels():
    import nki
    import nki.isa as nisa
    import nki.language as nl

    seen = {}

    @nki.jit
    def double(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out, src=t)
        seen["version"] = nisa.get_nc_version()
        return out

    @nki.jit
    def copy(a):
        seen["dtype"] = a.dtype
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        for _ in nl.range(1):
            nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
        return out
    return double, copy, seen


def test_the_harness_imports_are_nkirun_modules(dropin):
    sim = importlib.import_module("nki_cpu_simulator")
    names = ["nki", "nki.isa", "nki.isa.constants", "nki.language", "nki.language.dtypes",
             "nki.compiler", "nki.typing", "nki.builtin"]
    for name in names:
        assert importlib.import_module("nki_cpu_simulator." + name) is sys.modules[name]
    assert sim.nki is sys.modules["nki"] and installed()
    import nki
    import nki.dtype as nt
    import nki.language as nl
    assert nki.language.dtypes is nt and nt.float8_e4m3 == "float8_e4m3"
    assert isinstance(nl.bfloat16, nki.dtype) and not isinstance("bfloat16", nki.dtype)
    assert np.zeros(2, dtype=nt.float8_e4m3).dtype == dt.DTYPES["float8_e4m3"].np_type
    assert np.dtype(nl.float8_e4m3fn_x4) == np.uint32
    assert np.dtype(nl.float4_e2m1fn_x4) == np.uint16
    assert list(nl.range(2, 7, 2)) == [2, 4, 6]


def test_an_array_made_with_an_x4_dtype_is_an_x4_tensor(dropin):
    # nki-library's MX tests make their inputs as np.zeros(shape, dtype=nl.float4_e2m1fn_x4)
    # and the kernel branches on `x.dtype == nl.float4_e2m1fn_x4`: the array must carry it
    import nki
    import nki.isa as nisa
    import nki.language as nl
    for name, storage in (("float4_e2m1fn_x4", np.uint16), ("float8_e4m3fn_x4", np.uint32),
                          ("float8_e5m2_x4", np.uint32)):
        x4 = getattr(nl, name)
        assert x4 == name and name == x4 and hash(x4) == hash(name) and str(x4) == name
        assert isinstance(x4, nki.dtype) and x4.itemsize == np.dtype(storage).itemsize
        a = np.zeros((4, 3), dtype=x4)
        assert a.dtype == storage and dt.from_numpy(a.dtype).name == name
        a[:] = np.arange(12, dtype=storage).reshape(4, 3)
        seen = []

        def k(x):
            seen.append((x.dtype == x4, str(x.dtype)))
            t = nl.ndarray(x.shape, dtype=x4, buffer=nl.sbuf)
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=t, src=x)
            nisa.dma_copy(dst=out, src=t)
            return out

        out = nkirun.simulate(k)(a)
        assert seen == [(True, name)]
        assert out.view(storage).tolist() == a.view(storage).tolist()
        assert np.zeros(2, dtype=nl.uint32).dtype.metadata is None  # (plain types stay plain)


def test_uninstall_puts_back_what_was_there():
    before = object()
    sys.modules["nki.isa"], saved = before, sys.modules.get("nki.isa")
    try:
        nkirun.install()
        assert sys.modules["nki.isa"] is not before and installed()
        uninstall()
        assert sys.modules["nki.isa"] is before and not installed()
        assert "nki_cpu_simulator" not in sys.modules
    finally:
        uninstall()
        if saved is None:
            sys.modules.pop("nki.isa", None)
        else:
            sys.modules["nki.isa"] = saved


def test_cpu_simulate_runs_one_or_two_cores_on_the_harness_target(dropin, monkeypatch):
    import nki
    double, _, seen = _kernels()
    x = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    for lnc in (1, 2):
        np.testing.assert_array_equal(nki.cpu_simulate(double)[lnc](a=x), 2 * x)
    assert seen["version"] == nki.isa.nc_version.gen3
    monkeypatch.setenv("NKI_NC_VERSION", "gen4")
    np.testing.assert_array_equal(nki.cpu_simulate(double)(x), 2 * x)
    assert seen["version"] == nki.isa.nc_version.gen4


def test_install_target_wins_over_the_harness_env(monkeypatch):
    monkeypatch.setenv("NKI_NC_VERSION", "gen3")
    nkirun.install(target="trn3")
    try:
        import nki
        double, _, seen = _kernels()
        nki.cpu_simulate(double)[1](a=np.ones((2, 2), np.float32))
        assert seen["version"] == nki.isa.nc_version.gen4
        nkirun.simulate(double)(np.ones((2, 2), np.float32))  # nkirun.simulate too
        assert seen["version"] == nki.isa.nc_version.gen4
    finally:
        uninstall()
    with pytest.raises(ValueError, match="unknown target 'trn9'"):
        nkirun.install(target="trn9")


def test_a_tagged_x4_array_is_an_x4_tensor(dropin):
    import nki
    import nki.language as nl
    _, copy, seen = _kernels()
    bits = np.arange(16, dtype=np.uint32).reshape(4, 4) * 0x01010101
    out = nkirun.simulate(copy, target="trn3")(bits.astype(dt.numpy_dtype("float8_e4m3fn_x4")))
    assert seen["dtype"] == nl.float8_e4m3fn_x4
    np.testing.assert_array_equal(np.asarray(out).view(np.uint32), bits)
    nki.cpu_simulate(copy)(bits)  # the same bits untagged: a uint32 tensor
    assert seen["dtype"] == nl.uint32


def test_uninitialized_reads_follow_the_install_option():
    """A kernel that copies a tile it wrote only half of to its output (nki-library's MX
    scale buffers have such unwritten partitions): E090 by default; NaN there with
    install(uninitialized="nan"), the written half exact."""
    from nkirun.diagnostics import NkirunError
    nkirun.install()
    try:
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def half(a):
            out = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t[0:2, :], src=a[0:2, :])
            nisa.dma_copy(dst=out, src=t)
            return out
        x = np.ones((4, 4), np.float32)
        with pytest.raises(NkirunError, match="E090"):
            nki.cpu_simulate(half)[1](a=x)
        nkirun.install(uninitialized="nan")
        out = nki.cpu_simulate(half)[1](a=x)
        assert (out[:2] == 1).all() and np.isnan(out[2:]).all()
        with pytest.raises(ValueError, match="unknown uninitialized 'maybe'"):
            nkirun.install(uninitialized="maybe")
    finally:
        uninstall()


def test_an_interruption_during_the_trace_is_the_callers():
    """pytest-timeout's Failed (a BaseException raised by a signal handler while the kernel
    runs) reaches the test as it is, not as the kernel's E602."""
    class Interrupted(BaseException):
        pass

    def kernel(a):
        raise Interrupted()
    with pytest.raises(Interrupted):
        nkirun.simulate(kernel)(np.ones((2, 2), np.float32))


def test_cpu_simulate_runs_the_ranks_a_collective_kernel_names_with_shared_inputs(dropin):
    # nki-library's harness passes one input dict for every rank and no rank count:
    # the ranks are those the replica group names, rank 0's result comes back
    import nki
    import nki.collectives as ncc
    import nki.isa as nisa
    import nki.language as nl
    assert importlib.import_module("nki_cpu_simulator.nki.collectives") is ncc

    @nki.jit
    def summed(a, group):
        src = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        dst = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=src, src=a)
        ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=group, op=nl.add)
        nisa.dma_copy(dst=out, src=dst)
        return out
    x = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    group = ncc.ReplicaGroup([[0, 1, 2, 3]])
    for lnc in (1, 2):  # (LNC2: each core meets the same core of the other ranks)
        np.testing.assert_array_equal(nki.cpu_simulate(summed)[lnc](a=x, group=group), 4 * x)
