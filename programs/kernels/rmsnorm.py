"""RMSNorm over the last dim: y = x / sqrt(mean(x**2) + eps) * w.

x is [R, D] with R a multiple of 128 (rows on partitions), w is [1, D]. The weight row is
loaded once and broadcast across the 128 partitions with nl.broadcast_to.
"""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm(x, w, eps=1e-6):
    R, D = x.shape
    P = nl.tile_size.pmax
    assert R % P == 0, f"rows ({R}) must be a multiple of {P}"
    y = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm, name="y")
    w_row = nl.load(w)
    w_all = nl.broadcast_to(w_row, (P, D))  # partition broadcast [1, D] -> [P, D]
    for i in nl.affine_range(R // P):
        xt = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[i * P:(i + 1) * P, :])
        sq = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        ssum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=sq, data1=xt, data2=xt, op=nl.multiply)
        nisa.tensor_reduce(dst=ssum, op=nl.add, data=sq, axis=1)
        ms = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=ms, data=ssum, op0=nl.multiply, operand0=1.0 / D,
                           op1=nl.add, operand1=eps)
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=ms)
        normed = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed, data=xt, op0=nl.multiply, operand0=rstd)
        out = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out, data1=normed, data2=w_all, op=nl.multiply)
        nisa.dma_copy(dst=y[i * P:(i + 1) * P, :], src=out)
    return y
