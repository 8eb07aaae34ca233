# expect: E605 at 11
# args: --shape x=float32[128,4]
import numpy as np
import nki
import nki.language as nl


@nki.jit
def kernel(x):
    # NKI has no 64-bit float: no engine computes with it and no tile holds it
    t = nl.ndarray((128, 4), dtype=np.float64, buffer=nl.sbuf)
    return x
