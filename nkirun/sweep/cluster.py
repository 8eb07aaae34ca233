"""The distributed backends: `ray[:ADDRESS]` and `dask[:ADDRESS]` (`pip install
'nkirun[ray]'` / `'nkirun[dask]'`). Without an address each starts a local cluster of
`--jobs` single-threaded workers. The setup (kernel sources included) is shipped once, each
variant is one task, two per worker in flight (a task's deadline runs from when it is
among the oldest `jobs` in flight: the tasks ahead of it have finished); a task past its deadline is
cancelled (ray: its worker is killed; dask: its worker is restarted), a task whose worker
died is retried once, then recorded as crashed. Rows are the local pool's rows."""
from __future__ import annotations

import os
import time

from nkirun.sweep.pool import BLAS_ENV, blas_env, default_memory_cap, failed_row, \
    usable_cores

KNOWN_SHIPPED = 512  # fingerprints sent with a task: only a shortcut (the driver decides)


class BackendMissing(ValueError):
    """The extra is not installed (a usage error)."""


def cluster_backend(kind: str, address, jobs, timeout, memory_cap):
    try:
        __import__("ray" if kind == "ray" else "distributed")
    except ImportError:
        raise BackendMissing(f"--backend {kind} needs {kind}: pip install 'nkirun[{kind}]'") \
            from None
    cls = RayBackend if kind == "ray" else DaskBackend
    return cls(address, jobs, timeout, memory_cap)


def warm() -> bool:
    """A task run once per worker before the clock starts: nkirun imported."""
    import nkirun.sweep.preload  # noqa: F401
    return True


def remote_evaluate(setup, variant, memory_cap):
    """A task: one variant, under the memory cap (RLIMIT_DATA: a cluster worker's own
    address space is large and shared-mapped, so its heap is what is capped)."""
    import resource
    from nkirun.gc_policy import paused_gc
    from nkirun.sweep.evaluate import evaluate
    if memory_cap:
        try:
            soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
            if soft == resource.RLIM_INFINITY or soft > memory_cap:
                resource.setrlimit(resource.RLIMIT_DATA, (memory_cap, hard))
        except (ValueError, OSError):
            pass
    with paused_gc():
        return evaluate(setup, variant)


class _Cluster:
    """What both backends share: the in-flight window, deadlines and the retry rule."""

    def __init__(self, address, jobs, timeout, memory_cap):
        self.address, self.timeout = address, timeout
        self.pids: dict = {}
        self.jobs = jobs or usable_cores()
        self.memory_cap = default_memory_cap(self.jobs) if memory_cap is None else memory_cap
        self.started = False

    def run(self, setup, variants, on_row, known=None) -> None:
        self._start()
        shipped = self._ship(setup)
        queue = [(v, 1) for v in reversed(variants)]  # (popped from the end: id order)
        flight: dict = {}  # handle -> (variant, attempt, started or None), oldest first
        while queue or flight:
            while queue and len(flight) < 2 * self.jobs:
                v, attempt = queue.pop()
                v.known = frozenset((known or [])[-KNOWN_SHIPPED:])
                flight[self._submit(shipped, v, attempt)] = (v, attempt, None)
            for h in list(flight)[:self.jobs]:  # (a worker each: their clocks run)
                if flight[h][2] is None:
                    flight[h] = (*flight[h][:2], time.monotonic())
            done = self._wait(list(flight), 0.2)
            now = time.monotonic()
            lost = False  # a worker died or was killed: its replacement warms up first
            for h in list(flight):
                v, attempt, started = flight[h]
                if h in done:
                    del flight[h]
                    row, crashed = self._result(h)
                    lost |= row is None
                    if row is not None:
                        on_row(row)
                    elif attempt == 1:
                        queue.append((v, 2))
                    else:
                        on_row(failed_row(v, "crashed", f"the worker died ({crashed})", 0.0))
                elif started is not None and now - started > self.timeout:
                    del flight[h]
                    self._cancel(h)
                    lost = True
                    on_row(failed_row(v, "timeout", f"no result within the "
                                      f"{self.timeout:g} s deadline (--timeout)", now - started))
            if lost:  # (so that a new worker's start-up eats no variant's deadline)
                self._recover()


class RayBackend(_Cluster):
    name = "ray"

    def _start(self) -> None:
        import ray
        if self.started:
            return
        if not ray.is_initialized():
            kw = {"address": self.address} if self.address else {
                "num_cpus": self.jobs, "include_dashboard": False,
                "runtime_env": {"env_vars": dict(BLAS_ENV)}}
            ray.init(ignore_reinit_error=True, log_to_driver=False, logging_level="ERROR",
                     configure_logging=False, **kw)
            self._owns = True
        self._remote = ray.remote(num_cpus=1, max_retries=0)(remote_evaluate)
        self._warmer = ray.remote(num_cpus=1)(warm)
        ray.get([self._warmer.remote() for _ in range(self.jobs)])
        self.started = True

    def _recover(self) -> None:
        import ray
        ray.get(self._warmer.remote(), timeout=300)

    def _ship(self, setup):
        import ray
        return ray.put(setup)

    def _submit(self, shipped, v, attempt):
        return self._remote.remote(shipped, v, self.memory_cap)

    def _wait(self, handles, seconds):
        import ray
        ready, _ = ray.wait(handles, num_returns=1, timeout=seconds)
        if ready:  # and every other one finished by now
            ready, _ = ray.wait(handles, num_returns=len(handles), timeout=0)
        return set(ready)

    def _result(self, h):
        import ray
        try:
            return ray.get(h), None
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.RayActorError,
                ray.exceptions.OutOfMemoryError) as e:
            return None, type(e).__name__
        except ray.exceptions.TaskCancelledError:
            return None, "cancelled"

    def _cancel(self, h) -> None:
        import ray
        ray.cancel(h, force=True)

    def close(self) -> None:
        import ray
        if self.started and getattr(self, "_owns", False):
            ray.shutdown()
        self.started = False


class DaskBackend(_Cluster):
    name = "dask"

    def _start(self) -> None:
        if self.started:
            return
        import logging
        import dask
        from distributed import Client, LocalCluster
        if self.address:
            self.client, self.cluster = Client(self.address), None
        else:
            # no retries of its own (ours: once), and a task goes to a worker only when it
            # has a free thread (a task queued behind a hung one would die with it)
            with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                                  "distributed.scheduler.worker-saturation": 1.0}), \
                    blas_env():
                self.cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1,
                                            processes=True, dashboard_address=None,
                                            silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        self._recover()
        self.started = True

    def _recover(self) -> None:
        """Every worker up and warm; their process ids, to stop a hung one. (A killed
        worker may still be listed for a moment: asked again until all answer.)"""
        want = self.jobs if self.cluster is not None else 1
        give_up = time.monotonic() + 300
        while time.monotonic() < give_up:
            try:
                self.client.wait_for_workers(want, timeout=60)
                ok = self.client.run(warm, on_error="return")
                pids = self.client.run(os.getpid, on_error="return")
            except Exception:  # noqa: BLE001 - a worker going away mid-broadcast
                ok, pids = {}, {}
            if len(ok) >= want and all(v is True for v in ok.values()):
                self.pids = {w: p for w, p in pids.items() if isinstance(p, int)}
                return
            time.sleep(0.5)

    def _ship(self, setup):
        return setup  # with each task: data scattered to a worker dies with it

    def _submit(self, shipped, v, attempt):
        return self.client.submit(remote_evaluate, shipped, v, self.memory_cap, pure=False,
                                  key=f"nkirun-sweep-{v.id}-{attempt}-{time.monotonic_ns()}")

    def _wait(self, handles, seconds):
        from distributed import wait
        try:
            wait(handles, timeout=seconds, return_when="FIRST_COMPLETED")
        except TimeoutError:
            pass
        return {h for h in handles if h.done()}

    def _result(self, h):
        try:
            return h.result(), None
        except Exception as e:  # noqa: BLE001 - KilledWorker, CommClosedError, ...
            return None, type(e).__name__

    def _cancel(self, h) -> None:
        """A running task cannot be stopped in its thread (a hung one holds the worker's
        event loop too): a local cluster's worker process is killed and its nanny starts
        another; a remote cluster's worker is restarted."""
        import signal
        where = self.client.processing()
        workers = [w for w, keys in where.items() if h.key in keys]
        h.cancel()
        for w in workers:
            pid = self.pids.get(w)
            if self.cluster is not None and pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            else:
                self.client.restart_workers([w], wait_for_workers=False)

    def close(self) -> None:
        if self.started:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
        self.started = False
