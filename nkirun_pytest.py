"""pytest plugin: a test suite written for NKI's CPU simulator, run on nkirun.

Installed with nkirun (entry point `pytest11`), it is inert unless asked: without its
options it imports nothing of nkirun and changes nothing.

    pytest --nkirun [--nkirun-target trn3] [--nkirun-uninitialized nan] [--nkirun-check]
                    [--nkirun-cost] [--nkirun-json F]

(or `nkirun = true` in the ini file; `-p nkirun_pytest` where nkirun is not pip-installed).
`--nkirun` runs `nkirun.install()` before any conftest is imported, so the suite's
`import nki` / `import nki_cpu_simulator` are nkirun's (docs/kernels.md, "A library's own
test suite"); the rest is nkirun/dropin/pytest_plugin.py.
"""
from __future__ import annotations

import pytest

_OPTIONS = ("nkirun", "nkirun_target", "nkirun_uninitialized", "nkirun_check", "nkirun_cost",
            "nkirun_json")


def pytest_addoption(parser):
    g = parser.getgroup("nkirun", "nkirun as the NKI CPU simulator (docs/kernels.md)")
    g.addoption("--nkirun", action="store_true", default=False,
                help="run the suite's NKI kernels on nkirun: `import nki` and "
                     "`nki_cpu_simulator` resolve to nkirun's modules")
    g.addoption("--nkirun-target", default=None, metavar="TARGET",
                help="the target kernels run on (trn2, trn3...), over the suite's own "
                     "NKI_NC_VERSION; implies --nkirun")
    g.addoption("--nkirun-uninitialized", default=None, choices=("error", "nan", "zero"),
                help="where a kernel reads elements nothing wrote: nkirun's error E090 "
                     "(default), or NaN / 0 read there; implies --nkirun")
    g.addoption("--nkirun-check", action="store_true", default=False,
                help="check every simulated kernel; summarise nkirun's warnings at the end "
                     "(an error fails its test); implies --nkirun")
    g.addoption("--nkirun-cost", action="store_true", default=False,
                help="predict each test's kernel time; a table at the end; implies --nkirun")
    g.addoption("--nkirun-json", default=None, metavar="PATH",
                help="write each test's nkirun warnings and predicted time as JSON; "
                     "implies --nkirun")
    parser.addini("nkirun", "run the suite's NKI kernels on nkirun (as --nkirun)", type="bool",
                  default=False)


def _wanted(config, values) -> bool:
    if any(values.get(k) for k in _OPTIONS):
        return True
    try:
        return bool(config.getini("nkirun"))
    except (ValueError, KeyError):
        return False


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Install before the suite's conftest files import `nki`."""
    values = vars(early_config.known_args_namespace)
    if _wanted(early_config, values):
        from nkirun.dropin.pytest_plugin import install
        install(values.get("nkirun_target"), values.get("nkirun_uninitialized"))


def pytest_configure(config):
    values = {k: config.getoption(k) for k in _OPTIONS}
    if _wanted(config, values):
        from nkirun.dropin.pytest_plugin import configure
        configure(config, values["nkirun_target"], values["nkirun_uninitialized"],
                  values["nkirun_check"], values["nkirun_cost"], values["nkirun_json"])
