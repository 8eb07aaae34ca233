"""Source locations, diagnostics and the error types every layer raises.

A `Diagnostic` is the unit of user-facing feedback: `check` collects many of them,
`run` refuses a program that has any error among them. Nothing here prints.
"""
from __future__ import annotations

from dataclasses import field

from nkirun.records import record


@record(frozen=True, slots=True)
class Loc:
    """A 1-based position in a program file (line 0 means "no position")."""

    file: str = "<program>"
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.column}"
        return self.file


_new = object.__new__
_set_file, _set_line, _set_column = Loc.file.__set__, Loc.line.__set__, Loc.column.__set__


def loc_at(file: str, line: int, column: int) -> Loc:
    """`Loc(file, line, column)` for the front ends' hot loops (a trace has millions of
    them): fills the slots directly, twice as fast as the frozen dataclass's __init__."""
    loc = _new(Loc)
    _set_file(loc, file)
    _set_line(loc, line)
    _set_column(loc, column)
    return loc


@record(frozen=True, slots=True)
class Diagnostic:
    """One finding about a program: an error or a warning, its code, message and place."""
    severity: str  # "error" | "warning"
    code: str  # stable, documented in docs/diagnostics.md
    message: str
    loc: Loc = field(default_factory=Loc)
    instruction: int | None = None
    hint: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def as_dict(self) -> dict:
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "file": self.loc.file,
            # always 1-based ints (the contract's type): a problem of the whole file (it is
            # missing, or binary) sits at its start, 1:1, as ruff reports such problems
            "line": self.loc.line or 1,
            "column": self.loc.column or 1,
            "instruction": self.instruction,
            "hint": self.hint,
        }

    def one_line(self) -> str:
        return f"{self.loc}: {self.severity}[{self.code}]: {self.message}"


def error(code: str, message: str, loc: Loc | None = None, instruction: int | None = None,
          hint: str | None = None) -> Diagnostic:
    return Diagnostic("error", code, message, loc or Loc(), instruction, hint)


def warning(code: str, message: str, loc: Loc | None = None, instruction: int | None = None,
            hint: str | None = None) -> Diagnostic:
    return Diagnostic("warning", code, message, loc or Loc(), instruction, hint)


class NkirunError(Exception):
    """A problem with the user's input; carries one or more diagnostics. Exit status 1."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(d.one_line() for d in self.diagnostics))


class ProgramInvalid(NkirunError):
    """`check` found errors; the program is not executed."""


class RunError(NkirunError):
    """The program failed while executing (e.g. an uninitialised read)."""


class InternalError(Exception):
    """A bug in nkirun itself (not in the user's program). Exit status 3."""

    def __init__(self, where: str, exc: BaseException):
        super().__init__(f"{where}: {type(exc).__name__}: {exc}")
        self.where = where
        self.exc = exc




def did_you_mean(word: str, choices) -> str | None:
    """`did you mean `x`?` for the closest of `choices`, or None."""
    close = closest(word, choices)
    return f"did you mean `{close}`?" if close else None


def closest(word, choices) -> str | None:
    import difflib  # only on an error path: not imported at start-up
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return close[0] if close else None
