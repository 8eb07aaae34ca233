"""Single-tile attention the way a bf16 kernel keeps its data: out = softmax(q.T @ k * s) @ v.

q and k are [d, 128] (head dim d <= 128 on partitions, 128 queries and 128 keys), v is
[128, d]. Scores and the P @ V product accumulate in float32 PSUM; the probabilities,
their transpose and the output are stored in `p_dtype` / `out_dtype` (bfloat16 by
default), the precision choices `nkirun run --shadow` weighs (docs/shadow.md).
"""
import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def attention_bf16(q, k, v, p_dtype=nl.bfloat16, out_dtype=nl.bfloat16):
    d, S = q.shape
    assert S == 128 and k.shape == (d, S) and v.shape == (S, d) and d <= 128
    f32 = nl.float32
    q_sb = nl.ndarray((d, S), dtype=q.dtype, buffer=nl.sbuf)
    k_sb = nl.ndarray((d, S), dtype=k.dtype, buffer=nl.sbuf)
    v_sb = nl.ndarray((S, d), dtype=p_dtype, buffer=nl.sbuf)  # the matmul wants p's dtype
    nisa.dma_copy(dst=q_sb, src=q)
    nisa.dma_copy(dst=k_sb, src=k)
    nisa.dma_copy(dst=v_sb, src=v)
    scores = nl.ndarray((S, S), dtype=f32, buffer=nl.psum)
    nisa.nc_matmul(dst=scores, stationary=q_sb, moving=k_sb)  # queries on partitions
    row_max = nl.ndarray((S, 1), dtype=f32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=scores, axis=1)
    bias = nl.ndarray((S, 1), dtype=f32, buffer=nl.sbuf)
    scale = 1.0 / math.sqrt(d)
    nisa.tensor_scalar(dst=bias, data=row_max, op0=nl.multiply, operand0=-scale)
    p = nl.ndarray((S, S), dtype=p_dtype, buffer=nl.sbuf)
    row_sum = nl.ndarray((S, 1), dtype=f32, buffer=nl.sbuf)
    nisa.activation(dst=p, op=nl.exp, data=scores, scale=scale, bias=bias,
                    reduce_op=nl.add, reduce_res=row_sum,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    inv_sum = nl.ndarray((S, 1), dtype=f32, buffer=nl.sbuf)
    nisa.activation(dst=inv_sum, op=nl.reciprocal, data=row_sum)
    p_t_psum = nl.ndarray((S, S), dtype=p_dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=p_t_psum, data=p)  # keys on partitions for the second matmul
    p_t = nl.ndarray((S, S), dtype=p_dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=p_t, src=p_t_psum)
    pv = nl.ndarray((S, d), dtype=f32, buffer=nl.psum)
    nisa.nc_matmul(dst=pv, stationary=p_t, moving=v_sb)
    o = nl.ndarray((S, d), dtype=out_dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=o, data=pv, op0=nl.multiply, operand0=inv_sum)
    out = nl.ndarray((S, d), dtype=out_dtype, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=o)
    return out
