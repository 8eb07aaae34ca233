"""Benchmarks of the MX and random-number instructions (issue 15): nkirun's execute() time vs
hand-written NumPy that computes the same bits, median CPU time of paired runs.

    python benchmarks/bench_mx_random.py [--repeats N]

The baselines are written here from the docs (quantize_mx's scale formula, the MX layout)
and, for the random instructions, from the model's documented algorithm (XORWOW per lane,
four Vector states per lane; docs/mx-and-random.md), starting from the state nkirun's model
starts from. Each nkirun result is first checked equal to its baseline, bit for bit.
"""
from __future__ import annotations

import argparse
import os
import sys

# one BLAS thread: idle OpenBLAS workers spin and inflate the CPU time of whichever side
# calls matmul last (nc_matmul_mx measured 2.1x with them, 1.0x without); set before numpy
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from run import paired_cpu_times, prepare

P, N = 128, 16384


def _decls(target: str, decls: dict) -> str:
    lines = ["version: 1", f"target: {target}", "tensors:"]
    for name, (shape, dtype, buf) in decls.items():
        lines.append(f"  {name}: {{buffer: {buf}, shape: {list(shape)}, dtype: {dtype}, fill: 0}}")
    return "\n".join(lines) + "\ninstructions:\n"


# ---- hand-written baselines ---------------------------------------------------------------
def quantize_mx(x, emax):
    """(P, N) bf16 -> (P, N/4) uint32 e4m3fn x4, (P/8, N/4) uint8 scale bits."""
    v = x.astype(np.float32).reshape(P // 8, 8, -1, 4)
    amax = np.abs(v).max(axis=(1, 3))
    e = np.frexp(np.where(amax == 0, 1, amax))[1] - 1 - (emax - 1)
    e = np.where(amax == 0, -127, np.maximum(e, -127))
    q = (v * np.ldexp(np.float32(1), -e)[:, None, :, None].astype(np.float32))
    q = q.reshape(P, -1).astype(ml_dtypes.float8_e4m3fn)
    return q.view(np.uint32), (e + 127).astype(np.uint8)


_LUT = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)


def nc_matmul_mx(st, mv, s_st, s_mv):
    """x4 e4m3fn (K, M) and (K, N), scale bits (K/8, M) and (K/8, N) -> float32 (M, N)."""
    def deq(a, s):
        vals = _LUT[a.view(np.uint8)].reshape(a.shape[0], a.shape[1], 4)
        scale = np.ldexp(np.float32(1), np.repeat(s.astype(np.int32), 8, axis=0) - 127)
        return (vals * scale[:, :, None].astype(np.float32)).transpose(0, 2, 1).reshape(-1, a.shape[1])
    return deq(st, s_st).T @ deq(mv, s_mv)


def xorwow_bits(state, n):
    """(L, S, 6) uint32 states -> (L, n) uint32, element j from state j % S."""
    x = [state[..., i].copy() for i in range(5)]
    d = state[..., 5].copy()
    steps = -(-n // state.shape[1])
    out = np.empty((state.shape[0], steps, state.shape[1]), np.uint32)
    for k in range(steps):
        t = x[4] ^ (x[4] >> 2)
        t ^= t << 1
        t ^= x[0] ^ (x[0] << 4)
        x = [t, x[0], x[1], x[2], x[3]]
        d += np.uint32(362437)
        np.add(t, d, out=out[:, k])
    return out.reshape(state.shape[0], -1)[:, :n]


def dropout(x, prob, state):
    u = (xorwow_bits(state, x.shape[1]) >> 8).astype(np.float32) * np.float32(2.0 ** -24)
    return np.where(u < prob, np.zeros((), x.dtype), x)


def rng(state, n):
    return xorwow_bits(state, n)


# ---- cases ----------------------------------------------------------------------------------
def _initial_state(engine):
    from nkirun.hw.prng import Prng
    return Prng(engine).state.copy()


def cases(rnd):
    x = rnd.standard_normal((P, N)).astype(ml_dtypes.bfloat16)
    yield ("quantize_mx", "bfloat16",
           _decls("trn3", {"x": ((P, N), "bfloat16", "sbuf"),
                           "q": ((P, N // 4), "float8_e4m3fn_x4", "sbuf"),
                           "s": ((P, N // 4), "uint8", "sbuf")})
           + "  - quantize_mx: {dst: q, src: x, dst_scale: s}\n", {"x": x},
           lambda: quantize_mx(x, 8), lambda m: (m.buffers["q"], m.buffers["s"][
               ((np.arange(P // 8) // 4) * 32 + np.arange(P // 8) % 4)]))
    st = rnd.integers(0, 2**32, (128, 128), dtype=np.uint64).astype(np.uint32) & 0x3F3F3F3F
    mv = rnd.integers(0, 2**32, (128, 512), dtype=np.uint64).astype(np.uint32) & 0x3F3F3F3F
    s1 = rnd.integers(120, 134, (16, 128)).astype(np.uint8)
    s2 = rnd.integers(120, 134, (16, 512)).astype(np.uint8)
    rows = (np.arange(16) // 4) * 32 + np.arange(16) % 4
    hs1, hs2 = np.zeros((128, 128), np.uint8), np.zeros((128, 512), np.uint8)
    hs1[rows], hs2[rows] = s1, s2
    yield ("nc_matmul_mx", "float8_e4m3fn_x4",
           _decls("trn3", {"a": ((128, 128), "float8_e4m3fn_x4", "sbuf"),
                           "b": ((128, 512), "float8_e4m3fn_x4", "sbuf"),
                           "sa": ((128, 128), "uint8", "sbuf"), "sb": ((128, 512), "uint8", "sbuf"),
                           "c": ((128, 512), "float32", "psum")})
           + "  - nc_matmul_mx: {dst: c, stationary: a, moving: b, stationary_scale: sa, "
             "moving_scale: sb}\n", {"a": st, "b": mv, "sa": hs1, "sb": hs2},
           lambda: nc_matmul_mx(st, mv, s1, s2), lambda m: m.buffers["c"])
    for dtype in (np.float32, ml_dtypes.bfloat16):
        xd = rnd.standard_normal((P, N)).astype(dtype)
        state = _initial_state("vector")
        name = np.dtype(dtype).name
        yield ("dropout", name,
               _decls("trn3", {"x": ((P, N), name, "sbuf"), "y": ((P, N), name, "sbuf")})
               + "  - dropout: {dst: y, data: x, prob: 0.3}\n", {"x": xd},
               lambda xd=xd, state=state: dropout(xd, np.float32(0.3), state),
               lambda m: m.buffers["y"])
    state = _initial_state("vector")
    yield ("rng", "uint32", _decls("trn3", {"r": ((P, N), "uint32", "sbuf")})
           + "  - rng: {dst: r}\n", {}, lambda: rng(state, N), lambda m: m.buffers["r"])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    rnd = np.random.default_rng(0)
    print(f"{'instruction':<14} {'dtype':<17} {'nkirun ms':>10} {'numpy ms':>10} {'ratio':>6}")
    for op, dtype, prog, inputs, baseline, result in cases(rnd):
        bound, m = prepare(prog, inputs)
        b = bound[0]
        with np.errstate(all="ignore"):
            b.spec.execute(b, m)
            want, got = baseline(), result(m)
            for w, g in zip(want if isinstance(want, tuple) else (want,),
                            got if isinstance(got, tuple) else (got,)):
                w = np.asarray(w).astype(g.dtype, copy=False)
                assert np.array_equal(np.ascontiguousarray(w).view(np.uint8),
                                      np.ascontiguousarray(g).view(np.uint8)), op
            t_nk, t_np = paired_cpu_times(lambda b=b, m=m: b.spec.execute(b, m), baseline,
                                          args.repeats)
        print(f"{op:<14} {dtype:<17} {t_nk * 1e3:>10.2f} {t_np * 1e3:>10.2f} "
              f"{t_nk / t_np:>6.2f}")


if __name__ == "__main__":
    main()
