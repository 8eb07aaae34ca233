"""How much to trust a sweep's ranking: the band of variants the cost model cannot tell
apart from the best, the share of predicted time resting on assumed cost formulas, the
failure census, and — with hardware timings (`--measured FILE.csv`) — pairwise accuracy,
Kendall's tau and the regret of nkirun's pick."""
from __future__ import annotations

import csv
from collections import Counter

# FITTED: the median |predicted - measured| / measured of the 18 calibration points in
# docs/cost.md ("Calibration": matmul, Mamba, LayerNorm, one DMA, dependent Scalar
# instructions; 0-31 %, median 10 %). Two variants closer than this are not told apart.
RESOLUTION = 0.10


def band(rows, resolution: float = RESOLUTION) -> list[dict]:
    """The ok rows within `resolution` of the best predicted time, fastest first."""
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: (r["total_ns"], r["id"]))
    if not ok:
        return []
    limit = ok[0]["total_ns"] * (1 + resolution)
    return [r for r in ok if r["total_ns"] <= limit]


def status_counts(rows) -> dict[str, int]:
    from nkirun.sweep.evaluate import STATUSES
    c = Counter(r["status"] for r in rows)
    return {s: c[s] for s in STATUSES if c[s]}


def failure_census(rows, top: int = 8) -> list[tuple[str, int]]:
    """(diagnostic code or status, variants) of the failures, most common first."""
    c: Counter = Counter()
    for r in rows:
        if r["status"] in ("invalid", "error"):
            for code in r["codes"] or [r["status"]]:
                c[code] += 1
        elif r["status"] in ("timeout", "crashed", "mismatch"):
            c[r["status"]] += 1
    return c.most_common(top)


def trust_summary(rows) -> dict:
    b = band(rows)
    shares = [r["assumed_share"] for r in rows if r["status"] == "ok"
              and r.get("assumed_share") is not None]
    return {"counts": status_counts(rows), "resolution": RESOLUTION,
            "band": [r["id"] for r in b],
            "assumed_share_max": max(shares) if shares else None,
            "assumed_share_best": b[0].get("assumed_share") if b else None,
            "failures": failure_census(rows)}


# ---- against hardware timings ------------------------------------------------------------
class MeasuredError(ValueError):
    """A --measured file that cannot be read (a usage error)."""


def read_measured(path: str, rows) -> dict[int, float]:
    """id -> measured ns, from `id,ns` or the varied parameters' columns plus `ns`."""
    import ast
    try:
        with open(path, newline="", encoding="utf-8") as f:
            table = list(csv.DictReader(f))
    except OSError as e:
        raise MeasuredError(f"--measured {path}: {e.strerror or e}") from None
    if not table or "ns" not in table[0]:
        raise MeasuredError(f"--measured {path}: expected a header with `ns` and either `id` "
                            "or the varied parameters' names")
    by_params = {}
    for r in rows:
        by_params[tuple(sorted((k, repr(v)) for k, v in r["params"].items()))] = r["id"]
    out = {}
    for n, line in enumerate(table, 2):
        try:
            ns = float(line["ns"])
            if "id" in line and line["id"] not in (None, ""):
                out[int(line["id"])] = ns
                continue
            key = []
            for k, v in line.items():
                if k != "ns":
                    try:
                        key.append((k, repr(ast.literal_eval(v))))
                    except (ValueError, SyntaxError):
                        key.append((k, repr(v)))
            i = by_params.get(tuple(sorted(key)))
            if i is not None:
                out[i] = ns
        except (TypeError, ValueError):
            raise MeasuredError(f"--measured {path}:{n}: not a number: {line}") from None
    return out


def against_measured(rows, measured: dict[int, float]) -> dict:
    """Pairwise accuracy, Kendall tau (tau-b) and regret over the ok variants measured."""
    pts = [(r["total_ns"], measured[r["id"]], r["id"]) for r in rows
           if r["status"] == "ok" and r["id"] in measured]
    if len(pts) < 2:
        return {"variants": len(pts), "pairwise_accuracy": None, "kendall_tau": None,
                "regret": None}
    agree = disagree = tie_p = tie_m = 0
    for i in range(len(pts)):
        for j in range(i + 1, len(pts)):
            dp, dm = pts[i][0] - pts[j][0], pts[i][1] - pts[j][1]
            if dp == 0 and dm == 0:
                continue
            if dp == 0:
                tie_p += 1
            elif dm == 0:
                tie_m += 1
            elif (dp > 0) == (dm > 0):
                agree += 1
            else:
                disagree += 1
    n_p, n_m = agree + disagree + tie_m, agree + disagree + tie_p
    tau = (agree - disagree) / (n_p * n_m) ** 0.5 if n_p and n_m else None
    pick = min(pts, key=lambda p: (p[0], p[2]))
    best = min(p[1] for p in pts)
    return {"variants": len(pts),
            "pairwise_accuracy": agree / (agree + disagree) if agree + disagree else None,
            "kendall_tau": tau, "pick": pick[2],
            "regret": (pick[1] - best) / best if best else None}
