"""Tiles written in parts in a planned run (runner/plan_writes.py) and the plan forms that
run the kernels of the public suite (nc_matmul, tensor_tensor and tensor_copy across
dtypes): the plan must give the plain interpreter's outputs bit for bit and its errors,
and must plan (not fall back on the plain path for) the instructions it can decide."""
from __future__ import annotations

import numpy as np
import pytest

from nkirun.api import check_program
from nkirun.runner.files import initial_buffers
from nkirun.runner.machine import Machine
from nkirun.runner.plan import _Planner, _plain, last_uses
from prog_helpers import sbuf, tmp, out, write_program
from test_plan import both_ways

RNG = np.random.default_rng(5)


def _checked(path):
    c = check_program(path)
    assert c.ok, [d.one_line() for d in c.diagnostics]
    return c


def _plain_ops(c) -> list[str]:
    """The instructions the plan leaves to the plain path."""
    from dataclasses import replace
    kept = {n for n, t in c.program.tensors.items() if t.init is not None or t.output}
    head = replace(c.program, tensors={n: t for n, t in c.program.tensors.items()
                                       if t.init is not None})
    m = Machine(*initial_buffers(head))
    p = _Planner(c.program, c.bound, m, last_uses(c.bound, kept)[0], "error")
    return [b.op for b, call in zip(p.bs, p.calls)
            if getattr(call, "func", None) is _plain]


def _matmul_program(tmp_path, dtype, accumulate, split_psum=False, early_read=False):
    """Two K tiles loaded slice by slice into one SBUF tile each side, multiplied into a
    PSUM tile (or one half of a wider one) per output block, then copied out as bfloat16
    and float32. The second block's PSUM tile reuses the first one's array, which still
    holds the first block's sums: an unset accumulate must overwrite them."""
    lhs = RNG.standard_normal((256, 128)).astype(np.float32)
    rhs = RNG.standard_normal((256, 1024)).astype(np.float32)
    if dtype.startswith("float8"):
        lhs, rhs = lhs / 4, rhs / 4
    tensors = {"lhs": sbuf(lhs, dtype, buffer="hbm"), "rhs": sbuf(rhs, dtype, buffer="hbm"),
               "a": tmp((128, 2, 128), dtype), "b": tmp((128, 2, 1024), dtype),
               "y": out((128, 1024), "bfloat16"), "z": out((128, 1024), "float32")}
    body = []
    for k in range(2):
        body += [{"dma_copy": {"dst": f"a[:, {k}, :]", "src": f"lhs[{128 * k}:{128 * k + 128}, :]"}},
                 {"dma_copy": {"dst": f"b[:, {k}, :]", "src": f"rhs[{128 * k}:{128 * k + 128}, :]"}}]
    for j in range(2):
        tensors[f"acc{j}"] = tmp((128, 1024 if split_psum else 512), "float32", "psum")
        dst = f"acc{j}[:, 512:1024]" if split_psum else f"acc{j}"
        cols = f"{512 * j}:{512 * j + 512}"
        if early_read and j == 0:  # before the second slices arrive: unwritten elements
            body.insert(2, {"nc_matmul": {"dst": dst, "stationary": "a[:, 1, :]",
                                          "moving": f"b[:, 0, {cols}]"}})
        for k in range(2):
            mm = {"dst": dst, "stationary": f"a[:, {k}, :]", "moving": f"b[:, {k}, {cols}]"}
            if accumulate == "explicit":
                mm["accumulate"] = bool(k)
            body.append({"nc_matmul": mm})
        body += [{"tensor_copy": {"dst": f"y[:, {cols}]", "src": dst}},
                 {"tensor_copy": {"dst": f"z[:, {cols}]", "src": dst}}]
    return _checked(write_program(tmp_path, tensors, body))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float8_e4m3"])
@pytest.mark.parametrize("accumulate", ["unset", "explicit"])
def test_a_k_loop_of_matmuls_on_tiles_loaded_in_parts_is_planned_and_the_same(
        tmp_path, dtype, accumulate):
    c = _matmul_program(tmp_path, dtype, accumulate)
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned and plain[0] != "error"
    assert _plain_ops(c) == []


@pytest.mark.parametrize("accumulate", ["unset", "explicit"])
def test_matmuls_into_part_of_a_psum_tile(tmp_path, accumulate):
    """Unset accumulate on a part nothing wrote overwrites it; the copy-out then reads
    only that part. The plan decides this from its masks, as the run would per element."""
    c = _matmul_program(tmp_path, "bfloat16", accumulate, split_psum=True)
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned and plain[0] != "error"
    assert _plain_ops(c) == []


@pytest.mark.parametrize("policy", ["error", "nan", "zero"])
def test_a_read_of_a_slice_not_yet_loaded_hands_the_tile_to_the_run(tmp_path, policy):
    c = _matmul_program(tmp_path, "bfloat16", "unset", early_read=True)
    plain, planned = both_ways(c.program, c.bound, policy=policy)
    assert plain == planned
    assert "nc_matmul" in _plain_ops(c)


@pytest.mark.parametrize("dst_dtype", ["bfloat16", "float32", "float16"])
@pytest.mark.parametrize("src_dtype", ["bfloat16", "float32", "float8_e5m2"])
def test_mixed_dtype_adds_and_casting_copies_are_planned_and_the_same(
        tmp_path, dst_dtype, src_dtype):
    x = RNG.standard_normal((64, 96)).astype(np.float32) * 3
    x.reshape(-1)[:4] = (np.inf, -np.inf, np.nan, 1e38)
    tensors = {"x": sbuf(x, src_dtype), "p": sbuf(x[:, ::-1] * 2, "float32", buffer="psum"),
               "r": tmp((64, 2, 96), dst_dtype), "y": out((64, 2, 96), dst_dtype),
               "c": out((64, 96), dst_dtype)}
    body = [{"memset": {"dst": "r", "value": 0.5}},
            {"tensor_tensor": {"dst": "r[:, 0, :]", "data1": "r[:, 0, :]", "data2": "p",
                               "op": "add"}},
            {"tensor_tensor": {"dst": "r[:, 1, :]", "data1": "x", "data2": "p",
                               "op": "maximum"}},
            {"tensor_copy": {"dst": "y", "src": "r"}},
            {"tensor_copy": {"dst": "c", "src": "x"}}]
    c = _checked(write_program(tmp_path, tensors, body))
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned and plain[0] != "error"
    assert _plain_ops(c) == []


def test_an_output_stored_in_parts_is_planned_and_complete(tmp_path):
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    tensors = {"x": sbuf(x, buffer="hbm"), "t": tmp((128, 64), "float32"),
               "y": out((128, 64), "float32", buffer="hbm")}
    body = [{"dma_copy": {"dst": "t", "src": "x"}}]
    body += [{"dma_copy": {"dst": f"y[:, {16 * i}:{16 * i + 16}]",
                           "src": f"t[:, {16 * i}:{16 * i + 16}]"}} for i in range(4)]
    c = _checked(write_program(tmp_path, tensors, body))
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned and plain[0] != "error"
    assert _plain_ops(c) == []


@pytest.mark.parametrize("dst_dtype", ["bfloat16", "float32", "float16", "float8_e4m3"])
@pytest.mark.parametrize("src_dtype", ["bfloat16", "float32", "float8_e5m2"])
def test_casting_dmas_are_planned_and_the_same(tmp_path, dst_dtype, src_dtype):
    """dma_copy between float dtypes (the matmul tutorial's float32 tile stored to its
    bfloat16 output): dma_execute's widening and Machine.write's rounding, planned."""
    x = RNG.standard_normal((64, 96)).astype(np.float32) * 3
    x.reshape(-1)[:5] = (np.inf, -np.inf, np.nan, 1e38, -3e-39)
    tensors = {"x": sbuf(x, src_dtype, buffer="hbm"), "t": tmp((64, 96), dst_dtype),
               "u": tmp((64, 96), src_dtype), "y": out((64, 96), src_dtype, buffer="hbm"),
               "z": out((64, 96), dst_dtype, buffer="hbm")}
    body = [{"dma_copy": {"dst": "t", "src": "x"}},          # cast on the way in
            {"dma_copy": {"dst": "u[:, 0:48]", "src": "t[:, 0:48]"}},  # and back, in parts
            {"dma_copy": {"dst": "u[:, 48:96]", "src": "t[:, 48:96]"}},
            {"dma_copy": {"dst": "y", "src": "u"}},
            {"dma_copy": {"dst": "z", "src": "u"}}]  # cast on the way out
    c = _checked(write_program(tmp_path, tensors, body))
    plain, planned = both_ways(c.program, c.bound)
    assert plain == planned and plain[0] != "error"
    assert _plain_ops(c) == []
