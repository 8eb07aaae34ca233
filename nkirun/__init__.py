"""nkirun — check, run and cost AWS NKI instruction programs on the CPU.

    import nkirun
    outs  = nkirun.run("prog.yaml", inputs={"x": x})   # dict: output name -> ndarray
    diags = nkirun.check("prog.yaml")                   # list of nkirun.Diagnostic
    sched = nkirun.cost("prog.yaml")                    # nkirun.schedule.Schedule
    nkirun.testing.assert_close(outs["y"], expected, ulp=2)

A program is a path, its YAML text or a dict of its YAML form (docs/api.md).
"""
import nkirun._startup  # noqa: F401  (first: a signal while the command starts exits quietly)
from nkirun import schedule, testing
from nkirun.api import check, cost, run
from nkirun.diagnostics import Diagnostic, Loc, NkirunError

__version__ = "0.1.0"
__all__ = ["check", "cost", "run", "Diagnostic", "Loc", "NkirunError", "schedule", "testing",
           "__version__"]
