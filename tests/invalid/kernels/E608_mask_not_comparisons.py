# expect: E608 at 13
# args: --shape x=float32[128,64]
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(64)[None, :]
    # NKI joins mask comparisons with `&` only: `|` makes no mask (two rectangles)
    tile = nl.load(x[ip, jf], mask=(ip < 8) | (jf < 4))
    nl.store(out[ip, jf], value=tile)
    return out
