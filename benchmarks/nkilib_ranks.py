"""pytest plugin for benchmarks/nkilib_suite.py (`--nkirun-args "-p nkilib_ranks"`): a
measurement aid, not part of the drop-in. nki-library's harness in simulation mode runs
one rank with one input dict (`test/utils/simulation_setup.py` calls
`kernel_input.items()`), so its collectives tests with per-rank inputs
(`PerRankLazyInputGenerator`) or per-rank goldens cannot reach a simulator
(docs/kernels.md, "A library's own test suite on nkirun"). This plugin replaces the
orchestrator's simulation step, for tests that ask for more than one rank only, by
`nkirun.simulate(kernel, ranks=N, lnc=...).each(...)` on the test's own per-rank inputs,
and dumps rank r's outputs into the `output_worker_r/` folder the harness's own validator
reads on hardware: the comparison with the test's goldens is the harness's.
"""
from __future__ import annotations

import os
import sys

_PATCHED: list = []


def pytest_sessionstart(session):
    orch = sys.modules.get("test.utils.test_orchestrator")
    if orch is None or _PATCHED:
        return
    original = orch.Orchestrator._run_simulator_inference

    def run_ranks(self, kernel_under_test):
        n = kernel_under_test.inference_args.collective_ranks
        if n <= 1:
            return original(self, kernel_under_test)
        try:
            return _dump(self, kernel_under_test, _simulate(kernel_under_test, n))
        except Exception as e:
            from test.utils.exceptions import InferenceException
            raise InferenceException(str(e)) from e
    orch.Orchestrator._run_simulator_inference = run_ranks
    _PATCHED.append(True)


def _simulate(k, n: int) -> list:
    import numpy as np

    import nkirun
    from nkirun.source.kernel.consts import TARGET_VERSION
    from test.utils.common_dataclasses import normalize_golden_output
    gen = k.compiler_input.platform_target.get_nc_gen()
    target = {g: t for t, g in TARGET_VERSION.items() if t != "inf2"}.get(gen)
    inputs = k.kernel_input
    if hasattr(inputs, "for_rank"):
        per_rank = inputs.for_rank
    else:
        def per_rank(rank: int) -> dict:
            return dict(inputs or {})
    run = nkirun.simulate(k.kernel_func, target=target, lnc=k.compiler_input.logical_nc_config,
                          ranks=n)
    results = run.each(lambda r: {key.removesuffix(".must_alias_input"): v
                                  for key, v in per_rank(r).items()})
    golden = k.validation_args.golden_output
    named = []
    for r, result in enumerate(results):
        g = normalize_golden_output(golden, r)
        outs = list(result) if isinstance(result, (list, tuple)) else [result]
        named.append({name: np.asarray(o, dtype=want.dtype)
                      for name, o, want in zip(g.keys(), outs, g.values())})
    return named


def _dump(orchestrator, k, per_rank_outputs: list) -> str:
    from test.utils.test_orchestrator import INF_ARTIFACT_DIR_NAME
    base = os.path.join(orchestrator.fs_config.artifacts_output_directory_path,
                        INF_ARTIFACT_DIR_NAME)
    for r, tensors in enumerate(per_rank_outputs):
        orchestrator.__dump_tensors__(os.path.join(base, f"output_worker_{r}"), tensors,
                                      lambda name: name)
    return base
