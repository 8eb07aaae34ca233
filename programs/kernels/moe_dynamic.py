"""MoE-style dynamic expert loop: how many token tiles an expert processes is known only
at run time.

x is [T, 128, D] token tiles, w is [D, F] the expert's weight (D <= 128), count is a [1, 1]
int32 in HBM: the number of tiles routed to the expert. Tiles 0..count-1 of y are
x[t] @ w; the others stay zero. The loop is a runtime loop (nl.dynamic_range on a
register): nkirun traces its body once, `run` iterates it `count` times on the data, and
`cost` counts the iterations from the data or from `--trip t=N`.

`expert_while` does the same with `while reg:` on a flag register, the way nki-library's
blockwise MoE kernels walk their dynamic blocks: the flag says whether another tile
remains, recomputed at the end of each iteration.
"""
import nki
import nki.isa as nisa
import nki.language as nl


def _zero_fill(y, T, P, F):
    zeros = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    for t in nl.affine_range(T):  # unrolled: every tile starts at zero
        nisa.dma_copy(dst=y[t], src=zeros)


def _one_tile(x, w_sb, y, tile_reg, P, D, F):
    """y[tile] = x[tile] @ w, the tile chosen by a register (scalar_offset on dim 0)."""
    xt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x.ap([[D, P], [1, D]], scalar_offset=tile_reg, indirect_dim=0))
    xT_ps = nl.ndarray((D, P), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=xT_ps, data=xt)
    xT = nl.ndarray((D, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=xT, src=xT_ps)
    acc = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=xT, moving=w_sb)
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out, src=acc)
    nisa.dma_copy(dst=y.ap([[F, P], [1, F]], scalar_offset=tile_reg, indirect_dim=0), src=out)


@nki.jit
def expert_tiles(x, w, count):
    T, P, D = x.shape
    F = w.shape[1]
    y = nl.ndarray((T, P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    _zero_fill(y, T, P, F)
    w_sb = nl.ndarray((D, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_sb, src=w)
    count_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=count_sb, src=count)
    n = nisa.register_alloc()
    nisa.register_load(n, count_sb)
    for t in nl.dynamic_range(n):  # a runtime loop: traced once, run `count` times
        _one_tile(x, w_sb, y, t, P, D, F)
    return y


@nki.jit
def expert_while(x, w, count):
    T, P, D = x.shape
    F = w.shape[1]
    y = nl.ndarray((T, P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    _zero_fill(y, T, P, F)
    w_sb = nl.ndarray((D, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_sb, src=w)
    left = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)  # tiles still to do
    nisa.dma_copy(dst=left, src=count)
    index = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)  # the next tile
    nisa.memset(dst=index, value=0)
    more = nisa.register_alloc()
    nisa.register_load(more, left)
    tile = nisa.register_alloc(0)
    while more:  # a runtime while loop on the register: its body is traced once
        nisa.register_load(tile, index)
        _one_tile(x, w_sb, y, tile, P, D, F)
        nisa.tensor_scalar(dst=index, data=index, op0=nl.add, operand0=1)
        nisa.tensor_scalar(dst=left, data=left, op0=nl.subtract, operand0=1)
        nisa.register_load(more, left)
    return y
