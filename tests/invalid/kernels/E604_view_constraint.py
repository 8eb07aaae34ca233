# expect: E604 at 12
# args: --shape x=float32[128,4]
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    evens = t[:, 0:4:2].reshape((128, 2, 1))  # a strided view is not contiguous
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=evens)
    return out
