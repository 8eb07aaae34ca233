"""Running a sweep: the variants not yet finished go to the backend; rows come back in any
order and are written as they come, except that a row whose program was traced waits
while a variant with a smaller id is still in flight. So which of two identical programs
is the `duplicate` (the later id) does not depend on timing, --jobs or the backend, and a
resumed sweep gives the same rows. Then the best K by predicted time are verified."""
from __future__ import annotations

import heapq
from dataclasses import dataclass

from nkirun.sweep.evaluate import Setup, Variant
from nkirun.sweep.results import ResultsFile, ranked


@dataclass
class Plan:
    setup: Setup
    variants: list  # [(kernel spec, params)]; the id is the position
    meta: dict
    verify: str = "top:5"  # "top:K" | "all" | "none"


class _Emitter:
    """Writes rows in the order described above and marks duplicates."""

    def __init__(self, results: ResultsFile, pending_ids, done: dict, on_row=None):
        self.results, self.on_row = results, on_row
        self.unfinished = set(pending_ids)
        self.order = sorted(pending_ids)
        self.next = 0  # index into order: everything before it has finished
        self.held: list = []  # heap of (id, row)
        self.rows = done
        self.owners: dict = {}  # fingerprint -> the row that was costed for it
        self.known: list = []  # costed fingerprints, in the order they became known
        for row in sorted(done.values(), key=lambda r: r["id"]):
            self._own(row)

    def _own(self, row) -> None:
        fp = row.get("fingerprint")
        if fp and row["status"] in ("ok", "mismatch") and fp not in self.owners:
            self.owners[fp] = row
            self.known.append(fp)

    def __call__(self, row: dict) -> None:
        self.unfinished.discard(row["id"])
        while self.next < len(self.order) and self.order[self.next] not in self.unfinished:
            self.next += 1
        if row.get("fingerprint") is None:
            self._emit(row)
        else:
            heapq.heappush(self.held, (row["id"], row))
        low = self.order[self.next] if self.next < len(self.order) else None
        while self.held and (low is None or self.held[0][0] < low):
            self._emit(heapq.heappop(self.held)[1])

    def _emit(self, row: dict) -> None:
        fp = row.get("fingerprint")
        owner = self.owners.get(fp) if fp else None
        if owner is not None and owner is not row and (
                owner["id"] < row["id"] or row["status"] == "duplicate") and row["status"] in (
                "ok", "duplicate", "mismatch"):
            row.update(status="duplicate", duplicate_of=owner["id"],
                       total_ns=owner["total_ns"], assumed_share=owner.get("assumed_share"),
                       verify=None)
        elif row["status"] == "duplicate":  # (its owner is unknown: cannot happen)
            row["status"] = "error"
            row["message"] = "marked duplicate of an unknown variant (a bug in nkirun)"
        else:
            self._own(row)
        self.rows[row["id"]] = row
        self.results.append(row)
        if self.on_row is not None:
            self.on_row(row)


def parse_verify(text: str) -> tuple[str, int]:
    """("top", K) | ("all", 0) | ("none", 0)."""
    t = (text or "").strip()
    if t in ("all", "none"):
        return t, 0
    kind, _, k = t.partition(":")
    if kind == "top" and k.strip().isdigit() and int(k) > 0:
        return "top", int(k)
    raise ValueError(f"--verify {text!r}: expected top:K (K >= 1), all or none")


def run_plan(plan: Plan, backend, out_dir: str, resume: bool = False,
             on_row=None, on_start=None, close: bool = True) -> dict[int, dict]:
    """Run (or continue) the sweep; id -> final row. `on_start(total, done)` is told how
    many variants there are and how many were finished before; `close`: the backend's
    workers (or cluster) are stopped at the end."""
    results = ResultsFile(out_dir)
    done = results.start(plan.meta, resume)
    mode, k = parse_verify(plan.verify)
    inline = mode == "all" and plan.setup.reference is not None
    pending = [Variant(i, spec, params, verify=inline)
               for i, (spec, params) in enumerate(plan.variants) if i not in done]
    if on_start is not None:
        on_start(len(plan.variants), len(done))
    emitter = _Emitter(results, [v.id for v in pending], done, on_row)
    try:
        if pending:
            backend.run(plan.setup, pending, emitter, emitter.known)
        if mode == "top" and plan.setup.reference is not None:
            _verify_top(plan, backend, emitter, k)
    finally:
        if close:
            backend.close()
        results.close()
    return emitter.rows


def _verify_top(plan: Plan, backend, emitter: _Emitter, k: int) -> None:
    best = [r for r in ranked(emitter.rows.values()) if r["status"] == "ok"][:k]
    todo = [Variant(r["id"], r["kernel"], r["params"], verify=True) for r in best
            if r.get("verify") is None]
    if not todo:
        return
    got: dict = {}
    backend.run(plan.setup, todo, lambda row: got.__setitem__(row["id"], row), [])
    for v in todo:  # in rank order, whatever order they finished in
        row = got[v.id]
        emitter.rows[v.id] = row
        emitter.results.append(row)
        if emitter.on_row is not None:
            emitter.on_row(row)


class SweepResult(list):
    """The rows of a sweep (id order), a list of dicts; `best(k)` the k fastest ok."""

    def __init__(self, rows=(), out: str | None = None):
        super().__init__(rows)
        self.out = out

    @property
    def rows(self) -> list[dict]:
        return list(self)

    def best(self, k: int = 1) -> list[dict]:
        return [r for r in ranked(self) if r["status"] == "ok"][:k]
