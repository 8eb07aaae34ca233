"""The shadow's fast paths (runner/shadow_bits.py, shadow_metrics.py) against their plain
definitions, on data hypothesis draws from raw bit patterns: NaN, infinities, subnormals,
signed zeros, ties, values that round to infinity, and sign changes between the run and
its shadow."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nkirun.hw.dtypes import DTYPES
from nkirun.runner.shadow_bits import (
    as_f32,
    bf16_rounding_ulps,
    plain_bf16_rounding_ulps,
    real_cast,
    rounded_f32,
)
from nkirun.runner.shadow_metrics import errors, plain_errors
from nkirun.runner.shadow_stores import WriteStats
from tests.runner.shadow_helpers import bf16_kernel, perturbed, rows, same_rows

FLOATS = ["float32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2"]
SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F808000,
           0x3F818000, 0x7F7F8000, 0x7F7F7FFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
           0x7FC00000, 0x7F800001, 0x3F800000, 0xBF800000, 0x47800000, 0x477FF000]
QUICK = settings(max_examples=150, deadline=None, derandomize=True, database=None)


@pytest.fixture(autouse=True)
def numpy_comparisons(monkeypatch):
    """These tests are about the NumPy paths: the C comparison (when built) stays off here
    (tests/runner/test_shadow_native.py compares it with them)."""
    from nkirun.runner.shadow import Shadow
    monkeypatch.setattr(Shadow, "native", False)


def _bits(n_max: int = 64):
    """float32 arrays from bit patterns: mostly random, some special."""
    word = st.one_of(st.integers(0, 2 ** 32 - 1), st.sampled_from(SPECIAL),
                     st.integers(0x3E000000, 0x41000000),  # O(1) values
                     st.integers(0, 0x00FFFFFF))  # subnormals and the smallest normals
    return st.lists(word, min_size=1, max_size=n_max).map(
        lambda w: np.array(w, np.uint64).astype(np.uint32).view(np.float32))


@QUICK
@given(_bits())
def test_bfloat16_rounding_ulps_from_bits_equal_their_definition(v):
    with np.errstate(invalid="ignore"):  # NaN patterns cast with a warning
        finite = v[np.isfinite(v) & np.isfinite(v.astype(ml_dtypes.bfloat16).astype(np.float32))]
    scratch = np.empty(finite.size, np.int32)
    assert bf16_rounding_ulps(finite, scratch) == plain_bf16_rounding_ulps(finite)


@QUICK
@given(_bits())
def test_rounding_on_bits_is_ml_dtypes_cast(v):
    with np.errstate(invalid="ignore"):
        want = v.astype(ml_dtypes.bfloat16).astype(np.float32)
    got = rounded_f32(v, None, DTYPES["bfloat16"])
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all()
    with np.errstate(invalid="ignore"):
        b = v.astype(ml_dtypes.bfloat16)
    for a in (b, b[::2], b[::-1]):  # contiguous (ml_dtypes) and strided (bits)
        np.testing.assert_array_equal(as_f32(a).view(np.uint32),
                                      a.astype(np.float32).view(np.uint32))


@QUICK
@given(_bits(), st.sampled_from(FLOATS), st.integers(0, 2 ** 32 - 1), st.booleans())
def test_fast_errors_equal_plain_definitions_on_any_bits(ref, name, seed, flip):
    """errors() (shared scratch, rel and ULP denominators read from bits, in-place
    division) against plain_errors: the run's version is the shadow rounded to the dtype,
    nudged by a few ULPs, sign-flipped, or replaced by special values."""
    d = DTYPES[name]
    x = perturbed(ref, d, seed, flip, SPECIAL_F, 0.1)
    with np.errstate(all="ignore"):
        fast, plain = errors([x, ref.copy()], ref, d, {}), plain_errors([x, ref], ref, d)
    for a, b in zip(fast, plain):
        got, want = (a.abs, a.rel, a.ulp, a.at), (b.abs, b.rel, b.ulp, b.at)
        assert np.array_equal(np.array(got), np.array(want), equal_nan=True), (got, want)


SPECIAL_F = np.array(SPECIAL, np.uint32).view(np.float32)


@QUICK
@given(_bits())
def test_added_ulps_from_bits_equal_the_division(ref):
    """The added error of a float32 -> bfloat16 store: errors(rounding=1) reads its ULPs
    from the shadow's bits; plain_errors divides. Both the same, NaN and inf included."""
    d = DTYPES["bfloat16"]
    with np.errstate(all="ignore"):
        probe = rounded_f32(ref, None, d)
        fast = errors([probe.copy(), probe], ref, d, {}, rounding=1)
        plain = plain_errors([probe, probe], ref, d)
    for a, b in zip(fast, plain):
        got, want = (a.abs, a.rel, a.ulp, a.at), (b.abs, b.rel, b.ulp, b.at)
        assert np.array_equal(np.array(got), np.array(want), equal_nan=True), (got, want)


def plain_counts(pre: np.ndarray, out_dtype, dst) -> tuple:
    """docs/shadow.md's counts of one store, each one array expression: overflow, underflow,
    fp8 saturation, NaNs stored, and the store's loss max |stored - computed|."""
    post = np.asarray(real_cast(pre, out_dtype, dst)).astype(np.float64)
    pre = pre.astype(np.float32).astype(np.float64)
    overflow = np.count_nonzero(np.isinf(post) & np.isfinite(pre))
    underflow = np.count_nonzero((post == 0) & (pre != 0))
    fp8 = [t for t in (out_dtype, dst) if t is not None and t.name.startswith("float8_e")]
    limit = float(ml_dtypes.finfo(fp8[0].np_type).max) if fp8 else np.inf
    saturated = np.count_nonzero(np.isfinite(pre) & (np.abs(pre) > limit))
    lost = np.abs(post.astype(np.float32) - pre.astype(np.float32))
    lost[(post == pre) | np.isnan(post) & np.isnan(pre)] = 0
    lost[np.isnan(lost)] = np.inf
    return overflow, underflow, saturated, np.count_nonzero(np.isnan(post)), lost.max()


class _View:  # what count() needs of a Resolved
    ap = None


@QUICK
@given(_bits(), st.sampled_from(FLOATS), st.sampled_from([None] + FLOATS), st.booleans())
def test_store_counts_equal_their_definitions(pre, dst, out, already):
    """WriteStats.count (min/max first, then only the counts that can be nonzero; nothing
    for values already in the destination's dtype) against the counts spelled out."""
    dst, out = DTYPES[dst], None if out is None else DTYPES[out]
    with np.errstate(all="ignore"):
        if already:  # e.g. a bfloat16 tile copied into a bfloat16 tensor: no cast at all
            pre = real_cast(pre, None, dst)
        want = plain_counts(pre, out, dst)
        stats = WriteStats(pool={})
        post = real_cast(pre, out, dst)
        stats.count(_View(), pre, post, out, dst, None)
    got = (stats.overflow, stats.underflow, stats.fp8_saturated, stats.nan_written,
           stats.store_abs)
    if dst.name == "float32" and (out is None or out.name == "float32"):
        want = (0, 0, 0, want[3], 0.0)  # nothing rounds: only NaNs are looked at
    assert got == pytest.approx(want, nan_ok=True, rel=0, abs=0), (got, want)


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2"])
@pytest.mark.parametrize("sign", [1, -1])
def test_a_value_just_beyond_the_fp8_limit_that_rounds_back_to_it_is_saturated(name, sign):
    """|pre| above the largest finite fp8 value but rounding down to it: stored finite, at
    the limit, and still counted (the min/max shortcut must not rule it out)."""
    d = DTYPES[name]
    limit = float(ml_dtypes.finfo(d.np_type).max)
    pre = np.array([0.5, sign * limit * (1 + 2.0 ** -8), 1.0], np.float32)
    stats = WriteStats(pool={})
    post = real_cast(pre, None, d)
    assert np.isfinite(post.astype(np.float32)).all()  # (the case this test is about)
    stats.count(_View(), pre, post, None, d, None)
    assert stats.fp8_saturated == plain_counts(pre, None, d)[2] == 1


def _programs():
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[2] / "programs"
    return sorted(p.name for p in root.iterdir() if p.suffix in (".yaml", ".nkis"))


@pytest.mark.parametrize("program", _programs())
def test_fast_and_plain_shadow_give_one_report(program, monkeypatch):
    """Shadow.fast off (every store's loss measured at the store, ULPs by division) and on
    give the same rows, field for field, on every example program."""
    import pathlib

    from nkirun import run
    from nkirun.runner.shadow import Shadow
    path = pathlib.Path(__file__).resolve().parents[2] / "programs" / program
    fast = rows(run(path, shadow=True))
    monkeypatch.setattr(Shadow, "fast", False)
    same_rows(fast, rows(run(path, shadow=True)))


@pytest.mark.parametrize("name", __import__("nkirun.isa", fromlist=["MODULES"]).MODULES)
def test_fast_and_plain_shadow_agree_on_every_instruction_example(tmp_path, name,
                                                                  monkeypatch):
    from spec_examples import example_program

    from nkirun import run
    from nkirun.runner.shadow import Shadow
    path = example_program(tmp_path, name)
    fast = rows(run(path, shadow=True))
    monkeypatch.setattr(Shadow, "fast", False)
    same_rows(fast, rows(run(path, shadow=True)))


@pytest.mark.parametrize("kernel", ["rmsnorm", "attention_bf16"])
def test_fast_and_plain_shadow_agree_on_the_bf16_kernels(kernel, monkeypatch):
    import nkirun
    from nkirun.runner.shadow import Shadow
    fn, args = bf16_kernel(kernel, 5)
    fast = rows(nkirun.simulate(fn, shadow=True)(*args))
    monkeypatch.setattr(Shadow, "fast", False)
    same_rows(fast, rows(nkirun.simulate(fn, shadow=True)(*args)))


@pytest.mark.parametrize("fast", [True, False])
def test_fresh_storage_entering_without_values_still_stops_at_e090(tmp_path, fast,
                                                                  monkeypatch):
    """A tensor nothing wrote enters the shadow without its (meaningless) contents; a read
    of its unwritten half is still the real run's E090, and the half that was written is
    compared as usual."""
    from nkirun import NkirunError, run
    from nkirun.runner.shadow import Shadow
    from tests.prog_helpers import out, sbuf, tmp, write_program
    monkeypatch.setattr(Shadow, "fast", fast)
    x = np.linspace(1, 2, 64 * 8, dtype=np.float32).reshape(64, 8)
    common = {"x": sbuf(x, buffer="hbm"), "t": tmp((128, 8), "bfloat16")}
    good = write_program(tmp_path / "good", {**common, "y": out((64, 8), "float32")}, [
        {"load": {"dst": "t[0:64, :]", "src": "x"}},
        {"tensor_copy": {"dst": "y", "src": "t[0:64, :]"}}])
    rep = run(good, shadow=True)
    assert rep.row(0).carried.abs > 0 and rep.row(1).added.abs == 0
    bad = write_program(tmp_path / "bad", {**common, "y": out((128, 8), "float32")}, [
        {"load": {"dst": "t[0:64, :]", "src": "x"}},
        {"tensor_copy": {"dst": "y", "src": "t"}}])
    with pytest.raises(NkirunError) as e:
        run(bad, shadow=True)
    assert [d.code for d in e.value.diagnostics] == ["E090"]


def test_a_deferred_store_loss_through_a_zero_step_dst_is_still_measured(tmp_path,
                                                                         monkeypatch):
    """activation_reduce into a zero-step bfloat16 dst with exact inputs: the shadow
    records the store under another view (its last streamed column), so the loss the
    store deferred is measured from the store itself, not skipped as lossless."""
    import importlib.util

    import nkirun
    from nkirun.runner.shadow import Shadow
    from tests.kernel.test_nki_library_forms import ZERO_STEP_DST
    f32_last = "last = nl.ndarray((x.shape[0], 1), dtype=nl.float32"
    assert f32_last in ZERO_STEP_DST
    (tmp_path / "k.py").write_text(ZERO_STEP_DST.replace(f32_last, f32_last.replace(
        "float32", "bfloat16")))
    spec = importlib.util.spec_from_file_location("zero_step_bf16", tmp_path / "k.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = np.random.default_rng(6).uniform(1, 2, (16, 8)).astype(ml_dtypes.bfloat16)
    fast = nkirun.simulate(mod.square_sums, shadow=True)(x)
    act = next(r for r in fast.rows if r.op == "activation_reduce")
    assert act.store_abs > 0 and act.carried.abs > 0
    monkeypatch.setattr(Shadow, "fast", False)
    same_rows(rows(fast), rows(nkirun.simulate(mod.square_sums, shadow=True)(x)))


def test_a_view_stored_twice_has_both_losses_measured_at_the_stores():
    """With exact inputs a store's loss is left to compare(), which pairs stores by view;
    a second store to the same view makes both be measured where they happen."""
    d = DTYPES["bfloat16"]
    stats = WriteStats(pool={}, loss_deferred=True)
    view = _View()
    first = np.array([1.00390625 + 2.0 ** -9, 3.0], np.float32)  # loses 2^-9 to bfloat16
    second = np.array([1.0, 2.0], np.float32)  # loses nothing
    for pre in (first, second):
        post = real_cast(pre, None, d)
        stats.count(view, pre, post, None, d, None, as_f32(post))
    assert not stats.deferred and stats.store_abs == plain_counts(first, None, d)[4] > 0
