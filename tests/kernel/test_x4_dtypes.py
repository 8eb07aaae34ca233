"""The MX x4 `nl` dtypes (`nl.float8_e4m3fn_x4`, `nl.float8_e5m2_x4`, `nl.float4_e2m1fn_x4`)
in their two uses: NumPy makes x4 arrays from them (`np.zeros(shape, dtype=nl.X_x4)`, tagged
so that simulate reads them as x4), and a neuron_dtypes-style helper recognises them
(`static_cast(x, nl.float8_e4m3fn_x4)`, which knows an x4 type by its name or by a NumPy
dtype tagged "neuron_dtype"). Neither may make an x4 dtype equal a plain uint32 / uint16
or another x4 dtype in a kernel's comparisons, dicts or messages."""
from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest

import nkirun
from nkirun.diagnostics import NkirunError
from nkirun.hw import dtypes as dt
from nkirun.source.kernel import consts
from tests.kernel.test_kernel_contract import nkirun_kernel, write

import nki  # noqa: E402  (after nkirun)
import nki.language as nl  # noqa: E402

X4 = {"float8_e4m3fn_x4": np.uint32, "float8_e5m2_x4": np.uint32, "float4_e2m1fn_x4": np.uint16}


# A neuron_dtypes-style cast, written here: it knows an x4 type by its name (NKI types
# dtypes as str) or by a NumPy dtype whose metadata carries "neuron_dtype"; anything else
# is a NumPy dtype, cast by value. (fp8 x4 only: four 1-byte codes per uint32.)
def _x4_name(dtype):
    if isinstance(dtype, str):
        return str.__str__(dtype) if str.__str__(dtype) in X4 else None
    if isinstance(dtype, np.dtype):
        return (dtype.metadata or {}).get("neuron_dtype")
    return None


_FP8 = {"float8_e4m3fn_x4": ml_dtypes.float8_e4m3fn, "float8_e5m2_x4": ml_dtypes.float8_e5m2}


def static_cast(x, dtype):
    x = np.asarray(x)
    src, dst = _x4_name(x.dtype), _x4_name(dtype)
    if dst:
        codes = np.ascontiguousarray(x.astype(np.float32).astype(_FP8[dst]))
        return codes.view(np.uint32).view(np.dtype(np.uint32, metadata={"neuron_dtype": dst}))
    if src:
        values = np.ascontiguousarray(x).view(np.uint32).view(_FP8[src])
        return values.astype(np.float32).astype(dtype)
    return x.astype(dtype)


@pytest.mark.parametrize("name", sorted(X4))
def test_numpy_makes_a_tagged_x4_array_from_an_nl_x4_dtype(name):
    x4 = getattr(nl, name)
    for a in (np.zeros((4, 3), dtype=x4), np.empty(2, x4), np.arange(3).astype(x4),
              np.zeros(2, np.dtype(np.uint32)).view(x4) if X4[name] is np.uint32 else
              np.zeros(2, np.uint16).view(x4)):
        assert a.dtype == X4[name] and a.dtype.itemsize == x4.itemsize
        assert a.dtype.metadata == {"nki_dtype": name, "neuron_dtype": name}
        assert dt.from_numpy(a.dtype).name == name and consts.to_dtype(a.dtype) is x4
        assert pickle.loads(pickle.dumps(a)).dtype.metadata == a.dtype.metadata
    assert np.dtype(x4).metadata["neuron_dtype"] == name and np.dtype(name).metadata
    assert np.zeros(2, dtype=nl.uint32).dtype.metadata is None  # plain types stay plain
    assert np.zeros(2, dtype=nl.uint16).dtype.metadata is None


def test_a_neuron_dtypes_style_cast_recognises_the_nl_x4_dtypes():
    x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16)
    packed = static_cast(x, nl.float8_e4m3fn_x4)  # (the qkv MX golden's call)
    assert packed.shape == (4, 4) and packed.dtype.metadata == {"neuron_dtype": "float8_e4m3fn_x4"}
    expect = x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    assert np.array_equal(static_cast(packed, np.float32), expect)
    # an array made with nkirun's dtype is x4 to the helper too, and the same bits
    made = np.zeros((4, 4), dtype=nl.float8_e4m3fn_x4)
    made[:] = packed
    assert _x4_name(made.dtype) == "float8_e4m3fn_x4"
    assert np.array_equal(static_cast(made, np.float32), expect)
    e5 = static_cast(x, nl.float8_e5m2_x4)
    assert np.array_equal(static_cast(e5, np.float32),
                          x.astype(ml_dtypes.float8_e5m2).astype(np.float32))
    assert _x4_name(nl.float4_e2m1fn_x4) == "float4_e2m1fn_x4" and _x4_name(nl.uint32) is None


def test_x4_dtypes_compare_and_hash_as_their_names_only():
    e4, e5, f4 = nl.float8_e4m3fn_x4, nl.float8_e5m2_x4, nl.float4_e2m1fn_x4
    assert e4 == "float8_e4m3fn_x4" and "float8_e4m3fn_x4" == e4 and hash(e4) == hash(str(e4))
    for a, b in ((e4, e5), (e4, nl.uint32), (e5, nl.uint32), (f4, nl.uint16), (e4, f4)):
        assert a != b and b != a and not (a == b) and not (b == a)
    assert nl.uint16 not in (f4, e4) and nl.uint32 not in (f4, e4) and e4 in (f4, e4)
    assert len({e4: 1, e5: 2, f4: 3, nl.uint32: 4, nl.uint16: 5}) == 5
    assert str(e4) == "float8_e4m3fn_x4" and repr(f4) == "nl.float4_e2m1fn_x4"
    assert f"{e5}" == "float8_e5m2_x4"
    for d in (e4, e5, f4):
        back = pickle.loads(pickle.dumps(d))
        assert back == d and type(back) is type(d) and back.nkirun is d.nkirun
        assert isinstance(d, nl.DType) and isinstance(d, nki.dtype) and isinstance(d, str)
        assert consts.to_dtype(str(d)) is d and consts.to_dtype(d) is d


def test_an_x4_nl_dtype_against_a_numpy_dtype_reads_the_tag():
    e4, e5 = nl.float8_e4m3fn_x4, nl.float8_e5m2_x4
    tagged = np.zeros(1, dtype=e4).dtype
    other_key = np.dtype(np.uint32, metadata={"neuron_dtype": "float8_e5m2_x4"})
    assert e4 == tagged and not (e4 != tagged) and e5 != tagged and e5 == other_key
    assert e4 != np.dtype(np.uint32) and nl.float4_e2m1fn_x4 != np.dtype(np.uint16)
    # a plain nl dtype keeps str's comparison (fast: kernels compare dtypes all the time),
    # so against an x4 array's dtype it is NumPy's comparison, on either side
    assert (nl.uint32 == tagged) == (tagged == nl.uint32) == (tagged == np.uint32)
    assert type(nl.uint32).__eq__ is str.__eq__
    # untagged NumPy dtypes compare as before (NumPy reads the name)
    assert nl.uint32 == np.dtype(np.uint32) and nl.float32 == np.dtype(np.float32)
    assert nl.float32 != np.dtype(np.float64) and nl.bfloat16 == np.dtype(ml_dtypes.bfloat16)


ROUTE = """\
import nki
import nki.isa as nisa
import nki.language as nl

NAMES = {nl.float8_e4m3fn_x4: "e4m3", nl.float8_e5m2_x4: "e5m2", nl.float4_e2m1fn_x4: "fp4",
         nl.uint32: "u32", nl.uint16: "u16"}
SEEN = []


@nki.jit
def route(w):
    mx = w.dtype in (nl.float4_e2m1fn_x4, nl.float8_e4m3fn_x4)  # nki-library moe_tkg's test
    SEEN.append((NAMES[w.dtype], mx, w.dtype == nl.uint32, w.dtype == nl.uint16, str(w.dtype)))
    t = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.sbuf)
    out = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=t, src=w)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def compute(w):
    t = nl.ndarray(w.shape, dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=w)
    r = nl.ndarray(w.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=r, op=nl.copy, data=t)
    out = nl.ndarray(w.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out
"""


def _module(path):
    from repo_paths import load_module
    return load_module(path, "x4_route")


def test_a_kernel_sees_x4_arrays_as_their_x4_dtype_and_plain_ones_as_plain(tmp_path):
    module = _module(write(tmp_path, ROUTE, "x4_route.py"))
    route, seen = module.route, module.SEEN
    rng = np.random.default_rng(7)
    cases = [("float8_e4m3fn_x4", ("e4m3", True, False, False)),
             ("float8_e5m2_x4", ("e5m2", False, False, False)),
             ("float4_e2m1fn_x4", ("fp4", True, False, False)),
             ("uint32", ("u32", False, True, False)), ("uint16", ("u16", False, False, True))]
    for name, expect in cases:
        a = np.zeros((128, 4), dtype=getattr(nl, name))
        a[:] = rng.integers(0, 2 ** 15, a.shape)
        seen.clear()
        out = nkirun.simulate(route)(a)
        assert seen == [expect + (name,)]
        assert out.dtype == a.dtype and np.array_equal(out, a)


def test_a_refusal_of_an_x4_tile_names_its_x4_dtype(tmp_path):
    compute = nkirun_kernel(write(tmp_path, ROUTE, "x4_compute.py"), "compute")
    with pytest.raises(NkirunError) as e:
        nkirun.simulate(compute, target="trn3")(np.zeros((128, 4), dtype=nl.float8_e4m3fn_x4))
    assert [d.code for d in e.value.diagnostics] == ["E490"]
    assert "float8_e4m3fn_x4" in e.value.diagnostics[0].message
    assert "uint32" not in e.value.diagnostics[0].message
