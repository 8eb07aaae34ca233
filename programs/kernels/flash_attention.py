"""One flash-attention block with online softmax: o = softmax(q.T @ k / sqrt(d)) @ v.

q is [d, Sq] and k is [d, Skv] (head dim d <= 128 on partitions, Sq = 128 queries),
v is [Skv, d]; Skv is a multiple of 128. The keys are visited 128 at a time keeping a
running row max m, row sum l and unnormalised output o: each step rescales l and o by
exp(m_old - m_new) before adding the new tile's share.
"""
import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def flash_attention(q, k, v):
    d, Sq = q.shape
    _, Skv = k.shape
    T = 128
    assert Sq == T and Skv % T == 0 and d <= 128
    scale = 1.0 / math.sqrt(d)
    f32 = nl.float32
    out = nl.ndarray((Sq, d), dtype=f32, buffer=nl.shared_hbm, name="out")
    q_sb = nl.ndarray((d, Sq), dtype=q.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=q_sb, src=q)
    m = nl.ndarray((Sq, 1), dtype=f32, buffer=nl.sbuf, name="m")
    l = nl.ndarray((Sq, 1), dtype=f32, buffer=nl.sbuf, name="l")
    o = nl.ndarray((Sq, d), dtype=f32, buffer=nl.sbuf, name="o")
    nisa.memset(dst=m, value=-3.0e38)
    nisa.memset(dst=l, value=0.0)
    nisa.memset(dst=o, value=0.0)
    for j in range(Skv // T):
        k_sb = nl.ndarray((d, T), dtype=k.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=k_sb, src=k[:, j * T:(j + 1) * T])
        v_sb = nl.ndarray((T, d), dtype=v.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=v_sb, src=v[j * T:(j + 1) * T, :])
        s = nl.ndarray((Sq, T), dtype=f32, buffer=nl.psum)
        nisa.nc_matmul(dst=s, stationary=q_sb, moving=k_sb)  # q.T @ k: queries on partitions
        s_sb = nl.ndarray((Sq, T), dtype=f32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=s_sb, data=s, op0=nl.multiply, operand0=scale)
        tile_max = nl.ndarray((Sq, 1), dtype=f32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=tile_max, op=nl.maximum, data=s_sb, axis=1)
        m_new = nl.ndarray((Sq, 1), dtype=f32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=m_new, data1=m, data2=tile_max, op=nl.maximum)
        neg_m = nl.ndarray((Sq, 1), dtype=f32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=neg_m, data=m_new, op0=nl.multiply, operand0=-1.0)
        p = nl.ndarray((Sq, T), dtype=f32, buffer=nl.sbuf)
        row_sum = nl.ndarray((Sq, 1), dtype=f32, buffer=nl.sbuf)
        nisa.activation(dst=p, op=nl.exp, data=s_sb, bias=neg_m, reduce_op=nl.add,
                        reduce_res=row_sum, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        corr = nl.ndarray((Sq, 1), dtype=f32, buffer=nl.sbuf)
        nisa.activation(dst=corr, op=nl.exp, data=m, bias=neg_m)  # exp(m_old - m_new)
        nisa.tensor_scalar(dst=l, data=l, op0=nl.multiply, operand0=corr, op1=nl.add,
                           operand1=0.0)
        nisa.tensor_tensor(dst=l, data1=l, data2=row_sum, op=nl.add)
        p_t = nl.ndarray((T, Sq), dtype=f32, buffer=nl.psum)
        nisa.nc_transpose(dst=p_t, data=p)
        p_t_sb = nl.ndarray((T, Sq), dtype=f32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=p_t_sb, src=p_t)
        pv = nl.ndarray((Sq, d), dtype=f32, buffer=nl.psum)
        nisa.nc_matmul(dst=pv, stationary=p_t_sb, moving=v_sb)
        nisa.tensor_scalar(dst=o, data=o, op0=nl.multiply, operand0=corr)
        nisa.tensor_tensor(dst=o, data1=o, data2=pv, op=nl.add)
        if j + 1 < Skv // T:  # the running max for the next key tile
            nisa.tensor_copy(dst=m, src=m_new)
    inv_l = nl.ndarray((Sq, 1), dtype=f32, buffer=nl.sbuf)
    nisa.activation(dst=inv_l, op=nl.reciprocal, data=l)
    result = nl.ndarray((Sq, d), dtype=f32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=result, data=o, op0=nl.multiply, operand0=inv_l)
    nisa.dma_copy(dst=out, src=result)
    return out
