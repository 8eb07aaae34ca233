"""nkirun — check, run and cost AWS NKI instruction programs on the CPU."""
# Load the `cost` subpackage before binding the function `cost` over its name: importing a
# submodule for the first time rebinds the package attribute, which would otherwise replace
# nkirun.cost (the function) by the module the first time api.cost() runs.
from . import cost as _cost_package  # noqa: F401
from .api import check, cost, run  # noqa: F401,E402
from .errors import Diagnostic, NkirunError  # noqa: F401

__version__ = "0.1.0"
