"""DIR/results.jsonl (one JSON object per variant, appended as each finishes; a later line
for the same id — a verification — supersedes the earlier one), DIR/sweep.json (what the
sweep is: kernel sources, space, target, nkirun version; --resume checks it) and
DIR/summary.csv (one row per variant, ranked by total_ns among ok)."""
from __future__ import annotations

import csv
import io
import json
import os

RESULTS, META, SUMMARY = "results.jsonl", "sweep.json", "summary.csv"
TIMING_FIELDS = ("seconds", "cpu_seconds")  # the fields that differ between two runs of one sweep


class ResumeError(ValueError):
    """DIR holds another sweep, or none (a usage error, exit 2)."""


def read_rows(out_dir: str) -> dict[int, dict]:
    """id -> the latest row of each finished variant (a truncated last line is ignored)."""
    rows: dict[int, dict] = {}
    path = os.path.join(out_dir, RESULTS)
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # cut by a kill mid-write: that variant is run again
            try:
                row = json.loads(line)
            except ValueError:
                continue
            rows[row["id"]] = row
    return rows


def _atomic_write(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class ResultsFile:
    """The sweep's directory: `start` checks or writes sweep.json, `append` adds a row."""

    def __init__(self, out_dir: str):
        self.dir = out_dir
        self.path = os.path.join(out_dir, RESULTS)
        self._f = None

    def start(self, meta: dict, resume: bool) -> dict[int, dict]:
        """The rows already finished (resume), after checking that DIR holds this sweep."""
        os.makedirs(self.dir, exist_ok=True)
        meta_path = os.path.join(self.dir, META)
        has = os.path.exists(meta_path) or os.path.exists(self.path)
        if not resume:
            if has:
                raise ResumeError(f"{self.dir} already holds a sweep; add --resume to "
                                  "continue it, or give another --out")
            _atomic_write(meta_path, json.dumps(meta, indent=2, sort_keys=True) + "\n")
            self._open()
            return {}
        if not os.path.exists(meta_path):
            raise ResumeError(f"--resume: {self.dir} holds no sweep ({META} is missing); "
                              "drop --resume to start one")
        with open(meta_path, encoding="utf-8") as f:
            old = json.load(f)
        differs = [k for k in sorted(set(meta) | set(old)) if old.get(k) != meta.get(k)]
        if differs:
            raise ResumeError(f"--resume: {self.dir} holds another sweep: its "
                              f"{', '.join(differs)} differ" + _first_difference(
                                  old, meta, differs[0]) + "; give another --out, or the "
                              "same kernel, space, target and nkirun version")
        self._trim_partial_line()
        self._open()
        return read_rows(self.dir)

    def _trim_partial_line(self) -> None:
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)

    def _open(self) -> None:
        self._f = open(self.path, "a", encoding="utf-8")

    def append(self, row: dict) -> None:
        self._f.write(json.dumps(row, sort_keys=False, default=_jsonable) + "\n")
        self._f.flush()  # a SIGKILL after this line loses nothing of it

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def _first_difference(old: dict, new: dict, key: str) -> str:
    a, b = json.dumps(old.get(key), sort_keys=True), json.dumps(new.get(key), sort_keys=True)
    if len(a) + len(b) > 160:
        return ""
    return f" (was {a}, now {b})"


def _jsonable(v):
    """Parameter values JSON has no type for: tuples are lists already; others by repr."""
    if hasattr(v, "item"):
        return v.item()
    return repr(v)


# ---- ranking and summary.csv -------------------------------------------------------------
_ORDER = {"ok": 0, "mismatch": 1, "duplicate": 2, "invalid": 3, "error": 4, "timeout": 5,
          "crashed": 6}


def ranked(rows) -> list[dict]:
    """ok by total_ns (then id), then the other statuses by status and id."""
    return sorted(rows, key=lambda r: (_ORDER.get(r["status"], 9),
                                       r["total_ns"] if r["status"] == "ok" else 0, r["id"]))


def summary_rows(rows) -> tuple[list[str], list[list]]:
    """(header, one line per variant) of summary.csv; rank is given to ok variants only."""
    rows = ranked(rows)
    names: list[str] = []
    for r in rows:
        for k in r["params"]:
            if k not in names:
                names.append(k)
    header = ["rank", "id", "kernel", *names, "status", "total_ns", "assumed_share",
              "duplicate_of", "codes", "verify_max_abs", "verify_max_rel", "message"]
    out, rank = [], 0
    for r in rows:
        rank += r["status"] == "ok"
        v = r.get("verify") or {}
        out.append([rank if r["status"] == "ok" else "", r["id"], r["kernel"],
                    *[_cell(r["params"].get(n, "")) for n in names], r["status"],
                    "" if r["total_ns"] is None else r["total_ns"],
                    "" if r.get("assumed_share") is None else r["assumed_share"],
                    "" if r.get("duplicate_of") is None else r["duplicate_of"],
                    " ".join(r["codes"]), v.get("max_abs", ""), v.get("max_rel", ""),
                    (r.get("message") or "").replace("\n", " ")[:200]])
    return header, out


def _cell(v):
    return v if isinstance(v, (int, float, str)) else json.dumps(v, default=repr)


def summary_csv(rows) -> str:
    header, lines = summary_rows(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(lines)
    return buf.getvalue()


def write_summary(out_dir: str, rows) -> str:
    path = os.path.join(out_dir, SUMMARY)
    _atomic_write(path, summary_csv(rows))
    return path
