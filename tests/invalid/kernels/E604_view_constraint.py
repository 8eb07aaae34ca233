# expect: E604 at 12
# args: --shape x=float32[128,4]
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 2, 2), dtype=nl.float32, buffer=nl.sbuf)
    swapped = t.permute((0, 2, 1)).reshape((128, 4))  # no reshape of this order without a copy
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=swapped)
    return out
