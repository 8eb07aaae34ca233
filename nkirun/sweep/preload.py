"""Imported once by the local pool's forkserver, so that every worker it forks starts with
nkirun's tracer, checker and scheduler loaded (importing them per variant would double
the cost of a cheap variant)."""
import nkirun  # noqa: F401
import nkirun.checker.passes  # noqa: F401
import nkirun.schedule  # noqa: F401
import nkirun.schedule.trips  # noqa: F401
import nkirun.source.kernel.api  # noqa: F401
import nkirun.source.kernel.cli  # noqa: F401
import nkirun.source.kernel.execute  # noqa: F401
import nkirun.sweep.evaluate  # noqa: F401
import nkirun.sweep.fingerprint  # noqa: F401
