"""nkirun — check, run and cost AWS NKI instruction programs on the CPU."""
from nkirun.api import check, cost, run
from nkirun.diagnostics import Diagnostic, NkirunError

__version__ = "0.1.0"
