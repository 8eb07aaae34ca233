"""How fast does `nkirun cost` schedule a long program?

Builds a synthetic, valid program of N instructions in memory (no YAML: the parser is not
what is measured): a software-pipelined loop over a ring of on-chip tiles, each iteration
loading two disjoint column halves, filling a result tile through two interleaved strided
views on two engines (GpSimd and Vector), a range_select and an in-place one (write after
read), and two stores. It exercises every dependence kind, DMA queues and exact overlap of
disjoint and strided views. Prints the bind and schedule times.

    python benchmarks/bench_cost.py [-n 100000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import time

P, HALF, RING = 128, 256, 4
PER_ITER = 8


def build(n: int, target: str = "trn2"):
    """A program of exactly `n` instructions: (Program, bound instructions)."""
    from nkirun.diagnostics import Loc
    from nkirun.source.builder import Builder
    from nkirun.checker.bind import bind

    loc = Loc("<bench>", 1, 1)
    b = Builder("<bench>", ".")

    def tensor(name, **fields):
        b.tensor(name, {k: (v, loc, loc) for k, v in fields.items()}, loc)

    def inst(op, **args):
        b.instruction(op, {k: (v, loc) for k, v in args.items()}, loc)

    b.top("version", 1, loc, loc)
    b.top("target", target, loc, loc)
    cols = 16 * 2 * HALF  # the HBM source/destination cycle through 16 column blocks
    tensor("x", buffer="hbm", shape=[P, cols], dtype="float32", fill=1.0)
    tensor("lo", buffer="hbm", shape=[P, 1], dtype="float32", fill=0.0)
    tensor("hi", buffer="hbm", shape=[P, 1], dtype="float32", fill=100.0)
    tensor("y", buffer="hbm", shape=[P, cols], dtype="float32", output=True)
    tensor("b0", buffer="sbuf", shape=[P, 1], dtype="float32")
    tensor("b1", buffer="sbuf", shape=[P, 1], dtype="float32")
    for k in range(RING):
        tensor(f"t{k}", buffer="sbuf", shape=[P, 2 * HALF], dtype="float32")
        tensor(f"r{k}", buffer="sbuf", shape=[P, 2 * HALF], dtype="float32")
    inst("load", dst="b0", src="lo")
    inst("load", dst="b1", src="hi")
    count, i = 2, 0
    rs = dict(comp_op0="greater_equal", comp_op1="less", bound0="b0", bound1="b1")
    while count < n:
        k, blk = i % RING, (i % 16) * 2 * HALF
        t, r = f"t{k}", f"r{k}"
        body = [
            ("load", dict(dst=f"{t}[:, 0:{HALF}]", src=f"x[:, {blk}:{blk + HALF}]")),
            ("load", dict(dst=f"{t}[:, {HALF}:{2 * HALF}]",
                          src=f"x[:, {blk + HALF}:{blk + 2 * HALF}]")),
            ("memset", dict(dst=f"{r}[:, 0:{2 * HALF}:2]", value=0.0, engine="gpsimd")),
            ("memset", dict(dst=f"{r}[:, 1:{2 * HALF}:2]", value=0.0)),
            ("range_select", dict(dst=r, on_true_tile=t, **rs)),
            ("range_select", dict(dst=f"{t}[:, 0:{HALF}]", on_true_tile=f"{r}[:, 0:{HALF}]",
                                  **rs)),
            ("store", dict(dst=f"y[:, {blk}:{blk + HALF}]", src=f"{t}[:, 0:{HALF}]")),
            ("store", dict(dst=f"y[:, {blk + HALF}:{blk + 2 * HALF}]",
                           src=f"{r}[:, {HALF}:{2 * HALF}]")),
        ]
        for op, args in body[:n - count]:
            inst(op, **args)
        count += min(PER_ITER, n - count)
        i += 1
    program, diags = b.finish()
    assert not [d for d in diags if d.is_error], diags[:3]
    bound, diags = bind(program)
    assert not [d for d in diags if d.is_error], diags[:3]
    assert len(bound) == n
    return program, bound


def main() -> None:
    from nkirun.schedule import schedule
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=100_000, help="instructions")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    t0 = time.perf_counter()
    program, bound = build(a.n)
    t1 = time.perf_counter()
    best = cpu = float("inf")
    for _ in range(a.repeat):
        t2, c2 = time.perf_counter(), time.process_time()
        s = schedule(program, bound)
        best = min(best, time.perf_counter() - t2)
        cpu = min(cpu, time.process_time() - c2)
    print(f"{a.n:,} instructions: build+bind {t1 - t0:.2f} s; schedule, best of {a.repeat}: "
          f"{best:.3f} s wall, {cpu:.3f} s CPU ({best / a.n * 1e6:.2f} us/instruction); "
          f"makespan {s.total_ns / 1e3:,.1f} us, bottleneck {s.bottleneck()}")


if __name__ == "__main__":
    main()
