"""Does `nkirun check` accept the public kernels the hardware ran? (issue 26, scope 1)

Extracts every kernel of benchmarks/public_kernels.py from its repository at the pinned
commit (nothing of it is stored here), runs `nkirun check` (and with --cost `nkirun cost`)
on it at the published shape and target (a package kernel, nki-library's, through its
driver in public_kernels.py and nkirun's Python API), and prints per kernel: accepted / refused, the
error codes with their first message, the warning codes, and with --cost the predicted
time beside the measured one.

    python benchmarks/public_kernels_check.py                 # all, check only
    python benchmarks/public_kernels_check.py --cost -k mamba  # names containing "mamba"
    python benchmarks/public_kernels_check.py --format json

Needs the git mirrors (see public_kernels.py). Each kernel runs in its own process with a
time limit (--timeout, default 900 s): the largest trace 100,000s of instructions.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import public_kernels as pk  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _nkirun(command: str, file: Path, k: pk.PublicKernel, options: list[str],
            timeout: float) -> tuple[dict | None, str, float]:
    """(the JSON nkirun printed or None, stderr tail or 'timeout', seconds)."""
    cmd = [sys.executable, "-m", "nkirun", command, f"{file}::{k.function}",
           "--target", k.target, "--format", "json", *options]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=file.parent)
    except subprocess.TimeoutExpired:
        return None, f"timeout after {timeout:.0f} s", time.monotonic() - t0
    took = time.monotonic() - t0
    try:
        return json.loads(p.stdout), p.stderr.strip()[-300:], took
    except ValueError:
        return None, (p.stderr.strip() or p.stdout.strip())[-300:], took


def _driver(k: pk.PublicKernel, root: Path, cost: bool, timeout: float):
    """_nkirun's answer for a package kernel, traced by its driver in a child process."""
    code = ("import sys; sys.path.insert(0, %r); import public_kernels_check as c; "
            "c.driver_main(%r, %r, %r)" % (str(Path(__file__).parent), k.name, str(root), cost))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.monotonic()
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"timeout after {timeout:.0f} s", time.monotonic() - t0
    took = time.monotonic() - t0
    try:
        return json.loads(p.stdout), p.stderr.strip()[-300:], took
    except ValueError:
        return None, (p.stderr.strip() or p.stdout.strip())[-300:], took


def driver_main(name: str, root: str, cost: bool) -> None:
    """(In the child) check, and with cost schedule, a package kernel; prints JSON like
    `nkirun check --format json` (+ total_ns)."""
    from nkirun.diagnostics import NkirunError
    from nkirun.pipeline import commands
    k = pk.KERNELS[name]
    checked = None
    try:
        checked = commands.check(pk.package_front(k, root))
        diags = checked.diagnostics
    except NkirunError as e:
        diags = e.diagnostics
    out = {"ok": not any(d.is_error for d in diags),
           "diagnostics": [{"severity": "error" if d.is_error else "warning", "code": d.code,
                            "message": d.message, "line": d.loc.line} for d in diags]}
    if cost and out["ok"]:
        out["total_ns"] = commands.cost(checked).total_ns
    print(json.dumps(out))


def _codes(diags: list[dict], severity: str) -> list[str]:
    return sorted({d["code"] for d in diags if d.get("severity") == severity})


def _spill_estimate(diags: list[dict]) -> float | None:
    """nkirun's estimate of the SBUF spill saves in MB (W047's message), or None."""
    import re
    for d in diags:
        m = re.search(r"estimate: ([\d,.]+) MB saved", d["message"]) if d["code"] == "W047" \
            else None
        if m:
            return float(m.group(1).replace(",", ""))
    return None


def check_one(k: pk.PublicKernel, folder: Path, cost: bool, timeout: float) -> dict:
    row = {"name": k.name, "target": k.target, "measured_ms": k.measured_ms,
           "hw_spill_save_mb": k.spill_save_mb, "source": f"{k.repo}@{k.commit}:{k.path}"}
    try:
        if k.package is not None:
            root = folder / "packages" / k.repo.replace("/", "+")
            if not (root / k.package).exists():
                pk.extract_tree(k.repo, k.commit, k.package, root)
        else:
            src = pk.kernel_source(k)
            options = pk.shape_options(k, src)
    except (pk.MirrorMissing, LookupError) as e:
        return {**row, "status": "missing", "why": str(e)}
    if k.package is not None:
        out, err, took = _driver(k, root, cost, timeout)
        if out is not None and out.get("total_ns") is not None:
            row["predicted_ms"] = out["total_ns"] / 1e6
        cost = False  # (scheduled in the same child)
    else:
        file = folder / (k.name.replace(" ", "_") + ".py")
        file.write_text(src)
        out, err, took = _nkirun("check", file, k, options, timeout)
    row["check_s"] = round(took, 1)
    if out is None:
        return {**row, "status": "failed", "why": err}
    diags = out.get("diagnostics", [])
    errors = [d for d in diags if d.get("severity") == "error"]
    row.update(status="accepted" if out.get("ok") else "refused",
               errors=_codes(diags, "error"), warnings=_codes(diags, "warning"),
               why=(f"{errors[0]['code']} line {errors[0].get('line')}: "
                    f"{errors[0]['message']}"[:240] if errors else ""),
               spill_save_mb=_spill_estimate(diags))
    if cost and out.get("ok"):
        c, err, took = _nkirun("cost", file, k, options, timeout)
        row["cost_s"] = round(took, 1)
        if c is None:
            row["cost_error"] = err
        else:
            ns = c.get("total_ns") or c.get("makespan_ns") or c.get("total")
            row["predicted_ms"] = ns / 1e6 if isinstance(ns, (int, float)) else None
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only kernels whose name contains this")
    ap.add_argument("--cost", action="store_true", help="also run nkirun cost on accepted ones")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--format", choices=("text", "json"), default="text")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="nkirun-public-") as tmp:
        for k in pk.KERNELS.values():
            if args.k in k.name:
                rows.append(check_one(k, Path(tmp), args.cost, args.timeout))
                if args.format == "text":
                    _print_row(rows[-1])
    n_ok = sum(r["status"] == "accepted" for r in rows)
    if args.format == "json":
        print(json.dumps({"kernels": rows, "accepted": n_ok, "total": len(rows)}, indent=2))
    else:
        print(f"\n{n_ok} of {len(rows)} public kernels accepted")
    return 0


def _print_row(r: dict) -> None:
    line = f"{r['name']:<36} {r['target']:<5} {r['status']:<9}"
    if r.get("warnings"):
        line += f" warns {','.join(r['warnings'])}"
    if r.get("spill_save_mb") is not None or r.get("hw_spill_save_mb"):
        line += f"  spill saves: nkirun {r.get('spill_save_mb') or 0:,.0f} MB"
        if r.get("hw_spill_save_mb") is not None:
            line += f" / hw {r['hw_spill_save_mb']:,.0f} MB"
    if r.get("predicted_ms") is not None:
        line += f"  predicted {r['predicted_ms']:.3f} ms / measured {r['measured_ms']:.3f} ms"
    if r.get("check_s") is not None:
        line += f"  ({r['check_s']} s)"
    print(line, flush=True)
    if r.get("why"):
        print(f"    {r['why']}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
