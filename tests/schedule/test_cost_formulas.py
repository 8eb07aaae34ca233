"""Exact cycles per instruction for given shapes: each instruction module's own
`cycles(b, target)`, against the formulas transcribed here from the pages / nki-reference.md
(§1 per instruction, §5 DMA). An instruction missing from the table fails its test."""
from __future__ import annotations

import math

import pytest

from nkirun.hw import dtypes as dt
from nkirun.ir import TensorDecl, View
from nkirun.isa import REGISTRY
from nkirun.isa.spec import Bound
from nkirun.hw.targets import TARGETS
from nkirun.views.operands import resolve

TRN1, TRN2 = TARGETS["trn1"], TARGETS["trn2"]
MIN_II = 64


def tile(shape, dtype="float32", buffer="sbuf", name="t", index=None):
    decl = TensorDecl(name, buffer, tuple(shape), dt.lookup(dtype))
    r, d = resolve(View(name, index), decl)
    assert d is None, d
    return r


def bound(name, engine=None, **args):
    assert name in REGISTRY, f"{name} is not in the instruction table"
    spec = REGISTRY[name]
    values = {p.name: p.default for p in spec.params}
    values.update(args)
    b = Bound(None, spec, values)
    b.engine = engine or (spec.engine_of(b) if spec.engine_of else spec.engine)
    return b


def cycles(b, target=TRN2):
    return b.spec.cycles(b, target)


SHAPES = [(128, 512), (37, 7), (1, 1000), (128, 3, 33), (64, 64)]


def n_of(shape):
    return math.prod(shape[1:])


@pytest.mark.parametrize("shape", SHAPES)
def test_range_select(shape):
    b = bound("range_select", on_true_tile=tile(shape))
    assert cycles(b) == max(MIN_II, n_of(shape))


GPSIMD_START = 150   # nki-reference.md §1.9 (affine_select) and §1.10 (iota): 150 + N


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("target", [TRN1, TRN2])
def test_affine_select_and_iota_are_gpsimd_start_plus_n(shape, target):
    """No MIN_II floor: the GpSimd start-up plus one cycle per element per partition."""
    b = bound("affine_select", on_true_tile=tile(shape), dst=tile(shape))
    assert cycles(b, target) == GPSIMD_START + n_of(shape)
    b = bound("iota", dst=tile(shape, "int32"))
    assert cycles(b, target) == GPSIMD_START + n_of(shape)


@pytest.mark.parametrize("shape", SHAPES)
def test_select_reduce_is_assumed_like_range_select(shape):
    b = bound("select_reduce", on_true=tile(shape), predicate=tile(shape), dst=tile(shape))
    assert cycles(b) == max(MIN_II, n_of(shape))
    assert b.spec.cost_assumed  # the page documents no formula


@pytest.mark.parametrize("shape", SHAPES)
def test_tensor_tensor_scan(shape):
    b = bound("tensor_tensor_scan", data0=tile(shape), data1=tile(shape), dst=tile(shape))
    assert cycles(b) == max(MIN_II, 2 * n_of(shape))


@pytest.mark.parametrize("op", ["affine_select", "iota"])
@pytest.mark.parametrize("shape", SHAPES)
def test_gpsimd_start_plus_n(op, shape):
    b = bound(op, dst=tile(shape), on_true_tile=tile(shape))
    assert b.engine == "gpsimd"
    assert cycles(b) == 150 + n_of(shape)


@pytest.mark.parametrize("shape", [(128, 512), (37, 7), (5, 16384), (128, 2, 40)])
def test_nc_match_replace8_reads_min_as_max(shape):
    b = bound("nc_match_replace8", data=tile(shape), dst=tile(shape))
    assert cycles(b) == max(MIN_II, n_of(shape))  # the page's min(MIN_II, N) read as max
    assert "min" in b.spec.cost_note and "max" in b.spec.cost_note


@pytest.mark.parametrize("shape", [(128, 512), (37, 8), (1, 16384)])
def test_max8_is_n(shape):
    b = bound("max8", src=tile(shape), dst=tile((shape[0], 8)))
    assert cycles(b) == n_of(shape)


@pytest.mark.parametrize("shape", [(128, 512), (37, 8), (1, 16384)])
def test_nc_find_index8_is_n(shape):
    b = bound("nc_find_index8", data=tile(shape))
    assert cycles(b) == n_of(shape)


@pytest.mark.parametrize("shape,dtype,value,expect", [
    ((128, 512), "float32", 1.0, 512),
    ((128, 512), "float32", 0.0, 512),
    ((128, 512), "bfloat16", 0.0, 256),  # zero fill of 2-byte floats: N/2
    ((128, 512), "float16", 0.0, 256),
    ((128, 512), "bfloat16", 2.0, 512),
    ((37, 100), "bfloat16", 0.0, 64),  # max(MIN_II, 50)
    ((37, 7), "float32", 3.0, 64),
])
def test_memset(shape, dtype, value, expect):
    b = bound("memset", dst=tile(shape, dtype), value=value)
    assert cycles(b) == expect


@pytest.mark.parametrize("shape", SHAPES)
def test_activation(shape):
    b = bound("activation", data=tile(shape), dst=tile(shape))
    assert cycles(b) == max(MIN_II, n_of(shape))
    b = bound("activation", data=tile(shape), dst=tile(shape),
              reduce_res=tile((shape[0], 1), name="m"))
    assert cycles(b) == max(MIN_II, n_of(shape)) + MIN_II  # + ActReadAccumulator


@pytest.mark.parametrize("shape", SHAPES)
def test_tensor_scalar_and_tensor_copy(shape):
    assert cycles(bound("tensor_scalar", data=tile(shape), dst=tile(shape))) == \
        max(MIN_II, n_of(shape))
    assert cycles(bound("tensor_copy", src=tile(shape), dst=tile(shape))) == \
        max(MIN_II, n_of(shape))


def test_tensor_tensor():
    s = (128, 512)
    both_sbuf = bound("tensor_tensor", data1=tile(s), data2=tile(s), dst=tile(s), op="add")
    assert cycles(both_sbuf) == 2 * 512
    one_psum = bound("tensor_tensor", data1=tile(s, buffer="psum"), data2=tile(s),
                     dst=tile(s), op="add")
    assert cycles(one_psum) == 512
    bf = bound("tensor_tensor", data1=tile(s, "bfloat16"), data2=tile(s, "bfloat16"),
               dst=tile(s, "bfloat16"), op="multiply")
    assert cycles(bf) == 512
    bf_max = bound("tensor_tensor", data1=tile(s, "bfloat16"), data2=tile(s, "bfloat16"),
                   dst=tile(s, "bfloat16"), op="maximum")
    assert cycles(bf_max) == 2 * 512
    small = bound("tensor_tensor", data1=tile((3, 5)), data2=tile((3, 5)), dst=tile((3, 5)),
                  op="add")
    assert cycles(small) == MIN_II


def test_tensor_reduce():
    s = (128, 512)
    f32 = bound("tensor_reduce", data=tile(s), dst=tile((128, 1)), op="add")
    assert cycles(f32) == 512
    bf = bound("tensor_reduce", data=tile(s, "bfloat16"), dst=tile((128, 1), "bfloat16"),
               op="maximum")
    assert cycles(bf) == 256


@pytest.mark.parametrize("dtype,factor", [("bfloat16", 1), ("float32", 4)])
@pytest.mark.parametrize("k,m,n", [(128, 128, 512), (128, 32, 16), (64, 128, 100)])
def test_nc_matmul(dtype, factor, k, m, n):
    b = bound("nc_matmul", stationary=tile((k, m), dtype), moving=tile((k, n), dtype),
              dst=tile((m, n), buffer="psum"))
    assert cycles(b) == factor * max(min(64, m), n)


@pytest.mark.parametrize("p,f", [(128, 128), (32, 100), (128, 16)])
def test_nc_transpose(p, f):
    b = bound("nc_transpose", engine="tensor", data=tile((p, f)), dst=tile((f, p)))
    assert cycles(b) == max(p, min(64, f))
    b = bound("nc_transpose", engine="vector", data=tile((p, f)), dst=tile((f, p)))
    assert cycles(b) == max(MIN_II, f)


# ---- DMA: the model of docs/cost.md, constants of hw/cost_tables.py ----------------------
# Written from the public figures directly, not from nkirun's table: 16 engines, 8 partitions
# each, 17 / 23 B/ns sustained (trn1 / trn2), ~1300 ns latency, a 360-byte descriptor
# overhead, and on NeuronCore-v2 elements narrower than 4 bytes streaming as 4-byte words
# (docs/cost.md "DMA model").
BW = {"trn1": 17.0, "inf2": 17.0, "trn2": 23.0, "trn3": 33.0}
WORD = {"trn1": 4, "inf2": 4, "trn2": 1, "trn3": 1}


def dma_ns(target, nbytes, partitions, run=None):
    rows_per_engine = min(partitions, 8)
    row = nbytes / partitions
    run = row if run is None else run
    share = rows_per_engine * row * (1 + 360 / run)
    return round(1300 + share / BW[target.name])


@pytest.mark.parametrize("op", ["load", "store", "dma_copy"])
@pytest.mark.parametrize("shape,dtype", [((128, 512), "float32"), ((8, 512), "float32"),
                                         ((37, 100), "bfloat16"), ((1, 1), "float32"),
                                         ((128, 4, 33), "float16")])
@pytest.mark.parametrize("target", [TRN1, TRN2])
def test_dma(op, shape, dtype, target):
    hbm, chip = tile(shape, dtype, "hbm", "x"), tile(shape, dtype, "sbuf", "t")
    src, dst = (hbm, chip) if op != "store" else (chip, hbm)
    b = bound(op, src=src, dst=dst)
    nbytes = math.prod(shape) * max(dt.lookup(dtype).itemsize, WORD[target.name])
    assert cycles(b, target) == dma_ns(target, nbytes, shape[0])


def test_dma_constants():
    from nkirun.hw.cost_tables import cost_table
    for name in ("trn1", "inf2", "trn2", "trn3"):
        t = cost_table(TARGETS[name])
        assert (t.dma_engines, t.dma_partitions_per_engine) == (16, 8)
        assert t.dma_engine_bytes_per_ns == BW[name] and t.dma_latency_ns == 1300
    # 128 x 512 fp32 = 256 KiB: 16 KiB per engine at 23 B/ns, 2 KiB rows, plus 1300 ns
    assert TRN2.dma_ns(128 * 512 * 4, 128) == pytest.approx(
        1300 + 8 * 2048 * (1 + 360 / 2048) / 23)


def test_dma_cast_counts_the_larger_side():
    b = bound("load", src=tile((128, 512), "bfloat16", "hbm", "x"),
              dst=tile((128, 512), "float32", "sbuf", "t"))
    assert cycles(b) == dma_ns(TRN2, 128 * 512 * 4, 128)


def test_clocks_per_engine():
    # nki-reference.md §5: NC-v2 2.8/1.12/1.4/1.4 GHz, NC-v3 2.4/0.96/1.2/1.2 GHz
    v2 = {"tensor": 2.8, "vector": 1.12, "scalar": 1.4, "gpsimd": 1.4}
    v3 = {"tensor": 2.4, "vector": 0.96, "scalar": 1.2, "gpsimd": 1.2}
    assert TARGETS["trn1"].clocks_ghz == v2 == TARGETS["inf2"].clocks_ghz
    assert TARGETS["trn2"].clocks_ghz == v3
    assert TRN2.clock("dma") == 1.0 and TRN2.clock("sync") is None
