"""Blocked matrix multiplication with its tile sizes as keywords, for `nkirun sweep`
(docs/sweep.md): result[M, N] = lhsT.T @ rhs.

TILE_N is the moving tile's free size (at most 512, one PSUM bank of float32);
BLOCK_M row tiles and BLOCK_N column tiles share each loaded strip of lhsT and rhs, so
larger blocks load less from HBM but keep more in SBUF. K and M are multiples of 128.
`reference` is the NumPy result the sweep verifies against (`--reference`).
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_blocked(lhsT, rhs, TILE_N=512, BLOCK_M=1, BLOCK_N=1):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, f"contraction dims differ: {K} and {K2}"
    TK, TM = 128, 128
    WM, WN = TM * BLOCK_M, TILE_N * BLOCK_N  # one block's rows and columns
    assert K % TK == 0 and M % WM == 0 and N % WN == 0, \
        f"M={M} needs multiples of {WM}, N={N} of {WN}"
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm, name="result")
    for nb in range(N // WN):
        strip = []  # rhs[:, this block's columns], one (128, WN) tile per K step
        for k in range(K // TK):
            r = nl.ndarray((TK, WN), dtype=rhs.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=r, src=rhs[k * TK:(k + 1) * TK, nb * WN:(nb + 1) * WN])
            strip.append(r)
        for mb in range(M // WM):
            rows = []  # lhsT[:, this block's rows], one (128, WM) tile per K step
            for k in range(K // TK):
                t = nl.ndarray((TK, WM), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=lhsT[k * TK:(k + 1) * TK, mb * WM:(mb + 1) * WM])
                rows.append(t)
            for bm in range(BLOCK_M):
                for bn in range(BLOCK_N):
                    acc = nl.ndarray((TM, TILE_N), dtype=nl.float32, buffer=nl.psum)
                    for k in range(K // TK):
                        nisa.nc_matmul(acc, rows[k][:, bm * TM:(bm + 1) * TM],
                                       strip[k][:, bn * TILE_N:(bn + 1) * TILE_N])
                    out = nl.ndarray((TM, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=out, src=acc)
                    m0, n0 = mb * WM + bm * TM, nb * WN + bn * TILE_N
                    nisa.dma_copy(dst=result[m0:m0 + TM, n0:n0 + TILE_N], src=out)
    return result


def reference(lhsT, rhs, **_tiles):
    """The expected result in float32, whatever the tile sizes."""
    return lhsT.astype(np.float32).T @ rhs.astype(np.float32)
