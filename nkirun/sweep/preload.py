"""Imported once by the local pool's forkserver, so that every worker it forks starts with
nkirun's tracer, checker and scheduler loaded (importing them per variant would double
the cost of a cheap variant)."""
import nkirun.checker.passes  # noqa: F401
import nkirun.pipeline.commands  # noqa: F401
import nkirun.pipeline.front  # noqa: F401
import nkirun.pipeline.kernel_calls  # noqa: F401
import nkirun.pipeline.kernel_params  # noqa: F401
import nkirun.runner.freeing  # noqa: F401
import nkirun.schedule  # noqa: F401
import nkirun.schedule.trips  # noqa: F401
import nkirun.source.kernel.trace  # noqa: F401
import nkirun.sweep.evaluate  # noqa: F401
import nkirun.sweep.fingerprint  # noqa: F401
