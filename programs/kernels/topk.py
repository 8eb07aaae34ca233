"""Top-k per row (k a multiple of 8): values in descending order and their column indices.

x is [R, N] with R <= 128 rows on partitions and 8 <= N. Each round takes the 8 largest
values left (max8), finds their positions (nc_find_index8) and knocks them out of the
working copy (nc_match_replace8 with -inf) for the next round.
"""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def topk(x, k=8):
    R, N = x.shape
    assert k % 8 == 0 and k <= N and R <= nl.tile_size.pmax
    values = nl.ndarray((R, k), dtype=nl.float32, buffer=nl.shared_hbm, name="values")
    indices = nl.ndarray((R, k), dtype=nl.uint32, buffer=nl.shared_hbm, name="indices")
    work = nl.ndarray((R, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=work, src=x)
    vals = nl.ndarray((R, k), dtype=nl.float32, buffer=nl.sbuf)
    idx = nl.ndarray((R, k), dtype=nl.uint32, buffer=nl.sbuf)
    for r in range(k // 8):
        best = vals[:, r * 8:(r + 1) * 8]
        nisa.max8(dst=best, src=work)
        nisa.nc_find_index8(dst=idx[:, r * 8:(r + 1) * 8], data=work, vals=best)
        if r + 1 < k // 8:
            nisa.nc_match_replace8(dst=work, data=work, vals=best, imm=float("-inf"))
    nisa.dma_copy(dst=values, src=vals)
    nisa.dma_copy(dst=indices, src=idx)
    return values, indices
