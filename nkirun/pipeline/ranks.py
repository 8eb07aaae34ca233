"""A multi-rank run (`nkirun.simulate(kernel, ranks=N)`, `nkirun run --ranks N`): one
program per rank, traced and checked one after the other, then run each in its own thread,
meeting at their collectives (runner/ranks.py; what a collective does: isa/collective.py).

Per-rank inputs: an argument wrapped in `per_rank(values)` gives rank r `values[r]` (a
sequence of N) or `values(r)` (a function of the rank); every other argument is the same
on every rank.
"""
from __future__ import annotations

from dataclasses import replace

from nkirun.diagnostics import NkirunError
from nkirun.pipeline import commands

MAX_RANKS = 64  # one thread per rank: a bound on what one call starts
OWN_CODES = ("E691", "E692")  # errors that name every rank themselves


class PerRank:
    """An argument with one value per rank (`nkirun.per_rank([...])`)."""

    __slots__ = ("values",)

    def __init__(self, values):
        if not callable(values) and not hasattr(values, "__len__"):
            raise TypeError("per_rank takes a sequence of one value per rank, or a function "
                            f"of the rank; got {type(values).__name__}")
        self.values = values

    def at(self, rank: int, ranks: int, name: str):
        if callable(self.values):
            return self.values(rank)
        if len(self.values) != ranks:
            raise ValueError(f"per_rank argument `{name}` has {len(self.values)} values for "
                             f"{ranks} ranks; give one per rank")
        return self.values[rank]

    def __repr__(self) -> str:
        return f"per_rank({self.values!r})"


def require_ranks(ranks) -> int:
    if not isinstance(ranks, int) or isinstance(ranks, bool) or not 1 <= ranks <= MAX_RANKS:
        raise ValueError(f"ranks must be an int from 1 to {MAX_RANKS}; got {ranks!r}")
    return ranks


def split(args: tuple, kwargs: dict, ranks: int) -> list[tuple[tuple, dict]]:
    """(args, kwargs) of each rank: per_rank arguments spread, the others shared."""
    def pick(v, r, name):
        return v.at(r, ranks, name) if isinstance(v, PerRank) else v
    return [(tuple(pick(a, r, f"#{i}") for i, a in enumerate(args)),
             {k: pick(v, r, k) for k, v in kwargs.items()}) for r in range(ranks)]


def run_checked(checked: list, uninitialized: str = "error") -> list:
    """Run each rank's checked program (commands.Checked) in its own thread; the Ran of
    each, in rank order. A rank's own error names the rank; E691/E692 name them all."""
    from nkirun.runner.ranks import run_ranks

    def work(rank: int):
        try:
            return commands.run(checked[rank], uninitialized, progress=False)
        except NkirunError as e:
            if len(checked) > 1:
                e.diagnostics = [d if d.code in OWN_CODES else
                                 replace(d, message=f"rank {rank}: {d.message}")
                                 for d in e.diagnostics]
            raise
    return run_ranks(len(checked), work)


def world_size(program) -> int:
    """The ranks a program's collectives name (the largest rank + 1; 1 without any)."""
    from nkirun.isa import REGISTRY
    from nkirun.isa.kinds import ArgError
    top = 0
    for inst in program.instructions:
        spec = REGISTRY.get(inst.op)
        if spec is None or not spec.collective:
            continue
        for p in spec.params:
            value = inst.args.get(p.name)
            if value is None or p.kind.name != "rank_lists":
                continue
            try:
                lists = p.kind.convert(p, value, inst.loc)
            except ArgError:  # (the check reports it)
                continue
            top = max([top, *(r + 1 for g in lists for r in g)])
    return max(top, 1)
