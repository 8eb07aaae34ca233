"""nki-library's own integration suite (`test/integration`, goldens computed in the tests) in
its `--test-mode simulation`, with nkirun as the simulator through the pytest plugin
(`--nkirun`): the yardstick of docs/kernels.md ("A library's own test suite on nkirun").

    python benchmarks/nkilib_suite.py --python VENV/bin/python --neuron-dtypes DIR \\
        --scratch /tmp/nkilib-run [--platform trn2|trn3] [--sample 1] [--jobs 1] \\
        [--timeout 300] [--mem-gb 8] [--keep-output] [tests ...]

nki-library is read from its git mirror at the pinned commit (benchmarks/public_kernels.py:
`fetch github:aws-neuron/nki-library` makes the mirror); nothing of it is stored here.
`--python`: an interpreter with what the harness imports (torch (CPU), pytest,
pytest-timeout, pytest-html, allpairspy, boto3, fabric2, filelock, plotext, scipy, attrs,
aws-embedded-metrics, paramiko) and nkirun's dependencies; nkirun itself comes from this
tree. `--neuron-dtypes DIR`: the `neuron_dtypes` package the tests' input generators and
comparators import (it ships with AWS's Neuron compiler and is not public: AWS's, or a
stand-in); only it is put on the path (linked under SCRATCH/glue). benchmarks/nkilib_env.py supplies the two harness modules the
public repository lacks. `tests`: paths under the checkout (default test/integration;
collecting all of it takes minutes). Prints and writes SCRATCH/summary.json: passed,
failed, the failures grouped by their first line, the slowest tests and each test's peak
resident memory. Exit 0 when nothing failed.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks.public_kernels import NKILIB, NKILIB_AT, extract_tree  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", required=True)
    p.add_argument("--neuron-dtypes", required=True)
    p.add_argument("--scratch", required=True)
    p.add_argument("--platform", default="trn2")
    p.add_argument("--sample", type=int, default=0, help="tests per test function (0: all)")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--mem-gb", type=int, default=8, help="address-space limit per process")
    p.add_argument("--nkirun-args", default="", help="more plugin options, e.g. --nkirun-cost")
    p.add_argument("--each", action="store_true",
                   help="one pytest process per test path (memory does not pile up across "
                        "them; a path's report survives a later one's crash)")
    p.add_argument("--keep-output", action="store_true",
                   help="keep the tests' own artefacts (SCRATCH/test-output: inputs, goldens "
                        "and outputs the harness saves: 11 GB over the 23 folders at --sample 1); "
                        "by default they are deleted after each pytest process")
    p.add_argument("tests", nargs="*", default=["test/integration"])
    a = p.parse_args(argv)
    scratch = Path(a.scratch).resolve()
    lib = scratch / "nki-library"
    if not (lib / "test").is_dir():
        for part in ("src", "test", "pyproject.toml"):
            extract_tree(NKILIB, NKILIB_AT, part, lib)
    glue = scratch / "glue"
    glue.mkdir(exist_ok=True)
    link = glue / "neuron_dtypes"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(Path(a.neuron_dtypes).resolve(), target_is_directory=True)
    groups = [[t] for t in a.tests] if a.each else [a.tests]
    for old in [*scratch.glob(f"junit-{a.platform}-*.xml"),
                *scratch.glob(f"nkirun-{a.platform}-*.json")]:
        old.unlink()
    rc = 0
    for k, paths in enumerate(groups):
        rc = max(rc, _pytest(a, scratch, lib, glue, paths, k))
        shutil.rmtree(scratch / f"pytest-tmp-{k}", ignore_errors=True)
        if not a.keep_output:
            shutil.rmtree(scratch / "test-output", ignore_errors=True)
    summary = summarize(sorted(scratch.glob(f"junit-{a.platform}-*.xml")),
                        sorted(scratch.glob(f"nkirun-{a.platform}-*.json")))
    summary.update(platform=a.platform, sample=a.sample, pytest_exit=rc,
                   peak_rss_mb=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
    (scratch / f"summary-{a.platform}.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "tests"}, indent=1))
    return 0 if summary["failed"] == 0 and summary["passed"] else 1


def _pytest(a, scratch: Path, lib: Path, glue: Path, paths: list, k: int) -> int:
    junit = scratch / f"junit-{a.platform}-{k}.xml"
    cmd = [a.python, "-m", "pytest", *paths, "--test-mode", "simulation",
           "--platform-target", a.platform, "-p", "nkirun_pytest", "--nkirun",
           *a.nkirun_args.split(), "-p", "nkilib_env", "-p", "no:cacheprovider",
           "--nkirun-json", str(scratch / f"nkirun-{a.platform}-{k}.json"),
           "--continue-on-collection-errors", "--timeout", str(a.timeout), "--tb=line",
           "-q", "--junitxml", str(junit), "--output-directory", str(scratch / "test-output"),
           # its own temporary folder: pytest's default one would, at each of these
           # sessions' start, delete the folders of other pytest sessions running beside it
           "--basetemp", str(scratch / f"pytest-tmp-{k}")]
    if a.jobs > 1:
        cmd += ["-n", str(a.jobs)]
    # NEURON_PYTHONHASHSEED seeds the harness's `random` before collection: its sweeps
    # draw their shapes at import (`random.sample` in class bodies), so the test ids, and
    # the sample, are the same in every run
    env = dict(os.environ, PYTHONHASHSEED="0", NEURON_PYTHONHASHSEED="0",
               NKILIB_SAMPLE=str(a.sample),
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE), str(glue),
                                           str(lib / "src")]))
    limit = a.mem_gb << 30

    def cap():
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with open(scratch / f"pytest-{a.platform}-{k}.log", "w") as log:
        return subprocess.run(cmd, cwd=lib, env=env, stdout=log, stderr=subprocess.STDOUT,
                              preexec_fn=cap).returncode


def summarize(junits: list, shares: list = ()) -> dict:
    """Counts, failures grouped by their message's first line, the slowest tests, and each
    test's time, CPU time (cpu_s) and peak resident memory (nkilib_env.py records them), with
    nkirun's share of them where the plugin's JSON (`shares`) has it: nkirun_s (time in
    nkirun's simulate; nkirun_cpu_s its CPU time),
    nkirun_mb (the most one simulate call added to the process's resident memory) and
    nkirun_peak_mb (the process's resident memory at its highest during one)."""
    tests, groups = {}, {}
    share = {}
    for path in shares:
        try:
            for node, data in json.loads(Path(path).read_text())["tests"].items():
                share[node.removeprefix("test/")] = data
        except (OSError, ValueError, KeyError):  # a process that died before writing it
            pass
    cases = []
    for junit in junits:
        try:
            cases += ET.parse(junit).getroot().iter("testcase")
        except ET.ParseError:  # a process that died before writing its report
            groups.setdefault(f"no report: {junit.name}", []).append(junit.name)
    for case in cases:
        node = f"{case.get('classname')}::{case.get('name')}"
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        skipped = case.find("skipped") is not None
        outcome = "skipped" if skipped else "failed" if bad is not None else "passed"
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        row = {"outcome": outcome, "seconds": float(case.get("time") or 0),
               "cpu_s": float(props["cpu_s"]) if "cpu_s" in props else None,
               "max_rss_mb": int(props["max_rss_mb"]) if "max_rss_mb" in props else None}
        if bad is not None:
            first = ((bad.get("message") or bad.text or "").strip().splitlines() or [""])[0]
            row["why"] = first[:240]
            groups.setdefault(first[:120], []).append(node)
        mine = share.get(_node_id(case), {})
        row.update(nkirun_s=mine.get("nkirun_seconds"), nkirun_mb=mine.get("nkirun_extra_mb"),
                   nkirun_cpu_s=mine.get("nkirun_cpu_seconds"),
                   nkirun_peak_mb=mine.get("nkirun_peak_mb"),
                   tensor_mb=max((k.get("tensor_bytes", 0) >> 20
                                  for k in mine.get("kernels", ())), default=None))
        tests[node] = row
    count = lambda o: sum(1 for t in tests.values() if t["outcome"] == o)  # noqa: E731
    lost = sum(1 for g in groups if g.startswith("no report: "))
    slow = sorted(tests.items(), key=lambda kv: -kv[1]["seconds"])[:10]
    return {"passed": count("passed"), "failed": count("failed") + lost,
            "skipped": count("skipped"),
            "failures": {k: v for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1]))},
            "slowest": [(n, t["seconds"]) for n, t in slow],
            "max_rss_mb": max((t["max_rss_mb"] or 0 for t in tests.values()), default=0),
            "max_nkirun_mb": max((t["nkirun_mb"] or 0 for t in tests.values()), default=0),
            # issue 28's memory goal: nkirun's own share <= the kernel's tensors + 150 MB
            "over_tensor_mb_150": sorted(n for n, t in tests.items() if t["nkirun_mb"]
                                         and t["nkirun_mb"] > (t["tensor_mb"] or 0) + 150),
            "slowest_in_nkirun": sorted(((n, t["nkirun_s"]) for n, t in tests.items()
                                         if t["nkirun_s"]), key=lambda r: -r[1])[:10],
            "tests": tests}


def _node_id(case) -> str:
    """pytest's node id of a junit test case (`a.b.test_x.TestK` + `test_y[p]` ->
    `a/b/test_x.py::TestK::test_y[p]`) as the plugin's JSON names tests, less the `test/`
    it starts with where pytest's root is the checkout rather than its `test/`."""
    parts = (case.get("classname") or "").split(".")
    module = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
    path = "/".join(parts[:module + 1]) + ".py"
    return "::".join([path, *parts[module + 1:], case.get("name") or ""])


if __name__ == "__main__":
    sys.exit(main())
