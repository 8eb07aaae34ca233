"""nkirun as the NKI CPU simulator of an existing test suite (docs/kernels.md, "A library's
own test suite on nkirun").

    import nkirun.dropin; nkirun.dropin.install(target="trn3")   # or nkirun.install(...)
    pytest --nkirun ...                                          # the plugin does the same

After `install()`, `import nki` (and every `nki.*` module nkirun has) is nkirun's, whatever
was installed before, and `import nki_cpu_simulator` (the package nki-library's harness
imports for its `--test-mode simulation`) is nkirun's too where no such package is
installed: its `nki`, `nki.isa`, `nki.language`, `nki.language.dtypes`, ... are the same
module objects. Kernels then simulate through `nki.cpu_simulate(kernel)[lnc](**inputs)`,
`nki.simulate`, a `@nki.jit` kernel's call or `nkirun.simulate`; every such run passes its
diagnostics and schedule to the watchers this module keeps (the plugin's --nkirun-check and
--nkirun-cost).
"""
from __future__ import annotations

import importlib.util
import os
import sys
import types

from nkirun.source.kernel import modules as _modules

SIMULATOR = "nki_cpu_simulator"
_SUBMODULES = ("isa", "isa.constants", "language", "language.dtypes", "compiler", "typing",
               "builtin", "collectives")
_installed: dict = {}  # sys.modules names install() set -> what was there (None: nothing)
_TARGET_ENV = "NEURON_PLATFORM_TARGET_OVERRIDE"  # nkirun.simulate's default target
_saved_env: dict = {}
_active: list = []


def install(target: str | None = None, uninitialized: str = "error") -> None:
    """Make `import nki` (and, where absent, `import nki_cpu_simulator`) nkirun's.
    `target` (trn1, trn2, trn3...): what `nki.cpu_simulate` and `nkirun.simulate` run on,
    over the harness's NKI_NC_VERSION. `uninitialized` ("error", "nan", "zero"): what
    `nki.cpu_simulate` does where a kernel reads elements nothing wrote (as
    `nkirun.simulate(uninitialized=)`). Idempotent; `uninstall()` undoes it."""
    from nkirun.api import UNINITIALIZED
    from nkirun.hw.targets import TARGETS
    if target is not None and target not in TARGETS:
        raise ValueError(f"unknown target {target!r} (allowed: {', '.join(TARGETS)})")
    if uninitialized not in UNINITIALIZED:
        raise ValueError(f"unknown uninitialized {uninitialized!r} (allowed: "
                         f"{', '.join(UNINITIALIZED)})")
    mods = _modules.modules()
    _modules.install_fallback_finder()
    _modules.CpuSimulate.target = target
    _modules.CpuSimulate.uninitialized = uninitialized
    for name, m in mods.items():
        _set(name, m)
    if sys.modules.get(SIMULATOR) is None and _absent(SIMULATOR):
        package = types.ModuleType(SIMULATOR, "nkirun standing in for the NKI CPU simulator "
                                   "(nkirun.dropin)")
        package.__path__ = []
        package.nki = mods["nki"]
        _set(SIMULATOR, package)
        _set(SIMULATOR + ".nki", mods["nki"])
        for sub in _SUBMODULES:
            _set(f"{SIMULATOR}.nki.{sub}", mods["nki." + sub])
        # (`nki.tensor` is a type, not a module; the harness aliases it all the same)
        _set(SIMULATOR + ".nki.tensor", mods["nki"].tensor)
    _active.append(True)
    if target is not None:
        _saved_env.setdefault(_TARGET_ENV, os.environ.get(_TARGET_ENV))
        os.environ[_TARGET_ENV] = target


def uninstall() -> None:
    """Undo install(): the names it set are what they were before (nkirun's last-resort
    `import nki` finder stays, as `import nkirun` has it)."""
    _put_back(sys.modules, _installed)
    _active.clear()
    _modules.CpuSimulate.target = None
    _modules.CpuSimulate.uninitialized = "error"
    _put_back(os.environ, _saved_env)


def _put_back(where, saved: dict) -> None:
    """Each saved key as it was before (None: it was absent), then forget them."""
    for key, before in saved.items():
        if before is None:
            where.pop(key, None)
        else:
            where[key] = before
    saved.clear()


def installed() -> bool:
    """Whether install() is in effect."""
    return bool(_active)


def _set(name: str, value) -> None:
    if sys.modules.get(name) is not value:
        _installed.setdefault(name, sys.modules.get(name))
        sys.modules[name] = value


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True
