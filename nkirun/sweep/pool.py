"""The local backend: nkirun's own process pool. Workers are forked from a forkserver that
has imported nkirun once, are kept alive between variants, run one BLAS thread each and
live under a memory cap (RLIMIT_AS). A variant past its deadline has its worker killed
(status timeout); a worker that dies (os._exit, a segfault, the kernel's OOM killer) is
replaced and its variant retried once, then recorded as crashed. Either way the sweep goes
on."""
from __future__ import annotations

import os
import time
from collections import deque
from contextlib import contextmanager

# One BLAS/OpenMP thread per worker: `--jobs` processes already use the cores.
BLAS_ENV = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")}


@contextmanager
def blas_env():
    """BLAS_ENV in os.environ while worker processes are started (they inherit it)."""
    saved = {k: os.environ.get(k) for k in BLAS_ENV}
    os.environ.update(BLAS_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # (not Linux)
        return max(1, os.cpu_count() or 1)


def default_memory_cap(jobs: int) -> int:
    """Bytes of address space per worker: the machine's memory shared by the workers, at
    least 2 GiB (numpy and the traced program need their room)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    return max(2 << 30, int(total * 0.8) // max(1, jobs))


def crash_message(exitcode) -> str:
    if exitcode is not None and exitcode < 0:
        import signal
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (out of memory?)" if -exitcode == signal.SIGKILL else ""
        return f"the worker died of {name}{hint}"
    return f"the worker exited with status {exitcode}"


def worker_main(conn, memory_cap: int | None) -> None:
    """A worker's loop: receive (setup) once, then variants; send each row back."""
    import resource
    if memory_cap:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (memory_cap, memory_cap))
        except (ValueError, OSError):
            pass
    from nkirun.gc_policy import paused_gc
    from nkirun.sweep.evaluate import evaluate
    setup, known = None, set()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        kind, payload = msg
        if kind == "setup":
            setup, known = payload, set()
            continue
        variant, new_known = payload
        known.update(new_known)
        variant.known = known
        with paused_gc():  # (per variant: a long-lived worker must still collect)
            row = evaluate(setup, variant)
        conn.send(row)


class _Worker:
    def __init__(self, ctx, memory_cap):
        parent, child = ctx.Pipe()
        self.conn = parent
        self.proc = ctx.Process(target=worker_main, args=(child, memory_cap), daemon=True)
        self.proc.start()
        child.close()
        self.setup_id = None
        self.known_sent = 0  # how many of the pool's fingerprints this worker has
        self.tasks: deque = deque()  # (variant, attempt) sent, in the order it runs them
        self.started = 0.0  # when the first of them started (its deadline runs from here)

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.conn.close()


PREFETCH = 2  # variants sent to a worker at once: the next waits in its pipe, not for us


class LocalPool:
    """`run(setup, variants, on_row)`: evaluate every variant on `jobs` workers."""

    name = "local"

    def __init__(self, jobs: int | None = None, timeout: float = 300.0,
                 memory_cap: int | None = None):
        self.jobs = jobs or usable_cores()
        self.timeout = timeout
        self.memory_cap = default_memory_cap(self.jobs) if memory_cap is None else memory_cap
        self._ctx = None
        self.workers: list[_Worker] = []

    def _context(self):
        if self._ctx is None:
            import multiprocessing as mp
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(["nkirun.sweep.preload"])
            from multiprocessing import forkserver
            with blas_env():  # the forkserver (and so every worker) starts with it
                forkserver.ensure_running()
            self._ctx = ctx
        return self._ctx

    def run(self, setup, variants, on_row, known: list | None = None) -> None:
        """`known`: the sweep's list of costed fingerprints, appended to by on_row's caller;
        each worker is sent what it has not seen with its next variant."""
        ctx = self._context()
        known = known if known is not None else []
        queue = deque((v, 1) for v in variants)
        setup_id = id(setup)
        try:
            while queue or any(w.tasks for w in self.workers):
                self._fill(ctx, queue, setup, setup_id, known, on_row)
                self._wait(on_row, queue)
        except BaseException:  # Ctrl-C, a failing callback: no worker outlives the sweep
            self.close()
            raise

    def _fill(self, ctx, queue, setup, setup_id, known, on_row) -> None:
        while len(self.workers) < self.jobs and queue:
            self.workers.append(_Worker(ctx, self.memory_cap))
        for w in list(self.workers):
            while len(w.tasks) < PREFETCH and queue:
                variant, attempt = queue.popleft()
                try:
                    if w.setup_id != setup_id:
                        w.conn.send(("setup", setup))
                        w.setup_id, w.known_sent = setup_id, 0
                    w.conn.send(("variant", (variant, known[w.known_sent:])))
                except OSError:  # the worker is dead: the variant was not sent
                    self._unsent(w, variant, attempt, queue, on_row)
                    break
                w.known_sent = len(known)
                if not w.tasks:
                    w.started = time.monotonic()
                w.tasks.append((variant, attempt))

    def _wait(self, on_row, queue) -> None:
        from multiprocessing.connection import wait
        busy = [w for w in self.workers if w.tasks]
        if not busy:
            return
        limit = max(0.0, min(w.started for w in busy) + self.timeout - time.monotonic())
        ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], limit)
        now = time.monotonic()
        for w in busy:
            (variant, attempt), started = w.tasks[0], w.started
            if w.conn in ready:
                try:
                    row = w.conn.recv()
                except (EOFError, OSError):
                    row = None
                if row is not None:
                    w.tasks.popleft()
                    w.started = now  # the next one sent starts now
                    on_row(row)
                    continue
            if w.proc.sentinel in ready or not w.proc.is_alive():
                self._replace(w, queue)
                if attempt == 1:  # a crashed worker: its variant once more, first in line
                    queue.appendleft((variant, 2))
                else:
                    on_row(failed_row(variant, "crashed", crash_message(w.proc.exitcode),
                                      now - started))
            elif now >= started + self.timeout:
                self._replace(w, queue)
                on_row(failed_row(variant, "timeout", f"no result within the {self.timeout:g} "
                                  "s deadline (--timeout)", now - started))

    def _unsent(self, w: _Worker, variant, attempt, queue, on_row) -> None:
        """A send to a dead worker. Behind a running variant, it goes back in line (_wait
        sees the death); to an idle worker, the worker died before it got any (e.g. a
        memory cap too small to start): that counts as the variant's attempt, so that a
        pool whose workers cannot live ends instead of starting them forever."""
        if w.tasks:
            queue.appendleft((variant, attempt))
            return
        self._replace(w, queue)
        if attempt == 1:
            queue.appendleft((variant, 2))
        else:
            on_row(failed_row(variant, "crashed", crash_message(w.proc.exitcode), 0.0))

    def _replace(self, w: _Worker, queue) -> None:
        """Stop the worker; the variants it had not started go back first in line."""
        w.kill()
        self.workers.remove(w)
        for task in reversed(list(w.tasks)[1:]):
            queue.appendleft(task)

    def close(self) -> None:
        for w in self.workers:
            try:
                w.conn.send(None)
            except (OSError, ValueError):
                pass
        for w in self.workers:
            w.proc.join(2)
            w.kill()
        self.workers = []


def failed_row(variant, status: str, message: str, seconds: float) -> dict:
    """The row of a variant whose worker never answered (timeout, crashed)."""
    return {"id": variant.id, "kernel": variant.kernel, "params": variant.params,
            "status": status, "total_ns": None, "codes": [], "verify": None,
            "message": message, "fingerprint": None, "instructions": None,
            "assumed_share": None, "duplicate_of": None, "seconds": round(seconds, 6),
            "cpu_seconds": None}
