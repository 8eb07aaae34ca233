# expect: E605 at 10
# args: --shape x=float32[128,4]
import nki
import nki.language as nl


@nki.jit
def kernel(x):
    # float8_e4m3fn (no infinities) is not among the dtypes nkirun models
    t = nl.ndarray((128, 4), dtype=nl.float8_e4m3fn, buffer=nl.sbuf)
    return x
