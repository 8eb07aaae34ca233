"""RMSNorm on the two cores of a Logical NeuronCore (LNC2), the hidden dim split between
them: y = x / sqrt(mean(x**2) + eps) * w.

x is [R, D] (R a multiple of 128, D even), w is [1, D]. Core c (nl.program_id(0)) owns the
columns [c*D/2, (c+1)*D/2): it loads its half of each 128-row tile, sums the squares of
that half, and trades the partial sums with the other core through nisa.sendrecv, so each
core has the full row sums and normalises its own half. A core_barrier on y at the end
marks the output complete on both cores. Run it with `--lnc 2` (trn2/trn3):

    nkirun run programs/kernels/rmsnorm_lnc2.py --lnc 2 --input x=x.npy --input w=w.npy
"""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_lnc2(x, w, eps=1e-6):
    R, D = x.shape
    P = nl.tile_size.pmax
    cores = nl.num_programs(0)
    core = nl.program_id(0)
    assert cores == 2, "launch on two cores: nkirun ... --lnc 2"
    assert R % P == 0 and D % 2 == 0, "R must be a multiple of 128 and D even"
    H = D // 2
    cols = slice(core * H, (core + 1) * H)
    y = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm, name="y")
    w_row = nl.ndarray((1, H), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_row, src=w[:, cols])
    w_all = nl.broadcast_to(w_row, (P, H))
    for i in nl.affine_range(R // P):
        rows = slice(i * P, (i + 1) * P)
        xt = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[rows, cols])
        sq = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
        mine = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=sq, data1=xt, data2=xt, op=nl.multiply)
        nisa.tensor_reduce(dst=mine, op=nl.add, data=sq, axis=1)
        theirs = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        other = 1 - core
        nisa.sendrecv(src=mine, dst=theirs, send_to_rank=other, recv_from_rank=other,
                      pipe_id=0)
        # add in core order so both cores round the same sum the same way
        total = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        first, second = (mine, theirs) if core == 0 else (theirs, mine)
        nisa.tensor_tensor(dst=total, data1=first, data2=second, op=nl.add)
        ms = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=ms, data=total, op0=nl.multiply, operand0=1.0 / D,
                           op1=nl.add, operand1=eps)
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=ms)
        normed = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed, data=xt, op0=nl.multiply, operand0=rstd)
        out = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out, data1=normed, data2=w_all, op=nl.multiply)
        nisa.dma_copy(dst=y[rows, cols], src=out)
    nisa.core_barrier(data=y, cores=(0, 1))
    return y
