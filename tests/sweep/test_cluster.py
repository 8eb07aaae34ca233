"""The ray and dask backends on a local cluster of two workers: the same rows as the local
pool, and the faults recorded the same way. Each starts a cluster, so they run only with
NKIRUN_CLUSTER_TESTS=1 (.ci/run sets it after installing the `ray` and `dask` extras; then a
missing extra fails rather than skips); marked `cluster`."""
from __future__ import annotations

import os

import pytest

import nkirun
from tests.sweep.sweep_helpers import copy_kernel, faulty, strip_timing

REQUIRED = os.environ.get("NKIRUN_CLUSTER_TESTS") == "1"
pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(not REQUIRED, reason="set NKIRUN_CLUSTER_TESTS=1 to start "
                                 "local ray/dask clusters")]
X = nkirun.shape("float32", 128, 512)
BACKENDS = ["ray", "dask"]


def _needs(backend):
    __import__("ray" if backend == "ray" else "distributed")  # (required: see the docstring)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_rows_as_the_local_pool(tmp_path, backend):
    _needs(backend)
    k = copy_kernel(tmp_path)
    kw = dict(vary={"TILE": [128, 256, 384, 512], "UNUSED": [0, 1]}, jobs=2,
              reference=f"{k}::reference")
    local = nkirun.sweep(f"{k}::copy", X, out=str(tmp_path / "local"), **kw)
    other = nkirun.sweep(f"{k}::copy", X, out=str(tmp_path / backend), backend=backend, **kw)
    assert strip_timing(other) == strip_timing(local)
    assert (tmp_path / backend / "summary.csv").read_text() == \
        (tmp_path / "local" / "summary.csv").read_text()


FAULTS = {"loops": "timeout", "exits": "crashed", "syntax": "error", "fine": "ok"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_faults_are_recorded_and_the_sweep_goes_on(tmp_path, backend):
    _needs(backend)
    files = faulty(tmp_path)
    for name in set(files) - set(FAULTS):
        os.unlink(files[name])
    rows = nkirun.sweep(f"{tmp_path}/cands/*.py::cand", X, vary={"TILE": [128]}, jobs=2,
                        timeout=5, backend=backend, out=str(tmp_path / "out"))
    got = {os.path.basename(r["kernel"].split("::")[0])[:-3]: r["status"] for r in rows}
    assert got == FAULTS
