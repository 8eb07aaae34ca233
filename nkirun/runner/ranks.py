"""Several ranks' runs in one process: each rank's program runs in its own thread, and
they meet at their collectives (isa/collective.py says what a collective is; this module
only keeps the meetings).

The k-th collective a rank runs meets the k-th of every other rank of its rank-list. A
meeting completes when all of them have arrived; then each reads everyone's contribution.
It fails, on every rank waiting there, when

* the ranks arrived with different calls (E691: instruction, replica group, dtypes,
  shapes, keywords; the message shows each rank's call and line), or
* it can never complete (E692, deadlock): no rank is running any more, and a rank of
  the rank-list has finished (or failed) without arriving, or every rank is finished or
  waiting at a meeting that cannot complete. (Waiting for the running ranks to stop
  first makes the message name where every rank is, whatever the threads' timing.) That test is exact, so a run never hangs:
  each rank's own program is bounded (limits.py), and a wait ends when a meeting
  completes or the last running rank stops. WAIT_SLICE only bounds how long a waiting
  thread sleeps before it looks again.
"""
from __future__ import annotations

import contextvars
import threading

from nkirun.diagnostics import RunError, error
from nkirun.isa.collective import SEAT, Seat

WAIT_SLICE = 0.5  # seconds a waiting rank sleeps between looks (progress is notified)
FIX = ("call the same collectives, in the same order, on every rank of a rank-list (a "
       "collective under `if` must be reached by all of them), with the same replica_group, "
       "dtypes and shapes; per-rank data goes in the tensors' values")


class _Arrival:
    __slots__ = ("key", "payload", "where", "left")

    def __init__(self, key, payload, where, readers: int):
        self.key, self.payload, self.where, self.left = key, payload, where, readers


class World:
    """The meetings of one multi-rank run (one per call: runs never share a World)."""

    def __init__(self, size: int):
        self.size = size
        self.lock = threading.Condition()
        self.arrived: dict[int, dict[int, _Arrival]] = {}  # k -> rank -> its arrival
        self.state = ["running"] * size  # "running" | "waiting" | "finished" | "failed"
        self.position: list[str] = [""] * size  # what each rank waits at, for messages
        self.calls: list[tuple] = [(0, 0)] * size  # the (core, k) each rank is at
        self.met = [0] * size  # how many collectives each has met
        self.groups: list[tuple] = [()] * size  # the rank-list each waits with
        self.failure: RunError | None = None  # the E691/E692 every waiting rank raises

    def seat(self, rank: int) -> Seat:
        return Seat(self, rank)

    # ---- one rank at its k-th collective -----------------------------------------------------
    def meet(self, seat: Seat, k: tuple, b, group: tuple, key: tuple, payload) -> list:
        rank = seat.rank
        if max(group) >= self.size:
            raise RunError(error(
                "E690", f"{b.title}: its rank-list {list(group)} names rank {max(group)}; this "
                f"run has {self.size} ranks (0..{self.size - 1})", b.loc(), b.index,
                hint=f"run with ranks={max(group) + 1}, or give a replica_group of ranks "
                     f"below {self.size}"))
        where = f"{b.title} at {b.loc()}"
        with self.lock:
            self.calls[rank], self.groups[rank], self.met[rank] = k, group, seat.met
            here = self.arrived.setdefault(k, {})
            here[rank] = _Arrival(key, payload, where, len(group))
            self.state[rank], self.position[rank] = "waiting", f"waits at {where} " \
                                                              f"(its collective {_nth(k)})"
            self.lock.notify_all()
            while True:
                if self.failure is not None:
                    raise self.failure
                if all(r in here for r in group):
                    return self._read(here, group, rank, b)
                if self._stuck(here, group):
                    self.failure = self._deadlock(b, group, k)
                    self.lock.notify_all()
                    raise self.failure
                self.lock.wait(WAIT_SLICE)

    def _read(self, here: dict, group: tuple, rank: int, b) -> list:
        mine = here[rank]
        odd = [r for r in group if here[r].key != mine.key]
        if odd:
            self.failure = self._mismatch(b, group, here)
            self.lock.notify_all()
            raise self.failure
        parts = [here[r].payload for r in group]
        self.state[rank], self.position[rank] = "running", ""
        for r in group:  # the last reader of an arrival drops its arrays
            here[r].left -= 1
            if here[r].left == 0:
                here[r].payload = None
        return parts

    def _stuck(self, here: dict, group: tuple) -> bool:
        if "running" in self.state:  # (decided once every rank has stopped somewhere, so
            return False             # the report says where each one is, every time)
        if any(self.state[r] in ("finished", "failed") and r not in here for r in group):
            return True
        return not any(s == "waiting" and self._complete(r) for r, s in enumerate(self.state))

    def _complete(self, rank: int) -> bool:
        """Whether the meeting a waiting rank waits at has everyone (it runs on when it
        wakes)."""
        arrivals = self.arrived.get(self.calls[rank], {})
        return all(r in arrivals for r in self.groups[rank])

    # ---- the end of a rank's run -----------------------------------------------------------------
    def leave(self, rank: int, failed: bool) -> None:
        with self.lock:
            self.state[rank] = "failed" if failed else "finished"
            self.position[rank] = ("stopped with an error" if failed
                                   else f"finished after {self.met[rank]} collective(s)")
            self.lock.notify_all()

    # ---- messages ------------------------------------------------------------------------------
    def _ranks_text(self) -> str:
        return "; ".join(f"rank {r} {p or 'is running'}" for r, p in enumerate(self.position))

    def _deadlock(self, b, group: tuple, k: int) -> RunError:
        return RunError(error(
            "E692", f"deadlock: {b.title} (collective {_nth(k)} of rank-list "
            f"{list(group)}) can never complete — {self._ranks_text()}", b.loc(), b.index, hint=FIX))

    def _mismatch(self, b, group: tuple, here: dict) -> RunError:
        calls = "; ".join(f"rank {r}: {', '.join(map(str, here[r].key))} ({here[r].where})"
                          for r in group)
        return RunError(error(
            "E691", f"mismatched collective: the ranks of rank-list {list(group)} met with "
                    f"different calls — {calls}", b.loc(), b.index, hint=FIX))


def _nth(k: tuple) -> str:
    """`#3`, or `#3 of core 1` (LNC2: each core's collectives count apart)."""
    core, n = k
    return f"#{n}" + (f" of core {core}" if core else "")


def run_ranks(size: int, work) -> list:
    """`work(rank)` for each rank 0..size-1, each in its own thread bound to its seat of one
    World; the results in rank order. An exception of a rank is re-raised after all
    threads ended: the first rank's own error before the E691/E692 it caused elsewhere."""
    world = World(size)
    results: list = [None] * size
    errors: list = [None] * size

    def one(rank: int) -> None:
        SEAT.set(world.seat(rank))
        try:
            results[rank] = work(rank)
        except BaseException as exc:  # (re-raised below, in the caller's thread)
            errors[rank] = exc
            world.leave(rank, failed=True)
        else:
            world.leave(rank, failed=False)

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(one, r),
                                name=f"nkirun-rank-{r}", daemon=True) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [(r, e) for r, e in enumerate(errors) if e is not None]
    if failed:
        own = [(r, e) for r, e in failed if e is not world.failure]
        rank, exc = (own or failed)[0]
        raise exc
    return results
