"""nkirun — check, run and cost AWS NKI instruction programs on the CPU."""
import nkirun._startup  # noqa: F401  (first: a signal while the command starts exits quietly)
from nkirun.api import check, cost, run
from nkirun.diagnostics import Diagnostic, NkirunError

__version__ = "0.1.0"
