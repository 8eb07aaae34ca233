"""nkirun — check, run and cost AWS NKI instruction programs on the CPU."""
from .api import check, cost, run  # noqa: F401
from .errors import Diagnostic, NkirunError  # noqa: F401

__version__ = "0.1.0"
