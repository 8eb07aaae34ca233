"""The end-of-session text of the pytest plugin: nkirun's warnings per code, and each test's
predicted kernel time (tests: node id -> {"outcome", "kernels": [...], "errors": [...]})."""
from __future__ import annotations


def warnings_summary(tests: dict) -> list[str]:
    kernels = sum(len(t["kernels"]) for t in tests.values())
    by_code: dict = {}  # code -> (count, tests, first message)
    for node, t in tests.items():
        for k in t["kernels"]:
            for w in k.get("warnings", ()):
                n, where, first = by_code.get(w["code"], (0, set(), w["message"]))
                where.add(node)
                by_code[w["code"]] = (n + 1, where, first)
    errors = {node: t["errors"] for node, t in tests.items() if t.get("errors")}
    lines = [f"{kernels} kernel runs in {len(tests)} tests checked: "
             f"{sum(n for n, _, _ in by_code.values())} warnings, "
             f"{len(errors)} tests stopped by an nkirun error"]
    for code, (n, where, first) in sorted(by_code.items()):
        lines.append(f"  {code}  x{n} in {len(where)} tests, e.g. {sorted(where)[0]}: "
                     f"{_short(first)}")
    for node, errs in sorted(errors.items()):
        lines.append(f"  error {errs[0]['code']} in {node}: {_short(errs[0]['message'])}")
    return lines


def cost_table(tests: dict) -> list[str]:
    rows = []
    for node, t in sorted(tests.items()):
        times = [k.get("predicted_ns") for k in t["kernels"]]
        if not times:
            continue
        known = [x for x in times if x is not None]
        total = f"{sum(known) / 1000:,.2f}" if known else "-"
        note = "" if len(known) == len(times) else \
            f"  ({len(times) - len(known)} with runtime loops not costed)"
        rows.append((node, len(times), total, note))
    if not rows:
        return ["no test ran a kernel"]
    width = max(len(r[0]) for r in rows)
    lines = [f"{'test':<{width}}  kernels  predicted us"]
    lines += [f"{node:<{width}}  {n:>7}  {total:>12}{note}" for node, n, total, note in rows]
    return lines


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
