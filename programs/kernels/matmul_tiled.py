"""Tiled matrix multiplication: result[M, N] = lhsT.T @ rhs, accumulating over K in PSUM.

lhsT is [K, M] (the left matrix already transposed, K on partitions), rhs is [K, N].
K and M are multiples of 128, N a multiple of 512. Each K step adds into the same PSUM
tile: nc_matmul without `accumulate=` overwrites on the first write of a PSUM element and
accumulates on the later ones (NKI 0.6 auto-detect).
"""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, f"contraction dims differ: {K} and {K2}"
    TK, TM, TN = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax
    assert K % TK == 0 and M % TM == 0 and N % TN == 0, "K, M need multiples of 128, N of 512"
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm, name="result")
    for n in range(N // TN):
        # one K-strip of rhs per column block, reused by every row block
        strip = []
        for k in range(K // TK):
            r = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=r, src=rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
            strip.append(r)
        for m in range(M // TM):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // TK):
                l = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=l, src=lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                nisa.nc_matmul(acc, l, strip[k])
            out = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(dst=result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], src=out)
    return result
