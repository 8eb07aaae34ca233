"""A deterministic model of the engines' pseudo-random number generators (PRNG).

NKI documents the interface of the random instructions, not their bits: the Vector engine
used an LFSR before NeuronCore-v4 and XORWOW on v4, whose state per compute lane is four
XORWOW states of six uint32 each (24 values); the GpSimd engine keeps one state of six
uint32 per lane (Trainium3 architecture guide, "XORWOW-based PRNG";
nki.isa.rand_set_state). How a seed becomes a state, and which state serves which element,
are not documented. So nkirun's results are *not the hardware's bits*; what the model
keeps is what a kernel can rely on:

* every lane (partition) has its own state; an instruction only advances the lanes it
  writes, and the same state always gives the same numbers (set_rng_seed with the same
  seed, or rand_set_state with a state read by rand_get_state, replays a sequence);
* each value is 32 uniformly distributed bits (Marsaglia's XORWOW recurrence, six words:
  x0..x4 and the Weyl counter d, in that order in rand_get_state's output);
* the Vector engine has four states per lane and draws values four at a time: element j
  of a partition (row-major over the free dims) comes from state j % 4, and an
  instruction advances every state of a lane by ceil(n / 4) steps;
* a seed is expanded into states with SplitMix64 over (engine, seed, lane, state, word);
  before any seed the engines start from seed 0.
"""
from __future__ import annotations

import numpy as np

LANES = 128
WORDS = 6  # one XORWOW state: x0..x4 and the Weyl counter d
STREAMS = {"vector": 4, "gpsimd": 1}  # XORWOW states per lane [ARCH4]
_WEYL = np.uint32(362437)
_ENGINE_ID = {"vector": 1, "gpsimd": 2}


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class Prng:
    """One engine's PRNG: `state` is (LANES, streams, 6) uint32."""

    def __init__(self, engine: str):
        self.engine = engine
        self.streams = STREAMS[engine]
        self.state = np.zeros((LANES, self.streams, WORDS), np.uint32)
        self.seed(0)

    @property
    def words_per_lane(self) -> int:
        return self.streams * WORDS

    def seed(self, value: int) -> None:
        """Every lane's states from one 32-bit seed (the model's expansion)."""
        idx = np.arange(LANES * self.streams * WORDS, dtype=np.uint64)
        key = (np.uint64(_ENGINE_ID[self.engine]) << np.uint64(56)) ^ (
            np.uint64(value & 0xFFFFFFFF) << np.uint64(20))
        words = (_splitmix64(idx ^ key) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        self.state = words.reshape(LANES, self.streams, WORDS)
        dead = ~self.state[..., :5].any(axis=-1)  # all-zero xorshift words never move
        self.state[..., 0][dead] = 1

    def get(self, lanes: slice) -> np.ndarray:
        """(n, streams * 6) uint32: the states of `lanes`, state by state."""
        s = self.state[lanes]
        return s.reshape(s.shape[0], -1).copy()

    def set(self, lanes: slice, words: np.ndarray) -> None:
        n = len(range(LANES)[lanes])
        self.state[lanes] = np.asarray(words, np.uint32).reshape(n, self.streams, WORDS)

    def draw(self, lanes: slice, n: int) -> np.ndarray:
        """(lanes, n) uint32: the next n values of each lane in `lanes` (advances them).

        XORWOW is sequential along a lane's stream, so the loop runs over steps
        (ceil(n / streams) of them), each vectorised over every lane and state.
        """
        st = self.state[lanes]
        x = [st[..., i].copy() for i in range(5)]
        d = st[..., 5].copy()
        steps = -(-n // self.streams)
        out = np.empty((st.shape[0], steps, self.streams), np.uint32)
        with np.errstate(over="ignore"):
            for k in range(steps):
                t, s = x[4], x[0]
                t = t ^ (t >> 2)
                t ^= t << 1
                t ^= s ^ (s << 4)
                x = [t, s, x[1], x[2], x[3]]
                d += _WEYL
                np.add(t, d, out=out[:, k])
        self.state[lanes] = np.stack(x + [d], axis=-1)
        return out.reshape(st.shape[0], -1)[:, :n]


def uniform01(bits: np.ndarray) -> np.ndarray:
    """float32 in [0, 1) from 32 random bits: the top 24 bits times 2^-24 (exact)."""
    return (bits >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)


NOTE_CODE = "W580"


def machine_prng(m, engine: str) -> Prng:
    """The run's PRNG of `engine` (made on first use: seed 0)."""
    regs = getattr(m, "prng", None)
    if regs is None:
        regs = m.prng = {}
    p = regs.get(engine)
    if p is None:
        p = regs[engine] = Prng(engine)
    return p


def lanes_of(r) -> slice:
    """The compute lanes (absolute partitions) a view covers."""
    return slice(r.part_start, r.part_start + r.partitions * r.part_step, r.part_step)


def draw_bits(b, m, engine: str, r) -> np.ndarray:
    """(P, N) uint32 random bits for view `r` from `engine`'s PRNG; the first call of a run
    adds the run-time note that these are the model's numbers, not the hardware's."""
    note_model(b, m)
    return machine_prng(m, engine).draw(lanes_of(r), r.free_size)


def note_model(b, m) -> None:
    if getattr(m, "prng_noted", False):
        return
    m.prng_noted = True
    from nkirun.diagnostics import warning
    m.warnings.append(warning(
        NOTE_CODE, f"{b.op}: random values (and PRNG states) come from nkirun's seeded model "
        "(per-lane XORWOW), not the hardware's generator: the distribution and seeding behave "
        "as documented, the bits differ from a device run", b.loc(), b.index,
        hint="compare statistics, not values, with hardware; `run --expect` marks outputs "
             "that depend on them"))
