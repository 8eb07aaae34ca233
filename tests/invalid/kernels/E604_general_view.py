# expect: E604 at 13
# args: --shape x=float32[128,4]
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t.ap(pattern=[[4, 128], [0, 4]]))
    return out
