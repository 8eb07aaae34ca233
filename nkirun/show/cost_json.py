"""`cost --format json` written from the schedule, its instruction rows spelled straight
from the slots (speed.JSON_ROWS).

The plain path builds `views.table(s)`, a dict of 17 keys per instruction with five
`round(x, 3)` each, and hands the list to the streamed writer, which encodes each dict and
drops it. On the 39,000-instruction matmul tutorial that was most of what `--format json`
costs beyond the text report. Here each row's text is formatted from its slot: strings
(op, engine, queue, formula, ...) are encoded once per distinct value, and a time is
rounded once per distinct value (an end is the next start, own times repeat). The text is
what the streamed writer gives the plain row, byte for byte; a row holding a value of any
other type than those expected takes the plain path (tests/schedule/test_cost_json.py).

`detail="summary"` leaves the `instructions` list out (an opt-in level for sweeps and CI
jobs that read only the totals; the default document keeps the contract's keys).
"""
from __future__ import annotations

from json.encoder import encode_basestring_ascii as _quote

from nkirun.schedule import views as v
from nkirun.schedule.model import Schedule

DETAILS = ("full", "summary")

_ROW = ('{"index": %s, "op": %s, "engine": %s, "queue": %s, "queues": %s, "cycles": %s, '
        '"ns": %s, "start_ns": %s, "end_ns": %s, "duration_ns": %s, "formula": %s, '
        '"assumed": %s, "wait": %s, "wait_kind": %s, "waited_on": %s, "wait_tensor": %s, '
        '"line": %s')
_INF = float("inf")
_MEMO = 8192  # rounded times remembered


def write_cost_json(s: Schedule, views: tuple[str, ...], stream, detail: str = "full",
                    timeline_width: int = 64) -> None:
    """Write the `cost --format json` document of `s` to `stream` (the plain twin:
    `write_json(to_json(s, views, timeline_width, detail), stream)`)."""
    from nkirun import speed
    from nkirun.schedule.report import to_json
    from nkirun.show.json_out import _ROW, EncodedRows, write_json
    if detail == "full" and speed.JSON_ROWS and speed.STREAMED_JSON:
        rows = EncodedRows(len(s.slots), row_texts(s))
        write_json(to_json(s, views, timeline_width, rows=rows, steps=lambda n, made:
                           EncodedRows(n, map(_ROW.encode, made))), stream)
        return
    write_json(to_json(s, views, timeline_width, detail), stream)


def row_texts(s: Schedule):
    """Each slot's row as the streamed writer spells `views.table(s)`'s dict for it."""
    from nkirun.show.json_out import _ROW as encoder
    sp, clocks, two_cores = _Spelling(), {}, s.program.cores > 1
    text, time, integer = sp.text, sp.time, sp.integer
    for x in s.slots:
        try:
            engine = x.engine
            clock = clocks.get(engine)
            if clock is None:
                clock = clocks[engine] = s.clock(engine)
            assumed, waited_on = x.assumed, x.waited_on
            if assumed is not True and assumed is not False:
                raise _Plain
            row = _ROW % (
                integer(x.index), text(x.op), text(engine), text(x.queue), sp.queues(x.queues),
                integer(x.cycles), time(x.cycles / clock), time(x.start_ns),
                time(x.end_ns), time(x.end_ns - x.start_ns), text(x.formula),
                "true" if assumed else "false", _wait(x), text(x.wait_kind),
                "null" if waited_on is None else integer(waited_on), text(x.wait_tensor),
                integer(x.line))
            if x.inst_name:
                row += ', "name": ' + text(x.inst_name)
            if two_cores:
                row += ', "core": ' + integer(x.core)
            yield row + "}"
        except _Plain:  # a value of another type: as the plain path spells it
            plain = v.instruction_row(x, s.own_ns(x))
            yield encoder.encode(dict(plain, core=x.core) if two_cores else plain)


class _Spelling:
    """JSON of the values a row holds, each checked for its type (_Plain otherwise) and
    remembered where values repeat."""

    __slots__ = ("quoted", "times", "queue_lists")

    def __init__(self):
        self.quoted: dict = {None: "null"}
        self.times: dict = {}
        self.queue_lists: dict = {(): "[]"}

    def text(self, x) -> str:
        """A str or None, encoded once per value."""
        t = self.quoted.get(x)
        if t is None:
            if x.__class__ is not str:
                raise _Plain
            t = self.quoted[x] = _quote(x)
        return t

    def time(self, x) -> str:
        """round(x, 3) as JSON, once per value."""
        if x.__class__ is not float:  # (an int equals a float key: never looked up)
            if x.__class__ is int:
                return repr(x)
            raise _Plain
        times = self.times
        t = times.get(x)
        if t is None:
            r = round(x, 3)
            t = (repr(r) if -_INF < r < _INF else
                 "NaN" if r != r else "Infinity" if r > 0 else "-Infinity")
            if x:  # (0.0 and -0.0 are one key)
                if len(times) >= _MEMO:  # bounded: starts and ends rarely repeat far apart
                    times.clear()
                times[x] = t
        return t

    @staticmethod
    def integer(x) -> str:
        if x.__class__ is not int:
            raise _Plain
        return repr(x)

    def queues(self, qs) -> str:
        """A tuple of ints as a JSON list."""
        if qs.__class__ is not tuple:
            raise _Plain
        t = self.queue_lists.get(qs)
        if t is None:
            if any(q.__class__ is not int for q in qs):
                raise _Plain
            t = self.queue_lists[qs] = "[" + ", ".join(map(repr, qs)) + "]"
        return t


def _wait(x) -> str:
    """The wait reason (one per row: not remembered)."""
    w = x.wait
    if w.__class__ is not str:
        raise _Plain
    return _quote(w)


class _Plain(Exception):
    """A slot holds a value the fast spelling does not cover."""
