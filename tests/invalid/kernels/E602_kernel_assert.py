# expect: E602 at 9
# args: --shape x=float32[128,4]
import nki


@nki.jit
def kernel(x):
    rows, cols = x.shape
    assert cols % 8 == 0, f"cols must be a multiple of 8, got {cols}"
    return x
