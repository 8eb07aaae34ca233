"""Row softmax: y[r] = exp(x[r] - max(x[r])) / sum(exp(x[r] - max(x[r]))).

x is [R, D] with R a multiple of 128. The exponentials and their row sums come from one
activation (its Scalar-engine accumulator adds up each row while it writes).
"""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax(x):
    R, D = x.shape
    P = nl.tile_size.pmax
    assert R % P == 0
    y = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm, name="y")
    for i in range(R // P):
        rows = x[i * P:(i + 1) * P, :]
        t = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=rows)
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=t, axis=1, negate=True)
        e = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=neg_max, reduce_op=nl.add,
                        reduce_res=total, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv, op=nl.reciprocal, data=total)
        out = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=out, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=y[i * P:(i + 1) * P, :], src=out)
    return y
