"""A Mamba-style selective scan with one state per channel, in chunks along the sequence.

For channel c (on partitions) and time t:
    h[c, t] = exp(delta[c, t] * A[c]) * h[c, t-1] + delta[c, t] * B[t] * u[c, t]
    y[c, t] = h[c, t] * Cm[t]
delta, u are [Ch, S] (Ch a multiple of 128), A is [Ch, 1], B and Cm are [1, S] shared by
every channel (broadcast across partitions). The scan runs chunk by chunk, each chunk
starting from the previous one's last state.
"""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def mamba_scan(delta, u, A, B, Cm, chunk=256):
    Ch, S = delta.shape
    P = nl.tile_size.pmax
    assert Ch % P == 0 and S % chunk == 0
    f32 = nl.float32
    y = nl.ndarray((Ch, S), dtype=f32, buffer=nl.shared_hbm, name="y")
    for c in range(Ch // P):
        rows = slice(c * P, (c + 1) * P)
        a = nl.ndarray((P, 1), dtype=f32, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=A[rows, :])
        h = nl.zeros((P, 1), dtype=f32, name="h")
        for s in range(S // chunk):
            cols = slice(s * chunk, (s + 1) * chunk)
            dt = nl.ndarray((P, chunk), dtype=f32, buffer=nl.sbuf)
            nisa.dma_copy(dst=dt, src=delta[rows, cols])
            ut = nl.ndarray((P, chunk), dtype=f32, buffer=nl.sbuf)
            nisa.dma_copy(dst=ut, src=u[rows, cols])
            decay = nl.ndarray((P, chunk), dtype=f32, buffer=nl.sbuf)
            nisa.activation(dst=decay, op=nl.exp, data=dt, scale=a)
            b_all = nl.broadcast_to(nl.load(B[:, cols]), (P, chunk))
            c_all = nl.broadcast_to(nl.load(Cm[:, cols]), (P, chunk))
            drive = nl.ndarray((P, chunk), dtype=f32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=drive, data1=dt, data2=ut, op=nl.multiply)
            nisa.tensor_tensor(dst=drive, data1=drive, data2=b_all, op=nl.multiply)
            states = nl.ndarray((P, chunk), dtype=f32, buffer=nl.sbuf)
            nisa.tensor_tensor_scan(dst=states, data0=decay, data1=drive, initial=h,
                                    op0=nl.multiply, op1=nl.add)
            if s + 1 < S // chunk:  # the carry into the next chunk
                nisa.tensor_copy(dst=h, src=states[:, chunk - 1])
            out = nl.ndarray((P, chunk), dtype=f32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=out, data1=states, data2=c_all, op=nl.multiply)
            nisa.dma_copy(dst=y[rows, cols], src=out)
    return y
