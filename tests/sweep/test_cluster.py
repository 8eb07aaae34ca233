"""The ray and dask backends on a local cluster of two workers: the same rows as the local
pool, and the faults recorded the same way. Skipped when the extra is not installed;
marked `cluster` (each starts a cluster: CI runs them with `-m cluster`, .ci/run)."""
from __future__ import annotations

import os

import pytest

import nkirun
from tests.sweep.sweep_helpers import copy_kernel, faulty, strip_timing

pytestmark = pytest.mark.cluster
X = nkirun.shape("float32", 128, 512)
BACKENDS = ["ray", "dask"]


def _needs(backend):
    pytest.importorskip("ray" if backend == "ray" else "distributed")


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
