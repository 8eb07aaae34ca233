# expect: E605 at 10
# args: --shape x=float32[128,4]
import nki
import nki.language as nl


@nki.jit
def kernel(x):
    # nkirun computes with the twelve NKI dtypes; packed MX types are not among them
    t = nl.ndarray((128, 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    return x
