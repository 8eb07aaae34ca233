"""The four versions of the public NKI matrix-multiplication tutorial, written for nkirun's
calibration from the tutorial's description of each version (result[M, N] = lhsT.T @ rhs,
lhsT [K, M] and rhs [K, N] in HBM, bf16, fp32 accumulation in PSUM, bf16 result):

v1 tiled:      for every (m, n) output tile, for every k: load a 128x128 lhsT tile and a
               128x512 rhs tile, one matmul; copy PSUM out, store.
v2 hoisted:    the lhsT tiles of a row block are loaded once per m and reused over n.
v3 blocked:    the free dims are blocked (2 row tiles x 2 column tiles): every tile loaded
               is reused by two matmul chains.
v4 optimised:  blocks of 16 row tiles x 2 column tiles x 8 contraction tiles; rhs rows of
               1024 elements and lhsT rows of 2048 per transfer (large DMAs); partial
               results accumulated in SBUF across contraction blocks.
"""
import nki
import nki.isa as nisa
import nki.language as nl

TK, TM, TN = 128, 128, 512


def _store_tile(result, acc, m0, n0):
    out = nl.ndarray((TM, TN), dtype=result.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out, src=acc)
    nisa.dma_copy(dst=result[m0:m0 + TM, n0:n0 + TN], src=out)


@nki.jit
def matmul_v1(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(M // TM):
        for n in range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // TK):
                lt = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                rt = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lt, src=lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                nisa.dma_copy(dst=rt, src=rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                nisa.nc_matmul(acc, lt, rt)
            _store_tile(result, acc, m * TM, n * TN)
    return result


@nki.jit
def matmul_v2(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(M // TM):
        lts = []
        for k in range(K // TK):
            lt = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=lt, src=lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
            lts.append(lt)
        for n in range(N // TN):
            rts = []
            for k in range(K // TK):
                rt = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=rt, src=rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                rts.append(rt)
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // TK):
                nisa.nc_matmul(acc, lts[k], rts[k])
            _store_tile(result, acc, m * TM, n * TN)
    return result


@nki.jit
def matmul_v3(lhsT, rhs, bm_tiles=2, bn_tiles=2):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(M // (TM * bm_tiles)):
        lts = [[None] * (K // TK) for _ in range(bm_tiles)]
        for bm in range(bm_tiles):
            m0 = (m * bm_tiles + bm) * TM
            for k in range(K // TK):
                lt = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lt, src=lhsT[k * TK:(k + 1) * TK, m0:m0 + TM])
                lts[bm][k] = lt
        for n in range(N // (TN * bn_tiles)):
            rts = [[None] * (K // TK) for _ in range(bn_tiles)]
            for bn in range(bn_tiles):
                n0 = (n * bn_tiles + bn) * TN
                for k in range(K // TK):
                    rt = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                    nisa.dma_copy(dst=rt, src=rhs[k * TK:(k + 1) * TK, n0:n0 + TN])
                    rts[bn][k] = rt
            for bm in range(bm_tiles):
                for bn in range(bn_tiles):
                    acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                    for k in range(K // TK):
                        nisa.nc_matmul(acc, lts[bm][k], rts[bn][k])
                    _store_tile(result, acc, (m * bm_tiles + bm) * TM,
                                (n * bn_tiles + bn) * TN)
    return result


@nki.jit
def matmul_v4(lhsT, rhs, bm_tiles=16, bn_tiles=2, bk_tiles=8):
    K, M = lhsT.shape
    _, N = rhs.shape
    BM, BN, BK = TM * bm_tiles, TN * bn_tiles, TK * bk_tiles
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for n in range(N // BN):
        sums = [[nl.ndarray((TM, BN), dtype=nl.float32, buffer=nl.sbuf)
                 for _ in range(bm_tiles)] for _ in range(M // BM)]
        for k in range(K // BK):
            rts = []
            for bk in range(bk_tiles):
                rt = nl.ndarray((TK, BN), dtype=rhs.dtype, buffer=nl.sbuf)
                k0 = (k * bk_tiles + bk) * TK
                nisa.dma_copy(dst=rt, src=rhs[k0:k0 + TK, n * BN:(n + 1) * BN])
                rts.append(rt)
            for m in range(M // BM):
                lts = []
                for bk in range(bk_tiles):
                    lt = nl.ndarray((TK, BM), dtype=lhsT.dtype, buffer=nl.sbuf)
                    k0 = (k * bk_tiles + bk) * TK
                    nisa.dma_copy(dst=lt, src=lhsT[k0:k0 + TK, m * BM:(m + 1) * BM])
                    lts.append(lt)
                for bn in range(bn_tiles):
                    for bm in range(bm_tiles):
                        acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                        for bk in range(bk_tiles):
                            nisa.nc_matmul(acc, lts[bk][:, bm * TM:(bm + 1) * TM],
                                           rts[bk][:, bn * TN:(bn + 1) * TN])
                        part = sums[m][bm][:, bn * TN:(bn + 1) * TN]
                        if k == 0:
                            nisa.tensor_copy(dst=part, src=acc)
                        else:
                            nisa.tensor_tensor(dst=part, data1=part, data2=acc, op=nl.add)
        for m in range(M // BM):
            for bm in range(bm_tiles):
                out = nl.ndarray((TM, BN), dtype=result.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=out, src=sums[m][bm])
                m0 = m * BM + bm * TM
                nisa.dma_copy(dst=result[m0:m0 + TM, n * BN:(n + 1) * BN], src=out)
    return result
