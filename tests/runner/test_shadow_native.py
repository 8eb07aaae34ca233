"""The compiled shadow comparison (runner/_shadow_native.c via runner/shadow_native.py)
against the NumPy definitions beside it: the same errors, counts, casts and reports, bit
for bit, on raw bit patterns (NaN payloads, infinities, signed zeros, subnormals, values
that round to infinity, fp8 saturation). Skipped where the module was not built, except
test_native_module_is_built_where_required, which CI runs with NKIRUN_REQUIRE_NATIVE=1
wherever a C compiler exists, so a build that silently lost the module fails."""
from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nkirun.hw.dtypes import DTYPES
from nkirun.runner import shadow_native
from nkirun.runner.shadow_bits import real_cast, rounded_f32
from nkirun.runner.shadow_metrics import errors, fmt, plain_errors
from nkirun.runner.shadow_stores import WriteStats
from tests.runner.shadow_helpers import ROOT, bf16_kernel, perturbed, rows, same_rows

BUILT = shadow_native._c is not None
needs_native = pytest.mark.skipif(not BUILT, reason="the C module was not built here")
FLOATS = ["float32", "bfloat16", "float16", "tfloat32", "float8_e4m3", "float8_e5m2"]
SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F808000,
           0x3F818000, 0x7F7F8000, 0x7F7F7FFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
           0x7FC00000, 0x7F800001, 0xFFA00001, 0x7FBFFFFF, 0x3F800000, 0xBF800000,
           0x47800000, 0x477FF000, 0x43700000, 0x43780000, 0xC3740000, 0x47600000,
           0x47700000, 0xC7680000, 0x3C800000, 0x3B000000, 0x33800000]
SPECIAL_F = np.array(SPECIAL, np.uint32).view(np.float32)
BITS = settings(max_examples=200, deadline=None, derandomize=True, database=None)


def _bits(n_max: int = 80):
    """float32 arrays from bit patterns: random words, special values (NaN payloads,
    infinities, fp8 limits), O(1) values, subnormals and the smallest normals."""
    word = st.one_of(st.integers(0, 2 ** 32 - 1), st.sampled_from(SPECIAL),
                     st.integers(0x3E000000, 0x41000000), st.integers(0, 0x00FFFFFF),
                     st.integers(0x80000000, 0x80FFFFFF))
    return st.lists(word, min_size=1, max_size=n_max).map(
        lambda w: np.array(w, np.uint64).astype(np.uint32).view(np.float32))


def _tuple(e) -> np.ndarray:
    return np.array([e.abs, e.rel, e.ulp, e.at], np.float64)


def _same(a, b) -> bool:
    return np.array_equal(_tuple(a), _tuple(b), equal_nan=True)


def test_native_module_is_built_where_required():
    """CI sets NKIRUN_REQUIRE_NATIVE=1 when a C compiler is present (.ci/run): the install
    must then have built the module, or this fails instead of the suite skipping."""
    if os.environ.get("NKIRUN_REQUIRE_NATIVE", "") in ("", "0"):
        pytest.skip("NKIRUN_REQUIRE_NATIVE is not set")
    assert BUILT, "nkirun.runner._shadow_native was not built (pip install -e . with a C compiler)"
    assert shadow_native.backend() == "native" or os.environ.get("NKIRUN_SHADOW_NUMPY")


@needs_native
@BITS
@given(_bits(), st.sampled_from(FLOATS), st.integers(0, 2 ** 32 - 1), st.booleans(),
       st.booleans())
def test_native_errors_equal_numpy_on_any_bits(ref, name, seed, flip, stored_type):
    """The run's version: the shadow cast to the output dtype (in that dtype, as the real
    run holds it, or widened to float32), nudged by ULPs, sign-flipped, or replaced by
    special values; the added error's probe as C rounds it (ROUND_BF16) or spelled out."""
    d = DTYPES[name]
    x = perturbed(ref, d, seed, flip, SPECIAL_F, 0.15)
    with np.errstate(all="ignore"):
        if stored_type and d.name != "tfloat32":
            x = real_cast(x, None, d)  # bfloat16/float16/fp8 elements, read by C as such
        probe = rounded_f32(ref, None, DTYPES["bfloat16"])
        for xs in ([x, shadow_native.ROUND_BF16], [x, probe], [x]):
            native = errors(xs, ref, d, {}, native=True)
            numpy = errors(xs, ref, d, {}, native=False)
            plain = plain_errors([probe if isinstance(v, str) else v for v in xs], ref, d)
            for a, b, c in zip(native, numpy, plain):
                assert _same(a, b) and _same(b, c), (xs, _tuple(a), _tuple(b), _tuple(c))


@needs_native
def test_native_errors_take_the_numpy_path_for_types_c_does_not_read():
    ref = np.array([1.0, 2.5, -3.0], np.float32)
    assert shadow_native.errors([ref.astype(np.float64)], ref, 7, 2.0 ** -126) is None
    got = errors([ref.astype(np.float64) + 0.25], ref, DTYPES["bfloat16"], {}, native=True)
    assert _same(got[0], plain_errors([ref + np.float32(0.25)], ref, DTYPES["bfloat16"])[0])


class _View:  # what count() needs of a Resolved
    ap = None


def _counts(stats: WriteStats) -> tuple:
    return (stats.overflow, stats.underflow, stats.fp8_saturated, stats.nan_written,
            stats.nan_born, stats.store_abs)


@needs_native
@BITS
@given(_bits(), st.sampled_from(FLOATS), st.sampled_from([None] + FLOATS), st.booleans())
def test_native_store_counts_equal_numpy(pre, dst, out, masked):
    """WriteStats.count with C's one pass against the NumPy passes: overflow, underflow,
    fp8 saturation, NaNs, the loss; whole stores and masked ones."""
    dst, out = DTYPES[dst], None if out is None else DTYPES[out]
    mask = (np.arange(pre.size) % 3 != 1) if masked else None
    got = []
    for native in (True, False):
        with np.errstate(all="ignore"):
            stats = WriteStats(pool={}, native=native, inputs=[pre])
            stats.count(_View(), pre, real_cast(pre, out, dst), out, dst, mask)
        got.append(_counts(stats))
    assert np.array_equal(np.array(got[0], float), np.array(got[1], float), equal_nan=True), got


@needs_native
@BITS
@given(_bits(), st.booleans())
def test_fused_bfloat16_store_is_ml_dtypes_cast_and_its_counts(pre, into_fp8_limit):
    """store_bf16: the bits ml_dtypes' cast gives (NaN included: the quiet NaN with the
    sign kept) and the counts of the cast it did."""
    limit = 240.0 if into_fp8_limit else np.inf
    post, counts = shadow_native.store_bf16(pre, limit)
    with np.errstate(all="ignore"):
        want = pre.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(post.view(np.uint16), want.view(np.uint16))
    again = shadow_native.store(pre, want, limit)
    assert np.array_equal(np.array(counts, float), np.array(again, float), equal_nan=True)
    d = DTYPES["bfloat16"]
    fused, numpy = WriteStats(pool={}, native=True), WriteStats(pool={}, native=False)
    with np.errstate(all="ignore"):
        fused.count(_View(), pre, post, None, d, None, counts=counts)
        numpy.count(_View(), pre, want, None, d, None)
    assert np.array_equal(np.array(_counts(fused), float), np.array(_counts(numpy), float),
                          equal_nan=True)


def test_the_backend_is_reported():
    from nkirun.runner.shadow import Shadow
    assert shadow_native.backend() in ("native", "numpy")
    assert Shadow([]).backend == shadow_native.backend()


def _both(run, monkeypatch) -> None:
    """The report with C and with NumPy (Shadow.native off): field for field the same."""
    from nkirun.runner.shadow import Shadow
    monkeypatch.setattr(Shadow, "native", True)
    native = run()
    assert native.backend == "native"
    monkeypatch.setattr(Shadow, "native", False)
    numpy = run()
    assert numpy.backend == "numpy"
    same_rows(rows(native), rows(numpy))
    _same_outputs(native.outputs, numpy.outputs)


def _same_outputs(a, b) -> None:
    """The run's outputs, bit for bit (C stores some of them straight into the tensor)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same_outputs(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same_outputs(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    else:
        assert a == b or (np.isnan(a) and np.isnan(b))


@needs_native
@pytest.mark.parametrize("program", sorted(p.name for p in (ROOT / "programs").iterdir()
                                           if p.suffix in (".yaml", ".nkis")))
def test_native_and_numpy_shadow_give_one_report(program, monkeypatch):
    from nkirun import run
    _both(lambda: run(ROOT / "programs" / program, shadow=True), monkeypatch)


@needs_native
@pytest.mark.parametrize("name", __import__("nkirun.isa", fromlist=["MODULES"]).MODULES)
def test_native_and_numpy_shadow_agree_on_every_instruction_example(tmp_path, name,
                                                                    monkeypatch):
    from spec_examples import example_program

    from nkirun import run
    path = example_program(tmp_path, name)
    _both(lambda: run(path, shadow=True), monkeypatch)


@needs_native
@pytest.mark.parametrize("kernel", ["rmsnorm", "attention_bf16"])
def test_native_and_numpy_shadow_agree_on_the_bf16_kernels(kernel, monkeypatch):
    import nkirun
    fn, args = bf16_kernel(kernel, 7)
    _both(lambda: nkirun.simulate(fn, shadow=True)(*args), monkeypatch)


def test_peak_coordinates_equal_their_definition():
    """coords (one element's offset from an access pattern's strides, Python's divmod)
    against plain_coords (every element's offset, NumPy's unravel), on every view the
    example programs' and the bf16 kernels' instructions read or write."""
    from nkirun import api
    from nkirun.runner.shadow_metrics import coords, plain_coords
    from nkirun.api_kernel import require_valid, trace_call
    bounds = [api.require_valid(p).bound for p in sorted((ROOT / "programs").iterdir())
              if p.suffix in (".yaml", ".nkis")]
    for kernel in ("rmsnorm", "attention_bf16"):
        fn, args = bf16_kernel(kernel, 3)
        bounds.append(require_valid(trace_call(fn, args))[0])
    rng = np.random.default_rng(3)
    patterns = 0
    for bound in bounds:
        for b in bound:
            for _, r in b.accesses().reads + b.accesses().writes:
                for k in {0, r.size - 1, *rng.integers(0, r.size, 5).tolist()}:
                    assert coords(r, k) == plain_coords(r, k), (b.op, r.decl.name, k)
                patterns += r.ap is not None
    assert patterns  # (some views are access patterns)


@needs_native
@pytest.mark.parametrize("stored", ["float32", "bfloat16"])
def test_the_fused_pair_equals_its_two_comparisons_over_many_blocks(stored):
    """A rounding store's carried and added errors in one loop (C's fused_pair) give what
    the two comparisons give one by one, over blocks with and without infinities, NaNs and
    subnormal shadow values (those blocks take the element-by-element path)."""
    rng = np.random.default_rng(7)
    ref = (rng.standard_normal(5000) * 2.0 ** rng.integers(-20, 20, 5000)).astype(np.float32)
    ref[2560:3072] *= np.float32(2.0) ** rng.integers(-110, 100, 512)  # (one wide block)
    ref[1200], ref[2100], ref[3000:3010] = np.inf, np.nan, np.float32(1e-40)
    with np.errstate(all="ignore"):
        x = (ref * np.float32(1.001)).astype(np.float32)
    x[4500] = -np.inf
    if stored == "bfloat16":
        x = x.astype(ml_dtypes.bfloat16)
    for d in (DTYPES["bfloat16"], DTYPES["float32"]):
        f = fmt(d)
        pair = shadow_native.errors([x, shadow_native.ROUND_BF16], ref, f.nmant, f.tiny)
        one = shadow_native.errors([x], ref, f.nmant, f.tiny)[0]
        other = shadow_native.errors([shadow_native.ROUND_BF16], ref, f.nmant, f.tiny)[0]
        assert _tuple_of(pair[0]) == _tuple_of(one) and _tuple_of(pair[1]) == _tuple_of(other)
        numpy = errors([x, shadow_native.ROUND_BF16], ref, d, {}, native=False)
        native = errors([x, shadow_native.ROUND_BF16], ref, d, {}, native=True)
        assert all(_same(a, b) for a, b in zip(native, numpy))


def _tuple_of(e) -> tuple:
    return tuple("nan" if isinstance(v, float) and v != v else v for v in e)
