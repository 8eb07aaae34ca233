"""A dynamic expert loop on the two cores of a logical core (`--lnc 2`): how many token
tiles the expert processes is known only at run time, and the cores share the work of each
tile.

x is [T, 128, D] token tiles, w is [D, F] the expert's weight (D even, D/2 <= 128), count
is a [1, 1] int32 in HBM. Tiles 0..count-1 of y are x[t] @ w; the others stay zero.

Each core (nl.program_id(0)) loads the count into its own register and runs the same
runtime loop (nl.dynamic_range). In an iteration, core c multiplies its half of the
contraction dimension, x[t][:, c*D/2:(c+1)*D/2] @ w[c*D/2:(c+1)*D/2, :], the cores
exchange their partial products with a sendrecv inside the loop (they pair iteration by
iteration), and each adds the two and stores its half of the tile's rows. Zero-filling is
split the same way, so no element of y is written by both cores.
"""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def expert_tiles_lnc2(x, w, count):
    T, P, D = x.shape
    F = w.shape[1]
    c = nl.program_id(0)
    other = 1 - c
    Dh, Ph = D // 2, P // 2
    y = nl.ndarray((T, P, F), dtype=nl.float32, buffer=nl.shared_hbm, name="y")
    zeros = nl.ndarray((Ph, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    for t in nl.affine_range(T):  # unrolled: this core's rows of every tile start at zero
        nisa.dma_copy(dst=y[t, c * Ph:(c + 1) * Ph, :], src=zeros)
    w_sb = nl.ndarray((Dh, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_sb, src=w[c * Dh:(c + 1) * Dh, :])
    count_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=count_sb, src=count)
    n = nisa.register_alloc()
    nisa.register_load(n, count_sb)
    for t in nl.dynamic_range(n):  # a runtime loop on each core, traced once per core
        xt = nl.ndarray((P, Dh), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x.ap([[D, P], [1, Dh]], offset=c * Dh, scalar_offset=t,
                                       indirect_dim=0))
        xT_ps = nl.ndarray((Dh, P), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=xT_ps, data=xt)
        xT = nl.ndarray((Dh, P), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=xT, src=xT_ps)
        acc = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=xT, moving=w_sb)
        mine = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=mine, src=acc)
        theirs = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.sendrecv(src=mine, dst=theirs, send_to_rank=other, recv_from_rank=other,
                      pipe_id=0)
        full = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=full, data1=mine, data2=theirs, op=nl.add)
        nisa.dma_copy(dst=y.ap([[F, Ph], [1, F]], offset=c * Ph * F, scalar_offset=t,
                               indirect_dim=0), src=full[c * Ph:(c + 1) * Ph, :])
    return y
