# expect: E600 at 0
# args: --shape x=float32[128,4]
import nki


@nki.jit
def first(x):
    return x


@nki.jit
def second(x):
    return x
